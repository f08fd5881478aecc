package hostbench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// identityChecks is how many minibatches are compared block for block
// with the per-minibatch sampler (the timing passes only count edges).
const identityChecks = 20

// measureAssembly times assembling the minibatches of res's epoch against
// host.SampleBlocks on the same minibatches over an in-memory CSR, and
// checks that the two build identical blocks.
func measureAssembly(ctx context.Context, cfg Config, res *epoch.Result, train []uint32, fan []int) (*Assembly, error) {
	// The minibatches run and serve would hand out for this training set.
	stream := pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: fan, Seed: cfg.Seed}, BatchSize: cfg.BatchSize}
	batches, _ := stream.Minibatches(res.Frontier(0), res.Key.Epoch)
	if cfg.MaxBatches > 0 && len(batches) > cfg.MaxBatches {
		batches = batches[:cfg.MaxBatches]
	}
	a := &Assembly{Fanouts: fan, BatchSize: cfg.BatchSize, Batches: len(batches)}
	ix, err := res.Index(0)
	if err != nil {
		return nil, err
	}
	as := epoch.NewAssembler(res, ix)
	csr, err := host.LoadCSR(cfg.Graph)
	if err != nil {
		return nil, err
	}
	base := func(seeds []uint32) (*epoch.Blocks, error) { return host.SampleBlocks(csr, seeds, fan, res.Key) }

	// One goroutine on one locked OS thread assembles every batch, so the
	// thread's CPU time is the single core's work, whatever else the
	// machine runs; wall time is reported beside it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pass := func(f func([]uint32) (*epoch.Blocks, error)) (wall, cpu float64, edges int64, err error) {
		c0 := threadCPU()
		t0 := time.Now()
		for _, b := range batches {
			blk, err := f(b)
			if err != nil {
				return 0, 0, 0, err
			}
			edges += int64(blk.NumEdges())
		}
		return time.Since(t0).Seconds(), threadCPU() - c0, edges, nil
	}
	var walls, cpus, bwalls, bcpus []float64
	for range cfg.Runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Alternate the two so that both see the same machine.
		w, c, e, err := pass(func(seeds []uint32) (*epoch.Blocks, error) { return as.Assemble(seeds, epoch.DGL) })
		if err != nil {
			return nil, err
		}
		walls, cpus, a.Edges = append(walls, w), append(cpus, c), e
		w, c, _, err = pass(base)
		if err != nil {
			return nil, err
		}
		bwalls, bcpus = append(bwalls, w), append(bcpus, c)
	}
	n := float64(len(batches))
	t, c, bt, bc := Median(walls), Median(cpus), Median(bwalls), Median(bcpus)
	e := float64(a.Edges)
	a.MsPerBatch, a.EdgesPerS = ratio(t*1e3, n), ratio(e, t)
	a.CPUMsPerBatch, a.EdgesPerCPUS = ratio(c*1e3, n), ratio(e, c)
	a.BaselineMsPerBat, a.BaselineEdgesPS = ratio(bt*1e3, n), ratio(e, bt)
	a.BaselineCPUMsPerBat, a.BaselineEdgesPerCPUS = ratio(bc*1e3, n), ratio(e, bc)
	a.Speedup = ratio(bc, c)
	runtime.UnlockOSThread() // the workers below need the cores, not this thread
	a.Workers = runtime.GOMAXPROCS(0)
	// One Store for every pass: its index of res is built once.
	store := pipeline.NewStore()
	if err := store.SetCurrent(res); err != nil {
		return nil, err
	}
	var pwalls []float64
	for range cfg.Runs {
		w, pedges, err := measurePipeline(ctx, stream, store, res, len(batches), a.Workers)
		if err != nil {
			return nil, err
		}
		if pedges != a.Edges {
			return nil, fmt.Errorf("hostbench: the pipeline assembled %d edges, the assembler %d", pedges, a.Edges)
		}
		pwalls = append(pwalls, w)
	}
	a.ParallelEdgesPerS = ratio(e, Median(pwalls))
	a.ParallelScaling = ratio(a.ParallelEdgesPerS, a.EdgesPerS)
	runtime.LockOSThread() // for the deferred unlock
	// The two must agree exactly: same rng contract, same block order.
	a.IdenticalBlocks = true
	for i := 0; i < min(len(batches), identityChecks); i++ {
		x, err1 := as.Assemble(batches[i], epoch.DGL)
		y, err2 := base(batches[i])
		if err1 != nil || err2 != nil || !sameBlocks(x, y) {
			a.IdenticalBlocks = false
		}
	}
	return a, nil
}

// errEnough stops a pipeline pass after its minibatches.
var errEnough = errors.New("hostbench: enough minibatches")

// measurePipeline hands out the first n minibatches of res's epoch through
// an pipeline.Pipeline over store, whose current epoch is res (so nothing is
// sampled), with workers goroutines assembling, and returns the wall time
// and the edges.
func measurePipeline(ctx context.Context, stream pipeline.Config, store *pipeline.Store, res *epoch.Result, n, workers int) (wall float64, edges int64, err error) {
	stream.FirstEpoch, stream.Epochs, stream.Replace = res.Key.Epoch, 1, res.Key.Replace
	p, err := pipeline.NewPipeline(stream, func(context.Context, []uint32, []int, epoch.Key) (*epoch.Result, error) {
		return nil, errors.New("hostbench: the epoch is resident; nothing to sample")
	}, store)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		return 0, 0, err
	}
	got := 0
	t0 := time.Now()
	err = p.RunOrdered(ctx, workers, func(b *pipeline.Minibatch) error {
		edges += int64(b.Blocks.NumEdges())
		if got++; got == n {
			return errEnough
		}
		return nil
	})
	wall = time.Since(t0).Seconds()
	if errors.Is(err, errEnough) {
		err = nil
	}
	return wall, edges, err
}

// ratio is x/y, or 0 when y is not positive (no batches, or a pass too
// short for the clock): a report must stay finite to be JSON.
func ratio(x, y float64) float64 {
	if y <= 0 {
		return 0
	}
	return x / y
}

// sameBlocks compares two minibatches field by field (slices.Equal takes
// a nil slice for an empty one).
func sameBlocks(a, b *epoch.Blocks) bool {
	if a.Epoch != b.Epoch || !slices.Equal(a.Seeds, b.Seeds) || len(a.Hops) != len(b.Hops) {
		return false
	}
	for h := range a.Hops {
		x, y := a.Hops[h], b.Hops[h]
		if !slices.Equal(x.Dst, y.Dst) || !slices.Equal(x.Src, y.Src) || !slices.Equal(x.EdgeSrc, y.EdgeSrc) || !slices.Equal(x.EdgeDst, y.EdgeDst) {
			return false
		}
	}
	return true
}
