package epoch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
)

// checkInvariants asserts the structural properties of §5 without the
// reference: hop chaining, src prefix, edge rows, index ranges.
func checkInvariants(t *testing.T, r *epoch.Result, b *epoch.Blocks) {
	t.Helper()
	for h, hop := range b.Hops {
		if h == 0 && !slices.Equal(hop.Dst, b.Seeds) {
			t.Fatalf("hop 1 dst != seeds")
		}
		if h > 0 && !slices.Equal(hop.Dst, b.Hops[h-1].Src) {
			t.Fatalf("hop %d dst != hop %d src", h+1, h)
		}
		if len(hop.Src) < len(hop.Dst) || !slices.Equal(hop.Src[:len(hop.Dst)], hop.Dst) {
			t.Fatalf("hop %d: src does not start with dst", h+1)
		}
		seen := map[uint32]bool{}
		for _, v := range hop.Src {
			if seen[v] {
				t.Fatalf("hop %d: src repeats node %d", h+1, v)
			}
			seen[v] = true
		}
		if len(hop.EdgeSrc) != len(hop.EdgeDst) {
			t.Fatalf("hop %d: edge arrays differ in length", h+1)
		}
		ly := &r.Layers[h]
		for e := range hop.EdgeSrc {
			s, d := hop.EdgeSrc[e], hop.EdgeDst[e]
			if s < 0 || int(s) >= len(hop.Src) || d < 0 || int(d) >= len(hop.Dst) {
				t.Fatalf("hop %d edge %d: local ids (%d,%d) out of range", h+1, e, s, d)
			}
			if e > 0 && d < hop.EdgeDst[e-1] {
				t.Fatalf("hop %d edge %d: not ordered by dst", h+1, e)
			}
			row, ok := epoch.Search(ly.Frontier, hop.Dst[d])
			if !ok || !slices.Contains(ly.Row(row), int32(hop.Src[s])) {
				t.Fatalf("hop %d edge %d: source %d is not in node %d's sample row", h+1, e, hop.Src[s], hop.Dst[d])
			}
		}
	}
}

// eachLookup runs fn with each way of finding rows (binary search or
// sort-and-merge, mergeRatio) and of relabelling without an index
// (hash table or sorting, sortRelabelMin), forced and at the defaults.
func eachLookup(t *testing.T, fn func(t *testing.T)) {
	for _, c := range [][2]int{{0, 1 << 30}, {64, 1 << 15}, {1 << 30, 0}, {1 << 30, 1 << 30}, {0, 0}} {
		defer epoch.SetLookup(c[0], c[1])()
		t.Run(fmt.Sprintf("mergeRatio=%d,sortRelabelMin=%d", c[0], c[1]), fn)
	}
}

func TestSampleMatchesBruteForce(t *testing.T) { eachLookup(t, testSampleMatchesBruteForce) }

func testSampleMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		n, maxDeg int
		dups      bool
		fanouts   []int
		replace   bool
	}{
		{50, 4, false, []int{3}, false},
		{200, 12, false, []int{5, 3}, false},
		{200, 12, true, []int{5, 3}, false},
		{300, 20, false, []int{15, 10, 5}, false},
		{300, 20, true, []int{4, 4, 4}, true},
		{1000, 8, false, []int{2, 2, 2, 2}, true},
		{40, 60, true, []int{64}, false},
		// Full layers (fanout -1): alone, mixed, and a multigraph's
		// repeated neighbors, with and without edge ids (odd cases).
		{200, 12, true, []int{-1}, false},
		{300, 20, true, []int{-1, 3}, true},
		{300, 10, false, []int{4, -1}, false},
		{150, 8, true, []int{-1, -1}, false},
		{120, 30, true, []int{2, -1, 2}, true},
	}
	for ci, c := range cases {
		g := epochtest.RandomGraph(r, c.n, c.maxDeg, c.dups)
		train := epochtest.RandomSeeds(r, c.n, c.n/3+1)
		res := epochtest.SampleEpoch(g, train, c.fanouts, epoch.Key{Seed: uint64(ci), Epoch: uint32(ci * 3), Replace: c.replace})
		if err := res.Validate(); err != nil {
			t.Fatalf("case %d: %v", ci, err)
		}
		if ci%2 == 1 {
			epochtest.WithEdgeIDs(res)
		}
		dense, err := res.Index(uint32(c.n))
		if err != nil {
			t.Fatal(err)
		}
		batch, err := res.Index(uint32(c.n), epoch.WithoutRelabelTable())
		if err != nil {
			t.Fatal(err)
		}
		asms := map[string]*epoch.Assembler{
			"search": epoch.NewAssembler(res, nil),
			"dense":  epoch.NewAssembler(res, dense),
			"batch":  epoch.NewAssembler(res, batch),
			"map":    epoch.NewAssembler(res, res.MapIndex()),
		}
		for trial := 0; trial < 20; trial++ {
			m := 1 + r.IntN(len(train))
			perm := r.Perm(len(train))[:m]
			seeds := make([]uint32, m)
			for i, p := range perm {
				seeds[i] = train[p]
			}
			want := epochtest.BruteBlocks(res, seeds)
			for name, a := range asms {
				got, err := a.Assemble(seeds, epoch.DGL)
				if err != nil {
					t.Fatalf("case %d %s: %v", ci, name, err)
				}
				if err := epochtest.EqualBlocks(got, want); err != nil {
					t.Fatalf("case %d %s trial %d: %v", ci, name, trial, err)
				}
				checkInvariants(t, res, got)
				// NodeSet is the last hop's src, appended.
				nodes, err := a.NodeSet(seeds, epoch.DGL, []uint32{7})
				if err != nil {
					t.Fatalf("case %d %s: NodeSet: %v", ci, name, err)
				}
				if last := want.Hops[len(want.Hops)-1].Src; nodes[0] != 7 || !slices.Equal(nodes[1:], last) || !slices.Equal(got.Nodes(), last) {
					t.Fatalf("case %d %s trial %d: NodeSet differs from the last hop's src", ci, name, trial)
				}
				pyg, err := a.Assemble(seeds, epoch.PyG)
				if err != nil {
					t.Fatalf("case %d %s: PyG: %v", ci, name, err)
				}
				if err := epochtest.EqualPyG(pyg, res, seeds); err != nil {
					t.Fatalf("case %d %s trial %d: PyG: %v", ci, name, trial, err)
				}
				nodes, err = a.NodeSet(seeds, epoch.PyG, nil)
				if err != nil || !slices.Equal(nodes, pyg.Nodes()) {
					t.Fatalf("case %d %s trial %d: epoch.PyG NodeSet %v (%v), want %v", ci, name, trial, nodes, err, pyg.Nodes())
				}
			}
		}
	}
}

// TestSampleWithoutPrefetch runs the brute-force comparison with the
// touching loads that replace prefetch instructions on other machines.
func TestSampleWithoutPrefetch(t *testing.T) {
	defer epoch.SetPrefetch(epoch.HavePrefetch)()
	for _, p := range []bool{false, epoch.HavePrefetch} {
		epoch.SetPrefetch(p)
		t.Run(fmt.Sprintf("prefetch=%v", p), testSampleMatchesBruteForce)
	}
}

func TestSampleErrors(t *testing.T) { eachLookup(t, testSampleErrors) }

func testSampleErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := epochtest.RandomGraph(r, 100, 6, false)
	res := epochtest.SampleEpoch(g, []uint32{1, 5, 9, 20}, []int{3, 2}, epoch.Key{Seed: 7})
	ix, _ := res.Index(0)
	noTable, _ := res.Index(0, epoch.WithoutRelabelTable())
	for _, a := range []*epoch.Assembler{epoch.NewAssembler(res, nil), epoch.NewAssembler(res, ix), epoch.NewAssembler(res, noTable), epoch.NewAssembler(res, res.MapIndex())} {
		if _, err := a.Assemble([]uint32{5, 6}, epoch.DGL); !errors.Is(err, epoch.ErrNotInFrontier) {
			t.Fatalf("seed 6 not in frontier: got %v", err)
		} else if !containsNum(err.Error(), 6) {
			t.Fatalf("error does not name node 6: %v", err)
		}
		if _, err := a.Assemble([]uint32{5, 1000000}, epoch.DGL); !errors.Is(err, epoch.ErrNotInFrontier) {
			t.Fatalf("seed beyond the index: got %v", err)
		}
		if _, err := a.Assemble([]uint32{5, 9, 5}, epoch.DGL); !errors.Is(err, epoch.ErrDuplicateSeed) {
			t.Fatalf("duplicate seed: got %v", err)
		}
		if _, err := a.NodeSet([]uint32{5, 9, 5}, epoch.DGL, nil); !errors.Is(err, epoch.ErrDuplicateSeed) {
			t.Fatalf("NodeSet, duplicate seed: got %v", err)
		}
		if _, err := a.NodeSet([]uint32{5, 6}, epoch.PyG, nil); !errors.Is(err, epoch.ErrNotInFrontier) {
			t.Fatalf("NodeSet, seed 6 not in frontier: got %v", err)
		}
		// The assembler must still work after an error.
		b, err := a.Assemble([]uint32{20, 1}, epoch.DGL)
		if err != nil {
			t.Fatal(err)
		}
		if err := epochtest.EqualBlocks(b, epochtest.BruteBlocks(res, []uint32{20, 1})); err != nil {
			t.Fatal(err)
		}
	}
	if b := (&epoch.Blocks{Seeds: []uint32{4, 2}}); !slices.Equal(b.Nodes(), b.Seeds) {
		t.Fatal("Nodes of blocks without hops is not the seeds")
	}
	empty, err := res.Assemble(nil, epoch.DGL)
	if err != nil || len(empty.Hops) != 2 || len(empty.Hops[1].Src) != 0 {
		t.Fatalf("empty minibatch: %v %+v", err, empty)
	}
}

func containsNum(s string, n int) bool {
	return slices.Contains(splitNums(s), n)
}

func splitNums(s string) []int {
	var out []int
	cur, in := 0, false
	for _, c := range s + " " {
		if c >= '0' && c <= '9' {
			cur, in = cur*10+int(c-'0'), true
		} else if in {
			out = append(out, cur)
			cur, in = 0, false
		}
	}
	return out
}

func TestBlocksJSON(t *testing.T) {
	b := &epoch.Blocks{Epoch: 3, Seeds: []uint32{4}, Hops: []epoch.Hop{
		{Dst: []uint32{4}, Src: []uint32{4, 9}, EdgeSrc: []int32{1}, EdgeDst: []int32{0}},
		{Dst: []uint32{4, 9}, Src: []uint32{4, 9}},
	}}
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"epoch":3,"seeds":[4],"hops":[{"dst":[4],"src":[4,9],"edge_src":[1],"edge_dst":[0]},{"dst":[4,9],"src":[4,9],"edge_src":[],"edge_dst":[]}]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back epoch.Blocks
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Epoch != 3 || !slices.Equal(back.Hops[0].Src, b.Hops[0].Src) || len(back.Hops[1].EdgeSrc) != 0 {
		t.Fatalf("round trip: %+v", back)
	}
	// By value and nil Blocks hops.
	got, _ = json.Marshal(epoch.Blocks{Epoch: 1})
	if string(got) != `{"epoch":1,"seeds":[],"hops":[]}` {
		t.Fatalf("empty: %s", got)
	}
}

func TestIndexAndZeroLayers(t *testing.T) {
	res := epochtest.NewResult(t, 6, 200, []int{3})
	if _, err := res.Index(res.Final[len(res.Final)-1]); err == nil {
		t.Fatal("index smaller than the node ids accepted")
	}
	ix, err := res.Index(1000)
	// One 64-byte block per 384 node ids and layer: 3 blocks for 1000.
	if err != nil || ix.Bytes() != 3*64 || res.DenseIndexBytes(1000) != ix.Bytes() {
		t.Fatalf("index of 1000 nodes: %v, %d bytes", err, ix.Bytes())
	}
	// A seed beyond the index is simply not in the frontier.
	if _, err := epoch.NewAssembler(res, ix).Assemble([]uint32{5000}, epoch.DGL); !errors.Is(err, epoch.ErrNotInFrontier) {
		t.Fatalf("seed beyond the index: %v", err)
	}
	// Zero layers: the seeds must still be training nodes, no hops.
	zero := &epoch.Result{Key: epoch.Key{Epoch: 4}, Final: []uint32{2, 5, 9}}
	b, err := zero.Assemble([]uint32{9, 2}, epoch.DGL)
	if err != nil || len(b.Hops) != 0 || b.Epoch != 4 || !slices.Equal(b.Seeds, []uint32{9, 2}) {
		t.Fatalf("zero layers: %+v %v", b, err)
	}
	if _, err := zero.Assemble([]uint32{3}, epoch.DGL); !errors.Is(err, epoch.ErrNotInFrontier) {
		t.Fatalf("zero layers, foreign seed: %v", err)
	}
	if _, err := zero.Assemble([]uint32{2, 2}, epoch.DGL); !errors.Is(err, epoch.ErrDuplicateSeed) {
		t.Fatalf("zero layers, duplicate seed: %v", err)
	}
}

// TestAssemblerReuse interleaves minibatches of very different sizes on
// one Assembler, so that its tables shrink, grow and wrap generations.
func TestAssemblerReuse(t *testing.T) { eachLookup(t, testAssemblerReuse) }

func testAssemblerReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	g := epochtest.RandomGraph(r, 3000, 20, false)
	train := epochtest.RandomSeeds(r, 3000, 2000)
	res := epochtest.SampleEpoch(g, train, []int{6, 3}, epoch.Key{Seed: 1})
	ix, _ := res.Index(0)
	noTable, _ := res.Index(0, epoch.WithoutRelabelTable())
	asms := []*epoch.Assembler{epoch.NewAssembler(res, nil), epoch.NewAssembler(res, ix), epoch.NewAssembler(res, noTable)}
	for i := 0; i < 24; i++ {
		m := 1 + r.IntN(4)
		if i%3 == 0 {
			m = 300 + r.IntN(500)
		}
		seeds := epochtest.Pick(r, train, m)
		want := epochtest.BruteBlocks(res, seeds)
		for _, a := range asms {
			got, err := a.Assemble(seeds, epoch.DGL)
			if err != nil {
				t.Fatal(err)
			}
			if err := epochtest.EqualBlocks(got, want); err != nil {
				t.Fatalf("batch %d (%d seeds): %v", i, m, err)
			}
		}
	}

}

// TestIndexedMatchesSearch compares the indexed assembly (rank sets, with
// the relabel table over every node id and with the minibatch-sized hash
// table) against the assembly without an index (binary search or merge,
// and the hash table or sorting), byte for byte, on random epochs with
// and without edge ids, under both semantics: over 255 minibatches on one
// Assembler (the batch table's stamp wraps), sizes from 1 seed to most of
// the training nodes (its table grows within a minibatch), and with a
// node limit that a minibatch outgrows at a later hop (the hops after it
// start afresh).
func TestIndexedMatchesSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for ci, c := range []struct {
		n, maxDeg int
		fanouts   []int
		limit     int
	}{
		{2000, 12, []int{5, 4, 3}, 0},
		{5000, 30, []int{10, 5}, 0},
		{3000, 20, []int{6, 6, 6}, 400},
		{2000, 12, []int{-1, 4}, 0},
		{1500, 10, []int{3, -1}, 300},
	} {
		if c.limit > 0 {
			defer epoch.SetBatchMaxNodes(c.limit)()
		}
		g := epochtest.RandomGraph(r, c.n, c.maxDeg, true)
		train := epochtest.RandomSeeds(r, c.n, c.n/2)
		res := epochtest.SampleEpoch(g, train, c.fanouts, epoch.Key{Seed: uint64(ci), Epoch: 1})
		if ci == 1 {
			epochtest.WithEdgeIDs(res)
		}
		table, err := res.Index(0)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := res.Index(uint32(c.n), epoch.WithoutRelabelTable())
		if err != nil {
			t.Fatal(err)
		}
		old := epoch.NewAssembler(res, nil)
		asms := map[string]*epoch.Assembler{"table": epoch.NewAssembler(res, table), "batch": epoch.NewAssembler(res, batch)}
		for i := 0; i < 300; i++ {
			m := 1 + r.IntN(20)
			switch i % 7 {
			case 0:
				m = 1 + r.IntN(len(train))
			case 1:
				m = 200 + r.IntN(300)
			}
			seeds := epochtest.Pick(r, train, min(m, len(train)))
			sem := epoch.Semantics(i % 2)
			want, err := old.Assemble(seeds, sem)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON := want.AppendJSON(nil)
			for name, a := range asms {
				got, err := a.Assemble(seeds, sem)
				if err != nil {
					t.Fatalf("case %d minibatch %d %s: %v", ci, i, name, err)
				}
				if gotJSON := got.AppendJSON(nil); !bytes.Equal(gotJSON, wantJSON) {
					t.Fatalf("case %d minibatch %d (%d seeds, %v) %s: differs from the assembly without an index", ci, i, len(seeds), sem, name)
				}
				nodes, err := a.NodeSet(seeds, sem, nil)
				if err != nil || !slices.Equal(nodes, want.Nodes()) {
					t.Fatalf("case %d minibatch %d %s: NodeSet differs (%v)", ci, i, name, err)
				}
			}
		}
	}
}

// A hop over a full layer (fanout -1) holds, for each destination, every
// edge of its adjacency in the graph itself, once each, in CSR order, with
// edge ids where the layer has them: checked against the graph, not
// against the Result, under both semantics and every lookup.
func TestFullHopsHoldEveryEdge(t *testing.T) { eachLookup(t, testFullHopsHoldEveryEdge) }

func testFullHopsHoldEveryEdge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for ci, fan := range [][]int{{-1}, {-1, 2}, {3, -1}, {-1, -1, 2}} {
		n := 400
		g := epochtest.RandomGraph(r, n, 15, true)
		train := epochtest.RandomSeeds(r, n, n/2)
		res := epochtest.SampleEpoch(g, train, fan, epoch.Key{Seed: uint64(ci), Epoch: 2})
		// Edge ids as in the stored CSR: the graph's offset + the position.
		for l := range res.Layers {
			ly := &res.Layers[l]
			ly.EdgeIDs = make([]int64, len(ly.Samples))
			for i, v := range ly.Frontier {
				lo, hi := ly.Span(i)
				for j := lo; j < hi; j++ {
					ly.EdgeIDs[j] = -1
					if ly.Samples[j] >= 0 {
						ly.EdgeIDs[j] = int64(g.Off[v]) + int64(j-lo)
					}
				}
			}
		}
		if err := res.Validate(); err != nil {
			t.Fatal(err)
		}
		ix, err := res.Index(uint32(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []*epoch.Assembler{epoch.NewAssembler(res, nil), epoch.NewAssembler(res, ix)} {
			for trial := range 10 {
				seeds := epochtest.Pick(r, train, 1+r.IntN(30))
				for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
					b, err := a.Assemble(seeds, sem)
					if err != nil {
						t.Fatal(err)
					}
					for h, hop := range b.Hops {
						if fan[h] != epoch.AllNeighbors {
							continue
						}
						e := 0
						for i, v := range hop.Dst {
							for p, u := range g.Neighbors(v) {
								if e >= len(hop.EdgeSrc) || int(hop.EdgeDst[e]) != i || hop.Src[hop.EdgeSrc[e]] != u || hop.EdgeIDs[e] != int64(g.Off[v]+p) {
									t.Fatalf("fanouts %v trial %d %v hop %d: node %d's edge %d (neighbor %d, position %d) is not edge %d of the hop", fan, trial, sem, h+1, v, g.Off[v]+p, u, p, e)
								}
								e++
							}
						}
						if e != len(hop.EdgeSrc) {
							t.Fatalf("fanouts %v trial %d %v hop %d: %d edges, the destinations have %d", fan, trial, sem, h+1, len(hop.EdgeSrc), e)
						}
					}
				}
			}
		}
	}
}
