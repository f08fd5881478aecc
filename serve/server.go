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
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
)

// EpochSampler samples a whole epoch; host.Backend satisfies it.
type EpochSampler interface {
	SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error)
}

// ErrConfig is wrapped by New's errors about its configuration (it also
// wraps epoch.ErrConfig for those about the minibatch stream).
var ErrConfig = errors.New("serve: bad configuration")

// Config is what a Server serves: the minibatch stream (the same
// epoch.Config that run and bench use) and the server's own limits.
type Config struct {
	epoch.Config
	Sampler    EpochSampler
	MaxRequest int // request frame cap in bytes; 0 means DefaultMaxRequest
}

// EpochInfo is the JSON object epoch_info and advance reply with.
type EpochInfo struct {
	Protocol int `json:"protocol"`
	epoch.Info
}

// Server serves one training run's epochs, held by an epoch.Pipeline.
// Create it with New, load the first epoch with Start, then Serve
// listeners; Shutdown stops it.
type Server struct {
	cfg     Config
	pipe    *epoch.Pipeline
	maxReq  int
	baseCtx context.Context
	cancel  context.CancelFunc

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
	pipe, err := epoch.NewPipeline(cfg.Config, cfg.Sampler.SampleEpoch, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg: cfg, pipe: pipe, maxReq: cfg.MaxRequest,
		baseCtx: ctx, cancel: cancel,
		lns:   map[net.Listener]struct{}{},
		conns: map[*conn]struct{}{},
	}, nil
}

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
	case errors.Is(err, epoch.ErrEpochNotDone):
		code = CodeEpochNotDone
	case errors.Is(err, epoch.ErrUnknownEpoch):
		code = CodeUnknownEpoch
	case errors.Is(err, epoch.ErrNotInFrontier):
		code = CodeNotInFrontier
	case errors.Is(err, epoch.ErrDuplicateSeed):
		code = CodeDuplicateSeed
	case errors.Is(err, epoch.ErrClosed):
		code = CodeShuttingDown
	}
	return &requestError{code: code, msg: err.Error()}
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
		return Batch{Epoch: c.Epoch, End: c.End}, err
	}
	return s.assemble(c)
}

// claim takes the next minibatch of epoch e off the shared cursor.
func (s *Server) claim(ctx context.Context, e uint32) (epoch.Claim, error) {
	if err := s.checkOpen(); err != nil {
		return epoch.Claim{}, err
	}
	c, err := s.pipe.Claim(ctx, e)
	if err != nil {
		return c, asRequestError(err)
	}
	return c, nil
}

// assemble builds a claimed minibatch.
func (s *Server) assemble(c epoch.Claim) (Batch, error) {
	b, err := s.pipe.Assemble(c)
	if err != nil {
		return Batch{}, newRequestError(CodeInternal, "assembling batch %d of epoch %d: %v", c.Index, c.Epoch, err)
	}
	return Batch{Epoch: b.Epoch, Index: b.Index, Blocks: b.Blocks}, nil
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
	return EpochInfo{Protocol: Protocol, Info: info}, nil
}

// Sample assembles a minibatch of the given seeds from epoch e, which
// must be the current one (CurrentEpoch: whichever that is).
func (s *Server) Sample(ctx context.Context, e uint32, seeds []uint32) (*epoch.Blocks, error) {
	b, err := s.pipe.Sample(ctx, e, seeds)
	if err != nil {
		return nil, asRequestError(err)
	}
	return b, nil
}

// Info returns the current epoch's info.
func (s *Server) Info() EpochInfo {
	return EpochInfo{Protocol: Protocol, Info: s.pipe.Info()}
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
	s.pipe.Close()
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
				c.replyCode(0, 0, CodeTooLarge, err.Error())
			case errors.Is(err, ErrMalformed):
				c.replyCode(0, 0, CodeBadRequest, err.Error())
			case err == io.EOF, errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
			default:
				s.logf("connection %v: %v", c.nc.RemoteAddr(), err)
			}
			return
		}
		// next_batch claims its minibatch here, in request order, so that
		// a client pipelining requests on one connection gets its
		// minibatches in epoch order; assembly runs concurrently.
		var cl *epoch.Claim
		if f.Op == OpNextBatch {
			e, err := DecodeEpochRequest(f.Payload)
			if err != nil {
				c.replyCode(f.Op, f.ID, CodeBadRequest, err.Error())
				continue
			}
			got, err := s.claim(ctx, e)
			if err != nil {
				c.replyError(f.Op, f.ID, err)
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

func (c *conn) replyCode(op uint8, id uint32, code uint16, msg string) {
	c.write(net.Buffers{AppendFrame(nil, op, StatusError, id, AppendError(nil, code, msg))})
}

func (c *conn) replyError(op uint8, id uint32, err error) {
	var re *requestError
	if errors.As(err, &re) {
		c.replyCode(op, id, re.code, re.msg)
		return
	}
	c.replyCode(op, id, CodeInternal, err.Error())
}

func (c *conn) replyJSON(op uint8, id uint32, v any) {
	p, err := json.Marshal(v)
	if err != nil {
		c.replyCode(op, id, CodeInternal, err.Error())
		return
	}
	c.write(net.Buffers{AppendFrame(nil, op, StatusOK, id, p)})
}

// replyBatch assembles a claimed minibatch and replies.
func (c *conn) replyBatch(f Frame, cl epoch.Claim) {
	if cl.End {
		c.write(net.Buffers{AppendFrame(nil, f.Op, StatusEnd, f.ID, AppendEpochRequest(nil, cl.Epoch))})
		return
	}
	b, err := c.s.assemble(cl)
	if err != nil {
		c.replyError(f.Op, f.ID, err)
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
			c.replyCode(f.Op, f.ID, CodeBadRequest, fmt.Sprintf("epoch_info takes no payload, got %d bytes", len(f.Payload)))
			return
		}
		c.replyJSON(f.Op, f.ID, s.Info())
	case OpSample:
		e, seeds, err := DecodeSampleRequest(f.Payload)
		if err != nil {
			c.replyCode(f.Op, f.ID, CodeBadRequest, err.Error())
			return
		}
		b, err := s.Sample(ctx, e, seeds)
		if err != nil {
			c.replyError(f.Op, f.ID, err)
			return
		}
		c.write(EncodeBlocks(f.Op, f.ID, b, NoBatch))
	case OpAdvance:
		e, err := DecodeEpochRequest(f.Payload)
		if err != nil {
			c.replyCode(f.Op, f.ID, CodeBadRequest, err.Error())
			return
		}
		info, err := s.Advance(ctx, e)
		if err != nil {
			c.replyError(f.Op, f.ID, err)
			return
		}
		c.replyJSON(f.Op, f.ID, info)
	default:
		c.replyCode(f.Op, f.ID, CodeUnknownOp, fmt.Sprintf("unknown op %d", f.Op))
	}
}
