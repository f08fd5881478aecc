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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
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
	// 0 means max(DefaultMaxInflight, 4*MaxRequest).
	MaxInflight int64
	// MaxConnInflight is one connection's share of MaxInflight; 0 means
	// half of it. A sample request whose reply could need more is refused
	// (CodeOverBudget). It must hold a whole request frame (MaxRequest).
	MaxConnInflight int64
	// NumNodes is the graph's node count; it tightens the reply bound
	// (a minibatch has no more distinct nodes per hop). 0: unknown.
	NumNodes int64
	// EdgeIDs says the Sampler's epochs carry edge ids, which every
	// minibatch reply then carries too (the reply bound counts them).
	EdgeIDs bool

	// Token, when not empty, is required on every connection: its first
	// request must be a hello carrying it (docs/PROTOCOL.md). Serving a
	// TCP listener without one is refused (ErrNoToken).
	Token []byte

	// Walk, when not nil, answers walks requests (OpWalks): the
	// streaming sampler, the GPU engine, a graph in memory
	// (walk.InMemory). Without it they are refused.
	Walk walk.Walker

	// Features, when not nil, is the graph's feature store: every
	// minibatch reply carries its nodes' feature rows and its seeds'
	// labels (Features in docs/PROTOCOL.md), read under each epoch's plan,
	// which Config.Config.Features must then ask for. The server does not
	// close it.
	Features *featstore.Store
}

// EpochInfo is the JSON object epoch_info and advance reply with.
type EpochInfo struct {
	Protocol int `json:"protocol"`
	pipeline.Info
	// Features describes the feature rows every minibatch carries (nil:
	// none).
	Features *FeatureInfo `json:"features,omitempty"`
}

// Server serves one training run's epochs, held by an pipeline.Pipeline.
// Create it with New, load the first epoch with Start, then Serve
// listeners; Shutdown stops it.
type Server struct {
	cfg      Config
	pipe     *pipeline.Pipeline
	maxReq   int
	budget   *budget       // all connections' in-flight bytes
	connSize int64         // one connection's share of budget
	token    []byte        // SHA-256 of Config.Token; nil when none is required
	features *featureStage // nil without Config.Features
	baseCtx  context.Context
	cancel   context.CancelFunc
	// stopReading is closed when Shutdown begins: readers waiting for
	// budget stop waiting and take no new request.
	stopReading chan struct{}

	// splits are the node lists served beside the training stream
	// (OpSplit), by id; splitIDs finds one by its content.
	splitMu  sync.Mutex
	splits   []*pipeline.Split
	splitIDs map[splitKey]uint32
	// maxSplitBatch is the largest batch size of a split (the reply
	// bound of a split_batch request).
	maxSplitBatch atomic.Int64

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
	pipe, err := pipeline.NewPipeline(cfg.Config, cfg.Sampler.SampleEpoch, nil)
	if err != nil {
		if stage != nil {
			stage.close() // its feature file, held open from newFeatureStage
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, pipe: pipe, maxReq: cfg.MaxRequest, features: stage,
		budget: newBudget(cfg.MaxInflight), connSize: cfg.MaxConnInflight,
		baseCtx: ctx, cancel: cancel, stopReading: make(chan struct{}),
		lns:      map[net.Listener]struct{}{},
		conns:    map[*conn]struct{}{},
		splitIDs: map[splitKey]uint32{},
	}
	if len(cfg.Token) > 0 {
		s.token = tokenDigest(cfg.Token)
	}
	return s, nil
}

// Inflight returns the request and reply bytes the server holds now
// against its MaxInflight budget, and the most it has held at once.
func (s *Server) Inflight() (now, peak int64) { return s.budget.inUse() }

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
	return c, nil
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
		if s.features != nil {
			// Its feature rows still take their turn, or the epoch's
			// later minibatches would wait for it forever.
			s.features.planned(s.baseCtx, c.Epoch, c.Index, c.Features(), nil, nil, nil)
		}
		return Minibatch{}, newRequestError(CodeInternal, "assembling batch %d of epoch %d: %v", c.Index, c.Epoch, err)
	}
	out := Minibatch{Epoch: b.Epoch, Index: b.Index, Blocks: b.Blocks}
	if s.features == nil {
		return out, nil
	}
	if b.PlanNodes == nil {
		out.Features, err = s.features.planned(s.baseCtx, b.Epoch, b.Index, b.Features, b.Blocks.Nodes(), b.Blocks.Seeds, pool)
	} else if _, err = s.features.planned(s.baseCtx, b.Epoch, b.Index, b.Features, b.PlanNodes, nil, nil); err == nil {
		out.Features, err = s.features.direct(b.Blocks, pool)
	}
	if err != nil {
		return Minibatch{}, newRequestError(CodeInternal, "reading the features of batch %d of epoch %d: %v", b.Index, b.Epoch, err)
	}
	return out, nil
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
	return s.epochInfo(info), nil
}

// Sample assembles a minibatch of the given seeds from epoch e, which
// must be the current one (CurrentEpoch: whichever that is), with the
// given semantics (DefaultSemantics: the server's).
func (s *Server) Sample(ctx context.Context, e uint32, seeds []uint32, sem epoch.Semantics) (*epoch.Blocks, error) {
	b, err := s.pipe.AssembleSeeds(ctx, e, seeds, s.semantics(sem))
	if err != nil {
		return nil, asRequestError(err)
	}
	return b, nil
}

// sampleFeatures reads the features of a sample reply's blocks (nil
// without a feature store): directly, as the seeds are outside any plan.
func (s *Server) sampleFeatures(b *epoch.Blocks, pool *rowPool) (*Features, error) {
	if s.features == nil {
		return nil, nil
	}
	f, err := s.features.direct(b, pool)
	if err != nil {
		return nil, newRequestError(CodeInternal, "reading features: %v", err)
	}
	return f, nil
}

// Info returns the current epoch's info.
func (s *Server) Info() EpochInfo {
	return s.epochInfo(s.pipe.Info())
}

func (s *Server) epochInfo(info pipeline.Info) EpochInfo {
	ei := EpochInfo{Protocol: Protocol, Info: info}
	if s.features != nil {
		ei.Features = s.features.info()
	}
	return ei
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
		c := &conn{s: s, nc: nc, budget: newBudget(s.connSize)}
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
	if s.features != nil {
		s.features.close()
	}
	return err
}
