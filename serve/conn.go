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
)

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
