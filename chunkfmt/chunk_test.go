package chunkfmt

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChunkView reads every chunk of a written graph through ChunkView
// and checks the header against the manifest and each node's neighbors
// against the adjacency the graph was written from.
func TestChunkView(t *testing.T) {
	adj := randomGraph(rand.New(rand.NewPCG(5, 6)), 300, 40, false)
	adj[17] = nil // an empty list among the others
	g, err := Open(writeGraph(t, adj, 1024, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if len(g.Manifest.Chunks) < 3 {
		t.Fatalf("%d chunks: the test wants several", len(g.Manifest.Chunks))
	}
	for c, ci := range g.Manifest.Chunks {
		w, err := g.Reader.ChunkWords(c)
		if err != nil {
			t.Fatal(err)
		}
		v := ChunkView(w)
		if v.NumNodes() != ci.NNodes || v.StartNode() != ci.Start || v.HeaderWords() != uint64(MinHeaderWords+ci.NNodes) {
			t.Fatalf("chunk %d: n_nodes %d start %d header %d, manifest %+v", c, v.NumNodes(), v.StartNode(), v.HeaderWords(), ci)
		}
		if lo, _ := v.Span(0); uint64(lo) != v.HeaderWords() {
			t.Fatalf("chunk %d: off_0 %d, want the header's end %d", c, lo, v.HeaderWords())
		}
		for j := range v.NumNodes() {
			node := v.StartNode() + j
			lo, hi := v.Span(j)
			if nb := v.Neighbors(j); int(hi-lo) != len(nb) || !slices.Equal(nb, adj[node]) {
				t.Fatalf("node %d: span [%d,%d) neighbors %v, want %v", node, lo, hi, nb, adj[node])
			}
		}
		if _, hi := v.Span(v.NumNodes() - 1); int64(hi)*4 != ci.BytesUsed {
			t.Fatalf("chunk %d: last offset %d, manifest says %d bytes used", c, hi, ci.BytesUsed)
		}
	}
}
