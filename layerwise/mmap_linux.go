//go:build linux

package layerwise

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapReadOnly maps the first size bytes of f, read-only and shared, for a
// sequential sweep.
func mapReadOnly(f *os.File, size int64) ([]byte, error) {
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(mem, unix.MADV_SEQUENTIAL)
	return mem, nil
}

// populate reads b's pages in (MADV_POPULATE_READ, Linux 5.14), or, where
// the kernel refuses the hint, touches one byte a page.
func populate(b []byte) {
	if unix.Madvise(b, unix.MADV_POPULATE_READ) == nil {
		return
	}
	var x byte
	for i := 0; i < len(b); i += 4096 {
		x ^= b[i]
	}
	_ = x
}

// willNeed starts the read-ahead of b's pages (MADV_WILLNEED), without
// waiting for it.
func willNeed(b []byte) { _ = unix.Madvise(b, unix.MADV_WILLNEED) }

// unmap is the mapping's cleanup.
func unmap(mem []byte) { _ = unix.Munmap(mem) }
