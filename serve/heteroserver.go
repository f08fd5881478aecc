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
	"sync"

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
// second result type in would touch every one of them. It answers one
// request of a connection at a time; what it has of Server's in-flight
// budget and what it lacks is listed in docs/PROTOCOL.md "Heterogeneous
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
	conns  map[net.Conn]struct{}
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
		s.conns = make(map[net.Conn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
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
// current one); at the epoch's end it returns ok false. Asking for the
// epoch after the current one moves to it once the current one is all
// handed out (CodeEpochNotDone before).
func (s *HeteroServer) NextBatch(ctx context.Context, e uint32, sem epoch.Semantics) (*HeteroBatch, bool, error) {
	s.mu.Lock()
	if e != CurrentEpoch && e == s.cur.Epoch+1 {
		if s.served < len(s.cur.Batches) {
			s.mu.Unlock()
			return nil, false, newRequestError(CodeEpochNotDone, "epoch %d has %d minibatches left; epoch %d is not current yet", s.cur.Epoch, len(s.cur.Batches)-s.served, e)
		}
		if err := s.advanceLocked(ctx); err != nil {
			s.mu.Unlock()
			return nil, false, newRequestError(CodeInternal, "preparing epoch %d: %v", e, err)
		}
	}
	if e != CurrentEpoch && e != s.cur.Epoch {
		cur := s.cur.Epoch
		s.mu.Unlock()
		return nil, false, newRequestError(CodeUnknownEpoch, "epoch %d is neither the current epoch %d nor the next", e, cur)
	}
	ep, i := s.cur, s.served
	if i >= len(ep.Batches) {
		s.mu.Unlock()
		return &HeteroBatch{Epoch: ep.Epoch}, false, nil
	}
	s.served++
	s.mu.Unlock()
	b, err := ep.Batch(i, sem)
	if err != nil {
		return nil, false, newRequestError(CodeInternal, "%v", err)
	}
	return b, true, nil
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

// serveConn answers one connection's requests in order.
func (s *HeteroServer) serveConn(c net.Conn) error {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	authed := len(s.token) == 0
	var buf []byte
	for {
		f, b, err := ReadFrame(r, DefaultMaxRequest, buf)
		buf = b
		if err != nil {
			if errors.Is(err, ErrFrameTooLarge) {
				_, _ = w.Write(AppendFrame(nil, 0, StatusError, 0, AppendError(nil, CodeTooLarge, err.Error())))
				_ = w.Flush()
			}
			return nil
		}
		reply, held, closeAfter := s.answer(f, &authed)
		_, err = w.Write(reply)
		if err == nil {
			err = w.Flush()
		}
		s.budget.release(held)
		if err != nil {
			return err
		}
		if closeAfter {
			return nil
		}
	}
}

// answer builds the reply frame to f and returns the bytes of the
// in-flight budget it holds (released once it is written).
func (s *HeteroServer) answer(f Frame, authed *bool) ([]byte, int64, bool) {
	fail := func(err error) []byte {
		var re *requestError
		if !errors.As(err, &re) {
			re = &requestError{code: CodeInternal, msg: err.Error()}
		}
		return AppendFrame(nil, f.Op, StatusError, f.ID, AppendError(nil, re.code, re.msg))
	}
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
	case OpNextBatch:
		e, sem, err := DecodeBatchRequest(f.Payload)
		if err != nil {
			return fail(newRequestError(CodeBadRequest, "%v", err)), 0, false
		}
		c := &s.epochs.cfg
		out, held, err := s.batchReply(f, c.Schema.TypeIndex(c.TrainType), c.BatchSize, func() (*HeteroBatch, bool, error) {
			return s.NextBatch(ctx, e, sem)
		})
		if err != nil {
			return fail(err), 0, false
		}
		return out, held, false
	case OpSplit:
		bs, t, nodes, err := DecodeHeteroSplitRequest(f.Payload)
		if err != nil {
			return fail(newRequestError(CodeBadRequest, "split (batch_size u32, node type u16, nodes): %v", err)), 0, false
		}
		info, err := s.Split(ctx, int(t), nodes, int(bs))
		return jsonReply(info, err), 0, false
	case OpSplitBatch:
		id, index, sem, err := DecodeSplitBatchRequest(f.Payload)
		if err != nil {
			return fail(newRequestError(CodeBadRequest, "%v", err)), 0, false
		}
		sp := s.heteroSplitOf(id)
		if sp == nil {
			return fail(newRequestError(CodeUnknownSplit, "unknown split %d", id)), 0, false
		}
		out, held, err := s.batchReply(f, sp.t, min(sp.batchSize, len(sp.nodes)), func() (*HeteroBatch, bool, error) {
			b, ok, err := s.SplitBatch(ctx, id, index, sem)
			if err == nil && !ok {
				// The end's payload is the split's id.
				b = &HeteroBatch{Epoch: id}
			}
			return b, ok, err
		})
		if err != nil {
			return fail(err), 0, false
		}
		return out, held, false
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

// batchReply builds the reply of a minibatch request of n seeds of node
// type t (get answers it; ok false: the end, whose payload is the
// returned batch's Epoch) under the in-flight budget: it reserves the
// reply's bound (replyBound), at most half the budget, before the
// minibatch is assembled, waiting for the bytes first come first served,
// then holds the reply's exact size (waiting again, the reservation given
// back first, when it is larger). A reply larger than MaxReply, or than
// the whole budget, is not sent: error 11 naming the minibatch.
func (s *HeteroServer) batchReply(f Frame, t, n int, get func() (*HeteroBatch, bool, error)) ([]byte, int64, error) {
	reserve := min(s.epochs.replyBound(t, int64(n)), s.budget.size/2)
	if err := s.budget.acquire(s.ctx, s.ctx.Done(), reserve); err != nil {
		return nil, 0, newRequestError(CodeShuttingDown, "stopped waiting for the in-flight budget: %v", err)
	}
	b, ok, err := get()
	if err != nil || !ok {
		s.budget.release(reserve)
		if err != nil {
			return nil, 0, err
		}
		return AppendFrame(nil, f.Op, StatusEnd, f.ID, binary.LittleEndian.AppendUint32(nil, b.Epoch)), 0, nil
	}
	out, err := MarshalHeteroBatch(f.Op, f.ID, b)
	if err != nil {
		s.budget.release(reserve)
		return nil, 0, newRequestError(CodeInternal, "%v", err)
	}
	what := fmt.Sprintf("minibatch %d of epoch %d", b.Index, b.Epoch)
	if f.Op == OpSplitBatch {
		split, _, _, _ := DecodeSplitBatchRequest(f.Payload)
		what = fmt.Sprintf("minibatch %d of split %d (epoch %d)", b.Index, split, b.Epoch)
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
