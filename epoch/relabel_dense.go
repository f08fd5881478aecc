package epoch

import (
	"slices"

	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// denseTable is the relabelling strategy of an Index that allows a table
// over every node id (up to tableMaxNodes; batchTable past it): it
// maps global to local ids through an array over all node ids, each entry
// packing a generation stamp (high half) with the local id, so that
// emptying it is O(1) and a lookup is one memory access. It is kept from
// hop to hop: a hop's dst is the previous hop's src, already in the table
// under the local ids they keep (their positions in dst), so only the
// seeds are inserted.
type denseTable struct {
	loc      []uint64
	numNodes int // node ids held: below numNodes (loc may be longer)
	gen      uint32
	sink     uint64 // what relabel's prefetching loads were or'ed into
}

// prefault writes one word of every page of a fresh table. The table's
// first touch of an entry is a read: on untouched memory that maps the
// kernel's shared zero page, and the write that follows must then replace
// it (a copy-on-write fault with a TLB flush sent to every core the
// process runs on). Writing first takes one ordinary fault per page
// instead; with several assembling goroutines the flushes were most of an
// epoch's system time.
func prefault(a []uint64) {
	const wordsPerPage = 4096 / 8
	for i := 0; i < len(a); i += wordsPerPage {
		a[i] = 0
	}
}

// reset empties the table for node ids below numNodes.
func (t *denseTable) reset(numNodes int) {
	if len(t.loc) < numNodes {
		t.loc = make([]uint64, numNodes)
		t.gen = 0
		hugepages.Advise(t.loc)
		prefault(t.loc)
	}
	t.numNodes = numNodes
	t.gen++
	if t.gen == 0 {
		clear(t.loc)
		t.gen = 1
	}
}

// insert is localTable.insert for a key below len(t.loc).
func (t *denseTable) insert(key uint32, v int32) (int32, bool) {
	e := t.loc[key]
	if uint32(e>>32) == t.gen {
		return int32(uint32(e)), false
	}
	t.loc[key] = uint64(t.gen)<<32 | uint64(uint32(v))
	return v, true
}

// begin empties the table at hop 0 and inserts the seeds; at later hops
// their dst is in the table already.
func (t *denseTable) begin(h int, dst []uint32) (int, bool) {
	if h > 0 {
		return -1, false
	}
	t.reset(t.numNodes)
	for i, v := range dst {
		if int(v) >= t.numNodes {
			return i, false
		}
		if _, fresh := t.insert(v, int32(i)); !fresh {
			return i, true
		}
	}
	return -1, false
}

// relabel (see relabeler) finds each node's entry in the table.
//
// The table is far bigger than the caches and the samples hit it at
// random, so the time is in cache misses, and the loop is shaped for
// overlapping them:
//   - the samples are taken in blocks, and the next block's entries are
//     requested before the current block is relabelled (prefetch
//     instructions, or without them, a tight loop of loads over the
//     current block first: see gather);
//   - the relabelling has no data-dependent branch: whether a node is new
//     is unpredictable (about one sample in three is), and a mispredicted
//     branch would discard the loads in flight. Every iteration stores its
//     entry and writes src[n]; a new node bumps n by a conditional move.
//
// On the products-like BenchmarkSample/rmat2M/dense, the branch-free loop
// made the whole assembly about 1.1× faster than inserting with a branch,
// and touching loads about 1.13× faster again (interleaved runs on one
// Assembler, 2-core VM); prefetching: see gather.
func (t *denseTable) relabel(src []uint32, sampled []uint32, edgeSrc []int32) ([]uint32, int) {
	n := len(src)
	src = slices.Grow(src, len(sampled))
	buf := src[:cap(src)]
	loc := t.loc[:t.numNodes]
	gen := uint64(t.gen) << 32
	edgeSrc = edgeSrc[:len(sampled)]
	pf := usePrefetch && len(loc) > 0
	bs := relabelTouch
	if pf {
		bs = relabelPrefetch
		prefetchIdx8(&loc[0], sampled[:min(bs, len(sampled))])
	}
	for j0 := 0; j0 < len(sampled); j0 += bs {
		blk := sampled[j0:min(j0+bs, len(sampled))]
		if pf {
			if next := j0 + bs; next < len(sampled) {
				prefetchIdx8(&loc[0], sampled[next:min(next+bs, len(sampled))])
			}
		} else {
			var acc uint64
			for _, s := range blk {
				if int(s) < len(loc) {
					acc |= loc[s]
				}
			}
			t.sink |= acc // keeps the loads
		}
		for jj, s := range blk {
			if int(s) >= len(loc) {
				return buf[:n], j0 + jj
			}
			e := loc[s]
			id := uint32(e)
			if e < gen { // stale stamp: a new node
				id = uint32(n)
			}
			loc[s] = gen | uint64(id)
			buf[n] = s
			edgeSrc[j0+jj] = int32(id)
			if id == uint32(n) {
				n++
			}
		}
	}
	return buf[:n], -1
}
