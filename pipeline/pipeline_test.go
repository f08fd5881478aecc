package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
)

// fixtureSampler samples epochs of the fixture's graph and counts calls.
func (f *epochFixture) sampler(calls *atomic.Int64) SampleFunc {
	return func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		calls.Add(1)
		return epochtest.SampleEpoch(f.g, seeds, fanouts, key), nil
	}
}

// TestPipelineSequential hands out three epochs on every rank of two
// worlds at several prepare-at fractions: the minibatches of each epoch's
// seeded order, cut to the smallest shard's count, each equal to brute
// force; the next epoch's preparation starts exactly at the threshold.
func TestPipelineSequential(t *testing.T) {
	ctx := context.Background()
	f := newFixture(5)
	// 119 nodes: shards of 39, 40 and 40 nodes; 3 minibatches of 13 on every
	// rank (a 40-node shard leaves one node out).
	train := f.train[:119]
	for _, world := range []int{1, 3} {
		for _, prepareAt := range []float64{0, 0.5, DefaultPrepareAt, 1} {
			for rank := 0; rank < world; rank++ {
				var calls atomic.Int64
				cfg := Config{Sampling: epoch.Sampling{Train: train, Fanouts: f.fanouts, Seed: 11, Rank: rank, World: world},
					BatchSize: 13, FirstEpoch: 2, Epochs: 3, PrepareAt: prepareAt}
				l, err := NewPipeline(cfg, f.sampler(&calls), nil)
				if err != nil {
					t.Fatal(err)
				}
				nb := l.NumBatches()
				if want := epoch.NumBatches(119/world, 13); nb != want {
					t.Fatalf("world %d: epoch.NumBatches = %d, want %d", world, nb, want)
				}
				threshold := int(math.Ceil(prepareAt * float64(nb)))
				for e := uint32(2); e < 5; e++ {
					shard, _ := epoch.Shard(train, rank, world, 11, e)
					want := epoch.Batches(shard, 13, 11, e)
					dropped := 0
					for _, b := range want[nb:] {
						dropped += len(b)
					}
					res := epochtest.SampleEpoch(f.g, shard, f.fanouts, epoch.Key{Seed: 11, Epoch: e})
					for i := 0; i < nb; i++ {
						b, err := l.Next(ctx)
						if err != nil {
							t.Fatal(err)
						}
						if b.Epoch != e || b.Index != i || b.Count != nb {
							t.Fatalf("got epoch %d batch %d/%d, want %d %d/%d", b.Epoch, b.Index, b.Count, e, i, nb)
						}
						if err := epochtest.EqualBlocks(b.Blocks, epochtest.BruteBlocks(res, want[i])); err != nil {
							t.Fatalf("epoch %d batch %d: %v", e, i, err)
						}
						_, preparing := l.Store().Preparing()
						if wantPrep := i+1 >= threshold && e < 4; preparing != wantPrep {
							t.Fatalf("prepare-at %v, epoch %d after %d of %d batches: preparing %v, want %v", prepareAt, e, i+1, nb, preparing, wantPrep)
						}
					}
					info := l.Info()
					if info.Epoch != e || info.Served != nb || info.ShardSize != len(shard) || info.Dropped != dropped || info.Dropped > 1 {
						t.Fatalf("epoch %d info %+v: want shard %d, dropped %d (at most 1)", e, info, len(shard), dropped)
					}
				}
				if _, err := l.Next(ctx); err != io.EOF {
					t.Fatalf("after the last epoch: %v", err)
				}
				if calls.Load() != 3 {
					t.Fatalf("%d epochs sampled, want 3", calls.Load())
				}
				l.Close()
			}
		}
	}
}

// TestPipelineConcurrent hands minibatches to several goroutines: each
// (epoch, index) exactly once, each correct.
func TestPipelineConcurrent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(6)
	var calls atomic.Int64
	l, err := NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 5, Epochs: 4, PrepareAt: 0.5}, f.sampler(&calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	got := map[[2]int][]uint32{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, err := l.Next(ctx)
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				res := f.result(b.Epoch)
				if err := epochtest.EqualBlocks(b.Blocks, epochtest.BruteBlocks(res, b.Blocks.Seeds)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				k := [2]int{int(b.Epoch), b.Index}
				if _, dup := got[k]; dup {
					t.Errorf("batch %v handed out twice", k)
				}
				got[k] = b.Blocks.Seeds
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	nb := l.NumBatches()
	if len(got) != 4*nb {
		t.Fatalf("%d batches, want %d", len(got), 4*nb)
	}
	for e := 0; e < 4; e++ {
		want := epoch.Batches(f.train, 5, 11, uint32(e))
		for i := range want {
			if !slices.Equal(got[[2]int{e, i}], want[i]) {
				t.Fatalf("epoch %d batch %d: wrong seeds", e, i)
			}
		}
	}
}

func TestPipelineSampleFailureRetries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(7)
	var fails atomic.Int64
	fails.Store(1)
	sample := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		if key.Epoch == 1 && fails.Add(-1) >= 0 {
			return nil, fmt.Errorf("device lost")
		}
		return epochtest.SampleEpoch(f.g, seeds, fanouts, key), nil
	}
	l, _ := NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 50, Epochs: 2, PrepareAt: DefaultPrepareAt}, sample, nil)
	var errs int
	var n int
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			errs++
			if errs > 1 {
				t.Fatalf("second failure: %v", err)
			}
			continue
		}
		if b.Epoch == 1 && b.Index == 0 && errs != 1 {
			t.Fatal("epoch 1 served without the failure surfacing")
		}
		n++
	}
	if n != 2*l.NumBatches() {
		t.Fatalf("%d batches, want %d", n, 2*l.NumBatches())
	}
	// A sampler returning the wrong frontier is caught.
	bad := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		return epochtest.SampleEpoch(f.g, seeds[1:], fanouts, key), nil
	}
	l, _ = NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 50, PrepareAt: DefaultPrepareAt}, bad, nil)
	if _, err := l.Next(ctx); err == nil {
		t.Fatal("mismatched result accepted")
	}
	// A cancelled context stops a waiting Next.
	block := make(chan struct{})
	defer close(block)
	slow := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		<-block
		return nil, errors.New("late")
	}
	l, _ = NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 50, PrepareAt: DefaultPrepareAt}, slow, nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Next(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Next: %v", err)
	}
}

func TestNewPipelineErrors(t *testing.T) {
	ok := func(context.Context, []uint32, []int, epoch.Key) (*epoch.Result, error) { return nil, nil }
	good := Config{Sampling: epoch.Sampling{Train: []uint32{1, 2, 3}, Fanouts: []int{2}}, BatchSize: 2}
	for name, mut := range map[string]func(*Config){
		"batch":       func(c *Config) { c.BatchSize = 0 },
		"no fanouts":  func(c *Config) { c.Fanouts = nil },
		"fanout":      func(c *Config) { c.Fanouts = []int{2, 0} },
		"layers":      func(c *Config) { c.Fanouts = make([]int, epoch.MaxLayers+1) },
		"rank":        func(c *Config) { c.Rank, c.World = 2, 2 },
		"world":       func(c *Config) { c.World = -1 },
		"too few":     func(c *Config) { c.World = 4 },
		"empty train": func(c *Config) { c.Train = nil },
		"prepareAt":   func(c *Config) { c.PrepareAt = 1.5 },
		"negative":    func(c *Config) { c.PrepareAt = -0.1 },
		"NaN":         func(c *Config) { c.PrepareAt = math.NaN() },
		"epochs":      func(c *Config) { c.Epochs = -1 },
	} {
		c := good
		mut(&c)
		if _, err := NewPipeline(c, ok, nil); !errors.Is(err, epoch.ErrConfig) {
			t.Errorf("%s: %v, want epoch.ErrConfig", name, err)
		}
	}
	if _, err := NewPipeline(good, nil, nil); !errors.Is(err, epoch.ErrConfig) {
		t.Errorf("no sampler: %v", err)
	}
	if _, err := NewPipeline(good, ok, nil); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineResume starts from an epoch already installed in the Store (as
// the CLI does after reading it from its state directory): it is used, not
// sampled again, and the next epoch is sampled as usual.
func TestPipelineResume(t *testing.T) {
	ctx := context.Background()
	f := newFixture(8)
	var calls atomic.Int64
	st := NewStore()
	if err := st.SetCurrent(f.result(5)); err != nil {
		t.Fatal(err)
	}
	l, err := NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 40, FirstEpoch: 5, Epochs: 2, PrepareAt: DefaultPrepareAt}, f.sampler(&calls), st)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := l.Run(ctx, func(b *Minibatch) error {
		if err := epochtest.EqualBlocks(b.Blocks, epochtest.BruteBlocks(f.result(b.Epoch), b.Blocks.Seeds)); err != nil {
			return err
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2*l.NumBatches() || calls.Load() != 1 {
		t.Fatalf("%d batches, %d epochs sampled; want %d and 1", n, calls.Load(), 2*l.NumBatches())
	}
	// A current epoch with another seed is not adopted.
	st = NewStore()
	st.SetCurrent(epochtest.SampleEpoch(f.g, f.train, f.fanouts, epoch.Key{Seed: 12, Epoch: 5}))
	calls.Store(0)
	l, _ = NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 40, FirstEpoch: 5, Epochs: 1, PrepareAt: DefaultPrepareAt}, f.sampler(&calls), st)
	if _, err := l.Next(ctx); err != nil || calls.Load() != 1 {
		t.Fatalf("foreign current epoch adopted: %v, %d calls", err, calls.Load())
	}
}

// TestPipelinePrepareRefused: a Store busy with someone else's preparation
// must not cost minibatches; the refusal surfaces at the epoch's end.
func TestPipelinePrepareRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(9)
	var calls atomic.Int64
	l, _ := NewPipeline(Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 11}, BatchSize: 10, Epochs: 2, PrepareAt: DefaultPrepareAt}, f.sampler(&calls), nil)
	b, err := l.Next(ctx)
	if err != nil || b.Index != 0 {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	if err := l.Store().Prepare(ctx, epoch.Key{Epoch: 99}, func(context.Context) (*epoch.Result, error) {
		<-block
		return nil, errors.New("never")
	}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < l.NumBatches(); i++ {
		b, err := l.Next(ctx)
		if err != nil || b.Index != i || b.Epoch != 0 {
			t.Fatalf("batch %d: %+v %v", i, b, err)
		}
	}
	if _, err := l.Next(ctx); !errors.Is(err, ErrAlreadyPreparing) {
		t.Fatalf("end of epoch with the store busy: %v", err)
	}
}

// TestPipelineRunOrdered: with assembly spread over workers, fn still sees
// every minibatch of every epoch, in Run's order, with the same blocks; a
// failing fn stops it with that error, without deadlock.
func TestPipelineRunOrdered(t *testing.T) {
	ctx := context.Background()
	f := newFixture(10)
	cfg := Config{Sampling: epoch.Sampling{Train: f.train, Fanouts: f.fanouts, Seed: 3, Rank: 1, World: 2},
		BatchSize: 7, Epochs: 3, PrepareAt: 0.5}
	collect := func(workers int) []*Minibatch {
		var calls atomic.Int64
		p, err := NewPipeline(cfg, f.sampler(&calls), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var got []*Minibatch
		if err := p.RunOrdered(ctx, workers, func(b *Minibatch) error { got = append(got, b); return nil }); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		return got
	}
	want := collect(1)
	if len(want) != 3*epoch.NumBatches(len(f.train)/2, 7) {
		t.Fatalf("%d minibatches", len(want))
	}
	for _, workers := range []int{2, 3, 8} {
		got := collect(workers)
		if len(got) != len(want) {
			t.Fatalf("%d workers: %d minibatches, want %d", workers, len(got), len(want))
		}
		for i := range want {
			if got[i].Epoch != want[i].Epoch || got[i].Index != want[i].Index {
				t.Fatalf("%d workers: minibatch %d is epoch %d #%d, want epoch %d #%d", workers, i, got[i].Epoch, got[i].Index, want[i].Epoch, want[i].Index)
			}
			if err := epochtest.EqualBlocks(got[i].Blocks, want[i].Blocks); err != nil {
				t.Fatalf("%d workers: minibatch %d: %v", workers, i, err)
			}
		}
	}
	// A failure in fn stops the run with that error.
	var calls atomic.Int64
	p, _ := NewPipeline(cfg, f.sampler(&calls), nil)
	defer p.Close()
	stop := errors.New("stop")
	n := 0
	err := p.RunOrdered(ctx, 4, func(b *Minibatch) error {
		if n++; n == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 5 {
		t.Fatalf("fn failing at the 5th minibatch: %v after %d", err, n)
	}
	// So does a cancelled context.
	cctx, cancel := context.WithCancel(ctx)
	p2, _ := NewPipeline(cfg, f.sampler(&calls), nil)
	defer p2.Close()
	err = p2.RunOrdered(cctx, 4, func(b *Minibatch) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestPipelineDropLastAndSemantics: with DropLast every rank hands out
// only full minibatches (the shard's floor over the batch size), the
// seeded order's prefix; with PyG semantics each minibatch is brutePyG's
// and the feature plan's node sets are the PyG n_id.
func TestPipelineDropLastAndSemantics(t *testing.T) {
	ctx := context.Background()
	f := newFixture(8)
	train := f.train[:119]
	for _, world := range []int{1, 3} {
		for rank := 0; rank < world; rank++ {
			var calls atomic.Int64
			cfg := Config{Sampling: epoch.Sampling{Train: train, Fanouts: f.fanouts, Seed: 4, Rank: rank, World: world},
				BatchSize: 13, Epochs: 1, DropLast: true, Semantics: epoch.PyG, Features: &FeaturePlanning{CacheRows: 50}}
			l, err := NewPipeline(cfg, f.sampler(&calls), nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := (119 / world) / 13; l.NumBatches() != want {
				t.Fatalf("world %d: %d minibatches with drop_last, want %d", world, l.NumBatches(), want)
			}
			shard, _ := epoch.Shard(train, rank, world, 4, 0)
			want := epoch.Batches(shard, 13, 4, 0)
			res := epochtest.SampleEpoch(f.g, shard, f.fanouts, epoch.Key{Seed: 4})
			for i := 0; i < l.NumBatches(); i++ {
				b, err := l.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(b.Blocks.Seeds, want[i]) || len(b.Blocks.Seeds) != 13 {
					t.Fatalf("minibatch %d: seeds %v, want %v", i, b.Blocks.Seeds, want[i])
				}
				if err := epochtest.EqualPyG(b.Blocks, res, want[i]); err != nil {
					t.Fatalf("minibatch %d: %v", i, err)
				}
				if !slices.Equal(b.Features.NodeSets[i], b.Blocks.Nodes()) {
					t.Fatalf("minibatch %d: the plan's node set is not the epoch.PyG n_id", i)
				}
			}
			if info := l.Info(); info.Dropped != len(shard)-13*l.NumBatches() {
				t.Fatalf("dropped %d of a shard of %d", info.Dropped, len(shard))
			}
			l.Close()
		}
	}
}
