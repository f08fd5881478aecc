package epoch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// DefaultPrepareAt is the fraction of an epoch's minibatches after which
// a Loop starts preparing the next epoch (DESIGN §4).
const DefaultPrepareAt = 0.8

// SampleFunc samples a whole epoch: frontier_0 = seeds, one layer per
// fanout, with key's random stream. host.Backend.SampleEpoch has this
// signature, so a backend's method value can be passed directly.
type SampleFunc func(ctx context.Context, seeds []uint32, fanouts []int, key Key) (*Result, error)

// LoopConfig describes a training run's minibatch stream.
type LoopConfig struct {
	Train      []uint32 // every training node (all ranks'); any order, duplicates ignored
	BatchSize  int      // seeds per minibatch, >= 1
	Fanouts    []int    // per hop, hop 1 first
	Seed       uint64
	Replace    bool    // sample with replacement
	Rank       int     // this rank, 0 <= Rank < World
	World      int     // number of data-parallel ranks; 0 means 1
	FirstEpoch uint32  // the epoch to start at (to resume)
	Epochs     int     // epochs to run; 0 runs until the caller stops
	PrepareAt  float64 // fraction of minibatches served before preparing the next epoch; 0 means DefaultPrepareAt
	Sample     SampleFunc
}

// Batch is one minibatch handed out by a Loop.
type Batch struct {
	Epoch  uint32
	Index  int // position of this minibatch in its epoch
	Count  int // minibatches in this epoch
	Blocks *Blocks
}

// Loop iterates the minibatches of successive epochs over a Store: each
// epoch's shard of the training nodes (Shard) in its seeded order
// (Batches); it starts preparing epoch e+1 once PrepareAt of epoch e's
// minibatches have been handed out, and advances when they are exhausted.
// Next may be called from many goroutines (a server answering several
// clients): minibatches are handed out in order, each exactly once, and
// assembled concurrently.
type Loop struct {
	cfg   LoopConfig
	store *Store
	end   uint64 // first epoch not to run (exclusive); MaxUint64 when unbounded

	sem      chan struct{} // a lock that waits under a context
	started  bool
	epoch    uint32
	cur      *resident
	batches  [][]uint32
	next     int
	prepared bool // Prepare has been called for epoch+1
}

// NewLoop checks cfg and returns a Loop over store (a new Store if nil).
// Nothing is sampled until the first Next, which samples FirstEpoch unless
// the store's current epoch already is that epoch (resuming from a state
// directory).
func NewLoop(cfg LoopConfig, store *Store) (*Loop, error) {
	if cfg.World == 0 {
		cfg.World = 1
	}
	if cfg.PrepareAt == 0 {
		cfg.PrepareAt = DefaultPrepareAt
	}
	switch {
	case cfg.BatchSize < 1:
		return nil, fmt.Errorf("epoch: loop: batch size %d, want >= 1", cfg.BatchSize)
	case cfg.Sample == nil:
		return nil, errors.New("epoch: loop: no sample function")
	case cfg.Epochs < 0:
		return nil, fmt.Errorf("epoch: loop: %d epochs, want >= 0", cfg.Epochs)
	case !(cfg.PrepareAt > 0 && cfg.PrepareAt <= 1):
		return nil, fmt.Errorf("epoch: loop: prepare-at %v, want in (0, 1]", cfg.PrepareAt)
	case len(cfg.Fanouts) > MaxLayers:
		return nil, fmt.Errorf("epoch: loop: %d fanouts, at most %d", len(cfg.Fanouts), MaxLayers)
	}
	for h, k := range cfg.Fanouts {
		if k < 1 {
			return nil, fmt.Errorf("epoch: loop: fanout %d of layer %d (hop %d), want >= 1", k, h, h+1)
		}
	}
	if _, err := Shard(nil, cfg.Rank, cfg.World, 0, 0); err != nil {
		return nil, fmt.Errorf("epoch: loop: %w", err)
	}
	train := slices.Clone(cfg.Train)
	slices.Sort(train)
	train = slices.Compact(train)
	if len(train) < cfg.World {
		return nil, fmt.Errorf("epoch: loop: %d training nodes for %d ranks: some rank would have none", len(train), cfg.World)
	}
	cfg.Train = train
	cfg.Fanouts = slices.Clone(cfg.Fanouts)
	if store == nil {
		store = NewStore()
	}
	end := uint64(math.MaxUint64)
	if cfg.Epochs > 0 {
		end = uint64(cfg.FirstEpoch) + uint64(cfg.Epochs)
	}
	return &Loop{cfg: cfg, store: store, end: end, sem: make(chan struct{}, 1)}, nil
}

// Store returns the Loop's Store.
func (l *Loop) Store() *Store { return l.store }

// NumBatches returns the number of minibatches per epoch for this rank.
func (l *Loop) NumBatches() int {
	return NumBatches(ShardSize(len(l.cfg.Train), l.cfg.Rank, l.cfg.World), l.cfg.BatchSize)
}

func (l *Loop) key(e uint32) Key { return Key{Seed: l.cfg.Seed, Epoch: e, Replace: l.cfg.Replace} }

// shard is frontier_0 of epoch e for this rank.
func (l *Loop) shard(e uint32) []uint32 {
	s, _ := Shard(l.cfg.Train, l.cfg.Rank, l.cfg.World, l.cfg.Seed, e) // arguments checked in NewLoop
	return s
}

// prepare starts sampling epoch e in the background.
func (l *Loop) prepare(ctx context.Context, e uint32) error {
	key := l.key(e)
	seeds := l.shard(e)
	fanouts := l.cfg.Fanouts
	sample := l.cfg.Sample
	// The preparation outlives the Next call that starts it: it is bounded
	// by Close (Store.Discard), not by that caller's context.
	pctx := context.WithoutCancel(ctx)
	return l.store.Prepare(pctx, key, func(ctx context.Context) (*Result, error) {
		r, err := sample(ctx, seeds, fanouts, key)
		if err != nil {
			return nil, err
		}
		if r == nil || !slices.Equal(r.Frontier(0), seeds) || !slices.Equal(r.Fanouts(), fanouts) {
			return nil, fmt.Errorf("sampler returned a result for other seeds or fanouts")
		}
		return r, nil
	})
}

// lock takes the Loop's lock unless ctx ends first.
func (l *Loop) lock(ctx context.Context) error {
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop) unlock() { <-l.sem }

// advance makes epoch e current: it prepares it if nobody has and waits.
func (l *Loop) advance(ctx context.Context, e uint32) error {
	if !l.prepared {
		if err := l.prepare(ctx, e); err != nil {
			return err
		}
		l.prepared = true
	}
	r, err := l.store.Advance(ctx)
	if r == nil {
		if ctx.Err() == nil {
			l.prepared = false // the preparation failed: the next call starts it again
		}
		return err
	}
	// r != nil: the switch happened (err, if any, reports a failure to prune
	// old epoch directories, and is passed on once).
	l.cur = l.store.cur.Load()
	l.epoch = e
	l.batches = Batches(r.Frontier(0), l.cfg.BatchSize, l.cfg.Seed, e)
	l.next = 0
	l.prepared = false
	l.started = true
	return err
}

// adopt starts from the Store's current epoch when it is the first epoch
// of this Loop (say, read back from a state directory with Read and
// installed with SetCurrent), instead of sampling it again.
func (l *Loop) adopt() bool {
	c := l.store.cur.Load()
	e := l.cfg.FirstEpoch
	if c == nil || c.r.Key != l.key(e) || !slices.Equal(c.r.Fanouts(), l.cfg.Fanouts) || !slices.Equal(c.r.Frontier(0), l.shard(e)) {
		return false
	}
	l.cur, l.epoch, l.next, l.started = c, e, 0, true
	l.batches = Batches(c.r.Frontier(0), l.cfg.BatchSize, l.cfg.Seed, e)
	return true
}

// Next returns the next minibatch, assembling it from its epoch's Result;
// after the last epoch it returns io.EOF. It waits (under ctx) when the
// next epoch is not ready yet.
func (l *Loop) Next(ctx context.Context) (*Batch, error) {
	if err := l.lock(ctx); err != nil {
		return nil, err
	}
	if !l.started {
		if uint64(l.cfg.FirstEpoch) >= l.end {
			l.unlock()
			return nil, io.EOF
		}
		if !l.adopt() {
			if err := l.advance(ctx, l.cfg.FirstEpoch); err != nil {
				l.unlock()
				return nil, err
			}
		}
	}
	for l.next == len(l.batches) {
		if uint64(l.epoch)+1 >= l.end {
			l.unlock()
			return nil, io.EOF
		}
		if err := l.advance(ctx, l.epoch+1); err != nil {
			l.unlock()
			return nil, err
		}
	}
	i := l.next
	l.next++
	b := &Batch{Epoch: l.epoch, Index: i, Count: len(l.batches)}
	seeds, cur := l.batches[i], l.cur
	if !l.prepared && uint64(l.epoch)+1 < l.end && float64(l.next) >= l.cfg.PrepareAt*float64(len(l.batches)) {
		// If the Store refuses (another preparation is pending), this
		// minibatch is still served; the next call tries again, and the
		// epoch's end reports the error if it persists.
		if l.prepare(ctx, l.epoch+1) == nil {
			l.prepared = true
		}
	}
	l.unlock()
	blocks, err := l.store.sampleFrom(cur, seeds)
	if err != nil {
		return nil, fmt.Errorf("epoch: loop: epoch %d minibatch %d: %w", b.Epoch, i, err)
	}
	b.Blocks = blocks
	return b, nil
}

// Run calls fn for every minibatch until the last epoch ends (nil), fn
// fails, or ctx is done.
func (l *Loop) Run(ctx context.Context, fn func(*Batch) error) error {
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

// Close stops any preparation in flight.
func (l *Loop) Close() { l.store.Discard() }
