//go:build linux

package host

import (
	"os"

	"golang.org/x/sys/unix"
)

// populateMemory maps b's pages in, writable (madvise
// MADV_POPULATE_WRITE), so that the read that fills b faults none; a
// kernel before 5.14 refuses the hint, and the read faults them in.
func populateMemory(b []byte) { _ = unix.Madvise(b, unix.MADV_POPULATE_WRITE) }

// openDirect opens path read-only with O_DIRECT, bypassing the page cache
// as a P2P read does. tmpfs and some other filesystems refuse it (EINVAL).
func openDirectFile(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
