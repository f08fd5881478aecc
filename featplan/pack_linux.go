//go:build linux

package featplan

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fallocate allocates the first size bytes of f's blocks; where the file
// system cannot (EOPNOTSUPP), it sets the size, which is all a writer
// past the end needs.
func fallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return f.Truncate(size)
	}
	return err
}

func openDirectRW(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, false, err
	}
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	return f, false, err
}
