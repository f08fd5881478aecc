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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
)

// EpochSampler samples a whole epoch; host.Backend satisfies it.
type EpochSampler interface {
	SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error)
}

// ErrConfig is wrapped by New's errors about its configuration.
var ErrConfig = errors.New("serve: bad configuration")

// DefaultPrepareAt is the fraction of an epoch's minibatches handed out at
// which the next epoch's preparation starts.
const DefaultPrepareAt = 0.8

// Config is what a Server serves.
type Config struct {
	Sampler    EpochSampler
	Train      []uint32 // training node ids, any order; duplicates are ignored
	Fanouts    []int    // hop order
	BatchSize  int
	Seed       uint64
	Replace    bool
	Rank       int     // data-parallel rank, 0..World-1
	World      int     // data-parallel world size; 0 means 1
	PrepareAt  float64 // in [0,1]; NaN or negative means DefaultPrepareAt
	FirstEpoch uint32
	MaxRequest int                           // request frame cap in bytes; 0 means DefaultMaxRequest
	Logf       func(format string, a ...any) // nil: silent
}

// EpochInfo is the JSON object epoch_info and advance reply with.
type EpochInfo struct {
	Protocol       int     `json:"protocol"`
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
}

// slot is the current epoch's minibatch list and cursor bookkeeping; its
// Result lives in the epoch.Store.
type slot struct {
	epoch   uint32
	res     *epoch.Result
	batches [][]uint32
	shard   int
	dropped int
	took    time.Duration
	// leaving is set (under Server.mu) once an advance away from this
	// epoch has begun: no more claims or samples start on it.
	leaving bool
	// inflight counts claimed minibatches and samples being assembled;
	// the Store switches epochs only once they are done.
	inflight sync.WaitGroup
}

// meta is what preparing an epoch computes beside its Result.
type meta struct {
	batches [][]uint32
	shard   int
	dropped int
	took    time.Duration
}

// Server serves one training run's epochs. Create it with New, load the
// first epoch with Start, then Serve listeners; Shutdown stops it.
type Server struct {
	cfg     Config
	train   []uint32 // sorted unique
	perRank int      // minibatches every rank serves per epoch
	maxReq  int
	baseCtx context.Context
	cancel  context.CancelFunc
	store   *epoch.Store

	mu        sync.Mutex
	cur       *slot
	cursor    int
	preparing bool            // Store.Prepare was called for cur.epoch+1
	metas     map[uint32]meta // filled by preparations
	advancing chan struct{}   // closed when the advance under way ends
	closing   bool
	lns       map[net.Listener]struct{}
	conns     map[*conn]struct{}
	connWG    sync.WaitGroup
}

// New checks cfg and returns a Server with no epoch loaded yet.
func New(cfg Config) (*Server, error) {
	if cfg.Sampler == nil {
		return nil, fmt.Errorf("%w: no sampler", ErrConfig)
	}
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("%w: batch size %d, want >= 1", ErrConfig, cfg.BatchSize)
	}
	if len(cfg.Fanouts) == 0 {
		return nil, fmt.Errorf("%w: no fanouts", ErrConfig)
	}
	if cfg.World == 0 {
		cfg.World = 1
	}
	if cfg.World < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.World {
		return nil, fmt.Errorf("%w: rank %d of world size %d", ErrConfig, cfg.Rank, cfg.World)
	}
	if math.IsNaN(cfg.PrepareAt) || cfg.PrepareAt < 0 {
		cfg.PrepareAt = DefaultPrepareAt
	}
	if cfg.PrepareAt > 1 {
		return nil, fmt.Errorf("%w: prepare-at %g, want a fraction in [0,1]", ErrConfig, cfg.PrepareAt)
	}
	if cfg.MaxRequest <= 0 {
		cfg.MaxRequest = DefaultMaxRequest
	}
	if cfg.MaxRequest < HeaderSize+64 {
		return nil, fmt.Errorf("%w: request cap %d bytes is too small", ErrConfig, cfg.MaxRequest)
	}
	train := slices.Clone(cfg.Train)
	slices.Sort(train)
	train = slices.Compact(train)
	if len(train) < cfg.World {
		return nil, fmt.Errorf("%w: %d training nodes for %d ranks", ErrConfig, len(train), cfg.World)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, train: train, maxReq: cfg.MaxRequest,
		// Every rank's shard has at least floor(n/world) nodes; serving
		// that many nodes' minibatches on every rank keeps DDP ranks in
		// step.
		perRank: epoch.NumBatches(len(train)/cfg.World, cfg.BatchSize),
		baseCtx: ctx, cancel: cancel,
		store: epoch.NewStore(),
		metas: map[uint32]meta{},
		lns:   map[net.Listener]struct{}{},
		conns: map[*conn]struct{}{},
	}
	return s, nil
}

func (s *Server) logf(format string, a ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, a...)
	}
}

// prepare starts sampling epoch e into the Store: this rank's shard, the
// epoch's Result, and its minibatches (cut to perRank).
func (s *Server) prepare(e uint32) error {
	key := epoch.Key{Seed: s.cfg.Seed, Epoch: e, Replace: s.cfg.Replace}
	return s.store.Prepare(s.baseCtx, key, func(ctx context.Context) (*epoch.Result, error) {
		t0 := time.Now()
		shard, err := epoch.Shard(s.train, s.cfg.Rank, s.cfg.World, s.cfg.Seed, e)
		if err != nil {
			return nil, err
		}
		res, err := s.cfg.Sampler.SampleEpoch(ctx, shard, s.cfg.Fanouts, key)
		if err != nil {
			s.logf("preparing epoch %d: %v", e, err)
			return nil, err
		}
		batches := epoch.Batches(shard, s.cfg.BatchSize, s.cfg.Seed, e)
		keep := min(s.perRank, len(batches))
		m := meta{batches: batches[:keep], shard: len(shard), took: time.Since(t0)}
		for _, b := range batches[keep:] {
			m.dropped += len(b)
		}
		s.mu.Lock()
		s.metas[e] = m
		s.mu.Unlock()
		s.logf("epoch %d prepared in %v: %d minibatches, frontiers %v", e, m.took.Round(time.Millisecond), keep, frontierSizes(res))
		return res, nil
	})
}

func frontierSizes(r *epoch.Result) []int {
	out := make([]int, r.NumLayers()+1)
	for l := range out {
		out[l] = len(r.Frontier(l))
	}
	return out
}

// install makes the Store's newly current Result the current slot.
func (s *Server) installLocked(res *epoch.Result) {
	e := res.Key.Epoch
	m := s.metas[e]
	delete(s.metas, e)
	s.cur = &slot{epoch: e, res: res, batches: m.batches, shard: m.shard, dropped: m.dropped, took: m.took}
	s.cursor = 0
	s.preparing = false
	if s.cfg.PrepareAt == 0 || len(m.batches) == 0 {
		s.prepareNextLocked()
	}
}

// Start prepares the first epoch, synchronously.
func (s *Server) Start(ctx context.Context) error {
	if err := s.prepare(s.cfg.FirstEpoch); err != nil {
		return err
	}
	res, err := s.store.Advance(ctx)
	if err != nil {
		s.store.Discard()
		return err
	}
	s.mu.Lock()
	s.installLocked(res)
	s.mu.Unlock()
	return nil
}

// prepareNextLocked starts preparing the epoch after the current one,
// unless that is under way.
func (s *Server) prepareNextLocked() {
	if s.preparing {
		return
	}
	if err := s.prepare(s.cur.epoch + 1); err != nil {
		// Only ErrAlreadyPreparing, which preparing rules out.
		s.logf("preparing epoch %d: %v", s.cur.epoch+1, err)
		return
	}
	s.preparing = true
}

// prepareThreshold is the cursor position at which the next epoch's
// preparation starts.
func (s *Server) prepareThreshold(n int) int {
	return int(math.Ceil(s.cfg.PrepareAt * float64(n)))
}

// requestError is an error with its protocol code.
type requestError struct {
	code uint16
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func reqErr(code uint16, format string, a ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, a...)}
}

// Batch is NextBatch's answer: a minibatch and its index in the epoch,
// or End once the epoch's minibatches are all handed out.
type Batch struct {
	Epoch  uint32
	Index  int
	End    bool
	Blocks *epoch.Blocks
}

// NextBatch hands out the next minibatch of epoch e (CurrentEpoch: the
// current one). Once epoch e's minibatches are all handed out it answers
// End; asking for epoch e+1 then advances the server (waiting for the
// epoch's preparation if needed).
func (s *Server) NextBatch(ctx context.Context, e uint32) (Batch, error) {
	c, err := s.claim(ctx, e)
	if err != nil || c.End {
		return c.Batch, err
	}
	return s.assemble(c)
}

// claimed is a minibatch taken off the cursor, not yet assembled.
type claimed struct {
	Batch
	slot *slot
}

// assemble builds a claimed minibatch from the Store. The claim holds the
// epoch current (Advance waits for in-flight claims); SampleAt pins the
// epoch anyway, so a bug there fails loudly instead of mixing epochs.
func (s *Server) assemble(c claimed) (Batch, error) {
	defer c.slot.inflight.Done()
	b, err := s.store.SampleAt(c.Epoch, c.slot.batches[c.Index])
	if err != nil {
		return Batch{}, reqErr(CodeInternal, "assembling batch %d of epoch %d: %v", c.Index, c.Epoch, err)
	}
	c.Blocks = b
	return c.Batch, nil
}

// claim takes the next minibatch index of epoch e off the shared cursor
// (advancing to e first if e is the next epoch and the current one is
// exhausted). Assembly is left to the caller, so that a connection can
// claim in request order and assemble concurrently.
func (s *Server) claim(ctx context.Context, e uint32) (claimed, error) {
	for {
		s.mu.Lock()
		if s.cur == nil {
			s.mu.Unlock()
			return claimed{}, reqErr(CodeUnknownEpoch, "no epoch loaded yet")
		}
		cur := s.cur
		if e == CurrentEpoch {
			e = cur.epoch
		}
		n := len(cur.batches)
		switch {
		case e < cur.epoch:
			s.mu.Unlock()
			return claimed{Batch: Batch{Epoch: e, End: true}}, nil
		case e == cur.epoch:
			if s.cursor >= n || cur.leaving {
				s.mu.Unlock()
				return claimed{Batch: Batch{Epoch: e, End: true}}, nil
			}
			i := s.cursor
			s.cursor++
			cur.inflight.Add(1)
			if s.cursor >= s.prepareThreshold(n) {
				s.prepareNextLocked()
			}
			s.mu.Unlock()
			return claimed{Batch: Batch{Epoch: e, Index: i}, slot: cur}, nil
		case e == cur.epoch+1:
			if s.cursor < n && !cur.leaving {
				s.mu.Unlock()
				return claimed{}, reqErr(CodeEpochNotDone, "epoch %d not started: epoch %d has %d of %d minibatches left", e, cur.epoch, n-s.cursor, n)
			}
			s.mu.Unlock()
			if _, err := s.Advance(ctx, cur.epoch); err != nil {
				return claimed{}, err
			}
			// Loop: serve from the new epoch.
		default:
			s.mu.Unlock()
			return claimed{}, reqErr(CodeUnknownEpoch, "unknown epoch %d: current is %d", e, cur.epoch)
		}
	}
}

// Advance leaves epoch from (CurrentEpoch: the current one), waiting for
// the next epoch's preparation, and returns the new epoch's info. If the
// server is already past from, it only returns the current info: many
// clients may each ask once. Minibatches of the epoch left that nobody
// claimed are skipped.
func (s *Server) Advance(ctx context.Context, from uint32) (EpochInfo, error) {
	s.mu.Lock()
	for {
		if s.cur == nil {
			s.mu.Unlock()
			return EpochInfo{}, reqErr(CodeUnknownEpoch, "no epoch loaded yet")
		}
		if from == CurrentEpoch {
			from = s.cur.epoch
		}
		if s.cur.epoch > from {
			info := s.infoLocked()
			s.mu.Unlock()
			return info, nil
		}
		if s.cur.epoch < from {
			e := s.cur.epoch
			s.mu.Unlock()
			return EpochInfo{}, reqErr(CodeUnknownEpoch, "cannot leave epoch %d: current is %d", from, e)
		}
		if s.closing {
			s.mu.Unlock()
			return EpochInfo{}, reqErr(CodeShuttingDown, "server is shutting down")
		}
		if ch := s.advancing; ch != nil {
			// Someone else is advancing: wait, then look again.
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return EpochInfo{}, ctx.Err()
			}
			s.mu.Lock()
			continue
		}
		done := make(chan struct{})
		s.advancing = done
		cur := s.cur
		cur.leaving = true
		s.prepareNextLocked()
		s.mu.Unlock()

		cur.inflight.Wait()
		res, err := s.store.Advance(ctx)

		s.mu.Lock()
		s.advancing = nil
		close(done)
		if err != nil {
			cur.leaving = false
			if ctx.Err() == nil {
				// The preparation failed; the next request retries it.
				s.preparing = false
			}
			s.mu.Unlock()
			return EpochInfo{}, reqErr(CodeInternal, "preparing epoch %d: %v", from+1, err)
		}
		s.installLocked(res)
		s.logf("advanced to epoch %d", s.cur.epoch)
	}
}

// Sample assembles a minibatch of the given seeds from epoch e, which
// must be the current one (CurrentEpoch: whichever that is).
func (s *Server) Sample(e uint32, seeds []uint32) (*epoch.Blocks, error) {
	s.mu.Lock()
	if s.cur == nil || !(e == CurrentEpoch || e == s.cur.epoch) || s.cur.leaving {
		var curE uint32
		if s.cur != nil {
			curE = s.cur.epoch
		}
		s.mu.Unlock()
		return nil, reqErr(CodeUnknownEpoch, "unknown epoch %d: current is %d", e, curE)
	}
	cur := s.cur
	cur.inflight.Add(1)
	s.mu.Unlock()
	defer cur.inflight.Done()
	b, err := s.store.Sample(seeds)
	switch {
	case errors.Is(err, epoch.ErrNotInFrontier):
		return nil, reqErr(CodeNotInFrontier, "%v", err)
	case errors.Is(err, epoch.ErrDuplicateSeed):
		return nil, reqErr(CodeDuplicateSeed, "%v", err)
	case err != nil:
		return nil, reqErr(CodeInternal, "%v", err)
	}
	return b, nil
}

// Info returns the current epoch's info.
func (s *Server) Info() EpochInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *Server) infoLocked() EpochInfo {
	info := EpochInfo{
		Protocol: Protocol, BatchSize: s.cfg.BatchSize, NumTrain: len(s.train),
		Rank: s.cfg.Rank, WorldSize: s.cfg.World, Fanouts: s.cfg.Fanouts,
		Seed: s.cfg.Seed, Replace: s.cfg.Replace, PrepareAt: s.cfg.PrepareAt,
	}
	if s.cur != nil {
		info.Epoch = s.cur.epoch
		info.NumBatches = len(s.cur.batches)
		info.Served = s.cursor
		info.ShardSize = s.cur.shard
		info.Dropped = s.cur.dropped
		info.FrontierSizes = frontierSizes(s.cur.res)
		info.SampledEdges = s.cur.res.NumSampledEdges()
		info.PrepareSeconds = s.cur.took.Seconds()
		info.NextReady = s.preparing && s.store.Ready()
	}
	return info
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("serve: server closed")

// Serve accepts connections on ln until Shutdown; each connection's
// requests are answered concurrently, replies carrying the request's id.
func (s *Server) Serve(ln net.Listener) error {
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
		c := &conn{s: s, nc: nc}
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
	s.store.Discard()
	return err
}

// MaxUnixPath is the longest Unix socket path, in bytes: Linux's
// sun_path holds 108 bytes, the last a NUL.
const MaxUnixPath = 107

// ListenUnix listens on a Unix socket at path, replacing a stale socket
// file (one nobody accepts on) but refusing to touch anything else. A
// path longer than MaxUnixPath bytes, or in a directory that does not
// exist, is an error that says so (the system's own is "invalid
// argument" or "no such file or directory" for a file nobody named).
func ListenUnix(path string) (net.Listener, error) {
	if len(path) > MaxUnixPath {
		return nil, fmt.Errorf("serve: socket path %s is %d bytes, longer than the %d a Unix socket address holds; use a shorter path (e.g. in /tmp)", path, len(path), MaxUnixPath)
	}
	if dir := filepath.Dir(path); dir != "" {
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("serve: socket %s: directory %s: %w", path, dir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("serve: socket %s: %s is not a directory", path, dir)
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("serve: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("serve: %s: a server is already listening there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("serve: removing stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return ln, nil
}

// ErrNotLoopback is returned by ListenTCP for an address other than a
// loopback one: the protocol has no authentication.
var ErrNotLoopback = errors.New("serve: TCP address is not loopback")

// ListenTCP listens on a loopback TCP address (127.0.0.1:PORT,
// [::1]:PORT, localhost:PORT).
func ListenTCP(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("serve: TCP address %q: %w", addr, err)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%w: %q (use 127.0.0.1:PORT)", ErrNotLoopback, addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w: %q resolved to %v", ErrNotLoopback, addr, ta.IP)
	}
	return ln, nil
}

// conn is one client connection.
type conn struct {
	s        *Server
	nc       net.Conn
	wmu      sync.Mutex
	inflight sync.WaitGroup
}

// maxInflight bounds a connection's concurrent requests.
const maxInflight = 8

func (c *conn) serve() {
	s := c.s
	ctx, cancel := context.WithCancel(s.baseCtx)
	defer func() {
		c.inflight.Wait() // in-flight requests still reply
		cancel()
		c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.connWG.Done()
	}()
	sem := make(chan struct{}, maxInflight)
	for {
		f, _, err := ReadFrame(c.nc, s.maxReq, nil)
		if err != nil {
			switch {
			case errors.Is(err, ErrFrameTooLarge):
				c.replyError(0, 0, CodeTooLarge, err.Error())
			case errors.Is(err, ErrMalformed):
				c.replyError(0, 0, CodeBadRequest, err.Error())
			case err == io.EOF, errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
			default:
				s.logf("connection %v: %v", c.nc.RemoteAddr(), err)
			}
			return
		}
		// next_batch claims its minibatch here, in request order, so that
		// a client pipelining requests on one connection gets its
		// minibatches in epoch order; assembly runs concurrently.
		var cl *claimed
		if f.Op == OpNextBatch {
			e, err := DecodeEpochRequest(f.Payload)
			if err != nil {
				c.replyError(f.Op, f.ID, CodeBadRequest, err.Error())
				continue
			}
			got, err := s.claim(ctx, e)
			if err != nil {
				c.replyErr(f.Op, f.ID, err)
				continue
			}
			cl = &got
		}
		sem <- struct{}{}
		c.inflight.Add(1)
		go func() {
			defer func() { <-sem; c.inflight.Done() }()
			if cl != nil {
				c.replyBatch(f, *cl)
				return
			}
			c.handle(ctx, f)
		}()
	}
}

func (c *conn) write(bufs net.Buffers) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := bufs.WriteTo(c.nc); err != nil {
		// A client gone mid-reply: close so the reader stops too.
		c.nc.Close()
	}
}

func (c *conn) replyError(op uint8, id uint32, code uint16, msg string) {
	c.write(net.Buffers{AppendFrame(nil, op, StatusError, id, AppendError(nil, code, msg))})
}

func (c *conn) replyErr(op uint8, id uint32, err error) {
	var re *requestError
	if errors.As(err, &re) {
		c.replyError(op, id, re.code, re.msg)
		return
	}
	c.replyError(op, id, CodeInternal, err.Error())
}

func (c *conn) replyJSON(op uint8, id uint32, v any) {
	p, err := json.Marshal(v)
	if err != nil {
		c.replyError(op, id, CodeInternal, err.Error())
		return
	}
	c.write(net.Buffers{AppendFrame(nil, op, StatusOK, id, p)})
}

// replyBatch assembles a claimed minibatch and replies.
func (c *conn) replyBatch(f Frame, cl claimed) {
	if cl.End {
		c.write(net.Buffers{AppendFrame(nil, f.Op, StatusEnd, f.ID, AppendEpochRequest(nil, cl.Epoch))})
		return
	}
	b, err := c.s.assemble(cl)
	if err != nil {
		c.replyErr(f.Op, f.ID, err)
		return
	}
	c.write(EncodeBlocks(f.Op, f.ID, b.Blocks, b.Index))
}

// handle answers every request but next_batch (see serve).
func (c *conn) handle(ctx context.Context, f Frame) {
	s := c.s
	switch f.Op {
	case OpEpochInfo:
		if len(f.Payload) != 0 {
			c.replyError(f.Op, f.ID, CodeBadRequest, fmt.Sprintf("epoch_info takes no payload, got %d bytes", len(f.Payload)))
			return
		}
		c.replyJSON(f.Op, f.ID, s.Info())
	case OpSample:
		e, seeds, err := DecodeSampleRequest(f.Payload)
		if err != nil {
			c.replyError(f.Op, f.ID, CodeBadRequest, err.Error())
			return
		}
		b, err := s.Sample(e, seeds)
		if err != nil {
			c.replyErr(f.Op, f.ID, err)
			return
		}
		c.write(EncodeBlocks(f.Op, f.ID, b, NoBatch))
	case OpAdvance:
		e, err := DecodeEpochRequest(f.Payload)
		if err != nil {
			c.replyError(f.Op, f.ID, CodeBadRequest, err.Error())
			return
		}
		info, err := s.Advance(ctx, e)
		if err != nil {
			c.replyErr(f.Op, f.ID, err)
			return
		}
		c.replyJSON(f.Op, f.ID, info)
	default:
		c.replyError(f.Op, f.ID, CodeUnknownOp, fmt.Sprintf("unknown op %d", f.Op))
	}
}
