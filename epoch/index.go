package epoch

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// Index finds a node's row in each layer's frontier in O(1) instead of a
// binary search: either a dense []int32 per layer over all node ids (4
// bytes × layers × nodes) or a hash map per layer (about 4× the bytes of
// the frontiers). Build it once per Result; it is read-only afterwards.
type Index struct {
	dense [][]int32
	maps  []map[uint32]int32
	bytes int64
}

// Bytes returns the memory the index holds.
func (ix *Index) Bytes() int64 { return ix.bytes }

// DenseIndexBytes returns what Index(numNodes) would allocate; numNodes 0
// means max(Final)+1.
func (r *Result) DenseIndexBytes(numNodes uint32) int64 {
	if numNodes == 0 {
		numNodes = r.NumNodes()
	}
	return int64(numNodes) * 4 * int64(len(r.Layers))
}

// NumNodes is max(Final)+1: the smallest id space that covers every
// frontier (0 for an empty epoch).
func (r *Result) NumNodes() uint32 {
	if len(r.Final) == 0 {
		return 0
	}
	return r.Final[len(r.Final)-1] + 1
}

// Index builds a dense position index over node ids [0, numNodes); 0
// means max(Final)+1, the smallest that covers every frontier. It fails if
// the epoch reaches a node id >= numNodes.
func (r *Result) Index(numNodes uint32) (*Index, error) {
	if numNodes == 0 {
		numNodes = r.NumNodes()
	}
	if f := r.Final; len(f) > 0 && f[len(f)-1] >= numNodes {
		return nil, fmt.Errorf("epoch: index: the epoch reaches node %d, beyond %d nodes", f[len(f)-1], numNodes)
	}
	ix := &Index{dense: make([][]int32, len(r.Layers))}
	for l := range r.Layers {
		f := r.Layers[l].Frontier
		if len(f) > 0 && f[len(f)-1] >= numNodes {
			return nil, fmt.Errorf("epoch: index: layer %d frontier holds node %d, beyond %d nodes", l, f[len(f)-1], numNodes)
		}
		ix.bytes += int64(numNodes) * 4
	}
	// The layers' tables are independent, and each is a fill and a
	// scatter over 4 bytes per node of fresh memory: built side by side,
	// one per core, as the index stands between sampling and the first
	// minibatch.
	var next atomic.Int32
	var wg sync.WaitGroup
	for range min(len(r.Layers), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := int(next.Add(1) - 1); l < len(r.Layers); l = int(next.Add(1) - 1) {
				p := make([]int32, numNodes)
				hugepages.Advise(p)
				for i := range p {
					p[i] = -1
				}
				for i, v := range r.Layers[l].Frontier {
					p[v] = int32(i)
				}
				ix.dense[l] = p
			}
		}()
	}
	wg.Wait()
	return ix, nil
}

// MapIndex builds a hash-map position index, for graphs whose dense index
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
