package ingest

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// An external build cuts the node range into partitions: contiguous
// ranges of source nodes whose adjacency entries fit the memory budget
// together. The first partition's edges are placed in memory while pass 2
// reads the inputs; every other partition's go, as (source, value) pairs,
// to a spill file of its own, written sequentially. Pass 3 then reads the
// spill files one at a time, sequentially, places each partition in the
// same memory, sorts and writes it. No file larger than the budget is
// ever written or read anywhere but in order, and the page cache of the
// spill files is handed back as they go (spillFile, readSpill).

// partition is one range of source nodes [lo, hi); its adjacency entries
// are offsets [pos[lo], pos[hi]) of the CSR.
type partition struct {
	lo, hi uint32
}

// partBlockShift sets the granularity of the node → partition table: one
// entry per 2^partBlockShift nodes, the partition of the block's first
// node; a lookup then steps forward past the few boundaries inside a block.
const partBlockShift = 6

// spillBufMin and spillBufMax bound the write buffer of each spill file:
// large enough that the disk sees long sequential writes, small enough
// that hundreds of partitions fit the budget.
const (
	spillBufMin = 64 << 10
	spillBufMax = 1 << 20
)

// spillReadBuf is the read buffer of a spill file in pass 3 (bytes, a
// multiple of 8).
const spillReadBuf = 1 << 20

// maxPartitions caps the number of spill files open at once.
const maxPartitions = 4096

// partitionFloor is the least memory, in bytes, an external build of
// entries adjacency entries with the given largest degree needs for its
// edges: one partition of floorEntries entries (at least the longest
// list, which cannot be split) and the write buffers of the spill files
// that partitions of that size make.
func partitionFloor(entries uint64, maxDegree uint32) int64 {
	f := floorEntries(entries, maxDegree)
	if f >= entries {
		return 4 * int64(entries)
	}
	return 4*int64(f) + int64(maxSpillFiles(entries, f))*spillBufMin
}

// floorEntries is the smallest partition an external build uses: the
// longest list, 1 Mi entries (smaller ones only multiply the files), and
// enough that there are at most maxPartitions/2 of them.
func floorEntries(entries uint64, maxDegree uint32) uint64 {
	f := max(uint64(maxDegree), 1<<20, (entries+maxPartitions/2-1)/(maxPartitions/2))
	return min(f, entries)
}

// maxSpillFiles bounds the number of partitions that greedy cutting into
// partitions of at most cap entries makes: two neighbouring partitions
// hold more than cap entries together, so there are at most
// 2·ceil(entries/cap)+1.
func maxSpillFiles(entries, cap uint64) int {
	return int(2*((entries+cap-1)/cap) + 1)
}

// testPartitionEntries, when set by a test, caps a partition's entries,
// forcing an external build on a small graph.
var testPartitionEntries uint64

// planPartitions cuts [0, n) into partitions of at most cap entries each,
// cap chosen so that one partition's entries (4 bytes each) and the spill
// files' write buffers fit avail bytes. It returns one partition when all
// the entries fit (or avail is 0: unchecked), and the spill files' buffer
// size.
func planPartitions(pos []uint64, maxDegree uint32, avail int64) ([]partition, int) {
	n := uint32(len(pos) - 1)
	entries := pos[n]
	if testPartitionEntries != 0 {
		return cutPartitions(pos, testPartitionEntries), spillBufMin
	}
	if avail == 0 || 4*int64(entries) <= avail {
		return []partition{{0, n}}, 0
	}
	floor := floorEntries(entries, maxDegree)
	for _, w := range []int{spillBufMax, 256 << 10, spillBufMin} {
		// Shrink the cap until a partition and the buffers of the files
		// it makes fit; larger partitions mean fewer entries spilled.
		for cap := uint64(avail / 4); cap >= floor; cap -= max(cap/32, 1) {
			parts := cutPartitions(pos, cap)
			if len(parts) <= maxPartitions && 4*int64(maxEntries(pos, parts))+int64(len(parts)-1)*int64(w) <= avail {
				return parts, w
			}
		}
	}
	// The memory check admits only budgets that hold the floor; should
	// rounding leave one short, cut at the floor.
	return cutPartitions(pos, floor), spillBufMin
}

// cutPartitions cuts [0, n) greedily into ranges of at most cap entries
// (a single node with more is a partition of its own).
func cutPartitions(pos []uint64, cap uint64) []partition {
	n := uint32(len(pos) - 1)
	var parts []partition
	for lo := uint32(0); lo < n; {
		// The last hi with pos[hi]-pos[lo] <= cap, at least lo+1.
		hi := uint32(sortSearch(int(n-lo), func(i int) bool { return pos[lo+uint32(i)+1]-pos[lo] > cap })) + lo
		hi = max(hi, lo+1)
		parts = append(parts, partition{lo, hi})
		lo = hi
	}
	if len(parts) == 0 {
		parts = append(parts, partition{0, 0})
	}
	return parts
}

// maxEntries is the most entries of any partition in parts.
func maxEntries(pos []uint64, parts []partition) uint64 {
	var m uint64
	for _, p := range parts {
		m = max(m, pos[p.hi]-pos[p.lo])
	}
	return m
}

// router sends each stored (source, value) entry of pass 2 to the first
// partition's placing or to its partition's spill file.
type router struct {
	first  uint32   // the first partition's end: sources below it stay in memory
	bnd    []uint32 // bnd[k] is partition k's first node
	table  []uint16 // block → partition of its first node
	spills []*spillFile
	local  []uint32 // this batch's first-partition entries, (source, value)
}

func newRouter(parts []partition, spills []*spillFile) *router {
	r := &router{first: parts[0].hi, spills: spills}
	for _, p := range parts {
		r.bnd = append(r.bnd, p.lo)
	}
	n := parts[len(parts)-1].hi
	r.table = make([]uint16, (uint64(n)>>partBlockShift)+1)
	k := 0
	for blk := range r.table {
		first := uint32(blk) << partBlockShift
		for k+1 < len(r.bnd) && r.bnd[k+1] <= first {
			k++
		}
		r.table[blk] = uint16(k)
	}
	return r
}

// route routes the entries the input edges p store, and returns the
// first partition's, (source, value) pairs valid until the next call.
func (r *router) route(p []uint32, sym, rev bool) ([]uint32, error) {
	r.local = r.local[:0]
	var err error
	// put is the per-entry work, inlined into each loop: an entry of the
	// first partition is appended to local; any other is written straight
	// into its partition's spill buffer.
	put := func(u, v uint32) {
		if u < r.first {
			r.local = append(r.local, u, v)
			return
		}
		k := int(r.table[u>>partBlockShift])
		for k+1 < len(r.bnd) && u >= r.bnd[k+1] {
			k++
		}
		s := r.spills[k]
		if s.n+8 > len(s.buf) {
			if e := s.flush(); e != nil && err == nil {
				err = e
			}
		}
		buf := s.buf[s.n : s.n+8]
		binary.LittleEndian.PutUint32(buf, u)
		binary.LittleEndian.PutUint32(buf[4:], v)
		s.n += 8
	}
	switch {
	case sym:
		for k := 0; k+1 < len(p); k += 2 {
			u, v := p[k], p[k+1]
			put(u, v)
			put(v, u)
		}
	case rev:
		for k := 0; k+1 < len(p); k += 2 {
			put(p[k+1], p[k])
		}
	default:
		for k := 0; k+1 < len(p); k += 2 {
			put(p[k], p[k+1])
		}
	}
	if err != nil {
		return nil, err
	}
	return r.local, nil
}

// spillFile is one partition's spill file: (source, value) pairs as
// little-endian uint32 words, written through a buffer, its written
// pages written back and dropped from the page cache in steps (see
// pageCache) so that spilling does not fill memory with dirty pages.
type spillFile struct {
	f       *os.File
	buf     []byte
	n       int
	written int64
	pc      pageCache
}

func createSpill(dir string, k int, bufSize int) (*spillFile, error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%05d.spill", k)))
	if err != nil {
		return nil, fmt.Errorf("build: creating a spill file: %w", err)
	}
	return &spillFile{f: f, buf: make([]byte, bufSize)}, nil
}

func (s *spillFile) flush() error {
	if s.n == 0 {
		return nil
	}
	if _, err := s.f.Write(s.buf[:s.n]); err != nil {
		return fmt.Errorf("build: writing the spill file: %w", err)
	}
	s.written += int64(s.n)
	s.n = 0
	s.pc.written(s.f, s.written)
	return nil
}

// finish flushes the buffer and frees it: the file is complete.
func (s *spillFile) finish() error {
	err := s.flush()
	s.buf = nil
	return err
}

// remove closes and deletes the file, which also frees its page cache.
func (s *spillFile) remove() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// spillReader reads a spill file from the start, in order, dropping the
// pages it has read from the page cache as it goes.
type spillReader struct {
	s     *spillFile
	raw   []byte
	pairs []uint32
	off   int64
	dropt int64 // pages before this offset were dropped
}

func newSpillReader(s *spillFile, raw []byte, pairs []uint32) (*spillReader, error) {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	return &spillReader{s: s, raw: raw, pairs: pairs}, nil
}

// next returns the next (source, value) pairs, valid until the next call,
// or io.EOF after the last.
func (r *spillReader) next() ([]uint32, error) {
	left := r.s.written - r.off
	if left == 0 {
		return nil, io.EOF
	}
	n := int(min(left, int64(len(r.raw))))
	if _, err := io.ReadFull(r.s.f, r.raw[:n]); err != nil {
		return nil, fmt.Errorf("build: reading the spill file %s: %w", r.s.f.Name(), err)
	}
	r.off += int64(n)
	if r.off-r.dropt >= dropEvery {
		dropCache(r.s.f, r.dropt, r.off-r.dropt)
		r.dropt = r.off
	}
	p := r.pairs[:n/4]
	for k := range p {
		p[k] = binary.LittleEndian.Uint32(r.raw[4*k:])
	}
	return p, nil
}

// sequentialFile writes or reads a temporary file once, in order, from
// the start, and hands its page cache back as it goes (pass 1's edge
// spool of a text or compressed input): like a spill file, it must not
// fill memory with its pages.
type sequentialFile struct {
	f     *os.File
	off   int64
	dropt int64
	pc    pageCache
}

func (s *sequentialFile) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.off += int64(n)
	s.pc.written(s.f, s.off)
	return n, err
}

func (s *sequentialFile) Read(p []byte) (int, error) {
	n, err := s.f.Read(p)
	s.off += int64(n)
	if s.off-s.dropt >= dropEvery {
		dropCache(s.f, s.dropt, s.off-s.dropt)
		s.dropt = s.off
	}
	return n, err
}

// dropEvery is how many bytes of a spill file are written or read between
// two hand-backs of its page cache.
const dropEvery = 16 << 20
