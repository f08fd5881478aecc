package epoch

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Index finds a node's row in each layer's frontier in O(1) instead of a
// binary search: either a rank set per layer over all node ids (rankSet:
// a bitmap with ranks, 1.33 bits × layers × nodes) or a hash map per
// layer (about 4× the bytes of the frontiers). Build it once per Result;
// it is read-only afterwards.
//
// The rank sets replaced a dense []int32 per layer (4 bytes × layers ×
// nodes): a lookup costs one cache line either way, but 24 times fewer
// bytes keep the lines in cache as the id space grows (2^25 nodes: 5.6 MB
// a layer instead of 134 MB; docs/PERFORMANCE.md, "Assembly that stays in
// cache").
type Index struct {
	rank     []rankSet
	maps     []map[uint32]int32
	numNodes int  // node ids the rank sets cover
	table    bool // assemblers may relabel through a table over every node id
	bytes    int64
}

// Bytes returns the memory the index holds.
func (ix *Index) Bytes() int64 { return ix.bytes }

// DenseIndexBytes returns what Index(numNodes) would allocate (its rank
// sets); numNodes 0 means max(Final)+1.
func (r *Result) DenseIndexBytes(numNodes uint32) int64 {
	if numNodes == 0 {
		numNodes = r.NumNodes()
	}
	return rankSetBytes(numNodes) * int64(len(r.Layers))
}

// tableMaxNodes is the most node ids for which assemblers over an Index
// relabel through a table over every node id (denseTable, 8 bytes an id)
// rather than one sized by the minibatch (batchTable). On this project's
// 2-core VM the table is the faster at 2^22 ids (17.9 against 24.4 thread
// ns an edge, BenchmarkAssembleScale), within noise at 2^23 and 2^24,
// and at 2^25 (`run` on R-MAT scale 25, two workers, three interleaved
// pairs) the slower, 18.4 against 16.0 ns an edge (medians), for 1.0–1.5
// GiB more memory: 268 MB a goroutine, read at random, where the
// minibatch's table is 8 MiB (docs/PERFORMANCE.md, "Assembly that stays
// in cache").
const tableMaxNodes = 1 << 24

// RelabelTableBytes is the memory each Assembler over an Index of
// numNodes node ids holds for its relabel table over every node id, when
// the index allows one (see WithoutRelabelTable): 8 bytes an id up to 2^24
// ids, and 0 past that, where assemblers use a table sized by the
// minibatch (a few MiB) whatever the index allows.
func RelabelTableBytes(numNodes uint32) int64 {
	if numNodes > tableMaxNodes {
		return 0
	}
	return 8 * int64(numNodes)
}

// NumNodes is max(Final)+1: the smallest id space that covers every
// frontier (0 for an empty epoch).
func (r *Result) NumNodes() uint32 {
	if len(r.Final) == 0 {
		return 0
	}
	return r.Final[len(r.Final)-1] + 1
}

// IndexOption configures Result.Index.
type IndexOption func(*Index)

// WithoutRelabelTable makes the assemblers over the index relabel through
// a hash table sized by the minibatch (a few MiB) instead of a table over
// every node id (RelabelTableBytes each), for when that table would not
// fit the memory allowed.
func WithoutRelabelTable() IndexOption { return func(ix *Index) { ix.table = false } }

// Index builds a position index over node ids [0, numNodes); 0 means
// max(Final)+1, the smallest that covers every frontier. It fails if the
// epoch reaches a node id >= numNodes.
func (r *Result) Index(numNodes uint32, opts ...IndexOption) (*Index, error) {
	if numNodes == 0 {
		numNodes = r.NumNodes()
	}
	if f := r.Final; len(f) > 0 && f[len(f)-1] >= numNodes {
		return nil, fmt.Errorf("epoch: index: the epoch reaches node %d, beyond %d nodes", f[len(f)-1], numNodes)
	}
	ix := &Index{rank: make([]rankSet, len(r.Layers)), numNodes: int(numNodes), table: RelabelTableBytes(numNodes) > 0}
	for _, o := range opts {
		o(ix)
	}
	for l := range r.Layers {
		f := r.Layers[l].Frontier
		if len(f) > 0 && f[len(f)-1] >= numNodes {
			return nil, fmt.Errorf("epoch: index: layer %d frontier holds node %d, beyond %d nodes", l, f[len(f)-1], numNodes)
		}
		ix.bytes += rankSetBytes(numNodes)
	}
	// The layers' sets are independent, and each is a scatter over fresh
	// memory and a pass of popcounts: built side by side, one per core,
	// as the index stands between sampling and the first minibatch.
	var next atomic.Int32
	var wg sync.WaitGroup
	for range min(len(r.Layers), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := int(next.Add(1) - 1); l < len(r.Layers); l = int(next.Add(1) - 1) {
				ix.rank[l] = newRankSet(r.Layers[l].Frontier, numNodes)
			}
		}()
	}
	wg.Wait()
	return ix, nil
}

// MapIndex builds a hash-map position index, for graphs whose Index
// would not fit in memory.
func (r *Result) MapIndex() *Index {
	ix := &Index{maps: make([]map[uint32]int32, len(r.Layers))}
	for l := range r.Layers {
		f := r.Layers[l].Frontier
		m := make(map[uint32]int32, len(f))
		for i, v := range f {
			m[v] = int32(i)
		}
		ix.maps[l] = m
		ix.bytes += int64(len(f)) * 16 // keys, values and the table's slack, roughly
	}
	return ix
}
