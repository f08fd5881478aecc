//go:build !linux

package ingest

import "os"

// pageCache is a no-op where sync_file_range is not available.
type pageCache struct{}

func (p *pageCache) written(f *os.File, off int64) {}

// dropCache is a no-op where posix_fadvise is not wired up.
func dropCache(f *os.File, off, n int64) {}

// allocWords returns n zeroed words and the function that frees them.
func allocWords(n uint64) ([]uint32, func()) {
	return make([]uint32, n), func() {}
}

// procIO is unknown (-1, -1) where /proc/self/io is not available.
func procIO() (read, write int64) { return -1, -1 }
