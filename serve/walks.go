package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"

	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/walk"
)

// walk request flags.
const walkStopAtRestart uint8 = 1 << 0

// walkRequestFixed is a walks request's bytes before its starts array:
// mode u8, flags u8, length u32, walks per node u32, seed u64, restart
// f64, p f64, q f64.
const walkRequestFixed = 1 + 1 + 4 + 4 + 8 + 8 + 8 + 8

// AppendWalksRequest appends the payload of a walks request.
func AppendWalksRequest(dst []byte, starts []uint32, c walk.Config) []byte {
	var flags uint8
	if c.StopAtRestart {
		flags |= walkStopAtRestart
	}
	dst = append(dst, uint8(c.Mode), flags)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.Length))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.WalksPerNode))
	dst = binary.LittleEndian.AppendUint64(dst, c.Seed)
	for _, f := range []float64{c.Restart, c.P, c.Q} {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	return appendU32s(dst, starts)
}

// DecodeWalksRequest decodes a walks request payload; the configuration
// is not checked (walk.Config.Check does).
func DecodeWalksRequest(p []byte) ([]uint32, walk.Config, error) {
	d := &decoder{p: p}
	var c walk.Config
	if len(p) < walkRequestFixed {
		return nil, c, d.fail(fmt.Sprintf("walks request of %d bytes, at least %d before the starts", len(p), walkRequestFixed))
	}
	c.Mode = walk.Mode(p[0])
	flags := p[1]
	if flags&^walkStopAtRestart != 0 {
		d.off = 1
		return nil, c, d.fail(fmt.Sprintf("walk flags %#x", flags))
	}
	c.StopAtRestart = flags&walkStopAtRestart != 0
	c.Length = int(binary.LittleEndian.Uint32(p[2:]))
	c.WalksPerNode = int(binary.LittleEndian.Uint32(p[6:]))
	c.Seed = binary.LittleEndian.Uint64(p[10:])
	c.Restart = math.Float64frombits(binary.LittleEndian.Uint64(p[18:]))
	c.P = math.Float64frombits(binary.LittleEndian.Uint64(p[26:]))
	c.Q = math.Float64frombits(binary.LittleEndian.Uint64(p[34:]))
	d.off = walkRequestFixed
	starts, err := d.u32s("starts")
	if err != nil {
		return nil, c, err
	}
	return starts, c, d.end()
}

// walkRequest is a walks request, decoded and checked, with the bytes
// it holds once running besides its frame: its reply and its decoded
// starts.
type walkRequest struct {
	starts []uint32
	c      walk.Config
	hold   int64
}

// walksReplySize is the frame of the reply to walks of c from n starts:
// the header, the 2-D array's header and W × (Length+1) int32.
func walksReplySize(n int, c walk.Config) int64 {
	return HeaderSize + 2 + 16 + int64(walk.NumWalks(n, c))*int64(c.Length+1)*4
}

// walkRequest decodes and checks a walks payload: a server that walks, a
// valid configuration (walk.Config.CheckStarts: the starts themselves are
// the walker's to check, against its graph), a length within
// Config.MaxWalkLength. Its errors are request errors.
func (s *Server) walkRequest(p []byte) (*walkRequest, error) {
	starts, c, err := DecodeWalksRequest(p)
	if err != nil {
		return nil, newRequestError(CodeBadRequest, "%v", err)
	}
	return s.checkWalks(starts, c)
}

// checkWalks is walkRequest for a request already decoded.
func (s *Server) checkWalks(starts []uint32, c walk.Config) (*walkRequest, error) {
	if s.cfg.Walk == nil {
		return nil, newRequestError(CodeBadRequest, "walks: this server's backend does not walk")
	}
	// The walker checks the starts against its graph; where the server
	// knows the node count, they are checked here already.
	numNodes := uint32(math.MaxInt32) + 1
	if s.cfg.NumNodes > 0 && s.cfg.NumNodes < int64(numNodes) {
		numNodes = uint32(s.cfg.NumNodes)
	}
	if err := c.CheckStarts(starts, numNodes); err != nil {
		return nil, newRequestError(CodeBadRequest, "walks: %v", err)
	}
	if c.Length > s.cfg.MaxWalkLength {
		return nil, newRequestError(CodeBadRequest, "walks: length %d, this server's limit is %d steps (--max-walk-length)", c.Length, s.cfg.MaxWalkLength)
	}
	return &walkRequest{starts: starts, c: c, hold: walksReplySize(len(starts), c) + 4*int64(len(starts))}, nil
}

// walksFit refuses a walks request that could never be had its bytes:
// with held already reserved (its frame), more than the connection's
// share.
func (c *conn) walksFit(w *walkRequest, held int64) error {
	if w.hold > c.s.connSize-held {
		return newRequestError(CodeOverBudget, "walks: %d walks of %d nodes are %d bytes, more than this connection's in-flight share of %d bytes (--max-inflight %d); ask for fewer starts or walks per request",
			walk.NumWalks(len(w.starts), w.c), w.c.Length+1, walksReplySize(len(w.starts), w.c), c.s.connSize, c.s.budget.size)
	}
	return nil
}

// Walks runs the walks of a request through the server's walker
// (Config.Walk) into a reply buffer of its own: W = walk.NumWalks rows of
// c.Length+1 nodes, -1 padded. A bad configuration, a walk longer than
// Config.MaxWalkLength or a start that is not a node (walk.ErrInvalid) is
// a bad request, a reply over a connection's in-flight share is refused
// before the walker runs, a walk past Config.WalkTimeout is stopped
// (CodeTimedOut), and a failure of the walker (a device, a read) is an
// internal error. It takes its turn on the sampler as a connection's
// walks do (samplerGate); its reply's bytes are not reserved: this is
// the in-process entry, which holds no budget.
func (s *Server) Walks(ctx context.Context, starts []uint32, c walk.Config) ([]int32, error) {
	w, err := s.checkWalks(starts, c)
	if err != nil {
		return nil, err
	}
	if w.hold > s.connSize {
		return nil, newRequestError(CodeOverBudget, "walks: %d bytes, more than a connection's in-flight share of %d bytes (--max-inflight)", w.hold, s.connSize)
	}
	return s.runWalks(ctx, nil, w)
}

// runWalks runs a checked walks request in owner's turn on the sampler
// (samplerGate), bounded by Config.WalkTimeout, and returns its rows. ctx
// ends with the request's connection: a walk nobody will read stops.
func (s *Server) runWalks(ctx context.Context, owner any, w *walkRequest) ([]int32, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := s.gate.enter(ctx, owner, false); err != nil {
		return nil, newRequestError(CodeShuttingDown, "walks: stopped waiting for the walker: %v", err)
	}
	defer s.gate.leave()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.WalkTimeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, s.cfg.WalkTimeout)
	}
	defer cancel()
	out := make([]int32, w.c.OutputLen(len(w.starts)))
	if _, err := s.cfg.Walk.WalksInto(wctx, w.starts, w.c, out); err != nil {
		code := CodeInternal
		switch {
		case ctx.Err() != nil:
			// The connection is gone, or the server stops: nobody reads
			// this.
			code = CodeShuttingDown
		case errors.Is(wctx.Err(), context.DeadlineExceeded):
			return nil, newRequestError(CodeTimedOut, "walks: stopped after %v, this server's bound on a walks request (--walk-timeout); ask for fewer or shorter walks", s.cfg.WalkTimeout)
		case errors.Is(err, walk.ErrInvalid):
			code = CodeBadRequest
		}
		return nil, newRequestError(code, "walks: %v", err)
	}
	return out, nil
}

// walksReply is a walks reply: a 2-D i32 array [W, Length+1].
func walksReply(op uint8, id uint32, walks []int32, rowLen int) net.Buffers {
	hdr := make([]byte, HeaderSize, HeaderSize+2+16)
	hdr = append(hdr, DtypeI32, 2)
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(len(walks)/rowLen))
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(rowLen))
	body := hostorder.Bytes(walks)
	if !hostorder.LittleEndian {
		body = make([]byte, 0, 4*len(walks))
		for _, v := range walks {
			body = binary.LittleEndian.AppendUint32(body, uint32(v))
		}
	}
	binary.LittleEndian.PutUint32(hdr[0:], uint32(HeaderSize-4+2+16+len(body)))
	hdr[4], hdr[5] = op, StatusOK
	binary.LittleEndian.PutUint32(hdr[6:], id)
	return net.Buffers{hdr, body}
}
