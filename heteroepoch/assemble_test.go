package heteroepoch

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// tinySchema: authors a0..a2 write papers p0..p3 (writes rows p0 [a0 a1]
// p1 [a1] p2 [a2] p3 [a0], indptr 0 2 3 4 5), papers cite papers (rows
// p0 [p1 p2] p1 [p3] p2 [p0] p3 [], indptr 0 2 3 4 4), and rev_writes
// (rows a0 [p0 p3] a1 [p0 p1] a2 [p2], indptr 0 2 4 5).
func tinySchema() *Schema {
	return &Schema{
		NodeTypes: []NodeType{{Name: "author", Count: 3}, {Name: "paper", Count: 4}},
		Relations: []Relation{{Src: "author", Name: "writes", Dst: "paper"}, {Src: "paper", Name: "cites", Dst: "paper"}, {Src: "paper", Name: "rev_writes", Dst: "author"}},
	}
}

// tinyResult is the epoch of seeds p0, p2 with fanouts writes [5, -1],
// cites [5, 5], rev_writes [5, 5], written out by hand: every fanout is
// above every degree, so each row is the node's whole adjacency in CSR
// order (-1 in the rest of its slots), with its edge ids.
func tinyResult() *Result {
	pad := func(row []int32, k int) []int32 {
		out := slices.Clone(row)
		for len(out) < k {
			out = append(out, -1)
		}
		return out
	}
	pad64 := func(row []int64, k int) []int64 {
		out := slices.Clone(row)
		for len(out) < k {
			out = append(out, -1)
		}
		return out
	}
	rows := func(k int, rs ...[]int32) []int32 {
		var out []int32
		for _, r := range rs {
			out = append(out, pad(r, k)...)
		}
		return out
	}
	ids := func(k int, rs ...[]int64) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, pad64(r, k)...)
		}
		return out
	}
	return &Result{
		Key:     epoch.Key{Seed: 1},
		Schema:  *tinySchema(),
		Fanouts: [][]int{{5, epoch.AllNeighbors}, {5, 5}, {5, 5}},
		Frontiers: [][][]uint32{
			{{}, {0, 2}},
			{{0, 1, 2}, {0, 1, 2}},
			{{0, 1, 2}, {0, 1, 2, 3}},
		},
		Layers: [][]epoch.Layer{
			{
				{Frontier: []uint32{0, 2}, Fanout: 5, Samples: rows(5, []int32{0, 1}, []int32{2}), EdgeIDs: ids(5, []int64{0, 1}, []int64{3})},
				{Frontier: []uint32{0, 2}, Fanout: 5, Samples: rows(5, []int32{1, 2}, []int32{0}), EdgeIDs: ids(5, []int64{0, 1}, []int64{3})},
				{Frontier: []uint32{}, Fanout: 5, Samples: []int32{}, EdgeIDs: []int64{}},
			},
			{
				{Frontier: []uint32{0, 1, 2}, Fanout: epoch.AllNeighbors, Samples: []int32{0, 1, 1, 2}, EdgeIDs: []int64{0, 1, 2, 3}, Offsets: []int64{0, 2, 3, 4}},
				{Frontier: []uint32{0, 1, 2}, Fanout: 5, Samples: rows(5, []int32{1, 2}, []int32{3}, []int32{0}), EdgeIDs: ids(5, []int64{0, 1}, []int64{2}, []int64{3})},
				{Frontier: []uint32{0, 1, 2}, Fanout: 5, Samples: rows(5, []int32{0, 3}, []int32{0, 1}, []int32{2}), EdgeIDs: ids(5, []int64{0, 1}, []int64{2, 3}, []int64{4})},
			},
		},
	}
}

// The minibatch of seeds (p2, p0) of tinyResult, worked out by hand, in
// both semantics (heterosample's TestTinyByHand samples the same epoch
// from chunk stores and checks it against brute-force renderings of
// pyg-lib's and DGL's samplers too).
func TestAssembleByHand(t *testing.T) {
	res := tinyResult()
	seeds := []Seeds{{Type: "paper", Nodes: []uint32{2, 0}}}

	// PyG. Hop 1 expands the seeds p2, p0 (paper locals 0, 1): writes
	// reaches a2, then a0, a1 (author locals 0, 1, 2); cites reaches p0
	// (local 1), then p1 (new, local 2) and p2 (local 0); rev_writes
	// expands no author (none was reached before hop 1). Hop 2 expands
	// what hop 1 added: p1 through writes (a1) and cites (p3, new: local
	// 3), and a2, a0, a1 through rev_writes.
	want := &PyGBatch{
		Nodes: []PyGNodes{
			{NID: []uint32{2, 0, 1}, NumSampledNodes: []int{0, 3, 0}, BatchSize: 0},
			{NID: []uint32{2, 0, 1, 3}, NumSampledNodes: []int{2, 1, 1}, BatchSize: 2},
		},
		Edges: []PyGEdges{
			{Row: []int32{0, 1, 2, 2}, Col: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}, NumSampledEdges: []int{3, 1}},
			{Row: []int32{1, 2, 0, 3}, Col: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}, NumSampledEdges: []int{3, 1}},
			{Row: []int32{0, 1, 3, 1, 2}, Col: []int32{0, 1, 1, 2, 2}, EID: []int64{4, 0, 1, 2, 3}, NumSampledEdges: []int{0, 5}},
		},
	}
	got, err := res.AssemblePyG(seeds)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PyG\n got %+v\nwant %+v", got, want)
	}

	// DGL. Hop 1: dst papers [p2 p0], no authors; src nodes start with
	// the dst nodes. Hop 2: dst = hop 1's src, every one expanded again.
	wantDGL := []DGLBlock{
		{
			DstNID: [][]uint32{{}, {2, 0}},
			SrcNID: [][]uint32{{2, 0, 1}, {2, 0, 1}},
			Edges: []DGLEdges{
				{Src: []int32{0, 1, 2}, Dst: []int32{0, 1, 1}, EID: []int64{3, 0, 1}},
				{Src: []int32{1, 2, 0}, Dst: []int32{0, 1, 1}, EID: []int64{3, 0, 1}},
				{Src: []int32{}, Dst: []int32{}, EID: []int64{}},
			},
		},
		{
			DstNID: [][]uint32{{2, 0, 1}, {2, 0, 1}},
			SrcNID: [][]uint32{{2, 0, 1}, {2, 0, 1, 3}},
			Edges: []DGLEdges{
				{Src: []int32{0, 1, 2, 2}, Dst: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}},
				{Src: []int32{1, 2, 0, 3}, Dst: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}},
				{Src: []int32{0, 1, 3, 1, 2}, Dst: []int32{0, 1, 1, 2, 2}, EID: []int64{4, 0, 1, 2, 3}},
			},
		},
	}
	blocks, err := res.AssembleDGL(seeds)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(blocks, wantDGL) {
		t.Fatalf("DGL blocks\n got %+v\nwant %+v", blocks, wantDGL)
	}
	if n := res.SampledEdges(); n != 3+3+4+4+5 {
		t.Errorf("SampledEdges %d, want 19 (the valid slots of every layer)", n)
	}
}

// A minibatch's seeds must be distinct, of known types, and in the
// epoch's frontier_0; each refusal names the seed.
func TestAssembleRefusesSeeds(t *testing.T) {
	res := tinyResult()
	for _, tc := range []struct {
		name  string
		seeds []Seeds
		is    error
	}{
		{"repeated", []Seeds{{Type: "paper", Nodes: []uint32{2, 2}}}, ErrInvalid},
		{"unknown type", []Seeds{{Type: "venue", Nodes: []uint32{0}}}, ErrInvalid},
		{"beyond its type", []Seeds{{Type: "paper", Nodes: []uint32{4}}}, ErrInvalid},
		{"outside frontier_0", []Seeds{{Type: "paper", Nodes: []uint32{1}}}, epoch.ErrNotInFrontier},
	} {
		if _, err := res.AssemblePyG(tc.seeds); !errors.Is(err, tc.is) {
			t.Errorf("PyG %s: %v, want %v", tc.name, err, tc.is)
		}
		if _, err := res.AssembleDGL(tc.seeds); !errors.Is(err, tc.is) {
			t.Errorf("DGL %s: %v, want %v", tc.name, err, tc.is)
		}
	}
}
