package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/statedir"
)

// epochFixture samples epochs of one random graph.
type epochFixture struct {
	g       *epochtest.Graph
	train   []uint32
	fanouts []int
}

func newFixture(seed uint64) *epochFixture {
	r := rand.New(rand.NewPCG(seed, 5))
	g := epochtest.RandomGraph(r, 400, 12, false)
	train := epochtest.RandomSeeds(r, 400, 120)
	slices.Sort(train)
	return &epochFixture{g: g, train: train, fanouts: []int{4, 3}}
}

func (f *epochFixture) result(e uint32) *epoch.Result {
	return epochtest.SampleEpoch(f.g, f.train, f.fanouts, epoch.Key{Seed: 11, Epoch: e})
}

func TestStoreBasics(t *testing.T) {
	ctx := context.Background()
	s := NewStore()
	if _, err := s.Current(); !errors.Is(err, ErrNoCurrent) {
		t.Fatalf("Current on empty store: %v", err)
	}
	if _, err := s.Assemble([]uint32{1}); !errors.Is(err, ErrNoCurrent) {
		t.Fatalf("Sample on empty store: %v", err)
	}
	if _, err := s.Advance(ctx); !errors.Is(err, ErrNotPrepared) {
		t.Fatalf("Advance without Prepare: %v", err)
	}
	f := newFixture(1)
	r0, r1 := f.result(0), f.result(1)
	if err := s.SetCurrent(r0); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	if err := s.Prepare(ctx, r1.Key, func(ctx context.Context) (*epoch.Result, error) {
		<-release
		return r1, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(ctx, r1.Key, nil); !errors.Is(err, ErrAlreadyPreparing) {
		t.Fatalf("second Prepare: %v", err)
	}
	if k, ok := s.Preparing(); !ok || k != r1.Key {
		t.Fatalf("Preparing = %v %v", k, ok)
	}
	// Sample concurrently with the preparation: still epoch 0.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < 50; i++ {
				seeds := epochtest.Pick(rr, f.train, 1+rr.IntN(20))
				b, err := s.Assemble(seeds)
				if err != nil {
					t.Error(err)
					return
				}
				if err := epochtest.EqualBlocks(b, epochtest.BruteBlocks(r0, seeds)); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if s.Ready() {
		t.Fatal("Ready before the preparation finished")
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Advance(tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Advance under an expiring context: %v", err)
	}
	// Advance waits for the preparation.
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(release)
	}()
	got, err := s.Advance(ctx)
	if err != nil || got != r1 {
		t.Fatalf("Advance = %v, %v", got, err)
	}
	if _, err := s.AssembleAt(0, f.train[:3], epoch.DGL); !errors.Is(err, ErrNotCurrent) {
		t.Fatalf("AssembleAt the old epoch: %v", err)
	}
	if b, err := s.AssembleAt(1, f.train[:3], epoch.DGL); err != nil || b.Epoch != 1 {
		t.Fatalf("AssembleAt the current epoch: %v", err)
	}
	if cur, _ := s.Current(); cur != r1 || s.Ready() {
		t.Fatal("current is not epoch 1, or still ready")
	}
	if _, ok := s.Preparing(); ok {
		t.Fatal("still preparing after Advance")
	}
}

func TestStorePrepareFailures(t *testing.T) {
	ctx := context.Background()
	f := newFixture(2)
	s := NewStore()
	boom := errors.New("boom")
	if err := s.Prepare(ctx, epoch.Key{Epoch: 1}, func(context.Context) (*epoch.Result, error) { return nil, boom }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Advance(ctx); !errors.Is(err, boom) {
		t.Fatalf("failed preparation: %v", err)
	}
	// Wrong key, nil result and a panic are failures too, and each leaves
	// the store ready for another Prepare.
	for _, fn := range []func(context.Context) (*epoch.Result, error){
		func(context.Context) (*epoch.Result, error) { return f.result(2), nil },
		func(context.Context) (*epoch.Result, error) { return nil, nil },
		func(context.Context) (*epoch.Result, error) { panic("kaboom") },
	} {
		if err := s.Prepare(ctx, epoch.Key{Seed: 11, Epoch: 1}, fn); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Advance(ctx); err == nil {
			t.Fatal("bad preparation advanced")
		}
	}
	// Cancellation: Discard cancels fn's context and waits for it.
	var sawCancel atomic.Bool
	if err := s.Prepare(ctx, epoch.Key{Epoch: 1}, func(ctx context.Context) (*epoch.Result, error) {
		<-ctx.Done()
		sawCancel.Store(true)
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	s.Discard()
	if !sawCancel.Load() {
		t.Fatal("Discard returned before the preparation stopped")
	}
	if _, err := s.Advance(ctx); !errors.Is(err, ErrNotPrepared) {
		t.Fatalf("Advance after Discard: %v", err)
	}
	// Cancelling Prepare's own context fails the preparation.
	pctx, cancel := context.WithCancel(ctx)
	if err := s.Prepare(pctx, epoch.Key{Epoch: 1}, func(ctx context.Context) (*epoch.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s.Advance(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Advance after cancel: %v", err)
	}
}

// TestStoreSampleDuringAdvance runs samplers while epochs switch under
// them: every minibatch must be exactly the brute-force one of the epoch
// it reports.
func TestStoreSampleDuringAdvance(t *testing.T) {
	ctx := context.Background()
	f := newFixture(3)
	const epochs = 6
	results := make([]*epoch.Result, epochs)
	for e := range results {
		results[e] = f.result(uint32(e))
	}
	// Budgets: no index; the index without the relabel table over every
	// node id (which then does not fit); both.
	var ixBytes int64
	for _, r := range results {
		ixBytes = max(ixBytes, r.DenseIndexBytes(0))
	}
	for _, budget := range []int64{0, ixBytes, DefaultIndexBudget} {
		s := NewStore(WithIndexBudget(budget))
		s.SetCurrent(results[0])
		stop := make(chan struct{})
		var wg sync.WaitGroup
		seen := make([]atomic.Int64, epochs)
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				rr := rand.New(rand.NewPCG(uint64(g), 2))
				for {
					select {
					case <-stop:
						return
					default:
					}
					seeds := epochtest.Pick(rr, f.train, 1+rr.IntN(30))
					b, err := s.Assemble(seeds)
					if err != nil {
						t.Error(err)
						return
					}
					seen[b.Epoch].Add(1)
					if err := epochtest.EqualBlocks(b, epochtest.BruteBlocks(results[b.Epoch], seeds)); err != nil {
						t.Errorf("epoch %d: %v", b.Epoch, err)
						return
					}
				}
			}(g)
		}
		// The samplers must see both ends: epoch 0 before the first
		// advance, the last epoch before they stop. A loaded machine (the
		// whole suite under -race on two cores) may not schedule them
		// within a fixed sleep, so wait for it, up to a deadline.
		waitSeen := func(e int) {
			for deadline := time.Now().Add(10 * time.Second); seen[e].Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		for e := 1; e < epochs; e++ {
			time.Sleep(5 * time.Millisecond)
			if e == 1 {
				waitSeen(0)
			}
			r := results[e]
			if err := s.Prepare(ctx, r.Key, func(context.Context) (*epoch.Result, error) { return r, nil }); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Advance(ctx); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Millisecond)
		waitSeen(epochs - 1)
		close(stop)
		wg.Wait()
		if seen[0].Load() == 0 || seen[epochs-1].Load() == 0 {
			t.Fatalf("samplers did not see both ends: %v", seen[0].Load())
		}
	}
}

func TestStoreWithState(t *testing.T) {
	ctx := context.Background()
	f := newFixture(4)
	st := statedir.State{Dir: filepath.Join(t.TempDir(), "state")}
	c, err := st.Open()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := statedir.Begin(st, c, statedir.Config{Compress: "zstd", WorldSize: 1, TrainSet: epochdir.TrainSetOf([]uint32{0})}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	s := NewStore(WithTxn(tx))
	for e := uint32(0); e < 3; e++ {
		r := f.result(e)
		if err := s.Prepare(ctx, r.Key, func(context.Context) (*epoch.Result, error) { return r, nil }); err != nil {
			t.Fatal(err)
		}
		for !s.Ready() {
			time.Sleep(time.Millisecond)
		}
		if p, _ := st.Prepared(); !slices.Contains(p, e) {
			t.Fatalf("epoch %d not on disk once ready: %v", e, p)
		}
		if _, err := s.Advance(ctx); err != nil {
			t.Fatal(err)
		}
		if cur, ok, _ := st.Current(); !ok || cur != e {
			t.Fatalf("CURRENT = %d, want %d", cur, e)
		}
		if p, _ := st.Prepared(); !slices.Equal(p, []uint32{e}) {
			t.Fatalf("after advancing to %d, prepared = %v", e, p)
		}
		back, err := epochdir.Read(st.EpochDir(e))
		if err != nil || !epochtest.EqualResult(back, r) {
			t.Fatalf("persisted epoch %d: %v", e, err)
		}
	}
}
