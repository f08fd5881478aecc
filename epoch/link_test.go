package epoch_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/rng"
)

// linkFixture is a random graph as a stored CSR, training edges drawn
// from its stored edges (with their edge ids) and from arbitrary pairs
// (not stored: NoEdge), and each stored edge's reverse where the graph
// stores one.
type linkFixture struct {
	csr     *host.CSR
	edges   *epoch.EdgeSet
	reverse []int64
}

func newLinkFixture(r *rand.Rand, n, maxDeg, stored, held int) *linkFixture {
	g := epochtest.RandomGraph(r, n, maxDeg, false)
	csr := &host.CSR{Indptr: make([]uint64, n+1), Indices: slices.Clone(g.Adj)}
	for v := range n + 1 {
		csr.Indptr[v] = uint64(g.Off[v])
	}
	f := &linkFixture{csr: csr, edges: &epoch.EdgeSet{}}
	dstOf := func(eid int) uint32 { // the node whose row holds eid
		return uint32(sort.Search(n, func(v int) bool { return csr.Indptr[v+1] > uint64(eid) }))
	}
	for range stored {
		eid := r.IntN(len(csr.Indices))
		f.edges.Src = append(f.edges.Src, csr.Indices[eid])
		f.edges.Dst = append(f.edges.Dst, dstOf(eid))
		f.edges.EIDs = append(f.edges.EIDs, int64(eid))
	}
	for range held {
		f.edges.Src = append(f.edges.Src, uint32(r.IntN(n)))
		f.edges.Dst = append(f.edges.Dst, uint32(r.IntN(n)))
		f.edges.EIDs = append(f.edges.EIDs, epoch.NoEdge)
	}
	f.reverse = make([]int64, len(csr.Indices))
	for eid := range f.reverse {
		u, v := csr.Indices[eid], dstOf(eid) // u → v; its reverse is v in u's row
		f.reverse[eid] = -1
		for p := csr.Indptr[u]; p < csr.Indptr[u+1]; p++ {
			if csr.Indices[p] == v {
				f.reverse[eid] = int64(p)
				break
			}
		}
	}
	return f
}

// bruteLinkBlocks is the text of DESIGN §5 with "Exclusion" as code, by
// linear scans: n_id starts with the seeds; at hop h the expanded nodes
// are every node so far (DGL) or those the previous hop added (PyG, the
// seeds at hop 1); each expanded node's layer-h samples in slot order,
// skipping empty slots and every edge whose id is excluded, append a new
// node to n_id and emit (sampled → expanded).
func bruteLinkBlocks(res *epoch.Result, seeds []uint32, sem epoch.Semantics, excl []int64) *epoch.Blocks {
	b := &epoch.Blocks{Epoch: res.Key.Epoch, Semantics: sem, Seeds: slices.Clone(seeds)}
	nid := slices.Clone(seeds)
	lo := 0
	for _, ly := range res.Layers {
		var dst []uint32
		if sem == epoch.DGL {
			dst = slices.Clone(nid)
		} else {
			dst = slices.Clone(nid[lo:])
		}
		lo = len(nid)
		hop := epoch.Hop{Dst: dst, EdgeSrc: []int32{}, EdgeDst: []int32{}, EdgeIDs: []int64{}}
		for i, v := range dst {
			row := slices.Index(ly.Frontier, v)
			a, z := ly.Span(row)
			for j := a; j < z; j++ {
				s := ly.Samples[j]
				if s < 0 || slices.Contains(excl, ly.EdgeIDs[j]) {
					continue
				}
				k := slices.Index(nid, uint32(s))
				if k < 0 {
					k = len(nid)
					nid = append(nid, uint32(s))
				}
				hop.EdgeSrc = append(hop.EdgeSrc, int32(k))
				hop.EdgeDst = append(hop.EdgeDst, int32(i))
				hop.EdgeIDs = append(hop.EdgeIDs, ly.EdgeIDs[j])
			}
		}
		hop.Src = slices.Clone(nid)
		b.Hops = append(b.Hops, hop)
	}
	return b
}

func sameBlocks(got, want *epoch.Blocks) error {
	if !slices.Equal(got.Seeds, want.Seeds) || len(got.Hops) != len(want.Hops) {
		return fmt.Errorf("seeds %v / %d hops, want %v / %d", got.Seeds, len(got.Hops), want.Seeds, len(want.Hops))
	}
	for h := range got.Hops {
		g, w := &got.Hops[h], &want.Hops[h]
		switch {
		case !slices.Equal(g.Dst, w.Dst):
			return fmt.Errorf("hop %d dst %v, want %v", h+1, g.Dst, w.Dst)
		case !slices.Equal(g.Src, w.Src):
			return fmt.Errorf("hop %d src %v, want %v", h+1, g.Src, w.Src)
		case !slices.Equal(g.EdgeSrc, w.EdgeSrc) || !slices.Equal(g.EdgeDst, w.EdgeDst):
			return fmt.Errorf("hop %d edges differ", h+1)
		case !slices.Equal(g.EdgeIDs, w.EdgeIDs):
			return fmt.Errorf("hop %d edge ids %v, want %v", h+1, g.EdgeIDs, w.EdgeIDs)
		}
	}
	return nil
}

// pygLinkFields renders PyG's edge_sample (torch_geometric/sampler/
// neighbor_sampler.py) for one minibatch of positives, with the negatives
// of DESIGN §3 "Negatives" in place of torch.randint: binary appends the
// ceil(P·amount) negative pairs to src and dst, triplet the P·amount
// negative destinations to dst; seed = cat(src, dst).unique() with the
// inverse as a map; edge_label_index = inverse.view(2, -1); triplet's
// fields are the inverse's slices [0:P], [P:2P], [2P:] viewed (P, -1).
func pygLinkFields(l *epoch.Link, ids []uint32, seed uint64, e uint32) (seeds []uint32, f epoch.LinkFields) {
	neg := rng.Negatives{Key: rng.NegKey(seed, e), NumNodes: l.NumNodes, Indptr: l.Indptr}
	P := len(ids)
	var src, dst []uint32
	for _, id := range ids {
		src = append(src, l.Edges.Src[id])
		dst = append(dst, l.Edges.Dst[id])
	}
	k := int(l.Amount)
	switch l.Neg {
	case epoch.NegBinary:
		num := int(math.Ceil(float64(P) * l.Amount))
		for j := 0; j < num; j++ {
			src = append(src, neg.Src(ids[j%P], uint32(j/P)))
			dst = append(dst, neg.Dst(ids[j%P], uint32(j/P)))
		}
	case epoch.NegTriplet:
		for p := 0; p < P; p++ {
			for t := 0; t < k; t++ {
				dst = append(dst, neg.Dst(ids[p], uint32(t)))
			}
		}
	}
	all := append(slices.Clone(src), dst...)
	set := map[uint32]bool{}
	for _, v := range all {
		if !set[v] {
			set[v] = true
			seeds = append(seeds, v)
		}
	}
	slices.Sort(seeds)
	inv := map[uint32]int64{}
	for i, v := range seeds {
		inv[v] = int64(i)
	}
	inverse := make([]int64, len(all))
	for i, v := range all {
		inverse[i] = inv[v]
	}
	f = epoch.LinkFields{Mode: l.Neg, Amount: l.Amount}
	for _, id := range ids {
		f.InputID = append(f.InputID, int64(id))
	}
	if l.Neg == epoch.NegTriplet {
		f.K = k
		f.SrcIndex, f.DstPosIndex, f.DstNegIndex = inverse[:P], inverse[P:2*P], inverse[2*P:]
		return seeds, f
	}
	f.EdgeLabelIndex = inverse
	M := len(src)
	f.EdgeLabelF32 = make([]float32, M)
	for i := 0; i < P; i++ {
		f.EdgeLabelF32[i] = 1
	}
	return seeds, f
}

func equalFields(got, want epoch.LinkFields) error {
	switch {
	case got.Mode != want.Mode || got.K != want.K:
		return fmt.Errorf("mode %v k %d, want %v k %d", got.Mode, got.K, want.Mode, want.K)
	case !slices.Equal(got.InputID, want.InputID):
		return fmt.Errorf("input_id %v, want %v", got.InputID, want.InputID)
	case !slices.Equal(got.EdgeLabelIndex, want.EdgeLabelIndex):
		return fmt.Errorf("edge_label_index %v, want %v", got.EdgeLabelIndex, want.EdgeLabelIndex)
	case !slices.Equal(got.EdgeLabelF32, want.EdgeLabelF32) || !slices.Equal(got.EdgeLabelI64, want.EdgeLabelI64):
		return fmt.Errorf("edge_label %v%v, want %v%v", got.EdgeLabelF32, got.EdgeLabelI64, want.EdgeLabelF32, want.EdgeLabelI64)
	case !slices.Equal(got.SrcIndex, want.SrcIndex) || !slices.Equal(got.DstPosIndex, want.DstPosIndex) || !slices.Equal(got.DstNegIndex, want.DstNegIndex):
		return fmt.Errorf("triplet fields %v %v %v, want %v %v %v", got.SrcIndex, got.DstPosIndex, got.DstNegIndex, want.SrcIndex, want.DstPosIndex, want.DstNegIndex)
	}
	return nil
}

// Every link minibatch's fields equal the rendering of PyG's
// edge_sample, and its blocks, with each exclusion mode, equal the brute
// force: the seeds' blocks without the excluded edges, under both
// semantics, on every lookup path.
func TestLinkBatchesMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	for ci, c := range []struct {
		neg     epoch.NegMode
		amount  float64
		exclude epoch.ExcludeMode
		degree  bool
		fanouts []int
	}{
		{epoch.NegNone, 0, epoch.ExcludeNone, false, []int{4, 3}},
		{epoch.NegBinary, 1, epoch.ExcludeSelf, false, []int{5, 3}},
		{epoch.NegBinary, 2.5, epoch.ExcludeReverse, true, []int{3, 3, 2}},
		{epoch.NegTriplet, 3, epoch.ExcludeReverse, false, []int{-1, 4}},
		{epoch.NegTriplet, 1, epoch.ExcludeSelf, true, []int{6}},
		{epoch.NegBinary, 0.3, epoch.ExcludeNone, false, []int{2, -1}},
	} {
		fx := newLinkFixture(r, 150, 12, 90, 15)
		l := &epoch.Link{Edges: fx.edges, Neg: c.neg, Amount: c.amount, NumNodes: 150, Exclude: c.exclude, Reverse: fx.reverse}
		if c.degree {
			l.Indptr = fx.csr.Indptr
		}
		if ci == 3 { // reverses per training pair instead of reverse_eids
			l.Reverse = nil
			fx.edges.RevEIDs = make([]int64, fx.edges.Len())
			for i, eid := range fx.edges.EIDs {
				fx.edges.RevEIDs[i] = epoch.NoEdge
				if eid >= 0 {
					fx.edges.RevEIDs[i] = fx.reverse[eid]
				}
			}
		}
		if err := l.Check(); err != nil {
			t.Fatalf("case %d: %v", ci, err)
		}
		seed, e := uint64(ci+1), uint32(ci*7)
		shard, err := epoch.LinkShard(fx.edges.Len(), 0, 1, seed, e)
		if err != nil {
			t.Fatal(err)
		}
		var batches []*epoch.LinkBatch
		var ids [][]uint32
		for _, b := range epoch.Batches(shard, 16, seed, e) {
			ids = append(ids, b)
			batches = append(batches, l.Batch(b, seed, e))
		}
		res, err := host.ReferenceEdgeIDs(fx.csr, epoch.LinkSeeds(batches), c.fanouts, epoch.Key{Seed: seed, Epoch: e})
		if err != nil {
			t.Fatal(err)
		}
		eachLookup(t, func(t *testing.T) {
			ix, err := res.Index(150)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range []*epoch.Assembler{epoch.NewAssembler(res, nil), epoch.NewAssembler(res, ix), epoch.NewAssembler(res, res.MapIndex())} {
				for bi, lb := range batches {
					wantSeeds, wantFields := pygLinkFields(l, ids[bi], seed, e)
					if !slices.Equal(lb.Seeds, wantSeeds) {
						t.Fatalf("case %d batch %d: seeds %v, want %v", ci, bi, lb.Seeds, wantSeeds)
					}
					if err := equalFields(lb.Fields, wantFields); err != nil {
						t.Fatalf("case %d batch %d: %v", ci, bi, err)
					}
					// The brute force's excluded ids, from the text.
					var excl []int64
					for _, id := range ids[bi] {
						if eid := fx.edges.EIDs[id]; eid >= 0 && c.exclude != epoch.ExcludeNone {
							excl = append(excl, eid)
							if c.exclude == epoch.ExcludeReverse && fx.reverse[eid] >= 0 {
								excl = append(excl, fx.reverse[eid])
							}
						}
					}
					for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
						got, err := a.AssembleLink(lb, sem)
						if err != nil {
							t.Fatal(err)
						}
						if err := sameBlocks(got, bruteLinkBlocks(res, lb.Seeds, sem, excl)); err != nil {
							t.Fatalf("case %d batch %d %v: %v", ci, bi, sem, err)
						}
						for h := range got.Hops {
							for _, id := range got.Hops[h].EdgeIDs {
								if slices.Contains(excl, id) {
									t.Fatalf("case %d batch %d: hop %d holds excluded edge %d", ci, bi, h+1, id)
								}
							}
						}
						// The assembler forgets the exclusion afterwards.
						plain, err := a.Assemble(lb.Seeds, sem)
						if err != nil {
							t.Fatal(err)
						}
						if err := sameBlocks(plain, bruteLinkBlocks(res, lb.Seeds, sem, nil)); err != nil {
							t.Fatalf("case %d batch %d %v after a link minibatch: %v", ci, bi, sem, err)
						}
					}
				}
			}
		})
	}
}

// Given labels: binary mode shifts them by one when their minimum is 0
// (PyG's LinkLoader) and labels negatives 0 in the labels' own type;
// without negatives they pass unchanged.
func TestLinkLabels(t *testing.T) {
	es := &epoch.EdgeSet{Src: []uint32{0, 1, 2}, Dst: []uint32{1, 2, 0}, LabelsI64: []int64{0, 1, 1}}
	l := &epoch.Link{Edges: es, Neg: epoch.NegBinary, Amount: 1, NumNodes: 3}
	b := l.Batch([]uint32{2, 0}, 1, 0)
	if want := []int64{2, 1, 0, 0}; !slices.Equal(b.Fields.EdgeLabelI64, want) {
		t.Fatalf("binary, int labels: %v, want %v", b.Fields.EdgeLabelI64, want)
	}
	fs := &epoch.EdgeSet{Src: es.Src, Dst: es.Dst, LabelsF32: []float32{0.5, 2, 3}}
	l = &epoch.Link{Edges: fs, Neg: epoch.NegBinary, Amount: 1, NumNodes: 3}
	if b := l.Batch([]uint32{1}, 1, 0); !slices.Equal(b.Fields.EdgeLabelF32, []float32{2, 0}) {
		t.Fatalf("binary, float labels without a 0: %v, want [2 0]", b.Fields.EdgeLabelF32)
	}
	fs.LabelsF32 = []float32{0, 2, 3}
	l = &epoch.Link{Edges: fs, Neg: epoch.NegNone, NumNodes: 3}
	if b := l.Batch([]uint32{0}, 1, 0); !slices.Equal(b.Fields.EdgeLabelF32, []float32{0}) {
		t.Fatalf("no negatives: %v, want [0] (no shift)", b.Fields.EdgeLabelF32)
	}
	l = &epoch.Link{Edges: fs, Neg: epoch.NegTriplet, Amount: 1, NumNodes: 3}
	if err := l.Check(); err == nil {
		t.Fatal("triplet negatives with labels: no error")
	}
}

// A positive's negatives are a function of (seed, epoch, its position in
// the training set): the same in whichever minibatch, shard or order it
// comes (binary, one negative per positive: negative j is positive j's).
func TestNegativesFollowThePositive(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	fx := newLinkFixture(r, 100, 8, 40, 0)
	l := &epoch.Link{Edges: fx.edges, Neg: epoch.NegTriplet, Amount: 2, NumNodes: 100}
	negOf := func(b *epoch.LinkBatch, i int) [2]uint32 {
		k := b.Fields.DstNegIndex[2*i : 2*i+2]
		return [2]uint32{b.Seeds[k[0]], b.Seeds[k[1]]}
	}
	whole := l.Batch([]uint32{3, 9, 20, 33}, 5, 1)
	part := l.Batch([]uint32{33, 3}, 5, 1)
	if negOf(whole, 0) != negOf(part, 1) || negOf(whole, 3) != negOf(part, 0) {
		t.Fatal("a positive's negatives changed with its minibatch")
	}
	if other := l.Batch([]uint32{3}, 5, 2); negOf(other, 0) == negOf(whole, 0) {
		t.Fatal("epoch 2 drew epoch 1's negatives") // 1e-8 by chance
	}
}

// Link shards are node shards of the edge positions: disjoint, covering,
// sizes within one, and every rank gets the same number of minibatches.
func TestLinkShards(t *testing.T) {
	const n, world = 1003, 3
	seen := make([]int, n)
	for rank := range world {
		s, err := epoch.LinkShard(n, rank, world, 7, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != epoch.ShardSize(n, rank, world) || !slices.IsSorted(s) {
			t.Fatalf("rank %d: %d edges (sorted %v), want %d", rank, len(s), slices.IsSorted(s), epoch.ShardSize(n, rank, world))
		}
		for _, i := range s {
			seen[i]++
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("edge %d in %d shards", i, c)
		}
	}
	if _, err := epoch.LinkShard(n, 3, 3, 7, 2); err == nil {
		t.Fatal("rank 3 of 3: no error")
	}
}
