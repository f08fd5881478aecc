//go:build !linux

package ingest

import (
	"fmt"
	"os"

	mmap "github.com/edsrzf/mmap-go"
)

// mapFile sizes f to size bytes and maps it read-write.
func mapFile(f *os.File, size int64) (*mapping, error) {
	if err := f.Truncate(size); err != nil {
		return nil, fmt.Errorf("sizing the temporary CSR file %s: %w", f.Name(), err)
	}
	m, err := mmap.Map(f, mmap.RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("mapping the temporary CSR file %s: %w", f.Name(), err)
	}
	return &mapping{b: m, unmap: m.Unmap}, nil
}

// dropPages is a no-op where madvise is not wired up.
func dropPages(m *mapping, from, to int64) {}
