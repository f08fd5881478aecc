package npy

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserve sizes f to size bytes with its blocks allocated (fallocate), so
// that writes through a mapping cannot meet a full disk; where the file
// system cannot allocate ahead, it only sets the size.
func reserve(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}
