//go:build linux

package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeNames swaps a and b with renameat2(RENAME_EXCHANGE) (Linux 3.15;
// ext4, xfs, btrfs, tmpfs). ENOSYS (old kernel) and EINVAL (a file system
// without the flag) send ReplaceDir to its fallback.
func exchangeNames(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
		return errExchangeUnsupported
	}
	return &os.LinkError{Op: "renameat2 exchange", Old: a, New: b, Err: err}
}
