//go:build linux

package ingest

import (
	"os"

	"golang.org/x/sys/unix"
)

// pageCache hands a file's written pages back to the kernel in steps:
// every dropEvery bytes it starts the writeback of what was written since
// the last step (asynchronously), then waits for the step before it,
// whose writeback has had a step's time to finish, and drops those pages.
// A written file then holds at most about two steps of page cache, and
// the disk is kept busy while the writer goes on. Hints only: a failure
// costs memory, not correctness, so errors are ignored.
type pageCache struct {
	started int64 // writeback started for [dropped, started)
	dropped int64 // pages before this offset are written and dropped
}

func (p *pageCache) written(f *os.File, off int64) {
	if off-p.started < dropEvery {
		return
	}
	fd := int(f.Fd())
	_ = unix.SyncFileRange(fd, p.started, off-p.started, unix.SYNC_FILE_RANGE_WRITE)
	if p.started > p.dropped {
		_ = unix.SyncFileRange(fd, p.dropped, p.started-p.dropped, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		_ = unix.Fadvise(fd, p.dropped, p.started-p.dropped, unix.FADV_DONTNEED)
		p.dropped = p.started
	}
	p.started = off
}

// dropCache drops the (clean) pages of f in [off, off+n) from the page
// cache: a spill file is read once.
func dropCache(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}

// partMemory is the memory of the partition being placed, outside the Go
// heap (an anonymous mapping): a partition is as large as the memory
// budget allows, and on the Go heap it would count towards the garbage
// collector's target, which lets the heap grow to twice the live data
// before a collection. It falls back to the heap where the mapping fails.
type partMemory struct {
	words []uint32
	m     []byte // the mapping; nil on the heap
}

// hugePage is the unit in which drop hands memory back, so that it never
// splits a transparent huge page.
const hugePage = 2 << 20

func allocPart(n uint64) *partMemory {
	if n == 0 {
		return &partMemory{}
	}
	b, err := unix.Mmap(-1, 0, int(4*n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return &partMemory{words: make([]uint32, n)}
	}
	// Placing writes at random offsets of the whole partition: on 2 MiB
	// pages its TLB misses mostly hit (where transparent huge pages are
	// "madvise", the default of many distributions, they must be asked
	// for).
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	p := &partMemory{words: wordsOf(b), m: b}
	p.populate(n)
	return p
}

// populate faults the first n words in with one call rather than one
// fault per page during the placing (Linux 5.14; a hint).
func (p *partMemory) populate(n uint64) {
	if p.m != nil && n > 0 {
		_ = unix.Madvise(p.m[:4*n], unix.MADV_POPULATE_WRITE)
	}
}

// drop hands back the whole huge pages in words [from, to), which pass 3
// has written out, so that the partition's resident memory shrinks as the
// chunk writer's grows; the pages read as zeros if touched again. It
// returns where the next drop starts: the end of what it dropped.
func (p *partMemory) drop(from, to uint64) uint64 {
	if p.m == nil {
		return from
	}
	f := (4*from + hugePage - 1) / hugePage * hugePage
	t := 4 * to / hugePage * hugePage
	if t <= f {
		return from
	}
	_ = unix.Madvise(p.m[f:t], unix.MADV_DONTNEED)
	return t / 4
}

func (p *partMemory) free() {
	if p.m != nil {
		_ = unix.Munmap(p.m)
	}
	p.words, p.m = nil, nil
}
