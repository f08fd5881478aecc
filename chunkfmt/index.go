package chunkfmt

import (
	"fmt"
	"os"
	"sort"
)

// Index maps node ids to chunks: chunk i holds nodes [Start(i), End(i)).
// It is the content of chunks.info plus the number of nodes. An Index is
// immutable and safe for concurrent use.
type Index struct {
	starts   []uint32
	numNodes uint32
}

// NewIndex builds an index over the chunk start nodes starts (strictly
// increasing from 0, each below numNodes) of a graph with numNodes nodes.
// A graph without nodes has no chunks. starts is not copied.
func NewIndex(starts []uint32, numNodes uint32) (*Index, error) {
	if numNodes == 0 {
		if len(starts) != 0 {
			return nil, fmt.Errorf("chunkfmt: index: %d chunks for a graph without nodes", len(starts))
		}
		return &Index{numNodes: 0}, nil
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("chunkfmt: index: no chunks for %d nodes", numNodes)
	}
	if starts[0] != 0 {
		return nil, fmt.Errorf("chunkfmt: index: chunk 0 starts at node %d, want 0", starts[0])
	}
	for i := 1; i < len(starts); i++ {
		if starts[i] <= starts[i-1] {
			return nil, fmt.Errorf("chunkfmt: index: chunk %d starts at node %d, not after chunk %d's start %d", i, starts[i], i-1, starts[i-1])
		}
	}
	if last := starts[len(starts)-1]; last >= numNodes {
		return nil, fmt.Errorf("chunkfmt: index: chunk %d starts at node %d, not below the number of nodes %d", len(starts)-1, last, numNodes)
	}
	return &Index{starts: starts, numNodes: numNodes}, nil
}

// ReadIndex reads the chunks.info file at path for a graph of numNodes
// nodes.
func ReadIndex(path string, numNodes uint32) (*Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	ix, err := ParseIndex(b, numNodes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ix, nil
}

// ParseIndex decodes the bytes of a chunks.info file (little-endian uint32
// start node per chunk).
func ParseIndex(b []byte, numNodes uint32) (*Index, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("chunkfmt: index: %d bytes is not a whole number of uint32 words", len(b))
	}
	return NewIndex(DecodeWords(make([]uint32, 0, len(b)/4), b), numNodes)
}

// NumChunks is the number of chunks.
func (ix *Index) NumChunks() int { return len(ix.starts) }

// NumNodes is the number of nodes of the graph.
func (ix *Index) NumNodes() uint32 { return ix.numNodes }

// Starts returns the start node of every chunk. Do not modify it.
func (ix *Index) Starts() []uint32 { return ix.starts }

// Start is the first node of chunk i.
func (ix *Index) Start(i int) uint32 { return ix.starts[i] }

// End is one past the last node of chunk i.
func (ix *Index) End(i int) uint32 {
	if i+1 < len(ix.starts) {
		return ix.starts[i+1]
	}
	return ix.numNodes
}

// ChunkOf returns the chunk holding node, or -1 if node is not below the
// number of nodes.
func (ix *Index) ChunkOf(node uint32) int {
	if node >= ix.numNodes {
		return -1
	}
	// The first chunk starting after node, minus one.
	return sort.Search(len(ix.starts), func(i int) bool { return ix.starts[i] > node }) - 1
}

// ByChunk cuts a sorted (ascending) frontier into one piece per chunk: piece
// i is the sub-slice of sortedFrontier whose nodes lie in chunk i (empty
// when none do). The pieces share the frontier's memory (their capacity is
// clipped, so appending to one never overwrites the next). It does one
// binary search per chunk boundary, O(chunks · log n), and copies nothing.
// Ids not below the number of nodes belong to no chunk and are left out
// of every piece; callers check the frontier's range themselves.
func (ix *Index) ByChunk(sortedFrontier []uint32) [][]uint32 {
	return ix.ByChunkInto(make([][]uint32, len(ix.starts)), sortedFrontier)
}

// ByChunkInto is ByChunk writing into dst (reused when it has the capacity).
func (ix *Index) ByChunkInto(dst [][]uint32, sortedFrontier []uint32) [][]uint32 {
	k := len(ix.starts)
	if cap(dst) < k {
		dst = make([][]uint32, k)
	}
	dst = dst[:k]
	f := sortedFrontier
	lo := 0
	for i := 0; i < k; i++ {
		end := ix.End(i)
		rest := f[lo:]
		hi := lo + sort.Search(len(rest), func(j int) bool { return rest[j] >= end })
		dst[i] = f[lo:hi:hi]
		lo = hi
	}
	return dst
}
