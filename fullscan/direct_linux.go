//go:build linux

package fullscan

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens path read-only with O_DIRECT (the chunks bypass the
// page cache: a pass reads each once), falling back to a buffered open
// where the file system refuses it (tmpfs answers EINVAL); direct says
// which.
func openDirect(path string) (f *os.File, direct bool, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err == nil {
		return os.NewFile(uintptr(fd), path), true, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f, err = os.Open(path)
	return f, false, err
}
