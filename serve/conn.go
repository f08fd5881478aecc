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
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
)

// conn is one client connection.
type conn struct {
	s        *Server
	nc       net.Conn
	wmu      sync.Mutex
	inflight sync.WaitGroup
	budget   *budget // this connection's share of the server's budget
	authed   bool    // a hello with the token was seen, or none is required
	// rows is set by OpMapRows: feature rows go in buffers shared with
	// the client (its pool); nil: in the replies.
	rows *rowPool
}

// maxConnRequests bounds a connection's concurrent requests.
const maxConnRequests = 8

// The reader of a connection takes one request at a time: it reads the
// header, reserves the bytes the request may hold (its frame and a bound
// on its reply: estimate) from the connection's and then the server's
// budget, waiting while they are spent (so the client's further requests
// wait in the socket: back-pressure), and only then reads the payload.
// The handler gives back what the reply does not need once the reply is
// built, and the rest once it is written (send).

func (c *conn) serve() {
	s := c.s
	ctx, cancel := context.WithCancel(s.baseCtx)
	defer func() {
		c.inflight.Wait() // in-flight requests still reply
		if c.rows != nil {
			c.rows.close()
		}
		cancel()
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
		held := c.estimate(f, plen)
		if held > s.connSize {
			if f.Op != OpSample {
				// A minibatch's bound is loose; the reply rarely needs
				// it all, and a larger one is written holding the whole
				// share (send).
				held = s.connSize
			} else {
				if _, err := io.CopyN(io.Discard, c.nc, int64(plen)); err != nil {
					c.readFailed(unexpected(err))
					return
				}
				c.replyCode(f.Op, f.ID, CodeOverBudget, fmt.Sprintf(
					"a sample of %d seeds may need up to %d bytes in flight, more than this connection's %d (--max-inflight %d); send fewer seeds per request",
					sampleSeeds(plen), held, s.connSize, s.budget.size))
				continue
			}
		}
		if err := c.reserve(ctx, s.stopReading, held); err != nil {
			return // shutting down
		}
		f.Payload = make([]byte, plen)
		if _, err := io.ReadFull(c.nc, f.Payload); err != nil {
			c.release(held)
			c.readFailed(unexpected(err))
			return
		}
		// next_batch claims its minibatch here, in request order, so that
		// a client pipelining requests on one connection gets its
		// minibatches in epoch order; assembly runs concurrently.
		var cl *pipeline.Claim
		var sem epoch.Semantics
		if f.Op == OpNextBatch {
			var e uint32
			e, sem, err = DecodeBatchRequest(f.Payload)
			if err != nil {
				c.send(ctx, held, errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
				continue
			}
			got, err := s.claim(ctx, e)
			if err != nil {
				c.send(ctx, held, requestErrorFrame(f.Op, f.ID, err))
				continue
			}
			cl = &got
			if s.features != nil && !got.End {
				more := min(c.s.claimBound(got), s.connSize) - held
				if more > 0 {
					if err := c.reserve(ctx, s.stopReading, more); err != nil {
						c.release(held)
						// Shutting down; the minibatch's rows still take
						// their turn, or the ones claimed after it would
						// wait for it forever.
						s.features.planned(s.baseCtx, got.Epoch, got.Index, got.Features(), nil, nil, nil)
						return
					}
					held += more
				}
			}
		}
		if f.Op == OpMapRows {
			// In the reader, so that every later reply sees it.
			c.send(ctx, held, c.mapRows(f))
			continue
		}
		slots <- struct{}{}
		c.inflight.Add(1)
		go func() {
			defer func() { <-slots; c.inflight.Done() }()
			if cl != nil {
				c.sendReply(ctx, held, c.replyBatch(f, *cl, sem))
				return
			}
			c.sendReply(ctx, held, c.handle(ctx, f))
		}()
	}
}

// readFailed answers (where it can) and logs a request that could not be
// read; the connection is then closed.
func (c *conn) readFailed(err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		c.replyCode(0, 0, CodeTooLarge, err.Error())
	case errors.Is(err, ErrMalformed):
		c.replyCode(0, 0, CodeBadRequest, err.Error())
	case err == io.EOF, errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
	default:
		c.s.logf("connection %v: %v", c.nc.RemoteAddr(), err)
	}
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
	c.write(net.Buffers{AppendFrame(nil, f.Op, StatusOK, f.ID, nil)}, -1)
	return true
}

// sampleSeeds is the number of seeds a sample payload of plen bytes holds.
func sampleSeeds(plen int) int64 {
	return max(0, int64(plen-4-arrayHeaderSize)/4)
}

// estimate is the bytes a request may hold in flight: its frame, then its
// reply; a sample's decoded seeds besides.
func (c *conn) estimate(f Frame, plen int) int64 {
	s := c.s
	frame := int64(HeaderSize + plen)
	switch f.Op {
	case OpSample:
		n := sampleSeeds(plen)
		return frame + 4*n + s.replyBound(n)
	case OpNextBatch:
		if s.features != nil {
			// Its reply's share is taken once it is claimed (claimBound).
			return frame + smallReply
		}
		return frame + s.replyBound(int64(s.cfg.BatchSize))
	case OpSplitBatch:
		return frame + s.replyBound(s.maxSplitBatch.Load())
	default:
		return frame + smallReply
	}
}

// reserve takes n bytes from the connection's share, then from the
// server's budget (always in this order, so that waits cannot cycle).
func (c *conn) reserve(ctx context.Context, stop <-chan struct{}, n int64) error {
	if err := c.budget.acquire(ctx, stop, n); err != nil {
		return err
	}
	if err := c.s.budget.acquire(ctx, stop, n); err != nil {
		c.budget.release(n)
		return err
	}
	return nil
}

func (c *conn) release(n int64) {
	c.s.budget.release(n)
	c.budget.release(n)
}

// send writes a reply for a request that holds held bytes: it first
// trades them for the reply's exact size (giving back the excess, or, for
// a reply beyond the bound, giving all back and waiting for its size, so
// that no one waits while holding bytes), and gives those back once the
// reply is written.
func (c *conn) send(ctx context.Context, held int64, bufs net.Buffers) {
	c.sendReply(ctx, held, plain(bufs))
}

// sendReply is send for a reply that may pass a memory file along.
func (c *conn) sendReply(ctx context.Context, held int64, r reply) {
	bufs := r.bufs
	var size int64
	for _, b := range bufs {
		size += int64(len(b))
	}
	if size <= held {
		c.release(held - size)
		held = size
	} else {
		c.release(held)
		held = min(size, c.s.connSize)
		if held < size {
			c.s.logf("connection %v: a reply of %d bytes exceeds a connection's in-flight budget of %d bytes; raise --max-inflight", c.nc.RemoteAddr(), size, c.s.connSize)
		}
		if err := c.reserve(ctx, nil, held); err != nil {
			held = 0 // shutdown gave up waiting: write it unaccounted
		}
	}
	c.write(bufs, r.fd)
	c.release(held)
}

// replyWriteTimeout bounds how long a reply may wait for its client to
// read it before the connection is dropped (a client that stopped reading
// but holds its connection would keep the reply's share of the budget
// forever). A pipelining client reads a reply only after the minibatches
// before it: a trainer that pauses for an evaluation or a checkpoint, or
// one that gathers its rows slowly (numpy.memmap at scale 24 took over a
// minute for four minibatches), must not lose its connection, so the
// bound is long.
const replyWriteTimeout = 30 * time.Minute

// write writes a reply, with its memory file fd passed along (-1: none).
func (c *conn) write(bufs net.Buffers, fd int) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(replyWriteTimeout))
	var err error
	if fd >= 0 {
		err = writeWithFD(c.nc, bufs, fd)
	} else {
		_, err = bufs.WriteTo(c.nc)
	}
	if err != nil {
		// A client gone mid-reply: close so the reader stops too.
		c.nc.Close()
	}
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

// batchReply encodes a minibatch reply; on a connection with shared rows
// the rows go into a memory file passed with it.
func (c *conn) batchReply(f Frame, b *epoch.Blocks, index int, feat *Features) reply {
	if feat == nil || feat.lease == nil {
		return plain(EncodeBatch(f.Op, f.ID, b, index, feat))
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
	return reply{bufs: EncodeBatch(f.Op, f.ID, b, index, &shared), fd: fd}
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
		c.rows = newRowPool()
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
	return c.batchReply(f, b.Blocks, b.Index, b.Features)
}

// handle answers every request but next_batch, hello and map_rows (see
// serve).
func (c *conn) handle(ctx context.Context, f Frame) reply {
	s := c.s
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
		b, err := s.Sample(ctx, e, seeds, sem)
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		feat, err := s.sampleFeatures(b, c.rows)
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return c.batchReply(f, b, NoBatch, feat)
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
		info, err := s.Split(nodes, int(bs))
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return plain(jsonFrame(f.Op, f.ID, info))
	case OpWalks:
		starts, wc, err := DecodeWalksRequest(f.Payload)
		if err != nil {
			return plain(errorFrame(f.Op, f.ID, CodeBadRequest, err.Error()))
		}
		w, err := s.Walks(ctx, starts, wc)
		if err != nil {
			return plain(requestErrorFrame(f.Op, f.ID, err))
		}
		return plain(walksReply(f.Op, f.ID, w, wc.Length+1))
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
		return c.batchReply(f, b.Blocks, b.Index, b.Features)
	default:
		return plain(errorFrame(f.Op, f.ID, CodeUnknownOp, fmt.Sprintf("unknown op %d", f.Op)))
	}
}

func (c *conn) replyCode(op uint8, id uint32, code uint16, msg string) {
	c.write(errorFrame(op, id, code, msg), -1)
}
