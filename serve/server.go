// Package serve is the trainer-facing server: it owns an epoch pipeline
// (the current epoch that minibatches are cut from, and the next one,
// prepared in the background once the current is PrepareAt served) and
// answers a small framed binary protocol (docs/PROTOCOL.md) on a Unix
// socket or a loopback TCP port.
//
// Many clients share one cursor over the current epoch's minibatches: each
// minibatch is handed out once, then every client gets an end-of-epoch
// marker. Asking for the next epoch's batches after that advances the
// server, so a multi-worker loader needs no coordination of its own.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featrows"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/walk"
)

// EpochSampler samples a whole epoch; host.Backend satisfies it.
type EpochSampler interface {
	SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error)
}

// ErrConfig is wrapped by New's errors about its configuration (it also
// wraps epoch.ErrConfig for those about the minibatch stream).
var ErrConfig = errors.New("serve: bad configuration")

// Config is what a Server serves: the minibatch stream (the same
// pipeline.Config that run and bench use) and the server's own limits.
type Config struct {
	pipeline.Config
	Sampler    EpochSampler
	MaxRequest int // request frame cap in bytes; 0 means DefaultMaxRequest

	// MaxInflight is the budget, in bytes, for everything in flight at
	// once over all connections: each request from its header until its
	// reply is written, counted as its frame, a bound on its reply
	// (replyBound) and then the reply's exact size. A connection whose next
	// request does not fit waits, unread, until replies free the bytes.
	// 0 means max(DefaultMaxInflight, 4*MaxRequest), raised where the
	// splits of every node of the graph (validation and test sets of any
	// size: a PyG script's loaders register theirs without asking) would
	// not fit their quarter of it, to four times their bound, but not past
	// the memory the process may use (memavail.Available): a bound on what
	// may be held, which the memory itself bounds anyway.
	MaxInflight int64
	// MaxConnInflight is one connection's share of MaxInflight; 0 means
	// half of it. A sample or walks request whose reply could need more is
	// refused (CodeOverBudget). It must hold a whole request frame
	// (MaxRequest). Besides requests and replies, MaxInflight counts the
	// connections' shared-rows buffers and the splits (a quarter of it at
	// most each); control requests have a pool of their own
	// (ControlBudget).
	MaxConnInflight int64
	// NumNodes is the graph's node count; it tightens the reply bound
	// (a minibatch has no more distinct nodes per hop). 0: unknown.
	NumNodes int64
	// MaxDegree and NumEdges are the graph's largest degree and edge
	// count (chunkfmt.Manifest's): they bound a full hop's edges (fanout
	// -1, every neighbor), whose rows are as long as the degrees, in the
	// reply and split bounds (docs/PROTOCOL.md). 0: unknown, and a full
	// hop's bound saturates (every sample request refused as over
	// budget): a server with fanout -1 should be given both.
	MaxDegree, NumEdges int64
	// EdgeIDs says the Sampler's epochs carry edge ids, which every
	// minibatch reply then carries too (the reply bound counts them).
	EdgeIDs bool

	// Token, when not empty, is required on every connection: its first
	// request must be a hello carrying it (docs/PROTOCOL.md). Serving a
	// TCP listener without one is refused (ErrNoToken).
	Token []byte

	// Fresh, when not nil, answers sample_fresh requests
	// (OpSampleFresh): any seeds sampled on request by random reads,
	// without the prepared epochs. Without it they are refused.
	Fresh FreshSampler

	// Walk, when not nil, answers walks requests (OpWalks): the
	// streaming sampler, the GPU engine, a graph in memory
	// (walk.InMemory). Without it they are refused.
	Walk walk.Walker

	// StallTimeout is how long a connection may hold in-flight bytes
	// without progress (no byte of its replies written, no request read)
	// while other requests wait for the budget: past it, the connection
	// is closed and its bytes given back (docs/PROTOCOL.md, "Clients that
	// stop reading"). A client alone may pause as long as it likes (up to
	// replyWriteTimeout per reply). 0 means DefaultStallTimeout; negative,
	// never.
	StallTimeout time.Duration
	// WalkTimeout bounds one walks request's turn on the walker: past it
	// the walk is cancelled and answered CodeTimedOut. 0 means
	// DefaultWalkTimeout; negative, no bound.
	WalkTimeout time.Duration
	// MaxWalkLength is the longest walk (steps) a walks request may ask
	// for (a longer one is a bad request): the streaming walker's cost is
	// a pass over the chunks per step, whatever the number of walks.
	// 0 means DefaultMaxWalkLength.
	MaxWalkLength int

	// SampleBytes, when not nil, returns what the Sampler's last
	// SampleEpoch read from disk (host.Stats.BytesRead): the server asks
	// right after each one, on the sampler's turn, for its statistics
	// (EpochStats.BytesRead). Nil: not known (the GPU engine reads none).
	SampleBytes func() int64
	// GraphBytes is one read of every chunk of the graph (host.Stats'
	// GraphBytes), which the epochs' bytes read are told against; 0: not
	// said.
	GraphBytes int64

	// Graph is the graph directory, which scan requests (OpScan: the
	// passes of layer-wise inference, docs/PROTOCOL.md "Full scans") read
	// in chunk order; "" refuses them.
	Graph string

	// Features, when not nil, is the graph's feature store: every
	// minibatch reply carries its nodes' feature rows and its seeds'
	// labels (Features in docs/PROTOCOL.md), read under each epoch's plan,
	// which Config.Config.Features must then ask for. The server does not
	// close it.
	Features *featstore.Store
}

// DefaultStallTimeout is Config.StallTimeout's default.
const DefaultStallTimeout = time.Minute

// DefaultWalkTimeout is Config.WalkTimeout's default.
const DefaultWalkTimeout = 5 * time.Minute

// DefaultMaxWalkLength is Config.MaxWalkLength's default: far beyond
// DeepWalk's and node2vec's usual 40 to 80 steps, and short enough that
// one request cannot hold the streaming walker for hours.
const DefaultMaxWalkLength = 4096

// EpochInfo is the JSON object epoch_info and advance reply with.
type EpochInfo struct {
	Protocol int `json:"protocol"`
	pipeline.Info
	// Features describes the feature rows every minibatch carries (nil:
	// none).
	Features *FeatureInfo `json:"features,omitempty"`
	// Stats are the current epoch's figures so far; PreviousStats the
	// epoch before's (nil when it had none: the first epoch), complete
	// once nothing of it is in flight.
	Stats         *EpochStats `json:"stats,omitempty"`
	PreviousStats *EpochStats `json:"previous_stats,omitempty"`
}

// Server serves one training run's epochs, held by an pipeline.Pipeline.
// Create it with New, load the first epoch with Start, then Serve
// listeners; Shutdown stops it.
type Server struct {
	cfg      Config
	pipe     *pipeline.Pipeline
	maxReq   int
	budget   *budget       // all connections' in-flight bytes
	control  *budget       // small control requests' bytes, beside budget (controlRequest)
	connSize int64         // one connection's share of budget
	gate     *samplerGate  // turns on the sampler: epoch sampling, then walks
	janitor  sync.Once     // starts evictStalled with the first Serve
	token    []byte        // SHA-256 of Config.Token; nil when none is required
	features *featureStage // nil without Config.Features
	stats    *statsBook    // the epochs' figures (EpochStats), logged as they end
	// fullHops: a fanout is -1 (every neighbor), whose reply bound, from
	// the graph's largest degree, is loose: a sample over the connection's
	// share is then served holding the share, as a minibatch is.
	fullHops bool
	// directReads holds a token per direct feature read running
	// (MaxDirectReads).
	directReads chan struct{}
	baseCtx     context.Context
	cancel      context.CancelFunc
	// stopReading is closed when Shutdown begins: readers waiting for
	// budget stop waiting and take no new request.
	stopReading chan struct{}

	// splits are the node (and link) lists served beside the training
	// stream (OpSplit, OpLinkSplit), by id or content, holding their
	// bounds of budget.
	splits splitTable[splitKey, *pipeline.Split]
	// scanCount is the scans open over all connections (MaxScans).
	scanCount atomic.Int32
	// rowsHeld is the bytes of all connections' shared-rows buffers (at
	// most a quarter of budget: conn.chargeRows).
	rowsHeld atomic.Int64
	// maxSplitBatch is the largest batch size of a split (the reply
	// bound of a split_batch request).
	maxSplitBatch atomic.Int64
	// maxSplitLink is the largest link section a link split's minibatch
	// may carry (linkBound), added to a split_batch's reply bound.
	maxSplitLink atomic.Int64

	mu      sync.Mutex
	closing bool
	lns     map[net.Listener]struct{}
	conns   map[*conn]struct{}
	connWG  sync.WaitGroup
}

// New checks cfg and returns a Server with no epoch loaded yet.
func New(cfg Config) (*Server, error) {
	if cfg.Sampler == nil {
		return nil, fmt.Errorf("%w: no sampler", ErrConfig)
	}
	if cfg.MaxRequest == 0 {
		cfg.MaxRequest = DefaultMaxRequest
	}
	if cfg.MaxRequest < HeaderSize+64 {
		return nil, fmt.Errorf("%w: request cap %d bytes is too small", ErrConfig, cfg.MaxRequest)
	}
	if cfg.MaxInflight == 0 {
		cfg.MaxInflight = max(DefaultMaxInflight, 4*int64(cfg.MaxRequest))
		if cfg.NumNodes > 0 {
			splits := satMul(maxSplitShare, splitBound(&cfg, cfg.NumNodes))
			if avail := memavail.Available(); avail > 0 {
				splits = min(splits, avail)
			}
			cfg.MaxInflight = max(cfg.MaxInflight, splits)
		}
	}
	if cfg.MaxConnInflight == 0 {
		cfg.MaxConnInflight = cfg.MaxInflight / 2
	}
	if cfg.MaxConnInflight > cfg.MaxInflight {
		return nil, fmt.Errorf("%w: a connection's in-flight budget (%d bytes) exceeds the server's (%d)", ErrConfig, cfg.MaxConnInflight, cfg.MaxInflight)
	}
	// A request's frame plus the smallest reply must fit, or a
	// maximum-size request could wait forever.
	if need := int64(cfg.MaxRequest) + smallReply; cfg.MaxConnInflight < need {
		return nil, fmt.Errorf("%w: in-flight budget of %d bytes per connection (%d in all) cannot hold a %d-byte request and its reply (%d bytes): raise the budget or lower the request cap", ErrConfig, cfg.MaxConnInflight, cfg.MaxInflight, cfg.MaxRequest, need)
	}
	if len(cfg.Token) > MaxToken {
		return nil, fmt.Errorf("%w: token of %d bytes, at most %d", ErrConfig, len(cfg.Token), MaxToken)
	}
	if (cfg.Features != nil) != (cfg.Config.Features != nil) {
		return nil, fmt.Errorf("%w: a feature store and the epochs' feature planning go together", ErrConfig)
	}
	var stage *featureStage
	if cfg.Features != nil {
		if cfg.NumNodes > 0 && int64(cfg.Features.NumNodes()) != cfg.NumNodes {
			return nil, fmt.Errorf("%w: feature store of %d rows for a graph of %d nodes", ErrConfig, cfg.Features.NumNodes(), cfg.NumNodes)
		}
		var err error
		if stage, err = newFeatureStage(cfg.Features); err != nil {
			return nil, err
		}
	}
	if cfg.StallTimeout == 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.WalkTimeout == 0 {
		cfg.WalkTimeout = DefaultWalkTimeout
	}
	if cfg.MaxWalkLength == 0 {
		cfg.MaxWalkLength = DefaultMaxWalkLength
	}
	if cfg.MaxWalkLength < 0 {
		return nil, fmt.Errorf("%w: walk length limit %d", ErrConfig, cfg.MaxWalkLength)
	}
	gate := newSamplerGate()
	sampler := cfg.Sampler
	book := newStatsBook(cfg.Logf, cfg.FirstEpoch, stage, cfg.SampleBytes != nil)
	book.graphBytes = cfg.GraphBytes
	// Epoch and split sampling take their turn on the sampler, ahead of
	// any walk (samplerGate); each is timed, with what it read, for the
	// epoch's figures or the split's (splitSampling).
	sample := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		if err := gate.enter(ctx, nil, true); err != nil {
			return nil, err
		}
		defer gate.leave()
		t0 := time.Now()
		res, err := sampler.SampleEpoch(ctx, seeds, fanouts, key)
		if err != nil {
			return nil, err
		}
		d := time.Since(t0)
		var bytes int64
		if cfg.SampleBytes != nil {
			bytes = cfg.SampleBytes()
		}
		if split, ok := ctx.Value(splitSampling{}).(func(time.Duration, int64)); ok {
			split(d, bytes)
		} else {
			book.sampledEpoch(key.Epoch, d, bytes, res.Bytes())
		}
		return res, nil
	}
	pipe, err := pipeline.NewPipeline(cfg.Config, sample, nil)
	if err != nil {
		if stage != nil {
			stage.close() // its feature file, held open from newFeatureStage
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, pipe: pipe, maxReq: cfg.MaxRequest, features: stage, stats: book,
		budget: newBudget(cfg.MaxInflight), control: newBudget(ControlBudget),
		connSize: cfg.MaxConnInflight, gate: gate, directReads: make(chan struct{}, MaxDirectReads),
		fullHops: slices.Contains(cfg.Fanouts, epoch.AllNeighbors),
		baseCtx:  ctx, cancel: cancel, stopReading: make(chan struct{}),
		lns:   map[net.Listener]struct{}{},
		conns: map[*conn]struct{}{},
	}
	if len(cfg.Token) > 0 {
		s.token = tokenDigest(cfg.Token)
	}
	return s, nil
}

// Inflight returns the bytes the server holds now against its
// MaxInflight budget (requests and replies in flight, shared-rows buffers,
// splits), and the most it has held at once.
func (s *Server) Inflight() (now, peak int64) { return s.budget.inUse() }

// ControlInflight is Inflight for the control requests' pool
// (ControlBudget), which the server holds beside MaxInflight.
func (s *Server) ControlInflight() (now, peak int64) { return s.control.inUse() }

func (s *Server) logf(format string, a ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, a...)
	}
}

// checkOpen refuses work that could start an advance once Shutdown has
// begun.
func (s *Server) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return newRequestError(CodeShuttingDown, "server is shutting down")
	}
	return nil
}

// Start prepares the first epoch, synchronously.
func (s *Server) Start(ctx context.Context) error {
	if err := s.pipe.Start(ctx); err != nil {
		s.pipe.Close()
		return err
	}
	return nil
}

// requestError is an error with its protocol code.
type requestError struct {
	code uint16
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func newRequestError(code uint16, format string, a ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, a...)}
}

// asRequestError gives a Pipeline's error its protocol code.
func asRequestError(err error) error {
	code := CodeInternal
	switch {
	case errors.Is(err, pipeline.ErrEpochNotDone):
		code = CodeEpochNotDone
	case errors.Is(err, pipeline.ErrUnknownEpoch):
		code = CodeUnknownEpoch
	case errors.Is(err, epoch.ErrNotInFrontier):
		code = CodeNotInFrontier
	case errors.Is(err, epoch.ErrDuplicateSeed):
		code = CodeDuplicateSeed
	case errors.Is(err, pipeline.ErrClosed):
		code = CodeShuttingDown
	}
	return &requestError{code: code, msg: err.Error()}
}

// Minibatch is NextBatch's answer: a minibatch and its index in the epoch,
// or End once the epoch's minibatches are all handed out.
type Minibatch struct {
	Epoch  uint32
	Index  int
	End    bool
	Blocks *epoch.Blocks
	// Features are the minibatch's feature rows and labels (a server with
	// Config.Features; nil otherwise).
	Features *Features
	// Link is a link minibatch's supervision (a server in link mode, or
	// a link split; nil otherwise).
	Link *epoch.LinkFields
}

// NextBatch hands out the next minibatch of epoch e (CurrentEpoch: the
// current one). Once epoch e's minibatches are all handed out it answers
// End; asking for epoch e+1 then advances the server (waiting for the
// epoch's preparation if needed).
func (s *Server) NextBatch(ctx context.Context, e uint32) (Minibatch, error) {
	c, err := s.claim(ctx, e)
	if err != nil || c.End {
		return Minibatch{Epoch: c.Epoch, End: c.End}, err
	}
	return s.assemble(c, nil, DefaultSemantics)
}

// claim takes the next minibatch of epoch e off the shared cursor.
func (s *Server) claim(ctx context.Context, e uint32) (pipeline.Claim, error) {
	if err := s.checkOpen(); err != nil {
		return pipeline.Claim{}, err
	}
	c, err := s.pipe.Claim(ctx, e)
	if err != nil {
		return c, asRequestError(err)
	}
	if !c.End {
		var rows *featrows.Epoch
		if s.features != nil {
			rows = s.features.epochReads(c.Epoch, c.Features())
		}
		s.stats.claimed(c, rows)
	}
	return c, nil
}

// skipClaim gives up a claimed minibatch that will not be delivered (its
// assembly failed, or the server shuts down before it starts): its
// feature rows still take their turn, or the ones claimed after it would
// wait for it forever, and it counts as failed in its epoch's figures.
func (s *Server) skipClaim(c pipeline.Claim) {
	if s.features != nil {
		s.features.planned(s.baseCtx, c.Epoch, c.Index, c.Features(), nil, nil, nil)
	}
	s.stats.batchDone(c.Epoch, nil, nil, timing{})
}

// semantics resolves a request's semantics: DefaultSemantics is the
// server's.
func (s *Server) semantics(sem epoch.Semantics) epoch.Semantics {
	if sem == DefaultSemantics {
		return s.cfg.Semantics
	}
	return sem
}

// assemble builds a claimed minibatch with the given semantics; with a
// pool (a shared-rows connection's), its rows are read into one of the
// pool's buffers.
//
// Its rows are read in the epoch plan's turn. The plan was made for the
// server's semantics; a minibatch of the other semantics still takes
// that turn with the plan's node set (the cache later minibatches read
// from is filled by it), then reads its own rows directly.
func (s *Server) assemble(c pipeline.Claim, pool *rowPool, sem epoch.Semantics) (Minibatch, error) {
	b, err := s.pipe.AssembleAs(c, s.semantics(sem))
	if err != nil {
		s.skipClaim(c)
		return Minibatch{}, newRequestError(CodeInternal, "assembling batch %d of epoch %d: %v", c.Index, c.Epoch, err)
	}
	tm := timing{asmStart: b.AssembleStart, asmEnd: b.AssembleEnd}
	out := Minibatch{Epoch: b.Epoch, Index: b.Index, Blocks: b.Blocks, Link: b.Link}
	if s.features != nil {
		tm.readStart = time.Now()
		if b.PlanNodes == nil {
			out.Features, err = s.features.planned(s.baseCtx, b.Epoch, b.Index, b.Features, b.Blocks.Nodes(), b.Blocks.Seeds, pool)
		} else if _, err = s.features.planned(s.baseCtx, b.Epoch, b.Index, b.Features, b.PlanNodes, nil, nil); err == nil {
			out.Features, err = s.otherSemanticsFeatures(b, pool)
		}
		tm.readEnd = time.Now()
	}
	if err != nil {
		s.stats.batchDone(b.Epoch, nil, nil, tm)
		return Minibatch{}, newRequestError(CodeInternal, "reading the features of batch %d of epoch %d: %v", b.Index, b.Epoch, err)
	}
	s.stats.batchDone(b.Epoch, out.Blocks, out.Features, tm)
	return out, nil
}

// otherSemanticsFeatures reads the rows of minibatch b, assembled with
// other semantics than the plan's, directly (its plan's turn is taken),
// counting them in the epoch's OtherSemantics.
func (s *Server) otherSemanticsFeatures(b *pipeline.Minibatch, pool *rowPool) (*Features, error) {
	t0 := time.Now()
	f, rep, err := s.directFeatures(s.baseCtx, b.Blocks, pool)
	blocks := b.Blocks
	if err != nil {
		blocks = nil
	}
	s.stats.otherRead(b.Epoch, blocks, f, rep, t0, time.Now())
	return f, err
}

// Advance leaves epoch from (CurrentEpoch: the current one), waiting for
// the next epoch's preparation, and returns the new epoch's info. If the
// server is already past from, it only returns the current info: many
// clients may each ask once. Minibatches of the epoch left that nobody
// claimed are skipped.
func (s *Server) Advance(ctx context.Context, from uint32) (EpochInfo, error) {
	if err := s.checkOpen(); err != nil {
		return EpochInfo{}, err
	}
	info, err := s.pipe.Advance(ctx, from)
	if err != nil {
		return EpochInfo{}, asRequestError(err)
	}
	s.stats.seen(info.Epoch)
	return s.epochInfo(info), nil
}

// Sample assembles a minibatch of the given seeds from epoch e, which
// must be the current one (CurrentEpoch: whichever that is), with the
// given semantics (DefaultSemantics: the server's).
func (s *Server) Sample(ctx context.Context, e uint32, seeds []uint32, sem epoch.Semantics) (*epoch.Blocks, error) {
	b, _, err := s.sample(ctx, e, seeds, sem, false, nil)
	return b, err
}

// sample is Sample, with, when withFeatures and the server has a feature
// store, the blocks' features read directly (the seeds are outside any
// plan; with a pool, into one of its buffers); it counts in the epoch's
// Samples.
func (s *Server) sample(ctx context.Context, e uint32, seeds []uint32, sem epoch.Semantics, withFeatures bool, pool *rowPool) (*epoch.Blocks, *Features, error) {
	op := s.stats.directBegin(directSample, 0)
	tm := timing{asmStart: time.Now()}
	b, err := s.pipe.AssembleSeeds(ctx, e, seeds, s.semantics(sem))
	tm.asmEnd = time.Now()
	if err != nil {
		s.stats.directDone(op, nil, nil, featplan.Report{}, tm)
		return nil, nil, asRequestError(err)
	}
	s.stats.seen(b.Epoch)
	var f *Features
	var rep featplan.Report
	if withFeatures && s.features != nil {
		tm.readStart = time.Now()
		f, rep, err = s.directFeatures(ctx, b, pool)
		tm.readEnd = time.Now()
		if err != nil {
			s.stats.directDone(op, nil, nil, rep, tm)
			return nil, nil, newRequestError(CodeInternal, "reading features: %v", err)
		}
	}
	s.stats.directDone(op, b, f, rep, tm)
	return b, f, nil
}

// MaxDirectReads is how many direct feature reads (the rows of a sample,
// a split's minibatch, a minibatch of the other semantics) run at once;
// the others wait. Each reads through buffers of its own beside the
// reply (featrows.Executor.ReadDirect: up to DirectReadBuffers, whatever
// the rows), which the in-flight budget does not count: bounded here
// instead, to MaxDirectReads of them.
const MaxDirectReads = 2

// DirectReadBuffers bounds the buffers of one direct feature read:
// featrows reads with featplan's default extent options, up to
// DefaultDepth aligned buffers of DefaultMaxExtent (16 MiB and 64 KiB).
const DirectReadBuffers = featplan.DefaultDepth * (featplan.DefaultMaxExtent + featplan.Align)

// directFeatures is featureStage.direct in one of MaxDirectReads turns,
// waited for until ctx ends.
func (s *Server) directFeatures(ctx context.Context, b *epoch.Blocks, pool *rowPool) (*Features, featplan.Report, error) {
	select {
	case s.directReads <- struct{}{}:
	case <-ctx.Done():
		return nil, featplan.Report{}, ctx.Err()
	}
	defer func() { <-s.directReads }()
	return s.features.direct(b, pool)
}

// Info returns the current epoch's info.
func (s *Server) Info() EpochInfo {
	return s.epochInfo(s.pipe.Info())
}

// epochInfo is info with the server's: its features and the current and
// previous epochs' figures.
func (s *Server) epochInfo(info pipeline.Info) EpochInfo {
	ei := EpochInfo{Protocol: Protocol, Info: info}
	if s.features != nil {
		ei.Features = s.features.info()
	}
	ei.Stats, ei.PreviousStats = s.stats.snapshot(info.Epoch, info.NumBatches)
	return ei
}

// evictStalled closes the connections that hold the budget hostage: while
// a request has waited for the in-flight budget (or the control pool) for
// StallTimeout, every connection with a reply whose write has moved no
// byte for StallTimeout (its client does not read) is closed, which gives
// back its bytes and cancels its requests. A client that stops reading
// while nobody needs its bytes keeps its connection (replyWriteTimeout).
// It runs from the first Serve until Shutdown ends.
func (s *Server) evictStalled() {
	stall := s.cfg.StallTimeout
	tick := time.NewTicker(max(stall/4, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.baseCtx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if max(s.budget.oldestWait(now), s.control.oldestWait(now)) < stall {
			continue
		}
		s.mu.Lock()
		for c := range s.conns {
			p := c.wprog.Load()
			if p == 0 || now.Sub(time.Unix(0, p)) < stall || c.evicted.Swap(true) {
				continue
			}
			s.logf("connection %v: closed: a reply unread for %v holds in-flight bytes that other requests wait for (--stall-timeout)", c.nc.RemoteAddr(), now.Sub(time.Unix(0, p)).Round(time.Millisecond))
			c.cancel()
			c.nc.Close()
		}
		s.mu.Unlock()
	}
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("serve: server closed")

// ErrNoToken is returned by Serve for a TCP listener when the server has
// no token: any local user could connect.
var ErrNoToken = errors.New("serve: TCP needs a token (--token-file FILE or $STREAMSAMPLER_TOKEN)")

// Serve accepts connections on ln until Shutdown; each connection's
// requests are answered concurrently, replies carrying the request's id.
// A TCP listener is refused (ErrNoToken, ln closed) unless Config.Token is
// set: unlike a Unix socket's file mode, nothing else keeps other users out.
func (s *Server) Serve(ln net.Listener) error {
	if strings.HasPrefix(ln.Addr().Network(), "tcp") && s.token == nil {
		ln.Close()
		return ErrNoToken
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	if s.cfg.StallTimeout > 0 {
		s.janitor.Do(func() { go s.evictStalled() })
	}
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, stops reading new requests, waits (up to ctx)
// for in-flight replies to be written, then closes every connection and
// stops background preparation.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		close(s.stopReading)
	}
	s.closing = true
	for ln := range s.lns {
		ln.Close() // a Unix listener removes its socket file
	}
	for c := range s.conns {
		// Wake the reader; it stops taking requests, the in-flight ones
		// still reply.
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.cancel() // wake handlers waiting on a preparation
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.cancel()
	s.pipe.Close()
	s.stats.flush() // the epochs' lines not yet logged
	if s.features != nil {
		s.features.close()
	}
	return err
}
