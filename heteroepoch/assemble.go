package heteroepoch

import (
	"fmt"
	"slices"

	"github.com/streamsampler/streamsampler/epoch"
)

// PyGBatch is a heterogeneous minibatch as PyG's NeighborLoader over a
// HeteroData returns it, field by field (the features x and labels y are
// rows of the types' stores at NID, gathered by the caller):
// Nodes[t] is data[node_type] for the schema's type t, Edges[r] is
// data[edge_type] for relation r.
type PyGBatch struct {
	Nodes []PyGNodes
	Edges []PyGEdges
}

// PyGNodes is one node type of a PyGBatch.
type PyGNodes struct {
	// NID is n_id: local ids of the type, its seeds first in the order
	// given, then every node the sample reached, in order of first
	// appearance (PyG's local id of a node is its position here).
	NID []uint32
	// NumSampledNodes is num_sampled_nodes, L+1 entries: the seeds, then
	// the nodes first reached at hop 1..L.
	NumSampledNodes []int
	// BatchSize is the type's number of seeds (PyG sets batch_size on the
	// input type: the first BatchSize entries of NID).
	BatchSize int
}

// PyGEdges is one relation (edge type) of a PyGBatch.
type PyGEdges struct {
	// Row and Col are edge_index: Row[i] the position in the src type's
	// NID of edge i's source (the sampled neighbor, the message's
	// sender), Col[i] the position in the dst type's NID of the node it
	// was sampled for.
	Row, Col []int32
	// EID is e_id: each edge's position in the relation's stored CSR; nil
	// when the epoch has no edge ids.
	EID []int64
	// NumSampledEdges is num_sampled_edges, L entries: the edges each hop
	// added.
	NumSampledEdges []int
}

// AssemblePyG assembles the minibatch of seeds with PyG's heterogeneous
// NeighborLoader semantics, as pyg-lib's hetero_neighbor_sample computes
// it (pyg_lib/csrc/sampler/cpu/neighbor_kernel.cpp, the heterogeneous
// `sample`, with csc = true as PyG calls it):
//
//   - n_id of each type starts with its seeds; the nodes a hop expands in
//     type t are those first reached at the previous hop (the seeds at hop
//     1), the slice of n_id[t] the previous hop added;
//   - a hop visits the relations in the schema's order; relation r expands
//     the slice of its dst type, node by node in n_id order, each node's
//     sample in slot order (empty slots skipped): a neighbor not yet in
//     n_id[src] is appended, and the edge (neighbor → node) is emitted;
//   - the slices move on only once every relation of the hop is done, so
//     a node reached at hop h is expanded at hop h+1 only, whichever
//     relation reached it; a relation with fanout 0 at a hop adds nothing.
//
// Each node's sample is its epoch sample for that layer and relation (a
// node first reached at hop h is in frontier h of its type: frontiers are
// nested), found by binary search. Seeds must be distinct and in the
// epoch's frontier_0 of their type (epoch.ErrNotInFrontier otherwise).
func (res *Result) AssemblePyG(seeds []Seeds) (*PyGBatch, error) {
	byType, err := res.checkSeeds(seeds)
	if err != nil {
		return nil, err
	}
	src, dst := res.Schema.RelTypes()
	T, R, L := len(res.Schema.NodeTypes), len(res.Schema.Relations), len(res.Layers)
	b := &PyGBatch{Nodes: make([]PyGNodes, T), Edges: make([]PyGEdges, R)}
	local := make([]map[uint32]int32, T)
	lo, hi := make([]int, T), make([]int, T)
	for t := range b.Nodes {
		b.Nodes[t].NID = slices.Clone(byType[t])
		b.Nodes[t].BatchSize = len(byType[t])
		b.Nodes[t].NumSampledNodes = append(make([]int, 0, L+1), len(byType[t]))
		local[t] = make(map[uint32]int32, len(byType[t]))
		for i, v := range byType[t] {
			local[t][v] = int32(i)
		}
		hi[t] = len(byType[t])
	}
	for r := range b.Edges {
		b.Edges[r].Row, b.Edges[r].Col = []int32{}, []int32{}
		b.Edges[r].NumSampledEdges = make([]int, L)
		if res.hasEdgeIDs() {
			b.Edges[r].EID = []int64{}
		}
	}
	for h := 0; h < L; h++ {
		for r := 0; r < R; r++ {
			ly := &res.Layers[h][r]
			if ly.Fanout == 0 {
				continue
			}
			s, d, e := src[r], dst[r], &b.Edges[r]
			for i := lo[d]; i < hi[d]; i++ {
				a, z, err := res.rowSpan(h, r, d, b.Nodes[d].NID[i])
				if err != nil {
					return nil, err
				}
				for j := a; j < z; j++ {
					x := ly.Samples[j]
					if x < 0 {
						continue
					}
					p := relabel(local[s], &b.Nodes[s].NID, uint32(x))
					e.Row = append(e.Row, p)
					e.Col = append(e.Col, int32(i))
					if e.EID != nil {
						e.EID = append(e.EID, ly.EdgeIDs[j])
					}
					e.NumSampledEdges[h]++
				}
			}
		}
		for t := range b.Nodes {
			lo[t], hi[t] = hi[t], len(b.Nodes[t].NID)
			b.Nodes[t].NumSampledNodes = append(b.Nodes[t].NumSampledNodes, hi[t]-lo[t])
		}
	}
	return b, nil
}

// DGLBlock is one hop of a heterogeneous minibatch as DGL's to_block makes
// it from a heterograph frontier: per node type its dst and src nodes
// (dgl.NID of each side, local ids of the type), per relation its edges
// (local ids into the relation's src type's SrcNID and dst type's
// DstNID) and their dgl.EID.
type DGLBlock struct {
	// DstNID[t] and SrcNID[t] are the type's dst and src nodes; SrcNID[t]
	// starts with DstNID[t] (to_block's include_dst_in_src), then the new
	// neighbors in order of first appearance.
	DstNID, SrcNID [][]uint32
	Edges          []DGLEdges
}

// DGLEdges is one relation's edges in a DGLBlock, ordered by dst node,
// then sample slot.
type DGLEdges struct {
	Src, Dst []int32
	// EID is each edge's position in the relation's stored CSR; nil when
	// the epoch has no edge ids.
	EID []int64
}

// AssembleDGL assembles the minibatch of seeds as DGL heterograph blocks,
// hop 1 first (DGL's blocks list is the reverse: blocks[0] is the
// outermost hop). Hop 1's dst nodes are the seeds of each type (a type
// without seeds has none); hop h+1's dst nodes are hop h's src nodes, type
// by type. A hop visits the relations in the schema's order and, for each,
// every dst node of the relation's dst type in order, each node's sample in
// slot order: a neighbor not yet among the src type's src nodes is
// appended there, and the edge is emitted. Seeds must be distinct and in
// frontier_0 of their type.
func (res *Result) AssembleDGL(seeds []Seeds) ([]DGLBlock, error) {
	byType, err := res.checkSeeds(seeds)
	if err != nil {
		return nil, err
	}
	src, dst := res.Schema.RelTypes()
	T, R, L := len(res.Schema.NodeTypes), len(res.Schema.Relations), len(res.Layers)
	blocks := make([]DGLBlock, L)
	cur := make([][]uint32, T)
	for t := range cur {
		cur[t] = slices.Clone(byType[t])
		if cur[t] == nil {
			cur[t] = []uint32{}
		}
	}
	for h := 0; h < L; h++ {
		bl := DGLBlock{DstNID: cur, SrcNID: make([][]uint32, T), Edges: make([]DGLEdges, R)}
		local := make([]map[uint32]int32, T)
		for t := range cur {
			bl.SrcNID[t] = slices.Clone(cur[t])
			local[t] = make(map[uint32]int32, len(cur[t]))
			for i, v := range cur[t] {
				local[t][v] = int32(i)
			}
		}
		for r := 0; r < R; r++ {
			e := &bl.Edges[r]
			e.Src, e.Dst = []int32{}, []int32{}
			if res.hasEdgeIDs() {
				e.EID = []int64{}
			}
			ly := &res.Layers[h][r]
			if ly.Fanout == 0 {
				continue
			}
			s, d := src[r], dst[r]
			for i, v := range bl.DstNID[d] {
				a, z, err := res.rowSpan(h, r, d, v)
				if err != nil {
					return nil, err
				}
				for j := a; j < z; j++ {
					x := ly.Samples[j]
					if x < 0 {
						continue
					}
					p := relabel(local[s], &bl.SrcNID[s], uint32(x))
					e.Src = append(e.Src, p)
					e.Dst = append(e.Dst, int32(i))
					if e.EID != nil {
						e.EID = append(e.EID, ly.EdgeIDs[j])
					}
				}
			}
		}
		blocks[h] = bl
		cur = bl.SrcNID
	}
	return blocks, nil
}

// rowSpan finds node v (of relation r's dst type d) in the relation's
// layer h: where its samples lie in the layer's Samples (and EdgeIDs).
func (res *Result) rowSpan(h, r, d int, v uint32) (int, int, error) {
	ly := &res.Layers[h][r]
	row, ok := slices.BinarySearch(ly.Frontier, v)
	if !ok {
		return 0, 0, fmt.Errorf("heteroepoch: hop %d, relation %s: node %d of type %q is not in its frontier %d (the epoch does not reach it)", h+1, res.Schema.Relations[r], v, res.Schema.NodeTypes[d].Name, h)
	}
	a, z := ly.Span(row)
	return a, z, nil
}

// checkSeeds checks a minibatch's seeds (known types, in range, distinct,
// in frontier_0 of their type) and returns them by type index.
func (res *Result) checkSeeds(seeds []Seeds) ([][]uint32, error) {
	byType, err := res.Schema.seedsByType(seeds, true)
	if err != nil {
		return nil, err
	}
	for t, ss := range byType {
		for _, v := range ss {
			if _, ok := slices.BinarySearch(res.Frontiers[0][t], v); !ok {
				return nil, fmt.Errorf("heteroepoch: seed %d of node type %q: %w", v, res.Schema.NodeTypes[t].Name, epoch.ErrNotInFrontier)
			}
		}
	}
	return byType, nil
}

// hasEdgeIDs reports whether the epoch's sampled layers carry edge ids.
func (res *Result) hasEdgeIDs() bool {
	for _, layer := range res.Layers {
		for _, ly := range layer {
			if ly.Fanout != 0 && ly.EdgeIDs != nil {
				return true
			}
		}
	}
	return false
}

// relabel returns node x's position in nid, where local maps the nodes
// of nid to their positions, appending x to both first when it is new.
func relabel(local map[uint32]int32, nid *[]uint32, x uint32) int32 {
	p, seen := local[x]
	if !seen {
		p = int32(len(*nid))
		local[x] = p
		*nid = append(*nid, x)
	}
	return p
}
