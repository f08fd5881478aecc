//go:build linux

package featplan

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropFileCache evicts f's pages from the page cache, so that the next
// buffered read goes to the disk.
func dropFileCache(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
