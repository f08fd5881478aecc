// Package edgeids finds the stored edge ids of node pairs, and the pairs
// of stored edge ids, in one sequential pass over a graph's chunks
// (DESIGN §4, "Link epochs"): what a link-prediction training set needs
// to exclude its edges from message passing.
//
// The graph stores in-edges: node v's row holds its in-neighbors, so the
// pair (src, dst) is the stored edge indptr[dst] + p, p the position of
// src's first occurrence in dst's row. A pair that is not an edge of the
// stored graph (a held-out test edge, say) has no id: epoch.NoEdge.
package edgeids

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
)

// Resolve returns the stored edge id of each pair (src[i], dst[i]), or
// epoch.NoEdge, and the graph's row offsets (indptr, num_nodes+1 entries),
// which the same pass builds. Each chunk is read once, in order, and
// checked (chunkfmt.Reader.ChunkCSR); pairs are taken in destination
// order, each found by binary search where its row is sorted (chunkify
// sorts rows) and by a scan where it is not. Nodes must be below
// num_nodes.
func Resolve(ctx context.Context, g *chunkfmt.Graph, src, dst []uint32) ([]int64, []uint64, error) {
	if len(src) != len(dst) {
		return nil, nil, fmt.Errorf("edgeids: %d sources and %d destinations", len(src), len(dst))
	}
	n := g.Manifest.NumNodes
	for i := range src {
		if src[i] >= n || dst[i] >= n {
			return nil, nil, fmt.Errorf("edgeids: pair %d (%d, %d) has a node not below the graph's %d nodes", i, src[i], dst[i], n)
		}
	}
	order := make([]int32, len(src))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return int(dst[a]) - int(dst[b]) })
	out := make([]int64, len(src))
	indptr := make([]uint64, uint64(n)+1)
	k := 0
	for c := range g.Manifest.Chunks {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		adj, err := g.ChunkCSR(c, indptr)
		if err != nil {
			return nil, nil, fmt.Errorf("edgeids: %w", err)
		}
		ci := &g.Manifest.Chunks[c]
		end, base := ci.Start+ci.NNodes, indptr[ci.Start]
		for k < len(order) && dst[order[k]] < end {
			v := dst[order[k]]
			row := adj[indptr[v]-base : indptr[v+1]-base]
			sorted := slices.IsSorted(row)
			for ; k < len(order) && dst[order[k]] == v; k++ {
				i := order[k]
				p := -1
				if sorted {
					if j, ok := slices.BinarySearch(row, src[i]); ok {
						p = j
					}
				} else {
					p = slices.Index(row, src[i])
				}
				out[i] = epoch.NoEdge
				if p >= 0 {
					out[i] = int64(indptr[v]) + int64(p)
				}
			}
		}
	}
	return out, indptr, nil
}

// Pairs returns the pair (src, dst) of each stored edge id (in [0,
// num_edges)) and the row offsets, in one pass as Resolve.
func Pairs(ctx context.Context, g *chunkfmt.Graph, eids []int64) (src, dst []uint32, indptr []uint64, err error) {
	m := g.Manifest
	for i, id := range eids {
		if id < 0 || uint64(id) >= m.NumEdges {
			return nil, nil, nil, fmt.Errorf("edgeids: edge id %d (index %d) is not in [0, %d)", id, i, m.NumEdges)
		}
	}
	order := make([]int32, len(eids))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch {
		case eids[a] < eids[b]:
			return -1
		case eids[a] > eids[b]:
			return 1
		}
		return 0
	})
	src, dst = make([]uint32, len(eids)), make([]uint32, len(eids))
	indptr = make([]uint64, uint64(m.NumNodes)+1)
	k := 0
	for c := range m.Chunks {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		adj, err := g.ChunkCSR(c, indptr)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("edgeids: %w", err)
		}
		ci := &m.Chunks[c]
		lo, hi := ci.Start, ci.Start+ci.NNodes
		base, last := indptr[lo], indptr[hi]
		for ; k < len(order) && uint64(eids[order[k]]) < last; k++ {
			i := order[k]
			e := uint64(eids[i])
			// The node whose row holds e: the last with indptr[v] <= e.
			v := lo + uint32(sort.Search(int(hi-lo), func(j int) bool { return indptr[lo+uint32(j)+1] > e }))
			src[i], dst[i] = adj[e-base], v
		}
	}
	return src, dst, indptr, nil
}
