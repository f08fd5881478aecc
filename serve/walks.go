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

// Walks runs the walks of a request through the server's walker
// (Config.Walk) into a reply buffer of its own: W = walk.NumWalks rows of
// c.Length+1 nodes, -1 padded. A bad configuration or a start that is not
// a node (walk.ErrInvalid) is a bad request, a reply over the
// connection's in-flight share is refused before the walker runs, and a
// failure of the walker (a device, a read) is an internal error.
func (s *Server) Walks(ctx context.Context, starts []uint32, c walk.Config) ([]int32, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if s.cfg.Walk == nil {
		return nil, newRequestError(CodeBadRequest, "walks: this server's backend does not walk")
	}
	if err := c.Check(); err != nil {
		return nil, newRequestError(CodeBadRequest, "walks: %v", err)
	}
	if n := int64(walk.NumWalks(len(starts), c)) * int64(c.Length+1) * 4; n > s.connSize {
		return nil, newRequestError(CodeOverBudget, "walks: %d walks of %d nodes are %d bytes, more than this connection's in-flight share of %d bytes (--max-inflight); ask for fewer starts per request",
			walk.NumWalks(len(starts), c), c.Length+1, n, s.connSize)
	}
	out := make([]int32, c.OutputLen(len(starts)))
	if _, err := s.cfg.Walk.WalksInto(ctx, starts, c, out); err != nil {
		code := CodeInternal
		if errors.Is(err, walk.ErrInvalid) {
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
