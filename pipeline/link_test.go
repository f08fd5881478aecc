package pipeline

import (
	"context"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

// A link pipeline on every rank of a world of 3: the same number of
// minibatches per rank, each the link batch of its rank's shard in the
// epoch's order (epoch.Link.Batch of epoch.Batches of epoch.LinkShard),
// assembled with exclusions from an epoch whose frontier_0 is the union
// of the minibatches' seeds; the ranks' positives are disjoint and cover
// the edges each epoch, less at most one per rank; epoch_info says link.
func TestLinkPipelineRanks(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 3))
	const n = 200
	csr := &host.CSR{Indptr: make([]uint64, n+1)}
	for v := range n {
		for range r.IntN(9) {
			csr.Indices = append(csr.Indices, uint32(r.IntN(n)))
		}
		slices.Sort(csr.Indices[csr.Indptr[v]:])
		csr.Indptr[v+1] = uint64(len(csr.Indices))
	}
	es := &epoch.EdgeSet{}
	for range 301 {
		e := r.IntN(len(csr.Indices))
		v := 0
		for csr.Indptr[v+1] <= uint64(e) {
			v++
		}
		es.Src, es.Dst, es.EIDs = append(es.Src, csr.Indices[e]), append(es.Dst, uint32(v)), append(es.EIDs, int64(e))
	}
	link := &epoch.Link{Edges: es, Neg: epoch.NegBinary, Amount: 1, NumNodes: n, Exclude: epoch.ExcludeSelf}
	sample := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		return host.ReferenceEdgeIDs(csr, seeds, fanouts, key)
	}
	const world, bs = 3, 16
	covered := map[uint32][]uint32{} // epoch → positives served, all ranks
	for rank := range world {
		cfg := Config{Sampling: epoch.Sampling{Fanouts: []int{4, 3}, Seed: 5, Rank: rank, World: world},
			BatchSize: bs, FirstEpoch: 1, Epochs: 2, Link: link, Semantics: epoch.PyG}
		p, err := NewPipeline(cfg, sample, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := epoch.NumBatches(301/world, bs); p.NumBatches() != want {
			t.Fatalf("rank %d: %d minibatches, want %d", rank, p.NumBatches(), want)
		}
		for e := uint32(1); e <= 2; e++ {
			shard, _ := epoch.LinkShard(301, rank, world, 5, e)
			ids := epoch.Batches(shard, bs, 5, e)[:p.NumBatches()]
			var lbs []*epoch.LinkBatch
			for _, b := range ids {
				lbs = append(lbs, link.Batch(b, 5, e))
			}
			res, err := host.ReferenceEdgeIDs(csr, epoch.LinkSeeds(lbs), cfg.Fanouts, epoch.Key{Seed: 5, Epoch: e})
			if err != nil {
				t.Fatal(err)
			}
			for i := range p.NumBatches() {
				mb, err := p.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want, err := epoch.NewAssembler(res, nil).AssembleLink(lbs[i], epoch.PyG)
				if err != nil {
					t.Fatal(err)
				}
				if mb.Epoch != e || mb.Index != i || mb.Link == nil || !slices.Equal(mb.Link.InputID, lbs[i].Fields.InputID) ||
					!slices.Equal(mb.Link.EdgeLabelIndex, lbs[i].Fields.EdgeLabelIndex) {
					t.Fatalf("rank %d epoch %d minibatch %d: link fields differ", rank, e, i)
				}
				if err := sameBlocks(mb.Blocks, want); err != nil {
					t.Fatalf("rank %d epoch %d minibatch %d: %v", rank, e, i, err)
				}
				for _, id := range mb.Link.InputID {
					covered[e] = append(covered[e], uint32(id))
				}
			}
			info := p.Info()
			if info.Link == nil || info.Link.Mode != "binary" || info.Link.NumTrainEdges != 301 || info.Link.Exclude != "self" || info.NumTrain != 301 || info.ShardSize != len(shard) {
				t.Fatalf("rank %d epoch %d: info %+v link %+v", rank, e, info, info.Link)
			}
			if e == 1 {
				if _, err := p.Advance(ctx, 1); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := p.Next(ctx); err != io.EOF {
			t.Fatalf("after the last epoch: %v, want io.EOF", err)
		}
		p.Close()
	}
	for e, ids := range covered {
		slices.Sort(ids)
		if len(slices.Compact(slices.Clone(ids))) != len(ids) || len(ids) < 301-world {
			t.Fatalf("epoch %d: %d positives served (%d distinct), want 301 less at most %d", e, len(ids), len(slices.Compact(ids)), world)
		}
	}
}

func sameBlocks(a, b *epoch.Blocks) error {
	if len(a.Hops) != len(b.Hops) || !slices.Equal(a.Seeds, b.Seeds) {
		return errDiff("seeds or hop count")
	}
	for h := range a.Hops {
		x, y := a.Hops[h], b.Hops[h]
		if !slices.Equal(x.Dst, y.Dst) || !slices.Equal(x.Src, y.Src) || !slices.Equal(x.EdgeSrc, y.EdgeSrc) || !slices.Equal(x.EdgeDst, y.EdgeDst) || !slices.Equal(x.EdgeIDs, y.EdgeIDs) {
			return errDiff("hop")
		}
	}
	return nil
}

type errDiff string

func (e errDiff) Error() string { return "blocks differ: " + string(e) }

// A link configuration is checked: bad amounts, exclusion without edge
// ids, fewer edges than ranks.
func TestLinkConfigCheck(t *testing.T) {
	es := &epoch.EdgeSet{Src: []uint32{0, 1}, Dst: []uint32{1, 2}}
	for _, tc := range []struct {
		name string
		link *epoch.Link
		s    epoch.Sampling
	}{
		{"amount", &epoch.Link{Edges: es, Neg: epoch.NegBinary, NumNodes: 3}, epoch.Sampling{Fanouts: []int{2}}},
		{"triplet fraction", &epoch.Link{Edges: es, Neg: epoch.NegTriplet, Amount: 1.5, NumNodes: 3}, epoch.Sampling{Fanouts: []int{2}}},
		{"exclude without ids", &epoch.Link{Edges: es, Exclude: epoch.ExcludeSelf, NumNodes: 3}, epoch.Sampling{Fanouts: []int{2}}},
		{"node range", &epoch.Link{Edges: es, NumNodes: 2}, epoch.Sampling{Fanouts: []int{2}}},
		{"ranks", &epoch.Link{Edges: es, NumNodes: 3}, epoch.Sampling{Fanouts: []int{2}, Rank: 2, World: 3}},
	} {
		if err := (Config{Sampling: tc.s, BatchSize: 1, Link: tc.link}).Check(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	ok := &epoch.Link{Edges: es, NumNodes: 3}
	if err := (Config{Sampling: epoch.Sampling{Fanouts: []int{2}, Rank: 1, World: 2}, BatchSize: 1, Link: ok}).Check(); err != nil {
		t.Errorf("2 edges on 2 ranks: %v", err)
	}
}
