package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
)

// FreshSampler samples any seeds on request, without a prepared epoch:
// the random-read sampler (randread.Sampler). Its blocks equal those of
// any epoch of the same key whose training nodes include the seeds.
type FreshSampler interface {
	SampleFresh(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key, edgeIDs bool, sem epoch.Semantics) (*epoch.Blocks, error)
}

// ErrFreshInvalid may be wrapped by a FreshSampler's errors about the
// request (a seed that is not a node, a bad fanout): they are answered as
// bad requests. Errors wrapping epoch.ErrDuplicateSeed are answered as
// duplicate seeds; any other as internal errors.
var ErrFreshInvalid = errors.New("serve: invalid sample_fresh request")

// sample_fresh request flags.
const (
	freshReplace uint8 = 1 << 0
	freshEdgeIDs uint8 = 1 << 1
)

// FreshRequest is a sample_fresh request: the seeds, the fanouts, the
// key of the random stream, whether edges carry their ids, and the
// semantics (DefaultSemantics: the server's).
type FreshRequest struct {
	Seeds     []uint32
	Fanouts   []int
	Key       epoch.Key
	EdgeIDs   bool
	Semantics epoch.Semantics
}

// AppendFreshRequest appends the payload of a sample_fresh request:
// u64 seed, u32 epoch, u8 flags (bit 0 replace, bit 1 edge ids), array
// fanouts (i32), array seeds (u32)[, u8 semantics].
func AppendFreshRequest(dst []byte, r FreshRequest) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, r.Key.Seed)
	dst = binary.LittleEndian.AppendUint32(dst, r.Key.Epoch)
	var flags uint8
	if r.Key.Replace {
		flags |= freshReplace
	}
	if r.EdgeIDs {
		flags |= freshEdgeIDs
	}
	dst = append(dst, flags)
	dst = appendArrayHeader(dst, DtypeI32, len(r.Fanouts))
	for _, k := range r.Fanouts {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(k)))
	}
	dst = appendU32s(dst, r.Seeds)
	return appendSemantics(dst, r.Semantics)
}

// DecodeFreshRequest decodes a sample_fresh payload; the fanouts and
// seeds are not checked against a graph (the FreshSampler does).
func DecodeFreshRequest(p []byte) (FreshRequest, error) {
	var r FreshRequest
	d := &decoder{p: p}
	if len(p) < 13 {
		return r, d.fail(fmt.Sprintf("sample_fresh request of %d bytes, at least 13 before the fanouts", len(p)))
	}
	r.Key.Seed = binary.LittleEndian.Uint64(p)
	r.Key.Epoch = binary.LittleEndian.Uint32(p[8:])
	flags := p[12]
	if flags&^(freshReplace|freshEdgeIDs) != 0 {
		d.off = 12
		return r, d.fail(fmt.Sprintf("sample_fresh flags %#x", flags))
	}
	r.Key.Replace = flags&freshReplace != 0
	r.EdgeIDs = flags&freshEdgeIDs != 0
	d.off = 13
	fanouts, err := d.i32s("fanouts")
	if err != nil {
		return r, err
	}
	if len(fanouts) > epoch.MaxLayers {
		return r, d.fail(fmt.Sprintf("%d fanouts, at most %d layers", len(fanouts), epoch.MaxLayers))
	}
	r.Fanouts = make([]int, len(fanouts))
	for i, k := range fanouts {
		r.Fanouts[i] = int(k)
	}
	if r.Seeds, err = d.u32s("seeds"); err != nil {
		return r, err
	}
	if r.Semantics, err = d.semantics(); err != nil {
		return r, err
	}
	return r, d.end()
}

// freshRequest is a decoded sample_fresh request with the bytes its reply
// may hold (its bound, as a sample's, for its own fanouts) and its decoded
// seeds.
type freshRequest struct {
	FreshRequest
	hold int64
}

// freshRequest decodes a sample_fresh payload for a server that has a
// FreshSampler; its errors are request errors.
func (s *Server) freshRequest(p []byte) (*freshRequest, error) {
	if s.cfg.Fresh == nil {
		return nil, newRequestError(CodeBadRequest, "sample_fresh: this server samples no fresh seeds (no random-read sampler)")
	}
	r, err := DecodeFreshRequest(p)
	if err != nil {
		return nil, newRequestError(CodeBadRequest, "%v", err)
	}
	// A fanout below 1 other than -1 (a full hop, every neighbor) is
	// refused before the reply's bound is taken from it (the bound reads
	// any negative fanout as a full hop); the FreshSampler refuses those
	// above its largest.
	for l, k := range r.Fanouts {
		if k < 1 && k != epoch.AllNeighbors {
			return nil, newRequestError(CodeBadRequest, "sample_fresh: fanout %d of layer %d (hop %d), want a positive fanout or %d (every neighbor)", k, l, l+1, epoch.AllNeighbors)
		}
	}
	n := int64(len(r.Seeds))
	size, nodes := minibatchBound(n, r.Fanouts, s.cfg.NumNodes, s.fullBound(), r.EdgeIDs)
	if s.features != nil {
		size = s.withFeatures(size, nodes, n)
	}
	return &freshRequest{FreshRequest: r, hold: satAdd(size, 4*n)}, nil
}

// freshFit refuses a request whose reply could never be had its bytes.
func (c *conn) freshFit(r *freshRequest, held int64) error {
	if r.hold > c.s.connSize-held {
		return newRequestError(CodeOverBudget, "sample_fresh: %d seeds with fanouts %v may need up to %d bytes in flight, more than this connection's %d (--max-inflight %d); send fewer seeds per request",
			len(r.Seeds), r.Fanouts, r.hold, c.s.connSize, c.s.budget.size)
	}
	return nil
}

// SampleFresh samples seeds with the server's FreshSampler and reads
// their features (a server with a feature store): the reply to a
// sample_fresh request. It touches neither epoch nor cursor. pool, when
// not nil, is a shared-rows connection's.
func (s *Server) SampleFresh(ctx context.Context, r FreshRequest) (*epoch.Blocks, *Features, error) {
	return s.sampleFresh(ctx, r, nil)
}

func (s *Server) sampleFresh(ctx context.Context, r FreshRequest, pool *rowPool) (*epoch.Blocks, *Features, error) {
	if s.cfg.Fresh == nil {
		return nil, nil, newRequestError(CodeBadRequest, "sample_fresh: this server samples no fresh seeds (no random-read sampler)")
	}
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	b, err := s.cfg.Fresh.SampleFresh(ctx, r.Seeds, r.Fanouts, r.Key, r.EdgeIDs, s.semantics(r.Semantics))
	if err != nil {
		code := CodeInternal
		switch {
		case errors.Is(err, epoch.ErrDuplicateSeed):
			code = CodeDuplicateSeed
		case errors.Is(err, ErrFreshInvalid):
			code = CodeBadRequest
		case ctx.Err() != nil:
			code = CodeShuttingDown
		}
		return nil, nil, newRequestError(code, "sample_fresh: %v", err)
	}
	var f *Features
	if s.features != nil {
		t := time.Now()
		f, _, err = s.directFeatures(ctx, b, pool)
		if err != nil {
			return nil, nil, newRequestError(CodeInternal, "sample_fresh: reading features (%v): %v", time.Since(t), err)
		}
	}
	return b, f, nil
}

// sampleFresh answers a decoded sample_fresh request whose bytes are
// reserved.
func (c *conn) sampleFresh(f Frame, r *freshRequest) reply {
	b, feat, err := c.s.sampleFresh(c.ctx, r.FreshRequest, c.rows)
	if err != nil {
		return plain(requestErrorFrame(f.Op, f.ID, err))
	}
	return c.batchReply(f, b, NoBatch, feat, nil)
}

// SampleFresh asks the server to sample seeds by random reads (no
// prepared epoch; docs/PROTOCOL.md, sample_fresh) and returns their
// blocks and features (nil from a server without a feature store).
func (c *Client) SampleFresh(r FreshRequest) (*epoch.Blocks, *Features, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(OpSampleFresh, AppendFreshRequest(nil, r))
	if err != nil {
		return nil, nil, err
	}
	b, _, feat, err := DecodeBatch(f.Payload)
	return b, feat, err
}
