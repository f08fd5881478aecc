//go:build !linux

package ingest

import "os"

// pageCache is a no-op where sync_file_range is not available.
type pageCache struct{}

func (p *pageCache) written(f *os.File, off int64) {}

// dropCache is a no-op where posix_fadvise is not wired up.
func dropCache(f *os.File, off, n int64) {}

// partMemory is the memory of the partition being placed.
type partMemory struct {
	words []uint32
}

func allocPart(n uint64) *partMemory { return &partMemory{words: make([]uint32, n)} }

func (p *partMemory) populate(n uint64)           {}
func (p *partMemory) drop(from, to uint64) uint64 { return from }
func (p *partMemory) free()                       { p.words = nil }
