package epoch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteBlocks is an independent, quadratic rendering of DESIGN §5.
func bruteBlocks(r *Result, seeds []uint32) *Blocks {
	b := &Blocks{Epoch: r.Key.Epoch, Seeds: slices.Clone(seeds)}
	dst := slices.Clone(seeds)
	for h, ly := range r.Layers {
		_ = h
		src := slices.Clone(dst)
		var es, ed []int32
		for i, v := range dst {
			row := slices.Index(ly.Frontier, v)
			if row < 0 {
				panic(fmt.Sprintf("brute: node %d not in frontier %d", v, h))
			}
			for t := 0; t < ly.Fanout; t++ {
				s := ly.Samples[row*ly.Fanout+t]
				if s < 0 {
					continue
				}
				j := slices.Index(src, uint32(s))
				if j < 0 {
					j = len(src)
					src = append(src, uint32(s))
				}
				es = append(es, int32(j))
				ed = append(ed, int32(i))
			}
		}
		b.Hops = append(b.Hops, Hop{Dst: dst, Src: src, EdgeSrc: es, EdgeDst: ed, EdgeIDs: bruteEdgeIDs(ly, dst)})
		dst = slices.Clone(src)
	}
	return b
}

// bruteEdgeIDs lists the edge ids of nodes' valid samples in row and slot
// order, or nil for a layer without edge ids.
func bruteEdgeIDs(ly Layer, nodes []uint32) []int64 {
	if ly.EdgeIDs == nil {
		return nil
	}
	out := []int64{}
	for _, v := range nodes {
		row := slices.Index(ly.Frontier, v)
		for t := 0; t < ly.Fanout; t++ {
			if ly.Samples[row*ly.Fanout+t] >= 0 {
				out = append(out, ly.EdgeIDs[row*ly.Fanout+t])
			}
		}
	}
	return out
}

// brutePyG is an independent rendering of PyG's NeighborLoader semantics,
// written from issue 13's statement and nothing else: n_id starts with the
// seeds in request order; for h = 0 … L−1, for each node first reached at
// hop h (the seeds for h = 0) in n_id order, for each of its layer-h
// samples in slot order (skipping −1): if the sampled node is new, append
// it to n_id; emit the edge (local id of the sampled node → local id of
// the node being expanded). It returns n_id, each hop's edges as
// (src, dst) n_id positions, and each hop's edge ids (nil without).
func brutePyG(r *Result, seeds []uint32) (nid []uint32, src, dst [][]int, eids [][]int64) {
	local := map[uint32]int{}
	for i, v := range seeds {
		local[v] = i
		nid = append(nid, v)
	}
	lo, hi := 0, len(seeds)
	for h, ly := range r.Layers {
		var es, ed []int
		var ei []int64
		for i := lo; i < hi; i++ {
			row := slices.Index(ly.Frontier, nid[i])
			if row < 0 {
				panic(fmt.Sprintf("brutePyG: node %d not in frontier %d", nid[i], h))
			}
			for t := 0; t < ly.Fanout; t++ {
				s := ly.Samples[row*ly.Fanout+t]
				if s < 0 {
					continue
				}
				j, ok := local[uint32(s)]
				if !ok {
					j = len(nid)
					local[uint32(s)] = j
					nid = append(nid, uint32(s))
				}
				es, ed = append(es, j), append(ed, i)
				if ly.EdgeIDs != nil {
					ei = append(ei, ly.EdgeIDs[row*ly.Fanout+t])
				}
			}
		}
		src, dst, eids = append(src, es), append(dst, ed), append(eids, ei)
		lo, hi = hi, len(nid)
	}
	return nid, src, dst, eids
}

// equalPyG compares PyG-semantics Blocks with brutePyG's rendering: the
// last hop's src is n_id, hop h's dst the nodes first reached at hop h-1,
// its edges (src into n_id, dst into dst shifted by dst's place in n_id).
func equalPyG(b *Blocks, r *Result, seeds []uint32) error {
	nid, src, dst, eids := brutePyG(r, seeds)
	if b.Semantics != PyG || !slices.Equal(b.Nodes(), nid) || len(b.Hops) != len(r.Layers) {
		return fmt.Errorf("semantics %v, n_id %v, want %v", b.Semantics, b.Nodes(), nid)
	}
	known := len(seeds)
	for h, hop := range b.Hops {
		lo := known - len(hop.Dst)
		if lo < 0 || !slices.Equal(hop.Dst, nid[lo:known]) || !slices.Equal(hop.Src, nid[:len(hop.Src)]) {
			return fmt.Errorf("hop %d: dst %v / src %v are not n_id[%d:%d] / a prefix of n_id", h+1, hop.Dst, hop.Src, lo, known)
		}
		if len(hop.EdgeSrc) != len(src[h]) || len(hop.EdgeDst) != len(src[h]) {
			return fmt.Errorf("hop %d: %d edges, want %d", h+1, len(hop.EdgeSrc), len(src[h]))
		}
		for e := range hop.EdgeSrc {
			if int(hop.EdgeSrc[e]) != src[h][e] || lo+int(hop.EdgeDst[e]) != dst[h][e] {
				return fmt.Errorf("hop %d edge %d: (%d, %d+%d), want (%d, %d)", h+1, e, hop.EdgeSrc[e], lo, hop.EdgeDst[e], src[h][e], dst[h][e])
			}
		}
		if !slices.Equal(hop.EdgeIDs, eids[h]) || (hop.EdgeIDs == nil) != (eids[h] == nil && r.Layers[h].EdgeIDs == nil) {
			return fmt.Errorf("hop %d: edge ids %v, want %v", h+1, hop.EdgeIDs, eids[h])
		}
		known = len(hop.Src)
	}
	return nil
}

func equalBlocks(a, b *Blocks) error {
	if a.Epoch != b.Epoch || !slices.Equal(a.Seeds, b.Seeds) || len(a.Hops) != len(b.Hops) {
		return fmt.Errorf("header differs: epoch %d/%d, %d/%d hops", a.Epoch, b.Epoch, len(a.Hops), len(b.Hops))
	}
	for h := range a.Hops {
		x, y := a.Hops[h], b.Hops[h]
		for _, c := range []struct {
			name string
			eq   bool
		}{
			{"dst", slices.Equal(x.Dst, y.Dst)},
			{"src", slices.Equal(x.Src, y.Src)},
			{"edge_src", slices.Equal(x.EdgeSrc, y.EdgeSrc)},
			{"edge_dst", slices.Equal(x.EdgeDst, y.EdgeDst)},
			{"e_id", slices.Equal(x.EdgeIDs, y.EdgeIDs) && (x.EdgeIDs == nil) == (y.EdgeIDs == nil)},
		} {
			if !c.eq {
				return fmt.Errorf("hop %d: %s differs", h+1, c.name)
			}
		}
	}
	return nil
}

// checkInvariants asserts the structural properties of §5 without the
// reference: hop chaining, src prefix, edge rows, index ranges.
func checkInvariants(t *testing.T, r *Result, b *Blocks) {
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
			row, ok := search(ly.Frontier, hop.Dst[d])
			if !ok || !slices.Contains(ly.Row(row), int32(hop.Src[s])) {
				t.Fatalf("hop %d edge %d: source %d is not in node %d's sample row", h+1, e, hop.Src[s], hop.Dst[d])
			}
		}
	}
}

// eachLookup runs fn with each way of finding rows (binary search or
// sort-and-merge, mergeRatio) and of relabelling without a dense index
// (hash table or sorting, sortRelabelMin), forced and at the defaults.
func eachLookup(t *testing.T, fn func(t *testing.T)) {
	defer func(m, s int) { mergeRatio, sortRelabelMin = m, s }(mergeRatio, sortRelabelMin)
	for _, c := range [][2]int{{0, 1 << 30}, {64, 1 << 15}, {1 << 30, 0}, {1 << 30, 1 << 30}, {0, 0}} {
		mergeRatio, sortRelabelMin = c[0], c[1]
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
	}
	for ci, c := range cases {
		g := randomGraph(r, c.n, c.maxDeg, c.dups)
		train := randomSeeds(r, c.n, c.n/3+1)
		res := sampleEpoch(g, train, c.fanouts, Key{Seed: uint64(ci), Epoch: uint32(ci * 3), Replace: c.replace})
		if err := res.Validate(); err != nil {
			t.Fatalf("case %d: %v", ci, err)
		}
		if ci%2 == 1 {
			withEdgeIDs(res)
		}
		dense, err := res.Index(uint32(c.n))
		if err != nil {
			t.Fatal(err)
		}
		asms := map[string]*Assembler{
			"search": NewAssembler(res, nil),
			"dense":  NewAssembler(res, dense),
			"map":    NewAssembler(res, res.MapIndex()),
		}
		for trial := 0; trial < 20; trial++ {
			m := 1 + r.IntN(len(train))
			perm := r.Perm(len(train))[:m]
			seeds := make([]uint32, m)
			for i, p := range perm {
				seeds[i] = train[p]
			}
			want := bruteBlocks(res, seeds)
			for name, a := range asms {
				got, err := a.Sample(seeds)
				if err != nil {
					t.Fatalf("case %d %s: %v", ci, name, err)
				}
				if err := equalBlocks(got, want); err != nil {
					t.Fatalf("case %d %s trial %d: %v", ci, name, trial, err)
				}
				checkInvariants(t, res, got)
				// NodeSet is the last hop's src, appended.
				nodes, err := a.NodeSet(seeds, DGL, []uint32{7})
				if err != nil {
					t.Fatalf("case %d %s: NodeSet: %v", ci, name, err)
				}
				if last := want.Hops[len(want.Hops)-1].Src; nodes[0] != 7 || !slices.Equal(nodes[1:], last) || !slices.Equal(got.Nodes(), last) {
					t.Fatalf("case %d %s trial %d: NodeSet differs from the last hop's src", ci, name, trial)
				}
				pyg, err := a.Assemble(seeds, PyG)
				if err != nil {
					t.Fatalf("case %d %s: PyG: %v", ci, name, err)
				}
				if err := equalPyG(pyg, res, seeds); err != nil {
					t.Fatalf("case %d %s trial %d: PyG: %v", ci, name, trial, err)
				}
				nodes, err = a.NodeSet(seeds, PyG, nil)
				if err != nil || !slices.Equal(nodes, pyg.Nodes()) {
					t.Fatalf("case %d %s trial %d: PyG NodeSet %v (%v), want %v", ci, name, trial, nodes, err, pyg.Nodes())
				}
			}
		}
	}
}

// TestSampleWithoutPrefetch runs the brute-force comparison with the
// touching loads that replace prefetch instructions on other machines.
func TestSampleWithoutPrefetch(t *testing.T) {
	defer func(p bool) { usePrefetch = p }(usePrefetch)
	for _, p := range []bool{false, havePrefetch} {
		usePrefetch = p
		t.Run(fmt.Sprintf("prefetch=%v", p), testSampleMatchesBruteForce)
	}
}

func TestSampleErrors(t *testing.T) { eachLookup(t, testSampleErrors) }

func testSampleErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := randomGraph(r, 100, 6, false)
	res := sampleEpoch(g, []uint32{1, 5, 9, 20}, []int{3, 2}, Key{Seed: 7})
	ix, _ := res.Index(0)
	for _, a := range []*Assembler{NewAssembler(res, nil), NewAssembler(res, ix), NewAssembler(res, res.MapIndex())} {
		if _, err := a.Sample([]uint32{5, 6}); !errors.Is(err, ErrNotInFrontier) {
			t.Fatalf("seed 6 not in frontier: got %v", err)
		} else if !containsNum(err.Error(), 6) {
			t.Fatalf("error does not name node 6: %v", err)
		}
		if _, err := a.Sample([]uint32{5, 1000000}); !errors.Is(err, ErrNotInFrontier) {
			t.Fatalf("seed beyond the index: got %v", err)
		}
		if _, err := a.Sample([]uint32{5, 9, 5}); !errors.Is(err, ErrDuplicateSeed) {
			t.Fatalf("duplicate seed: got %v", err)
		}
		if _, err := a.NodeSet([]uint32{5, 9, 5}, DGL, nil); !errors.Is(err, ErrDuplicateSeed) {
			t.Fatalf("NodeSet, duplicate seed: got %v", err)
		}
		if _, err := a.NodeSet([]uint32{5, 6}, PyG, nil); !errors.Is(err, ErrNotInFrontier) {
			t.Fatalf("NodeSet, seed 6 not in frontier: got %v", err)
		}
		// The assembler must still work after an error.
		b, err := a.Sample([]uint32{20, 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := equalBlocks(b, bruteBlocks(res, []uint32{20, 1})); err != nil {
			t.Fatal(err)
		}
	}
	if b := (&Blocks{Seeds: []uint32{4, 2}}); !slices.Equal(b.Nodes(), b.Seeds) {
		t.Fatal("Nodes of blocks without hops is not the seeds")
	}
	empty, err := res.Sample(nil)
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
	b := &Blocks{Epoch: 3, Seeds: []uint32{4}, Hops: []Hop{
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
	var back Blocks
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Epoch != 3 || !slices.Equal(back.Hops[0].Src, b.Hops[0].Src) || len(back.Hops[1].EdgeSrc) != 0 {
		t.Fatalf("round trip: %+v", back)
	}
	// By value and nil Blocks hops.
	got, _ = json.Marshal(Blocks{Epoch: 1})
	if string(got) != `{"epoch":1,"seeds":[],"hops":[]}` {
		t.Fatalf("empty: %s", got)
	}
}

func TestIndexAndZeroLayers(t *testing.T) {
	res := testResult(t, 6, 200, []int{3})
	if _, err := res.Index(res.Final[len(res.Final)-1]); err == nil {
		t.Fatal("index smaller than the node ids accepted")
	}
	ix, err := res.Index(1000)
	if err != nil || ix.Bytes() != 1000*4 || res.DenseIndexBytes(1000) != ix.Bytes() {
		t.Fatalf("index of 1000 nodes: %v, %d bytes", err, ix.Bytes())
	}
	// A seed beyond a dense index is simply not in the frontier.
	if _, err := NewAssembler(res, ix).Sample([]uint32{5000}); !errors.Is(err, ErrNotInFrontier) {
		t.Fatalf("seed beyond the index: %v", err)
	}
	// Zero layers: the seeds must still be training nodes, no hops.
	zero := &Result{Key: Key{Epoch: 4}, Final: []uint32{2, 5, 9}}
	b, err := zero.Sample([]uint32{9, 2})
	if err != nil || len(b.Hops) != 0 || b.Epoch != 4 || !slices.Equal(b.Seeds, []uint32{9, 2}) {
		t.Fatalf("zero layers: %+v %v", b, err)
	}
	if _, err := zero.Sample([]uint32{3}); !errors.Is(err, ErrNotInFrontier) {
		t.Fatalf("zero layers, foreign seed: %v", err)
	}
	if _, err := zero.Sample([]uint32{2, 2}); !errors.Is(err, ErrDuplicateSeed) {
		t.Fatalf("zero layers, duplicate seed: %v", err)
	}
}

// TestAssemblerReuse interleaves minibatches of very different sizes on
// one Assembler, so that its tables shrink, grow and wrap generations.
func TestAssemblerReuse(t *testing.T) { eachLookup(t, testAssemblerReuse) }

func testAssemblerReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	g := randomGraph(r, 3000, 20, false)
	train := randomSeeds(r, 3000, 2000)
	res := sampleEpoch(g, train, []int{6, 3}, Key{Seed: 1})
	ix, _ := res.Index(0)
	asms := []*Assembler{NewAssembler(res, nil), NewAssembler(res, ix)}
	for i := 0; i < 24; i++ {
		m := 1 + r.IntN(4)
		if i%3 == 0 {
			m = 300 + r.IntN(500)
		}
		seeds := pick(r, train, m)
		want := bruteBlocks(res, seeds)
		for _, a := range asms {
			got, err := a.Sample(seeds)
			if err != nil {
				t.Fatal(err)
			}
			if err := equalBlocks(got, want); err != nil {
				t.Fatalf("batch %d (%d seeds): %v", i, m, err)
			}
		}
	}
	// Generation wrap-around of the hash table.
	var lt localTable
	lt.reset(10)
	lt.gen = ^uint32(0)
	lt.insert(7, 1)
	lt.reset(10)
	if _, fresh := lt.insert(7, 2); !fresh {
		t.Fatal("stale entry survived a generation wrap")
	}
	var dt denseTable
	dt.reset(10)
	dt.gen = ^uint32(0)
	dt.insert(7, 1)
	dt.reset(10)
	if _, fresh := dt.insert(7, 2); !fresh {
		t.Fatal("stale dense entry survived a generation wrap")
	}
}
