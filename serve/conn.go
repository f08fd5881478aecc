package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
)

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn
	// ctx is the context of the connection's requests: it ends when the
	// client is gone (its reader sees the end of the stream or an error),
	// when the connection is evicted, and at a forced shutdown. A graceful
	// shutdown leaves it alone: in-flight requests still reply.
	ctx      context.Context
	cancel   context.CancelFunc
	wmu      sync.Mutex
	inflight sync.WaitGroup
	budget   *budget // this connection's share of the server's budget
	authed   bool    // a hello with the token was seen, or none is required
	// rows is set by OpMapRows: feature rows go in buffers shared with
	// the client (its pool); nil: in the replies.
	rows *rowPool
	// wprog is, while a reply is being written, when the write began or
	// last moved a byte (UnixNano); 0 when no write is under way. The
	// janitor (Server.evictStalled) reads it.
	wprog   atomic.Int64
	evicted atomic.Bool
	// scans are the connection's open scans (scan.go), closed with it.
	scans connScans
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.baseCtx)
	return &conn{s: s, nc: nc, ctx: ctx, cancel: cancel, budget: newBudget(s.connSize)}
}

// maxConnRequests bounds a connection's concurrent requests.
const maxConnRequests = 8

// ControlBudget is the pool, beside the in-flight budget (--max-inflight),
// that small control requests (epoch_info, advance, map_rows, drop_split)
// reserve their bytes from: they are answered while replies that clients
// leave unread fill the budget. Each holds controlReply bytes until its
// reply is built, then the reply's size.
const ControlBudget = 1 << 20

// controlReply is what a control request reserves for its reply (an
// epoch_info or advance JSON object is a few kilobytes at most with its
// two epochs' figures, unless many splits were served); a larger reply
// trades it for its size in the in-flight budget.
const controlReply = 4 << 10

// maxControlPayload is the largest payload of a control request: more,
// and the request reserves from the in-flight budget like any other.
const maxControlPayload = 16

// A grant is what a request holds while in flight: n bytes of its
// connection's share and as many of one of the server's pools (the
// in-flight budget, or the control pool).
type grant struct {
	n    int64
	pool *budget
}

// The reader of a connection takes one request at a time: it reads the
// header, reserves the bytes the request may hold (its frame and a bound
// on its reply: estimate) from the connection's and then the server's
// budget, waiting while they are spent (so the client's further requests
// wait in the socket: back-pressure), and only then reads the payload.
// A walks request then reserves its reply's exact size before anything
// is walked. The handler gives back what the reply does not need once the
// reply is built, and the rest once it is written (sendReply).

func (c *conn) serve() {
	s := c.s
	defer func() {
		c.inflight.Wait() // in-flight requests still reply
		c.closeScans()
		if c.rows != nil {
			c.rows.close()
		}
		c.cancel()
		c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.connWG.Done()
	}()
	c.authed = s.token == nil
	slots := make(chan struct{}, maxConnRequests)
	for {
		f, plen, err := readHeader(c.nc, s.maxReq)
		if err != nil {
			c.readFailed(err)
			return
		}
		if c.authed && f.Status != StatusOK {
			// Only replies carry a status: a request with one is not
			// what its sender thinks it is (a reply looped back, a
			// stray byte). Its payload is skipped, unread into memory.
			if _, err := io.CopyN(io.Discard, c.nc, int64(plen)); err != nil {
				c.readFailed(unexpected(err))
				return
			}
			c.replyCode(f.Op, f.ID, CodeBadRequest, fmt.Sprintf("request status %d, want %d: only replies carry a status", f.Status, StatusOK))
			continue
		}
		if !c.authed || f.Op == OpHello {
			if !c.hello(f, plen) {
				return
			}
			continue
		}
		g := grant{n: c.estimate(f, plen), pool: s.budget}
		if controlRequest(f.Op, plen) {
			g.pool = s.control
		}
		if g.n > s.connSize {
			if f.Op != OpSample || s.fullHops {
				// A minibatch's bound is loose; the reply rarely needs
				// it all, and a larger one is written holding the whole
				// share (sendReply). So is a sample's where a hop takes
				// every neighbor (its bound is the largest degree's).
				g.n = s.connSize
			} else {
				if _, err := io.CopyN(io.Discard, c.nc, int64(plen)); err != nil {
					c.readFailed(unexpected(err))
					return
				}
				c.replyCode(f.Op, f.ID, CodeOverBudget, fmt.Sprintf(
					"a sample of %d seeds may need up to %d bytes in flight, more than this connection's %d (--max-inflight %d); send fewer seeds per request",
					sampleSeeds(plen), g.n, s.connSize, s.budget.size))
				continue
			}
		}
		if err := c.reserve(s.stopReading, g.pool, g.n); err != nil {
			return // shutting down, or the connection was evicted
		}
		f.Payload = make([]byte, plen)
		if _, err := io.ReadFull(c.nc, f.Payload); err != nil {
			c.release(g)
			c.readFailed(unexpected(err))
			return
		}
		var job func() reply
		switch f.Op {
		case OpNextBatch:
			// next_batch claims its minibatch here, in request order, so
			// that a client pipelining requests on one connection gets
			// its minibatches in epoch order; assembly runs concurrently.
			e, sem, err := DecodeBatchRequest(f.Payload)
			if err != nil {
				c.send(g, errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
				continue
			}
			cl, err := s.claim(c.ctx, e)
			if err != nil {
				c.send(g, requestErrorFrame(f.Op, f.ID, err))
				continue
			}
			if s.features != nil && !cl.End {
				more := min(c.s.claimBound(cl), s.connSize) - g.n
				if more > 0 {
					if err := c.reserve(s.stopReading, g.pool, more); err != nil {
						c.release(g)
						// Shutting down; the minibatch's rows still take
						// their turn, or the ones claimed after it would
						// wait for it forever.
						s.skipClaim(cl)
						return
					}
					g.n += more
				}
			}
			job = func() reply { return c.replyBatch(f, cl, sem) }
		case OpWalks:
			w, err := s.walkRequest(f.Payload)
			if err == nil {
				err = c.walksFit(w, g.n)
			}
			if err != nil {
				c.send(g, requestErrorFrame(f.Op, f.ID, err))
				continue
			}
			// The reply's exact size, before anything is walked: the
			// walk waits for it as any request waits for its bound.
			if err := c.reserve(s.stopReading, g.pool, w.hold); err != nil {
				c.release(g)
				return
			}
			g.n += w.hold
			job = func() reply { return c.walks(f, w) }
		case OpSampleFresh:
			r, err := s.freshRequest(f.Payload)
			if err == nil {
				err = c.freshFit(r, g.n)
			}
			if err != nil {
				c.send(g, requestErrorFrame(f.Op, f.ID, err))
				continue
			}
			// Its reply's bound, for its own fanouts, before anything is
			// read: the request waits for it as a sample waits for its.
			if err := c.reserve(s.stopReading, g.pool, r.hold); err != nil {
				c.release(g)
				return
			}
			g.n += r.hold
			job = func() reply { return c.sampleFresh(f, r) }
		case OpMapRows:
			// In the reader, so that every later reply sees it.
			c.send(g, c.mapRows(f))
			continue
		default:
			job = func() reply { return c.handle(f) }
		}
		slots <- struct{}{}
		c.inflight.Add(1)
		go func() {
			defer func() { <-slots; c.inflight.Done() }()
			c.sendReply(g, job())
		}()
	}
}

// readFailed answers (where it can) and logs a request that could not be
// read; the connection is then closed. A client that is gone (the end of
// its stream, a reset, a connection closed under the reader by eviction)
// has its in-flight requests cancelled: nobody will read their replies,
// and a walk could otherwise run on for its whole bound. Shutdown's read
// deadline, and a frame the server refuses, leave them to finish.
func (c *conn) readFailed(err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		c.replyCode(0, 0, CodeTooLarge, err.Error())
		return
	case errors.Is(err, ErrMalformed):
		c.replyCode(0, 0, CodeBadRequest, err.Error())
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		return // Shutdown stops the reader
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
	default:
		c.s.logf("connection %v: %v", c.nc.RemoteAddr(), err)
	}
	c.cancel()
}

// hello checks a hello request (or, on a connection that still owes one,
// whatever came first): its payload must be the server's token when one
// is configured. It answers, and reports whether the connection may go on;
// if not, the refusal has been sent and the caller closes it.
func (c *conn) hello(f Frame, plen int) bool {
	refuse := func(msg string) bool {
		c.s.logf("connection %v: refused: %s", c.nc.RemoteAddr(), msg)
		c.replyCode(f.Op, f.ID, CodeUnauthorized, msg)
		return false
	}
	if f.Op != OpHello {
		return refuse(fmt.Sprintf("this server requires a token: the first request must be hello (op %d), got op %d", OpHello, f.Op))
	}
	if f.Status != StatusOK {
		return refuse(fmt.Sprintf("hello with status %d, want %d", f.Status, StatusOK))
	}
	if plen > MaxToken {
		return refuse(fmt.Sprintf("hello of %d bytes, a token is at most %d", plen, MaxToken))
	}
	tok := make([]byte, plen)
	if _, err := io.ReadFull(c.nc, tok); err != nil {
		c.readFailed(unexpected(err))
		return false
	}
	if c.s.token != nil && !tokenMatches(c.s.token, tok) {
		return refuse("wrong token")
	}
	c.authed = true
	c.write(plain(net.Buffers{AppendFrame(nil, f.Op, StatusOK, f.ID, nil)}))
	return true
}

// sampleSeeds is the number of seeds a sample payload of plen bytes holds.
func sampleSeeds(plen int) int64 {
	return max(0, int64(plen-4-arrayHeaderSize)/4)
}

// controlRequest reports whether a request is a small control request,
// whose bytes come from the control pool (ControlBudget).
func controlRequest(op uint8, plen int) bool {
	switch op {
	case OpEpochInfo, OpAdvance, OpMapRows, OpDropSplit, OpDropScan:
		return plen <= maxControlPayload
	}
	return false
}

// estimate is the bytes a request may hold in flight: its frame, then its
// reply; a sample's decoded seeds besides. A walks request adds its
// reply's exact size once its payload is read (walkRequest).
func (c *conn) estimate(f Frame, plen int) int64 {
	s := c.s
	frame := int64(HeaderSize + plen)
	if controlRequest(f.Op, plen) {
		return frame + controlReply
	}
	switch f.Op {
	case OpSample:
		n := sampleSeeds(plen)
		return frame + 4*n + s.replyBound(n)
	case OpNextBatch:
		if s.features != nil {
			// Its reply's share is taken once it is claimed (claimBound).
			return frame + smallReply
		}
		return frame + s.batchBound()
	case OpSplitBatch:
		return frame + s.replyBound(s.maxSplitBatch.Load()) + s.maxSplitLink.Load()
	case OpSplit, OpLinkSplit:
		// Its decoded nodes besides (what the split keeps is the split
		// budget's: Server.Split).
		return 2*frame + smallReply
	default:
		return frame + smallReply
	}
}

// reserve takes n bytes from the connection's share, then from the
// server's pool (always in this order, so that waits cannot cycle),
// waiting while they are spent, until the connection ends or stop closes.
func (c *conn) reserve(stop <-chan struct{}, pool *budget, n int64) error {
	if err := c.budget.acquire(c.ctx, stop, n); err != nil {
		return err
	}
	if err := pool.acquire(c.ctx, stop, n); err != nil {
		c.budget.release(n)
		return err
	}
	return nil
}

// release gives back what a grant holds.
func (c *conn) release(g grant) {
	if g.n > 0 {
		g.pool.release(g.n)
		c.budget.release(g.n)
	}
}

// chargeRows takes n bytes for a shared-rows buffer from the connection's
// share and the in-flight budget, if they are free now and the buffers of
// all connections stay within a quarter of the budget (maxRowsShare):
// buffers a client keeps leased cannot starve anyone's requests. It
// reports whether it did; if not, the rows travel in the reply.
func (c *conn) chargeRows(n int64) bool {
	s := c.s
	if s.rowsHeld.Add(n) > s.budget.size/maxRowsShare {
		s.rowsHeld.Add(-n)
		return false
	}
	if !c.budget.tryAcquire(n) {
		s.rowsHeld.Add(-n)
		return false
	}
	if !s.budget.tryAcquire(n) {
		c.budget.release(n)
		s.rowsHeld.Add(-n)
		return false
	}
	return true
}

// refundRows gives back what chargeRows took for a buffer now dropped.
func (c *conn) refundRows(n int64) {
	c.s.budget.release(n)
	c.budget.release(n)
	c.s.rowsHeld.Add(-n)
}

// rowAccount is what a shared-rows pool charges its buffers to: the
// connection (chargeRows, refundRows); nil charges nothing.
type rowAccount interface {
	chargeRows(n int64) bool
	refundRows(n int64)
}

// maxRowsShare: the shared-rows buffers of all connections hold at most
// 1/maxRowsShare of the in-flight budget.
const maxRowsShare = 4

// send writes a reply for a request that holds g (sendReply).
func (c *conn) send(g grant, bufs net.Buffers) {
	c.sendReply(g, plain(bufs))
}

// sendReply writes a reply for a request that holds g: it first trades g
// for the reply's exact size (giving back the excess, or, for a reply
// beyond it, giving all back and waiting for its size in the in-flight
// budget, so that no one waits while holding bytes), and gives those back
// once the reply is written. A reply that cannot be had its bytes (the
// client is gone, the server stops) is dropped.
func (c *conn) sendReply(g grant, r reply) {
	var size int64
	for _, b := range r.bufs {
		size += int64(len(b))
	}
	if size <= g.n {
		c.release(grant{n: g.n - size, pool: g.pool})
		g.n = size
	} else {
		c.release(g)
		g = grant{n: min(size, c.s.connSize), pool: c.s.budget}
		if g.n < size {
			c.s.logf("connection %v: a reply of %d bytes exceeds a connection's in-flight budget of %d bytes; raise --max-inflight", c.nc.RemoteAddr(), size, c.s.connSize)
		}
		if err := c.reserve(nil, g.pool, g.n); err != nil {
			r.drop()
			return
		}
	}
	c.write(r)
	c.release(g)
}

// replyWriteTimeout bounds how long a reply may wait for its client to
// read a byte of it before the connection is dropped, when nobody else
// needs the bytes the reply holds (then the much shorter
// Config.StallTimeout applies: evictStalled). A pipelining client reads a
// reply only after the minibatches before it: a trainer that pauses for
// an evaluation or a checkpoint, or one that gathers its rows slowly
// (numpy.memmap at scale 24 took over a minute for four minibatches),
// must not lose its connection, so the bound is long.
const replyWriteTimeout = 30 * time.Minute

// writeSlice is how often a blocked write wakes to record its progress
// (wprog) and check replyWriteTimeout.
func (c *conn) writeSlice() time.Duration {
	if t := c.s.cfg.StallTimeout; t > 0 {
		return min(max(t/4, 5*time.Millisecond), time.Second)
	}
	return time.Second
}

// write writes a reply, with its memory file passed along (r.fd, closed
// here). A write makes progress as long as the client reads: each byte
// moved restarts its clock (wprog, replyWriteTimeout). A client gone
// mid-reply, or one that read nothing for replyWriteTimeout, has its
// connection closed, which stops the reader too.
func (c *conn) write(r reply) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if r.fd >= 0 {
		defer closeFD(r.fd)
	}
	c.wprog.Store(time.Now().UnixNano())
	defer c.wprog.Store(0)
	if err := c.writeAll(r.bufs, r.fd); err != nil {
		c.nc.Close()
	}
}

// writeAll writes bufs, fd along with their first byte (-1: none), in
// slices of writeSlice, recording each one's progress.
func (c *conn) writeAll(bufs net.Buffers, fd int) error {
	slice := c.writeSlice()
	last := time.Now()
	for fd >= 0 || buffersLen(bufs) > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(slice))
		var n int64
		var err error
		if fd >= 0 {
			// The descriptor goes with the frame's first bytes (the
			// header: never empty), however few of them are sent.
			var m int
			m, err = writeFD(c.nc, bufs[0], fd)
			if m > 0 {
				fd = -1
				bufs[0] = bufs[0][m:]
			}
			n = int64(m)
		} else {
			n, err = bufs.WriteTo(c.nc)
		}
		if n > 0 {
			last = time.Now()
			c.wprog.Store(last.UnixNano())
		}
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return err
		case time.Since(last) >= replyWriteTimeout:
			return fmt.Errorf("no byte of a reply read for %v: %w", replyWriteTimeout, err)
		}
	}
	return nil
}

func buffersLen(bufs net.Buffers) int64 {
	var n int64
	for _, b := range bufs {
		n += int64(len(b))
	}
	return n
}

// errorFrame is an error reply.
func errorFrame(op uint8, id uint32, code uint16, msg string) net.Buffers {
	return net.Buffers{AppendFrame(nil, op, StatusError, id, AppendError(nil, code, msg))}
}

// requestErrorFrame is the error reply for err, with its protocol code.
func requestErrorFrame(op uint8, id uint32, err error) net.Buffers {
	var re *requestError
	if errors.As(err, &re) {
		return errorFrame(op, id, re.code, re.msg)
	}
	return errorFrame(op, id, CodeInternal, err.Error())
}

func jsonFrame(op uint8, id uint32, v any) net.Buffers {
	p, err := json.Marshal(v)
	if err != nil {
		return errorFrame(op, id, CodeInternal, err.Error())
	}
	return net.Buffers{AppendFrame(nil, op, StatusOK, id, p)}
}

// reply is a reply frame as buffers, and the memory file of its feature
// rows (-1: none) that goes along with it.
type reply struct {
	bufs net.Buffers
	fd   int
}

func plain(bufs net.Buffers) reply { return reply{bufs: bufs, fd: -1} }

// drop discards a reply that will not be written.
func (r reply) drop() {
	if r.fd >= 0 {
		closeFD(r.fd)
	}
}

// maxBatchReply is the largest minibatch reply the server sends:
// MaxReply, what its clients read. A variable (atomic: connections read
// it concurrently) for the test of the refusal.
var maxBatchReply = func() *atomic.Int64 {
	var v atomic.Int64
	v.Store(MaxReply)
	return &v
}()

// batchReply encodes a minibatch reply; on a connection with shared rows
// the rows go into a memory file passed with it (unless the pool had no
// room for them: then they are in the reply).
func (c *conn) batchReply(f Frame, b *epoch.Blocks, index int, feat *Features, link *epoch.LinkFields) reply {
	var xBytes, nLabels int64
	if feat != nil {
		if feat.lease == nil || !feat.lease.shared() {
			xBytes = int64(len(feat.X))
		}
		nLabels = int64(len(feat.Y))
	}
	// A reply no client would read (MaxReply, the clients' cap, well
	// under what the u32 length can say) is refused, not sent.
	if size, most := batchFrameSize(b, xBytes, nLabels, link), maxBatchReply.Load(); size > most {
		if feat != nil && feat.lease != nil && feat.lease.shared() {
			feat.lease.abandon()
		}
		return plain(errorFrame(f.Op, f.ID, CodeOverBudget, fmt.Sprintf(
			"minibatch %d of epoch %d: its reply would be %d bytes, more than a client reads in one frame (%d): ask for fewer seeds per minibatch (a hop with fanout -1 takes every neighbor of its nodes)",
			index, b.Epoch, size, most)))
	}
	if feat == nil || feat.lease == nil || !feat.lease.shared() {
		return plain(EncodeLinkBatch(f.Op, f.ID, b, index, feat, link))
	}
	l := feat.lease
	// The rows are in a shared buffer: the reply carries x's header and
	// where they are, and the buffer's memory file the first time.
	fd, err := l.attach()
	if err != nil {
		l.abandon()
		return plain(errorFrame(f.Op, f.ID, CodeInternal, err.Error()))
	}
	shared := *feat
	shared.Shared = &SharedRows{Buffer: l.id(), Offset: rowsOffset, Retire: l.retire}
	return reply{bufs: EncodeLinkBatch(f.Op, f.ID, b, index, &shared, link), fd: fd}
}

// mapRows answers OpMapRows: from now on this connection's feature rows
// travel in memory files (docs/PROTOCOL.md), which needs a Unix socket and
// a server with a feature store.
func (c *conn) mapRows(f Frame) net.Buffers {
	_, unix := c.nc.(*net.UnixConn)
	switch {
	case len(f.Payload) != 0:
		return errorFrame(f.Op, f.ID, CodeBadRequest, fmt.Sprintf("map_rows takes no payload, got %d bytes", len(f.Payload)))
	case c.s.features == nil:
		return errorFrame(f.Op, f.ID, CodeBadRequest, "map_rows: this server has no feature store (serve --features)")
	case !unix || !sharedRowsSupported:
		return errorFrame(f.Op, f.ID, CodeBadRequest, "map_rows: shared rows need a Unix socket on Linux")
	}
	if c.rows == nil {
		c.rows = newRowPool(c)
	}
	return net.Buffers{AppendFrame(nil, f.Op, StatusOK, f.ID, nil)}
}

// replyBatch assembles a claimed minibatch and returns its reply.
func (c *conn) replyBatch(f Frame, cl pipeline.Claim, sem epoch.Semantics) reply {
	if cl.End {
		return plain(net.Buffers{AppendFrame(nil, f.Op, StatusEnd, f.ID, AppendEpochRequest(nil, cl.Epoch))})
	}
	b, err := c.s.assemble(cl, c.rows, sem)
	if err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	return c.batchReply(f, b.Blocks, b.Index, b.Features, b.Link)
}

// walks runs a walks request whose reply's bytes are reserved.
func (c *conn) walks(f Frame, w *walkRequest) reply {
	rows, err := c.s.runWalks(c.ctx, c, w)
	if err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	return plain(walksReply(f.Op, f.ID, rows, w.c.Length+1))
}

// handle answers every request but next_batch, walks, hello and map_rows
// (see serve).
func (c *conn) handle(f Frame) reply {
	s, ctx := c.s, c.ctx
	switch f.Op {
	case OpEpochInfo:
		if len(f.Payload) != 0 {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, fmt.Sprintf("epoch_info takes no payload, got %d bytes", len(f.Payload))))
		}
		return plain(jsonFrame(f.Op, f.ID, s.Info()))
	case OpSample:
		e, seeds, sem, err := DecodeSampleRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		b, feat, err := s.sample(ctx, e, seeds, sem, true, c.rows)
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return c.batchReply(f, b, NoBatch, feat, nil)
	case OpAdvance:
		e, err := DecodeEpochRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		info, err := s.Advance(ctx, e)
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return plain(jsonFrame(f.Op, f.ID, info))
	case OpSplit:
		bs, nodes, err := DecodeSplitRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		info, err := s.Split(ctx, nodes, int(bs))
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return plain(jsonFrame(f.Op, f.ID, info))
	case OpLinkSplit:
		r, err := DecodeLinkSplitRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		info, err := s.LinkSplit(ctx, r)
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return plain(jsonFrame(f.Op, f.ID, info))
	case OpDropSplit:
		id, err := DecodeDropSplitRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		if err := s.DropSplit(id); err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return plain(net.Buffers{AppendFrame(nil, f.Op, StatusOK, f.ID, nil)})
	case OpSplitBatch:
		id, index, sem, err := DecodeSplitBatchRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		b, err := s.splitBatch(ctx, id, index, sem, c.rows)
		switch {
		case err != nil:
			return plain(requestErrorFrame(f.Op, f.ID, err))
		case b.End:
			return plain(net.Buffers{AppendFrame(nil, f.Op, StatusEnd, f.ID, AppendEpochRequest(nil, id))})
		}
		return c.batchReply(f, b.Blocks, b.Index, b.Features, b.Link)
	case OpScan:
		return c.scan(f)
	case OpScanBatch:
		return c.scanBatch(f)
	case OpDropScan:
		return c.dropScanReply(f)
	default:
		return plain(errorFrame(f.Op, f.ID, CodeUnknownOp, fmt.Sprintf("unknown op %d", f.Op)))
	}
}

func (c *conn) replyCode(op uint8, id uint32, code uint16, msg string) {
	c.write(plain(errorFrame(op, id, code, msg)))
}
