package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/internal/memavail"
)

// FeaturePlanning asks a Pipeline to plan each epoch's feature reads while
// it prepares the epoch (in the background, as the sampling): every
// minibatch's node set (Assembler.NodeSet, PyG's n_id order), optionally
// a Match-Reorder of the minibatches, and a featplan.Plan of a cache of
// CacheRows rows managed with the known future (Belady's MIN). The plan
// is over the minibatches in the order the Pipeline hands them out.
type FeaturePlanning struct {
	// CacheRows is the number of feature rows the consumer keeps between
	// minibatches (0: none; every row is read for every minibatch).
	CacheRows int
	// Reorder reorders each epoch's minibatches (their composition
	// unchanged) so that consecutive ones share as many nodes as
	// possible (FastGL's Match-Reorder, featplan.MatchReorder), seeded by
	// the sampling seed and the epoch so that every run of the same
	// configuration serves the same order.
	Reorder bool
	// RowBytes, where set, is the size of a feature row: the plan then
	// drops the minibatches' node sets once it is made
	// (featplan.Plan.ForgetNodes; they are as large as the plan), and the
	// executor takes each minibatch's n_id from its blocks
	// (featplan.Reader.NextNodes).
	RowBytes int64
	// SpillDir, where set, is a directory (not a tmpfs) in which each
	// plan's per-access array lives in an unlinked mapped file instead of
	// the heap (featplan.SpillTo): the kernel may write it out under
	// memory pressure. With RowBytes too, an epoch whose rows do not fit
	// the cache may have its misses packed there, read sequentially
	// instead of at random (featplan.PackTo; its buffers come out of
	// CacheRows).
	SpillDir string
}

func (f *FeaturePlanning) check() error {
	if f != nil && f.CacheRows < 0 {
		return fmt.Errorf("%w: feature cache of %d rows, want >= 0", epoch.ErrConfig, f.CacheRows)
	}
	return nil
}

// FeaturePlan is an epoch's feature plan, as Pipeline.FeaturePlan returns
// it.
type FeaturePlan struct {
	Epoch uint32
	// NodeSets holds each minibatch's nodes, in the order the minibatches
	// are handed out: the rows minibatch i needs, in the order its blocks
	// number them. Nil where FeaturePlanning.RowBytes made the plan forget
	// them (Plan.Batch(i).Len() is still each one's size).
	NodeSets [][]uint32
	Plan     *featplan.Plan
	// Reorder is Match-Reorder's report (zero without Reorder); Order[i]
	// is the position minibatch i had in the epoch's seeded order.
	Reorder featplan.ReorderReport
	Order   []int
	Seconds float64 // node sets, reorder and plan, in the epoch's preparation
}

// reorderSeed is the Match-Reorder seed of epoch e: the sampling seed and
// the epoch, mixed so that neighbouring epochs' sketches are unrelated.
func reorderSeed(seed uint64, e uint32) uint64 {
	x := seed ^ (uint64(e)+1)*0x9E3779B97F4A7C15
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	return x ^ x>>29
}

// planFeatures computes epoch e's feature plan over r, reordering
// m.batches in place when asked. The node sets are assembled on every
// core, each worker with an Assembler of its own, over a dense index of
// r where it fits DefaultIndexBudget (binary search over the frontiers
// otherwise, several times slower); the index is dropped after, as the
// Store builds its own when it installs r.
func (p *Pipeline) planFeatures(ctx context.Context, r *epoch.Result, m *meta, e uint32) (*FeaturePlan, error) {
	t0 := time.Now()
	batches := m.batches
	workers := runtime.GOMAXPROCS(0)
	var ix *epoch.Index
	if ixBytes := r.DenseIndexBytes(0); ixBytes <= DefaultIndexBudget {
		var err error
		if ix, err = r.Index(0, indexOptions(ixBytes, r.NumNodes(), workers, DefaultIndexBudget, memavail.Available())...); err != nil {
			return nil, fmt.Errorf("epoch %d: %w", e, err)
		}
	}
	sets := make([][]uint32, len(batches))
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := epoch.NewAssembler(r, ix)
			for i := int(next.Add(1) - 1); i < len(batches); i = int(next.Add(1) - 1) {
				if i%64 == 0 && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				var s []uint32
				var err error
				if m.links != nil {
					s, err = a.NodeSetLink(m.links[i], p.cfg.Semantics, nil)
				} else {
					s, err = a.NodeSet(batches[i], p.cfg.Semantics, nil)
				}
				if err != nil {
					errs[w] = fmt.Errorf("epoch %d, minibatch %d: %w", e, i, err)
					return
				}
				sets[i] = slices.Clip(s)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	fp := &FeaturePlan{Epoch: e, NodeSets: sets}
	numNodes := r.NumNodes()
	if p.cfg.Features.Reorder && len(sets) > 1 {
		order, rep, err := featplan.MatchReorder(sets, numNodes, reorderSeed(p.cfg.Seed, e))
		if err != nil {
			return nil, fmt.Errorf("epoch %d: reorder: %w", e, err)
		}
		nb := make([][]uint32, len(order))
		ns := make([][]uint32, len(order))
		for i, o := range order {
			nb[i], ns[i] = batches[o], sets[o]
		}
		m.batches, fp.NodeSets = nb, ns
		fp.Reorder, fp.Order = rep, order
	}
	var opts []featplan.PlanOption
	if d := p.cfg.Features.SpillDir; d != "" {
		opts = append(opts, featplan.SpillTo(d))
		if rb := p.cfg.Features.RowBytes; rb > 0 {
			opts = append(opts, featplan.PackTo(d, rb))
		}
	}
	plan, err := featplan.NewPreloadedPlan(fp.NodeSets, numNodes, p.cfg.Features.CacheRows, opts...)
	if err != nil {
		return nil, fmt.Errorf("epoch %d: feature plan: %w", e, err)
	}
	fp.Plan = plan
	if rb := p.cfg.Features.RowBytes; rb > 0 {
		plan.ForgetNodes(rb)
		fp.NodeSets = nil
	}
	fp.Seconds = time.Since(t0).Seconds()
	return fp, nil
}
