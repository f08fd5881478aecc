package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
)

// DefaultPrepareAt is the fraction of an epoch's minibatches handed out
// at which the command lines start preparing the next epoch (DESIGN §4).
const DefaultPrepareAt = 0.8

// CurrentEpoch, as an epoch argument of Claim, Advance and Sample, means
// whichever epoch is current.
const CurrentEpoch = math.MaxUint32

// Errors a Pipeline's callers branch on (a server maps them to codes).
var (
	// ErrEpochNotDone: the next epoch was asked for while the current one
	// still has minibatches to hand out.
	ErrEpochNotDone = errors.New("epoch: current epoch not done")
	// ErrUnknownEpoch: an epoch that is neither current nor next.
	ErrUnknownEpoch = errors.New("epoch: unknown epoch")
	// ErrClosed: the Pipeline has been closed.
	ErrClosed = errors.New("epoch: pipeline closed")
)

// SampleFunc samples a whole epoch: frontier_0 = seeds, one layer per
// fanout, with key's random stream. host.Backend.SampleEpoch has this
// signature, so a backend's method value can be passed directly.
type SampleFunc func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error)

// Config is a training run's minibatch stream: what its epochs are sampled
// from, how they are cut into minibatches and when the next one is
// prepared. Every command that hands out minibatches (run, serve, bench)
// builds one, so the same flags mean the same thing everywhere.
type Config struct {
	epoch.Sampling
	BatchSize int // seeds per minibatch, >= 1
	// DropLast leaves out a shard's last minibatch when it is short
	// (PyG's and DGL's drop_last): every minibatch then has BatchSize
	// seeds.
	DropLast bool
	// Semantics is how minibatches are assembled unless a request says
	// otherwise (Pipeline.AssembleAs), and the node sets the feature plan
	// is made for.
	Semantics epoch.Semantics
	// PrepareAt is the fraction of an epoch's minibatches handed out at
	// which the next epoch's preparation starts, in [0, 1]: 0 prepares it
	// as soon as the epoch becomes current (the zero value), 1 once the
	// last minibatch is claimed. The command lines default to
	// DefaultPrepareAt.
	PrepareAt  float64
	FirstEpoch uint32 // the epoch to start at (to resume)
	Epochs     int    // epochs to hand out; 0 means no end
	// Features, if not nil, plans each epoch's feature reads as the
	// epoch is prepared (FeaturePlanning; Pipeline.FeaturePlan). With
	// Reorder it also changes the order the minibatches are handed out in.
	Features *FeaturePlanning
	// Logf, if not nil, is told when an epoch is prepared or becomes
	// current.
	Logf func(format string, a ...any)
	// Link, if not nil, makes the epochs link-prediction epochs (DESIGN
	// §4, "Link epochs"): minibatches of BatchSize training edges (of
	// Link.Edges, sharded and shuffled as nodes are; Sampling.Train is not
	// used), each with its negatives and exclusions; frontier_0 is the
	// union of their seeds. Minibatch.Link carries the supervision.
	Link *epoch.Link
}

// Check reports (wrapping ErrConfig) the first thing wrong with c.
func (c Config) Check() error {
	s := c.Sampling
	if c.Link != nil {
		if err := c.Link.Check(); err != nil {
			return err
		}
		s = s.ForLink(c.Link.Edges.Len())
	}
	if err := s.Check(); err != nil {
		return err
	}
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("%w: batch size %d, want >= 1", epoch.ErrConfig, c.BatchSize)
	case !(c.PrepareAt >= 0 && c.PrepareAt <= 1):
		return fmt.Errorf("%w: prepare-at %v, want a fraction in [0, 1]", epoch.ErrConfig, c.PrepareAt)
	case c.Epochs < 0:
		return fmt.Errorf("%w: %d epochs, want >= 0 (0: no end)", epoch.ErrConfig, c.Epochs)
	case !c.Semantics.Valid():
		return fmt.Errorf("%w: %v", epoch.ErrConfig, c.Semantics)
	}
	return c.Features.check()
}

// Minibatch is one minibatch handed out by a Pipeline.
type Minibatch struct {
	Epoch  uint32
	Index  int // position of this minibatch in its epoch
	Count  int // minibatches in this epoch
	Blocks *epoch.Blocks
	// Features is the epoch's feature plan (Config.Features; nil
	// without): minibatch Index's rows are Features.NodeSets[Index].
	Features *FeaturePlan
	// PlanNodes, set only when Blocks are of other semantics than the
	// feature plan's (AssembleAs), is the node set the plan read this
	// minibatch's rows for: the plan's turn must be taken with it.
	PlanNodes []uint32
	// Link is a link minibatch's supervision (Config.Link; nil for node
	// minibatches): local ids into Blocks.Nodes().
	Link *epoch.LinkFields
	// AssembleStart and AssembleEnd bracket its assembly (AssembleAs),
	// on whichever goroutine did it: the union of these intervals is the
	// epoch's assembly time in run's and serve's figures.
	AssembleStart, AssembleEnd time.Time
}

// Info describes a Pipeline's current epoch (the JSON object a server's
// epoch_info request answers with).
type Info struct {
	Epoch          uint32  `json:"epoch"`
	NumBatches     int     `json:"num_batches"`
	Served         int     `json:"served"` // minibatches of this epoch handed out so far
	BatchSize      int     `json:"batch_size"`
	NumTrain       int     `json:"num_train"`  // distinct training nodes, all ranks
	ShardSize      int     `json:"shard_size"` // this rank's training nodes this epoch
	Dropped        int     `json:"dropped"`    // shard nodes left out to equalise batch counts
	Rank           int     `json:"rank"`
	WorldSize      int     `json:"world_size"`
	Fanouts        []int   `json:"fanouts"`
	Seed           uint64  `json:"seed"`
	Replace        bool    `json:"replace"`
	PrepareAt      float64 `json:"prepare_at"`
	NextReady      bool    `json:"next_ready"` // the next epoch is prepared
	FrontierSizes  []int   `json:"frontier_sizes"`
	SampledEdges   int64   `json:"sampled_edges"`
	PrepareSeconds float64 `json:"prepare_seconds"`
	// Link describes link mode (nil, and absent from the JSON, for node
	// epochs); NumTrain and ShardSize then count training edges.
	Link *LinkInfo `json:"link,omitempty"`
}

// Pipeline is a training run's epochs: the current epoch, whose
// minibatches are handed out from one shared cursor, and the next one,
// prepared in the background once PrepareAt of the current one is handed
// out. Every rank hands out BatchesPerRank minibatches per epoch, each
// exactly once, in the epoch's seeded order (Batches of this rank's
// Shard); the nodes of a larger shard's extra minibatch are left out.
//
// A minibatch is claimed (in order, under a lock) and then assembled
// (concurrently): Claim and Assemble let a server claim in request order
// and assemble in parallel; Next does both and advances at an epoch's end.
// All methods may be called from many goroutines.
type Pipeline struct {
	cfg     Config
	perRank int // minibatches every rank serves per epoch
	sample  SampleFunc
	store   *Store
	end     uint64 // first epoch not to hand out; MaxUint64 when unbounded
	baseCtx context.Context
	cancel  context.CancelFunc

	mu        sync.Mutex
	cur       *servedEpoch
	cursor    int
	preparing bool            // the Store is preparing cur.epoch+1
	metas     map[uint32]meta // filled by preparations
	advancing chan struct{}   // closed when the advance under way ends
	closed    bool
}

// servedEpoch is the current epoch's minibatch list and cursor bookkeeping; its
// Result lives in the Store.
type servedEpoch struct {
	epoch uint32
	res   *epoch.Result
	meta
	// leaving is set (under Pipeline.mu) once an advance away from this
	// epoch has begun: no more claims or samples start on it.
	leaving bool
	// inflight counts claimed minibatches and samples being assembled;
	// the Store switches epochs only once they are done.
	inflight sync.WaitGroup
}

// meta is what preparing an epoch computes beside its Result.
type meta struct {
	batches  [][]uint32
	shard    int
	dropped  int
	took     time.Duration
	features *FeaturePlan // with Config.Features
	// links, in link mode, is each minibatch's link batch; batches[i] is
	// then links[i].Seeds.
	links []*epoch.LinkBatch
}

// NewPipeline checks cfg and returns a Pipeline that samples with sample
// into store (a new Store if nil). Nothing is sampled until Start (or the
// first Next, which starts it).
func NewPipeline(cfg Config, sample SampleFunc, store *Store) (*Pipeline, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if sample == nil {
		return nil, fmt.Errorf("%w: no sample function", epoch.ErrConfig)
	}
	cfg.World = cfg.WorldSize()
	cfg.Train = slices.Compact(slices.Sorted(slices.Values(cfg.Train)))
	cfg.Fanouts = slices.Clone(cfg.Fanouts)
	if store == nil {
		store = NewStore()
	}
	end := uint64(math.MaxUint64)
	if cfg.Epochs > 0 {
		end = uint64(cfg.FirstEpoch) + uint64(cfg.Epochs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pipeline{
		cfg: cfg, sample: sample, store: store, end: end,
		perRank: cfg.batchesPerRank(cfg.numTrain()),
		baseCtx: ctx, cancel: cancel,
		metas: map[uint32]meta{},
	}, nil
}

// Store returns the Pipeline's Store.
func (p *Pipeline) Store() *Store { return p.store }

// NumBatches returns the number of minibatches per epoch (every rank's).
func (p *Pipeline) NumBatches() int { return p.perRank }

func (p *Pipeline) logf(format string, a ...any) {
	if p.cfg.Logf != nil {
		p.cfg.Logf(format, a...)
	}
}

// Minibatches returns the minibatches a rank hands out in epoch e, given
// its shard (Sampling.Seeds(e)): the shard in the epoch's seeded order cut
// into BatchSize pieces, the first BatchesPerRank of them (with DropLast,
// only the full ones: ShardSize's floor over BatchSize); dropped counts
// the shard's nodes left out. Every command that cuts minibatches (run,
// serve, bench) cuts them here.
func (c Config) Minibatches(shard []uint32, e uint32) (batches [][]uint32, dropped int) {
	all := epoch.Batches(shard, c.BatchSize, c.Seed, e)
	keep := min(c.batchesPerRank(c.numTrain()), len(all))
	for _, b := range all[keep:] {
		dropped += len(b)
	}
	return all[:keep], dropped
}

// batchesPerRank is how many minibatches every rank hands out per epoch
// for n distinct training nodes.
func (c Config) batchesPerRank(n int) int {
	if c.DropLast {
		return (n / c.WorldSize()) / c.BatchSize
	}
	return epoch.BatchesPerRank(n, c.WorldSize(), c.BatchSize)
}

// batchesOf cuts epoch e's shard into the minibatches this rank serves.
func (p *Pipeline) batchesOf(shard []uint32, e uint32) meta {
	m := meta{shard: len(shard)}
	m.batches, m.dropped = p.cfg.Minibatches(shard, e)
	return m
}

// prepare starts sampling epoch e into the Store in the background.
func (p *Pipeline) prepare(e uint32) error {
	key := p.cfg.Key(e)
	return p.store.Prepare(p.baseCtx, key, func(ctx context.Context) (*epoch.Result, error) {
		t0 := time.Now()
		seeds, m := p.epochSeeds(e)
		r, err := p.sample(ctx, seeds, p.cfg.Fanouts, key)
		if err != nil {
			p.logf("preparing epoch %d: %v", e, err)
			return nil, err
		}
		if r == nil || !slices.Equal(r.Frontier(0), seeds) || !slices.Equal(r.Fanouts(), p.cfg.Fanouts) {
			return nil, errors.New("sampler returned a result for other seeds or fanouts")
		}
		if p.cfg.Features != nil {
			fp, err := p.planFeatures(ctx, r, &m, e)
			if err != nil {
				p.logf("planning the features of epoch %d: %v", e, err)
				return nil, err
			}
			m.features = fp
		}
		m.took = time.Since(t0)
		p.mu.Lock()
		p.metas[e] = m
		p.mu.Unlock()
		p.logf("epoch %d prepared in %v: %d minibatches, frontiers %v", e, m.took.Round(time.Millisecond), len(m.batches), frontierSizes(r))
		return r, nil
	})
}

func frontierSizes(r *epoch.Result) []int {
	out := make([]int, r.NumLayers()+1)
	for l := range out {
		out[l] = len(r.Frontier(l))
	}
	return out
}

// installLocked makes the Store's newly current Result the current servedEpoch.
func (p *Pipeline) installLocked(r *epoch.Result, m meta) {
	p.cur = &servedEpoch{epoch: r.Key.Epoch, res: r, meta: m}
	p.cursor = 0
	p.preparing = false
	if p.cfg.PrepareAt == 0 || len(m.batches) == 0 {
		// A refusal is reported when the epoch ends (advance).
		_ = p.prepareNextLocked()
	}
}

// Start makes the first epoch current: the Store's current Result when it
// is exactly that epoch (read back from a state directory and installed
// with Store.SetCurrent, say), otherwise sampled now. It is a no-op once
// an epoch is current.
func (p *Pipeline) Start(ctx context.Context) error {
	p.mu.Lock()
	started := p.cur != nil
	p.mu.Unlock()
	if started {
		return nil
	}
	e := p.cfg.FirstEpoch
	if c := p.store.cur.Load(); c != nil && c.r.Key == p.cfg.Key(e) && slices.Equal(c.r.Fanouts(), p.cfg.Fanouts) {
		if seeds, m := p.epochSeeds(e); slices.Equal(c.r.Frontier(0), seeds) {
			p.mu.Lock()
			if p.cur == nil {
				p.installLocked(c.r, m)
			}
			p.mu.Unlock()
			return nil
		}
	}
	_, err := p.advance(ctx, func() (uint32, bool, error) {
		return e, p.cur == nil, nil
	})
	return err
}

// prepareNextLocked starts preparing the epoch after the current one,
// unless that is under way or past the last epoch. It fails only when the
// Store is busy with a preparation the Pipeline did not start.
func (p *Pipeline) prepareNextLocked() error {
	next := uint64(p.cur.epoch) + 1
	if p.preparing || next >= p.end || p.closed {
		return nil
	}
	if err := p.prepare(uint32(next)); err != nil {
		return err
	}
	p.preparing = true
	return nil
}

// prepareThreshold is the cursor position at which the next epoch's
// preparation starts.
func (p *Pipeline) prepareThreshold(n int) int {
	return int(math.Ceil(p.cfg.PrepareAt * float64(n)))
}

// Claim is a minibatch taken off the cursor and not yet assembled, or
// (End) the news that epoch Epoch has no more minibatches to hand out.
// A claim that is not End must be passed to Assemble exactly once: it
// holds its epoch current until then.
type Claim struct {
	Epoch uint32
	Index int
	Count int
	End   bool
	slot  *servedEpoch
}

// Features returns the feature plan of the claim's epoch (nil without
// Config.Features, or for an End claim).
func (c Claim) Features() *FeaturePlan {
	if c.slot == nil {
		return nil
	}
	return c.slot.features
}

// Claim takes the next minibatch of epoch e (CurrentEpoch: the current
// one) off the shared cursor. Once epoch e's minibatches are all claimed
// it answers End; asking for epoch e+1 then advances (waiting for its
// preparation if needed), and asking for it earlier fails with
// ErrEpochNotDone. After the last epoch (Config.Epochs) claims of the next
// fail with io.EOF.
func (p *Pipeline) Claim(ctx context.Context, e uint32) (Claim, error) {
	if err := p.Start(ctx); err != nil {
		return Claim{}, err
	}
	for {
		p.mu.Lock()
		cur := p.cur
		if e == CurrentEpoch {
			e = cur.epoch
		}
		n := len(cur.batches)
		switch {
		case e < cur.epoch:
			p.mu.Unlock()
			return Claim{Epoch: e, End: true}, nil
		case e == cur.epoch:
			if p.cursor >= n || cur.leaving {
				p.mu.Unlock()
				return Claim{Epoch: e, Count: n, End: true}, nil
			}
			i := p.cursor
			p.cursor++
			cur.inflight.Add(1)
			if p.cursor >= p.prepareThreshold(n) {
				// If the Store refuses (it holds a preparation of someone
				// else's), this minibatch is still handed out; the epoch's
				// end reports the refusal if it persists.
				_ = p.prepareNextLocked()
			}
			p.mu.Unlock()
			return Claim{Epoch: e, Index: i, Count: n, slot: cur}, nil
		case uint64(e) == uint64(cur.epoch)+1:
			if p.cursor < n && !cur.leaving {
				p.mu.Unlock()
				return Claim{}, fmt.Errorf("%w: epoch %d not started: epoch %d has %d of %d minibatches left", ErrEpochNotDone, e, cur.epoch, n-p.cursor, n)
			}
			p.mu.Unlock()
			if _, err := p.Advance(ctx, cur.epoch); err != nil {
				return Claim{}, err
			}
			// Loop: claim from the new epoch.
		default:
			p.mu.Unlock()
			return Claim{}, fmt.Errorf("%w %d: current is %d", ErrUnknownEpoch, e, cur.epoch)
		}
	}
}

// Assemble builds a claimed minibatch's blocks from the Store. The claim
// holds its epoch current (Advance waits for claims in flight); AssembleAt
// pins the epoch anyway, so a bug there fails loudly instead of mixing
// epochs.
func (p *Pipeline) Assemble(c Claim) (*Minibatch, error) { return p.AssembleAs(c, p.cfg.Semantics) }

// AssembleAs is Assemble with the given semantics. The epoch's feature
// plan (Minibatch.Features) holds the node sets of Config.Semantics: a
// minibatch assembled otherwise needs its rows read by its own n_id.
func (p *Pipeline) AssembleAs(c Claim, sem epoch.Semantics) (*Minibatch, error) {
	if c.End || c.slot == nil {
		return nil, fmt.Errorf("epoch: assembling a claim of epoch %d that holds no minibatch", c.Epoch)
	}
	defer c.slot.inflight.Done()
	t0 := time.Now()
	b, link, err := p.assembleClaim(c, sem)
	if err != nil {
		return nil, fmt.Errorf("epoch: epoch %d minibatch %d: %w", c.Epoch, c.Index, err)
	}
	out := &Minibatch{Epoch: c.Epoch, Index: c.Index, Count: c.Count, Blocks: b, Link: link, Features: c.slot.features, AssembleStart: t0}
	if out.Features != nil && sem != p.cfg.Semantics {
		if out.PlanNodes, err = p.nodeSetOfClaim(c, p.cfg.Semantics); err != nil {
			return nil, fmt.Errorf("epoch: epoch %d minibatch %d: %w", c.Epoch, c.Index, err)
		}
	}
	out.AssembleEnd = time.Now()
	return out, nil
}

// Next claims and assembles the next minibatch, advancing to the next
// epoch when the current one's are all claimed; after the last epoch it
// returns io.EOF. It waits (under ctx) when the next epoch is not ready.
func (p *Pipeline) Next(ctx context.Context) (*Minibatch, error) {
	for {
		c, err := p.Claim(ctx, CurrentEpoch)
		if err != nil {
			return nil, err
		}
		if !c.End {
			return p.Assemble(c)
		}
		if uint64(c.Epoch)+1 >= p.end {
			return nil, io.EOF
		}
		if _, err := p.Advance(ctx, c.Epoch); err != nil {
			return nil, err
		}
	}
}

// Run calls fn for every minibatch until the last epoch ends (nil), fn
// fails, or ctx is done.
func (p *Pipeline) Run(ctx context.Context, fn func(*Minibatch) error) error {
	for {
		b, err := p.Next(ctx)
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

// Advance leaves epoch from (CurrentEpoch: the current one), waiting for
// the next epoch's preparation, and returns the new epoch's Info. If the
// Pipeline is already past from, it only returns the current Info: many
// clients may each ask once. Minibatches of the epoch left that nobody
// claimed are skipped. Leaving the last epoch fails with io.EOF.
func (p *Pipeline) Advance(ctx context.Context, from uint32) (Info, error) {
	if err := p.Start(ctx); err != nil {
		return Info{}, err
	}
	return p.advance(ctx, func() (uint32, bool, error) {
		cur := p.cur
		if cur == nil {
			return 0, false, fmt.Errorf("%w: no epoch loaded", ErrUnknownEpoch)
		}
		if from == CurrentEpoch {
			from = cur.epoch
		}
		switch {
		case cur.epoch > from:
			return 0, false, nil
		case cur.epoch < from:
			return 0, false, fmt.Errorf("%w: cannot leave epoch %d: current is %d", ErrUnknownEpoch, from, cur.epoch)
		case uint64(from)+1 >= p.end:
			return 0, false, fmt.Errorf("epoch %d is the last: %w", from, io.EOF)
		}
		return from + 1, true, nil
	})
}

// advance switches to the epoch that target names, or returns the current
// Info when target says there is nothing to do (ok false). target is
// called under p.mu, with p.cur nil before the first epoch. One advance
// runs at a time; the others wait for it and ask target again.
func (p *Pipeline) advance(ctx context.Context, target func() (e uint32, ok bool, err error)) (Info, error) {
	p.mu.Lock()
	for p.advancing != nil && !p.closed {
		// Someone else is advancing: wait, then look again.
		ch := p.advancing
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Info{}, ctx.Err()
		}
		p.mu.Lock()
	}
	if p.closed {
		p.mu.Unlock()
		return Info{}, ErrClosed
	}
	next, ok, err := target()
	if err != nil || !ok {
		info := p.infoLocked()
		p.mu.Unlock()
		return info, err
	}
	cur := p.cur
	if cur != nil {
		err = p.prepareNextLocked()
	} else {
		err = p.prepare(next)
	}
	if err != nil {
		p.mu.Unlock()
		return Info{}, fmt.Errorf("preparing epoch %d: %w", next, err)
	}
	if cur != nil {
		cur.leaving = true
	}
	done := make(chan struct{})
	p.advancing = done
	p.mu.Unlock()

	if cur != nil {
		cur.inflight.Wait()
	}
	res, err := p.store.Advance(ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	p.advancing = nil
	close(done)
	if res == nil {
		if cur != nil {
			cur.leaving = false
		}
		if ctx.Err() == nil {
			// The preparation failed; the next call prepares it again.
			p.preparing = false
		}
		return Info{}, fmt.Errorf("preparing epoch %d: %w", next, err)
	}
	// The switch happened; err, if any, reports a failure to prune old
	// epoch directories of a state directory: worth a log line only.
	if err != nil {
		p.logf("advancing to epoch %d: %v", next, err)
	}
	m, ok := p.metas[res.Key.Epoch]
	delete(p.metas, res.Key.Epoch)
	if !ok {
		_, m = p.epochSeeds(res.Key.Epoch)
	}
	p.installLocked(res, m)
	p.logf("advanced to epoch %d", res.Key.Epoch)
	return p.infoLocked(), nil
}

// AssembleSeeds assembles a minibatch of the given seeds from epoch e, which must
// be the current one (CurrentEpoch: whichever that is), with the given
// semantics. The seeds must be in frontier_0 (ErrNotInFrontier), each once
// (ErrDuplicateSeed).
func (p *Pipeline) AssembleSeeds(ctx context.Context, e uint32, seeds []uint32, sem epoch.Semantics) (*epoch.Blocks, error) {
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	cur := p.cur
	if !(e == CurrentEpoch || e == cur.epoch) || cur.leaving {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w %d: current is %d", ErrUnknownEpoch, e, cur.epoch)
	}
	cur.inflight.Add(1)
	p.mu.Unlock()
	defer cur.inflight.Done()
	return p.store.AssembleAt(cur.epoch, seeds, sem)
}

// Info returns the current epoch's Info (its epoch fields are zero before
// Start).
func (p *Pipeline) Info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.infoLocked()
}

func (p *Pipeline) infoLocked() Info {
	info := Info{
		BatchSize: p.cfg.BatchSize, NumTrain: p.cfg.numTrain(), // Train is sorted unique since NewPipeline
		Link: p.cfg.linkInfo(),
		Rank: p.cfg.Rank, WorldSize: p.cfg.World, Fanouts: p.cfg.Fanouts,
		Seed: p.cfg.Seed, Replace: p.cfg.Replace, PrepareAt: p.cfg.PrepareAt,
	}
	if c := p.cur; c != nil {
		info.Epoch = c.epoch
		info.NumBatches = len(c.batches)
		info.Served = p.cursor
		info.ShardSize = c.shard
		info.Dropped = c.dropped
		info.FrontierSizes = frontierSizes(c.res)
		info.SampledEdges = c.res.NumSampledEdges()
		info.PrepareSeconds = c.took.Seconds()
		info.NextReady = p.preparing && p.store.Ready()
	}
	return info
}

// Close stops any preparation in flight; later calls fail with ErrClosed
// where they would advance. Claims already made may still be assembled.
func (p *Pipeline) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.store.Discard()
}
