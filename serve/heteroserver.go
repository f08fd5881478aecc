package serve

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
)

// HeteroServer serves heterogeneous epochs: epoch_info, next_batch,
// advance, hello and the splits (split, split_batch, drop_split), with
// the frames and epoch cursor of the homogeneous Server. It is a
// separate, small server rather than a mode of Server because Server's
// pipeline, budget and feature paths are typed to epoch.Blocks throughout
// (pipeline.SampleFunc returns *epoch.Result, claims assemble
// *epoch.Blocks, the reply bound counts homogeneous hops); plugging a
// second result type in would touch every one of them. It takes a
// connection's requests in order and assembles their minibatches
// concurrently (serveConn); what it has of Server's in-flight budget and
// what it lacks is listed in docs/PROTOCOL.md "Heterogeneous
// minibatches".
type HeteroServer struct {
	epochs *HeteroEpochs
	token  []byte
	logger *log.Logger
	// budget is the in-flight budget (HeteroConfig.MaxInflight): replies
	// being built and written reserve from it, splits hold from it.
	budget *budget
	// maxReply is the largest reply sent (MaxReply; lowered by tests).
	maxReply int

	// splits are the typed node lists served beside the training stream.
	splits splitTable[heteroSplitKey, *heteroSplit]

	mu     sync.Mutex
	cur    *HeteroEpoch
	served int
	next   *prepared
	ctx    context.Context
	cancel context.CancelFunc

	connMu sync.Mutex
	conns  map[net.Conn]*heteroConn
	closed bool
}

// prepared is an epoch being sampled in the background.
type prepared struct {
	e    uint32
	done chan struct{}
	ep   *HeteroEpoch
	err  error
}

// HeteroEpochInfo is the JSON object epoch_info and advance reply with on
// a heterogeneous server: the homogeneous fields that apply, and
// "hetero", the schema.
type HeteroEpochInfo struct {
	Protocol   int        `json:"protocol"`
	Epoch      uint32     `json:"epoch"`
	NumBatches int        `json:"num_batches"`
	Served     int        `json:"served"`
	BatchSize  int        `json:"batch_size"`
	NumTrain   int        `json:"num_train"`
	ShardSize  int        `json:"shard_size"`
	Rank       int        `json:"rank"`
	WorldSize  int        `json:"world_size"`
	Seed       uint64     `json:"seed"`
	Semantics  string     `json:"semantics"`
	EdgeIDs    bool       `json:"edge_ids"`
	NextReady  bool       `json:"next_ready"`
	Hetero     HeteroInfo `json:"hetero"`
}

// NewHeteroServer prepares epoch first and returns a server whose current
// epoch it is; epoch first+1 is prepared in the background. token, when
// not empty, is required by a hello before any other request.
func NewHeteroServer(ctx context.Context, h *HeteroEpochs, first uint32, token []byte, logger *log.Logger) (*HeteroServer, error) {
	ep, err := h.Prepare(ctx, first)
	if err != nil {
		return nil, err
	}
	s := &HeteroServer{epochs: h, token: token, logger: logger, cur: ep, budget: newBudget(h.cfg.MaxInflight), maxReply: MaxReply}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.prepareNext()
	if stall := h.cfg.StallTimeout; stall >= 0 {
		if stall == 0 {
			stall = DefaultStallTimeout
		}
		go s.evictStalled(stall)
	}
	return s, nil
}

// prepareNext starts sampling the epoch after the current one (s.mu held
// or not yet shared).
func (s *HeteroServer) prepareNext() {
	p := &prepared{e: s.cur.Epoch + 1, done: make(chan struct{})}
	s.next = p
	go func() {
		defer close(p.done)
		p.ep, p.err = s.epochs.Prepare(s.ctx, p.e)
	}()
}

// Close stops the background preparation, waiting for it to end (so
// that the sampler may be closed next), and closes every connection (a
// Serve then returns once its listener is closed too).
func (s *HeteroServer) Close() {
	s.cancel()
	s.connMu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.connMu.Unlock()
	s.mu.Lock()
	p := s.next
	s.mu.Unlock()
	<-p.done
}

// track registers c (false: the server is closed, c is closed).
func (s *HeteroServer) track(c net.Conn) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = make(map[net.Conn]*heteroConn)
	}
	s.conns[c] = &heteroConn{}
	return true
}

// heteroConn is what the stall janitor (evictStalled) knows of a
// connection.
type heteroConn struct {
	// wprog is, while a reply is being written, when the write began or
	// last moved a byte (UnixNano); 0 when no write is under way.
	wprog   atomic.Int64
	evicted atomic.Bool
}

// connOf returns c's state (nil once untracked).
func (s *HeteroServer) connOf(c net.Conn) *heteroConn {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.conns[c]
}

// evictStalled closes, while a request has waited stall for the in-flight
// budget, every connection with a reply that has moved no byte for stall:
// its bytes are given back as its writer drains (writeReplies), so that
// clients that leave replies unread cannot freeze the others — the
// homogeneous server's rule (docs/PROTOCOL.md, "Clients that stop
// reading"). It runs until the server closes.
func (s *HeteroServer) evictStalled(stall time.Duration) {
	tick := time.NewTicker(max(stall/4, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if s.budget.oldestWait(now) < stall {
			continue
		}
		s.connMu.Lock()
		for c, st := range s.conns {
			p := st.wprog.Load()
			if p == 0 || now.Sub(time.Unix(0, p)) < stall || st.evicted.Swap(true) {
				continue
			}
			if s.logger != nil {
				s.logger.Printf("serve: heterogeneous connection %v: closed: a reply unread for %v holds in-flight bytes that other requests wait for (--stall-timeout)", c.RemoteAddr(), now.Sub(time.Unix(0, p)).Round(time.Millisecond))
			}
			c.Close()
		}
		s.connMu.Unlock()
	}
}

// progressWriter writes to a connection in pieces, recording in prog
// when each began (so a large reply a client reads slowly is progress,
// not a stall).
type progressWriter struct {
	c    net.Conn
	prog *atomic.Int64
}

func (w progressWriter) Write(b []byte) (int, error) {
	const piece = 1 << 20
	n := 0
	for n < len(b) {
		w.prog.Store(time.Now().UnixNano())
		k, err := w.c.Write(b[n:min(len(b), n+piece)])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *HeteroServer) untrack(c net.Conn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	delete(s.conns, c)
}

// Info returns the current epoch's epoch_info object.
func (s *HeteroServer) Info() HeteroEpochInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *HeteroServer) infoLocked() HeteroEpochInfo {
	c := &s.epochs.cfg
	ready := false
	select {
	case <-s.next.done:
		ready = s.next.err == nil
	default:
	}
	return HeteroEpochInfo{Protocol: Protocol, Epoch: s.cur.Epoch, NumBatches: len(s.cur.Batches), Served: min(s.served, len(s.cur.Batches)),
		BatchSize: c.BatchSize, NumTrain: len(s.epochs.train), ShardSize: s.cur.Shard, Rank: c.Rank, WorldSize: c.World,
		Seed: c.Seed, Semantics: c.Semantics.String(), EdgeIDs: c.EdgeIDs, NextReady: ready, Hetero: s.epochs.info}
}

// advanceLocked makes the prepared next epoch current, waiting for it
// (s.mu is released while waiting).
func (s *HeteroServer) advanceLocked(ctx context.Context) error {
	p := s.next
	s.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		s.mu.Lock()
		return ctx.Err()
	}
	s.mu.Lock()
	if s.next != p {
		return nil // another request advanced meanwhile
	}
	if p.err != nil {
		// Try again next time rather than serve nothing forever.
		s.prepareNextFrom(s.cur.Epoch)
		return p.err
	}
	s.cur, s.served = p.ep, 0
	s.prepareNext()
	return nil
}

func (s *HeteroServer) prepareNextFrom(e uint32) {
	p := &prepared{e: e + 1, done: make(chan struct{})}
	s.next = p
	go func() {
		defer close(p.done)
		p.ep, p.err = s.epochs.Prepare(s.ctx, p.e)
	}()
}

// NextBatch claims the next minibatch of epoch e (CurrentEpoch: the
// current one) and assembles it; at the epoch's end it returns ok false.
// Asking for the epoch after the current one moves to it once the current
// one is all handed out (CodeEpochNotDone before).
func (s *HeteroServer) NextBatch(ctx context.Context, e uint32, sem epoch.Semantics) (*HeteroBatch, bool, error) {
	assemble, err := s.claimNext(ctx, e, sem)
	if err != nil {
		return nil, false, err
	}
	return readRows(assemble())
}

// readRows reads the rows an assembly left to be read into its reply
// frame (HeteroRows.read) into the batch, for the Go API's callers.
func readRows(b *HeteroBatch, ok bool, err error) (*HeteroBatch, bool, error) {
	if err != nil || !ok {
		return b, ok, err
	}
	if err := b.readRows(); err != nil {
		return nil, false, newRequestError(CodeInternal, "minibatch %d of epoch %d: %v", b.Index, b.Epoch, err)
	}
	return b, true, nil
}

// claimNext claims the next minibatch of epoch e, as NextBatch does, and
// returns what assembles it: the claim is cheap and moves the epoch's
// cursor, so a connection makes its claims in request order; the
// assembly, most of a reply's time, may run beside other requests'.
func (s *HeteroServer) claimNext(ctx context.Context, e uint32, sem epoch.Semantics) (func() (*HeteroBatch, bool, error), error) {
	s.mu.Lock()
	if e != CurrentEpoch && e == s.cur.Epoch+1 {
		if s.served < len(s.cur.Batches) {
			s.mu.Unlock()
			return nil, newRequestError(CodeEpochNotDone, "epoch %d has %d minibatches left; epoch %d is not current yet", s.cur.Epoch, len(s.cur.Batches)-s.served, e)
		}
		if err := s.advanceLocked(ctx); err != nil {
			s.mu.Unlock()
			return nil, newRequestError(CodeInternal, "preparing epoch %d: %v", e, err)
		}
	}
	if e != CurrentEpoch && e != s.cur.Epoch {
		cur := s.cur.Epoch
		s.mu.Unlock()
		return nil, newRequestError(CodeUnknownEpoch, "epoch %d is neither the current epoch %d nor the next", e, cur)
	}
	ep, i := s.cur, s.served
	if i >= len(ep.Batches) {
		s.mu.Unlock()
		return func() (*HeteroBatch, bool, error) { return &HeteroBatch{Epoch: ep.Epoch}, false, nil }, nil
	}
	s.served++
	s.mu.Unlock()
	return func() (*HeteroBatch, bool, error) {
		b, err := ep.batch(i, sem)
		if err != nil {
			return nil, false, newRequestError(CodeInternal, "%v", err)
		}
		return b, true, nil
	}, nil
}

// Advance leaves epoch from (which must be current) for the next one.
func (s *HeteroServer) Advance(ctx context.Context, from uint32) (HeteroEpochInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from != CurrentEpoch && from != s.cur.Epoch {
		if from+1 == s.cur.Epoch {
			return s.infoLocked(), nil // another client advanced already
		}
		return HeteroEpochInfo{}, newRequestError(CodeUnknownEpoch, "advance from epoch %d: the current epoch is %d", from, s.cur.Epoch)
	}
	if err := s.advanceLocked(ctx); err != nil {
		return HeteroEpochInfo{}, newRequestError(CodeInternal, "preparing epoch %d: %v", s.cur.Epoch+1, err)
	}
	return s.infoLocked(), nil
}

// Serve answers connections from ln until it fails (closing ln stops it).
func (s *HeteroServer) Serve(ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if !s.track(c) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.untrack(c)
			defer c.Close()
			if err := s.serveConn(c); err != nil && s.logger != nil {
				s.logger.Printf("serve: heterogeneous connection: %v", err)
			}
		}()
	}
}

// connDepth is how many of one connection's requests a heterogeneous
// server works on at once. A minibatch's assembly and feature reads take
// tens of milliseconds, one row read after another; a client keeps
// several requests in flight (the Python client's depth, 4) so that they
// overlap, on as many cores.
var connDepth = max(2, min(8, runtime.GOMAXPROCS(0)))

// pendingReply is a reply being built: out and held are set before done
// is closed; written is closed once it is written (or dropped, the
// connection gone) and its budget given back.
type pendingReply struct {
	done, written chan struct{}
	out           []byte
	held          int64 // bytes of the in-flight budget out holds
	closeAfter    bool
}

func newPendingReply() *pendingReply {
	return &pendingReply{done: make(chan struct{}), written: make(chan struct{})}
}

func doneReply(out []byte, held int64, closeAfter bool) *pendingReply {
	p := newPendingReply()
	p.out, p.held, p.closeAfter = out, held, closeAfter
	close(p.done)
	return p
}

// serveConn answers one connection's requests. Each is taken in request
// order by this goroutine — a next_batch claims its minibatch here, an
// advance moves the epoch here — and a minibatch's assembly then runs
// beside the next requests' (connDepth at most); the replies are written
// in the order of their requests, so a client pipelining next_batch gets
// minibatches i, i+1, ... as from a server that answers one at a time.
func (s *HeteroServer) serveConn(c net.Conn) error {
	r := bufio.NewReader(c)
	queue := make(chan *pendingReply, connDepth)
	written := make(chan error, 1)
	go func() { written <- s.writeReplies(c, queue, s.connOf(c)) }()
	authed := len(s.token) == 0
	var last *pendingReply
	for {
		// A fresh payload each time: a request's payload is read by its
		// assembly after the next request is read.
		f, _, err := ReadFrame(r, DefaultMaxRequest, nil)
		if err != nil {
			if errors.Is(err, ErrFrameTooLarge) {
				queue <- doneReply(AppendFrame(nil, 0, StatusError, 0, AppendError(nil, CodeTooLarge, err.Error())), 0, true)
			}
			break
		}
		p := s.answer(f, &authed, last)
		queue <- p
		last = p
		if p.closeAfter {
			break
		}
	}
	close(queue)
	return <-written
}

// writeReplies writes the replies of queue in order, each once built,
// and gives back the budget each held. After a failed write (the client
// is gone) it closes c, so that the reader stops, and only waits for the
// replies still being built and gives back their budget.
func (s *HeteroServer) writeReplies(c net.Conn, queue <-chan *pendingReply, st *heteroConn) error {
	if st == nil {
		st = &heteroConn{} // not tracked (a test's connection)
	}
	w := bufio.NewWriter(progressWriter{c, &st.wprog})
	var failed error
	for p := range queue {
		<-p.done
		if failed == nil {
			st.wprog.Store(time.Now().UnixNano())
			_, failed = w.Write(p.out)
			if failed == nil {
				failed = w.Flush()
			}
			st.wprog.Store(0)
			if failed != nil {
				c.Close()
			}
		}
		s.budget.release(p.held)
		close(p.written)
	}
	return failed
}

// answer takes request f in its connection's order: a minibatch request
// (next_batch, split_batch) is claimed now and assembled in the
// background (startBatch); any other is answered now.
// prev is the connection's previous request's reply (nil: none).
func (s *HeteroServer) answer(f Frame, authed *bool, prev *pendingReply) *pendingReply {
	if *authed && f.Status == StatusOK && (f.Op == OpNextBatch || f.Op == OpSplitBatch) {
		return s.startBatch(f, prev)
	}
	return doneReply(s.answerNow(f, authed))
}

// failFrame is the error reply to f.
func failFrame(f Frame, err error) []byte {
	var re *requestError
	if !errors.As(err, &re) {
		re = &requestError{code: CodeInternal, msg: err.Error()}
	}
	return AppendFrame(nil, f.Op, StatusError, f.ID, AppendError(nil, re.code, re.msg))
}

// answerNow builds the reply frame to a request other than a minibatch's
// and returns the bytes of the in-flight budget it holds (released once
// it is written) and whether the connection closes after it.
func (s *HeteroServer) answerNow(f Frame, authed *bool) ([]byte, int64, bool) {
	fail := func(err error) []byte { return failFrame(f, err) }
	if f.Status != StatusOK {
		return fail(newRequestError(CodeBadRequest, "request status %d, want 0", f.Status)), 0, false
	}
	if !*authed {
		if f.Op != OpHello || subtle.ConstantTimeCompare(f.Payload, s.token) != 1 {
			return fail(newRequestError(CodeUnauthorized, "this server requires a token: the first request must be hello (op %d) with it", OpHello)), 0, true
		}
		*authed = true
		return AppendFrame(nil, f.Op, StatusOK, f.ID, nil), 0, false
	}
	ctx := s.ctx
	jsonReply := func(v any, err error) []byte {
		if err != nil {
			return fail(err)
		}
		js, err := json.Marshal(v)
		if err != nil {
			return fail(err)
		}
		return AppendFrame(nil, f.Op, StatusOK, f.ID, js)
	}
	switch f.Op {
	case OpHello:
		return AppendFrame(nil, f.Op, StatusOK, f.ID, nil), 0, false
	case OpEpochInfo:
		return jsonReply(s.Info(), nil), 0, false
	case OpAdvance:
		e, err := DecodeEpochRequest(f.Payload)
		if err != nil {
			return fail(newRequestError(CodeBadRequest, "%v", err)), 0, false
		}
		info, err := s.Advance(ctx, e)
		return jsonReply(info, err), 0, false
	case OpSplit:
		bs, t, nodes, err := DecodeHeteroSplitRequest(f.Payload)
		if err != nil {
			return fail(newRequestError(CodeBadRequest, "split (batch_size u32, node type u16, nodes): %v", err)), 0, false
		}
		info, err := s.Split(ctx, int(t), nodes, int(bs))
		return jsonReply(info, err), 0, false
	case OpDropSplit:
		id, err := DecodeDropSplitRequest(f.Payload)
		if err != nil {
			return fail(newRequestError(CodeBadRequest, "%v", err)), 0, false
		}
		if err := s.DropSplit(id); err != nil {
			return fail(err), 0, false
		}
		return AppendFrame(nil, f.Op, StatusOK, f.ID, nil), 0, false
	default:
		return fail(newRequestError(CodeUnknownOp, "op %d is not served by a heterogeneous server (epoch_info, next_batch, advance, hello, split, split_batch, drop_split)", f.Op)), 0, false
	}
}

// startBatch takes a minibatch request (next_batch, split_batch): it
// reserves the reply's bound from the in-flight budget and claims the
// minibatch now, in the connection's request order, and assembles it in
// the background (finishBatch). A reply whose bound is more than the
// reservation may take (half the budget) is built here instead, once the
// connection's earlier replies are written, as one that may wait for
// more of the budget once it knows its size must not wait for the bytes
// of the connection's later replies, which are written after it.
func (s *HeteroServer) startBatch(f Frame, prev *pendingReply) *pendingReply {
	c := &s.epochs.cfg
	var t, n int
	var claim func() (func() (*HeteroBatch, bool, error), error)
	switch f.Op {
	case OpNextBatch:
		e, sem, err := DecodeBatchRequest(f.Payload)
		if err != nil {
			return doneReply(failFrame(f, newRequestError(CodeBadRequest, "%v", err)), 0, false)
		}
		t, n = c.Schema.TypeIndex(c.TrainType), c.BatchSize
		claim = func() (func() (*HeteroBatch, bool, error), error) { return s.claimNext(s.ctx, e, sem) }
	default: // OpSplitBatch
		id, index, sem, err := DecodeSplitBatchRequest(f.Payload)
		if err != nil {
			return doneReply(failFrame(f, newRequestError(CodeBadRequest, "%v", err)), 0, false)
		}
		sp := s.heteroSplitOf(id)
		if sp == nil {
			return doneReply(failFrame(f, newRequestError(CodeUnknownSplit, "unknown split %d", id)), 0, false)
		}
		t, n = sp.t, min(sp.batchSize, len(sp.nodes))
		claim = func() (func() (*HeteroBatch, bool, error), error) { return s.claimSplitBatch(s.ctx, id, index, sem) }
	}
	bound := s.epochs.replyBound(t, int64(n))
	reserve := min(bound, s.budget.size/2)
	if err := s.budget.acquire(s.ctx, s.ctx.Done(), reserve); err != nil {
		return doneReply(failFrame(f, newRequestError(CodeShuttingDown, "stopped waiting for the in-flight budget: %v", err)), 0, false)
	}
	assemble, err := claim()
	if err != nil {
		s.budget.release(reserve)
		return doneReply(failFrame(f, err), 0, false)
	}
	if reserve < bound {
		if prev != nil {
			<-prev.written
		}
		return doneReply(s.finishBatch(f, reserve, assemble))
	}
	p := newPendingReply()
	go func() {
		defer close(p.done)
		p.out, p.held, _ = s.finishBatch(f, reserve, assemble)
	}()
	return p
}

// finishBatch assembles a claimed minibatch (assemble; ok false: the
// end, whose payload is the returned batch's Epoch) and builds its reply
// under the in-flight budget, of which reserve bytes are held: it then
// holds the reply's exact size (waiting again, the reservation given back
// first, when it is larger). A reply larger than MaxReply, or than the
// whole budget, is not sent: error 11 naming the minibatch.
func (s *HeteroServer) finishBatch(f Frame, reserve int64, assemble func() (*HeteroBatch, bool, error)) ([]byte, int64, bool) {
	out, held, err := s.batchReply(f, reserve, assemble)
	if err != nil {
		return failFrame(f, err), 0, false
	}
	return out, held, false
}

func (s *HeteroServer) batchReply(f Frame, reserve int64, assemble func() (*HeteroBatch, bool, error)) ([]byte, int64, error) {
	b, ok, err := assemble()
	if err != nil || !ok {
		s.budget.release(reserve)
		if err != nil {
			return nil, 0, err
		}
		return AppendFrame(nil, f.Op, StatusEnd, f.ID, binary.LittleEndian.AppendUint32(nil, b.Epoch)), 0, nil
	}
	what := fmt.Sprintf("minibatch %d of epoch %d", b.Index, b.Epoch)
	if f.Op == OpSplitBatch {
		split, _, _, _ := DecodeSplitBatchRequest(f.Payload)
		what = fmt.Sprintf("minibatch %d of split %d (epoch %d)", b.Index, split, b.Epoch)
	}
	// The feature rows are read here, into the frame.
	out, err := MarshalHeteroBatch(f.Op, f.ID, b)
	if err != nil {
		s.budget.release(reserve)
		return nil, 0, newRequestError(CodeInternal, "%s: %v", what, err)
	}
	exact := int64(len(out))
	switch {
	case len(out) > s.maxReply:
		s.budget.release(reserve)
		return nil, 0, newRequestError(CodeOverBudget, "%s is %d bytes, more than a client reads (%d); ask for fewer seeds per minibatch", what, exact, s.maxReply)
	case exact <= reserve:
		s.budget.release(reserve - exact)
		return out, exact, nil
	case exact > s.budget.size:
		s.budget.release(reserve)
		return nil, 0, newRequestError(CodeOverBudget, "%s is %d bytes, more than the whole in-flight budget (--max-inflight %d); ask for fewer seeds per minibatch or raise --max-inflight", what, exact, s.budget.size)
	}
	// Given back before waiting for more, so that two replies never wait
	// for each other's bytes.
	s.budget.release(reserve)
	if err := s.budget.acquire(s.ctx, s.ctx.Done(), exact); err != nil {
		return nil, 0, newRequestError(CodeShuttingDown, "stopped waiting for the in-flight budget: %v", err)
	}
	return out, exact, nil
}

// Inflight returns the bytes of the in-flight budget held now (replies
// being built or written, splits) and its size.
func (s *HeteroServer) Inflight() (held, size int64) {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return s.budget.used, s.budget.size
}

// Schema returns the schema the minibatches' indices refer to.
func (i *HeteroInfo) Schema() (*heteroepoch.Schema, error) {
	s := &heteroepoch.Schema{}
	if len(i.Counts) != len(i.NodeTypes) {
		return nil, fmt.Errorf("%w: hetero info of %d node types and %d counts", ErrMalformed, len(i.NodeTypes), len(i.Counts))
	}
	for t, n := range i.NodeTypes {
		s.NodeTypes = append(s.NodeTypes, heteroepoch.NodeType{Name: n, Count: i.Counts[t]})
	}
	for _, r := range i.Relations {
		s.Relations = append(s.Relations, heteroepoch.Relation{Src: r[0], Name: r[1], Dst: r[2]})
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: hetero info: %v", ErrMalformed, err)
	}
	return s, nil
}
