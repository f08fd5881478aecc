//go:build linux

package host

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens path read-only with O_DIRECT, bypassing the page cache
// as a P2P read does. tmpfs and some other filesystems refuse it (EINVAL).
func openDirectFile(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
