//go:build unix

package statedir

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes the state directory's lock (flock on the directory itself,
// so nothing is created for it), without waiting: a command that changes
// the directory holds it, so that two of them never interleave and a
// cleanup never takes a running command's temporary files. It fails
// with ErrBusy while another process holds it. The lock goes with the
// process, killed or not; unlock releases it earlier.
func (s State) Lock() (unlock func(), err error) {
	d, err := os.Open(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("epoch: state: %w", err)
	}
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrBusy, s.Dir)
		}
		return nil, fmt.Errorf("epoch: state: locking %s: %w", s.Dir, err)
	}
	return func() { d.Close() }, nil
}
