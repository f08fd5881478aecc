//go:build linux

package ingest

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile sizes f to size bytes and maps it read-write. The space is
// reserved with fallocate first: writing through a mapping into a sparse
// file on a full disk kills the process with SIGBUS, whereas fallocate
// reports ENOSPC as an error.
func mapFile(f *os.File, size int64) (*mapping, error) {
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
			return nil, fmt.Errorf("reserving %d bytes for the temporary CSR file %s: %w", size, f.Name(), err)
		}
		// Filesystems without fallocate: fall back to a sparse file.
		if err := f.Truncate(size); err != nil {
			return nil, fmt.Errorf("sizing the temporary CSR file %s: %w", f.Name(), err)
		}
	}
	// MAP_POPULATE faults the pages in with one call instead of one fault
	// per page during the random scatter.
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mapping the temporary CSR file %s: %w", f.Name(), err)
	}
	return &mapping{b: b, unmap: func() error { return unix.Munmap(b) }}, nil
}

// dropPages tells the kernel that the pages of b (rounded inwards to page
// boundaries) will not be touched again, so that the mapping's share of
// resident memory stays bounded while pass 3 walks the file. For a shared
// file mapping nothing is lost: the data stays in the file.
func dropPages(m *mapping, from, to int64) {
	ps := int64(os.Getpagesize())
	from = (from + ps - 1) / ps * ps
	to = to / ps * ps
	if to > from {
		_ = unix.Madvise(m.b[from:to], unix.MADV_DONTNEED)
	}
}
