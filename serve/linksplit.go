package serve

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/pipeline"
)

// OpLinkSplit registers a link split (docs/PROTOCOL.md, "Link
// minibatches"): u32 batch size, u8 mode, f64 amount, u64 seed, u8 flags
// (bit 0: labels follow), array src (u32), array dst (u32)[, array labels
// (f32 or i64)] → JSON object (SplitInfo, with num_edges); its minibatches
// come through split_batch and it is dropped with drop_split.
const OpLinkSplit uint8 = 19

// linkSplitLabels, a link_split flag: an array of labels follows.
const linkSplitLabels uint8 = 1

// LinkSplitRequest is a link_split request's content.
type LinkSplitRequest struct {
	BatchSize uint32
	Neg       epoch.NegMode
	Amount    float64
	Seed      uint64
	Edges     epoch.EdgeSet // Src, Dst and at most one kind of labels
}

// AppendLinkSplitRequest appends the payload of a link_split request.
func AppendLinkSplitRequest(dst []byte, r *LinkSplitRequest) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, r.BatchSize)
	dst = append(dst, uint8(r.Neg))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(r.Amount))
	dst = binary.LittleEndian.AppendUint64(dst, r.Seed)
	var flags uint8
	if r.Edges.LabelsF32 != nil || r.Edges.LabelsI64 != nil {
		flags |= linkSplitLabels
	}
	dst = append(dst, flags)
	dst = appendU32s(dst, r.Edges.Src)
	dst = appendU32s(dst, r.Edges.Dst)
	switch {
	case r.Edges.LabelsI64 != nil:
		dst = appendArrayHeader(dst, DtypeI64, len(r.Edges.LabelsI64))
		for _, v := range r.Edges.LabelsI64 {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	case r.Edges.LabelsF32 != nil:
		dst = appendArrayHeader(dst, DtypeF32, len(r.Edges.LabelsF32))
		for _, v := range r.Edges.LabelsF32 {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	}
	return dst
}

// DecodeLinkSplitRequest decodes a link_split request payload.
func DecodeLinkSplitRequest(p []byte) (*LinkSplitRequest, error) {
	d := &decoder{p: p}
	r := &LinkSplitRequest{}
	var err error
	if r.BatchSize, err = d.u32("batch size"); err != nil {
		return nil, err
	}
	mode, err := d.u8("negative sampling mode")
	if err != nil {
		return nil, err
	}
	if mode > uint8(epoch.NegTriplet) {
		d.off--
		return nil, d.fail(fmt.Sprintf("negative sampling mode %d", mode))
	}
	r.Neg = epoch.NegMode(mode)
	if len(p)-d.off < 16 {
		return nil, d.fail("amount and seed")
	}
	r.Amount = math.Float64frombits(binary.LittleEndian.Uint64(p[d.off:]))
	r.Seed = binary.LittleEndian.Uint64(p[d.off+8:])
	d.off += 16
	flags, err := d.u8("link_split flags")
	if err != nil {
		return nil, err
	}
	if flags&^linkSplitLabels != 0 {
		d.off--
		return nil, d.fail(fmt.Sprintf("link_split flags %#x", flags))
	}
	if r.Edges.Src, err = d.u32s("src"); err != nil {
		return nil, err
	}
	if r.Edges.Dst, err = d.u32s("dst"); err != nil {
		return nil, err
	}
	if len(r.Edges.Src) != len(r.Edges.Dst) {
		return nil, d.fail(fmt.Sprintf("%d sources and %d destinations", len(r.Edges.Src), len(r.Edges.Dst)))
	}
	if flags&linkSplitLabels != 0 {
		if d.off < len(p) && p[d.off] == DtypeI64 {
			r.Edges.LabelsI64, err = d.i64s("labels")
		} else {
			r.Edges.LabelsF32, err = d.f32s("labels")
		}
		if err != nil {
			return nil, err
		}
		if n := max(len(r.Edges.LabelsI64), len(r.Edges.LabelsF32)); n != len(r.Edges.Src) {
			return nil, d.fail(fmt.Sprintf("%d labels for %d edges", n, len(r.Edges.Src)))
		}
	}
	return r, d.end()
}

// LinkSplit registers a link split: supervision edges (validation or
// test edges) cut in their order into minibatches of BatchSize edges with
// their negatives (pipeline.NewLinkSplit: drawn under (Seed, epoch 0),
// the same every epoch), served through split_batch as a node split is,
// and held against the split budget by the union of its minibatches'
// seeds. The same request gets the same split.
func (s *Server) LinkSplit(ctx context.Context, r *LinkSplitRequest) (SplitInfo, error) {
	if err := s.checkOpen(); err != nil {
		return SplitInfo{}, err
	}
	if s.cfg.NumNodes <= 0 || s.cfg.NumNodes > math.MaxUint32 {
		return SplitInfo{}, newRequestError(CodeBadRequest, "link_split: the server does not know its graph's node count")
	}
	if r.BatchSize < 1 {
		return SplitInfo{}, newRequestError(CodeBadRequest, "link_split: batch size 0")
	}
	link := &epoch.Link{Edges: &r.Edges, Neg: r.Neg, Amount: r.Amount, NumNodes: uint32(s.cfg.NumNodes)}
	if l := s.cfg.Link; l != nil {
		link.Indptr = l.Indptr // the server's --neg-weight
	}
	if err := link.Check(); err != nil {
		return SplitInfo{}, newRequestError(CodeBadRequest, "link_split: %v", err)
	}
	payload := AppendLinkSplitRequest(nil, r)
	key := splitKey{n: r.Edges.Len(), batchSize: int(r.BatchSize), crc: crc32c.Checksum(payload), link: true}
	p := int64(r.BatchSize)
	seeds := satAdd(satMul(2, p), satMul(2, int64(link.NumNegatives(int(p)))))
	nodes := min(satMul(seeds, int64(link.Edges.Len()+int(p)-1)/p), s.cfg.NumNodes)
	info, err := s.addSplit(ctx, key, nodes, min(seeds, s.cfg.NumNodes), func() (*pipeline.Split, error) {
		return s.pipe.NewLinkSplit(link, int(r.BatchSize), r.Seed)
	})
	if err == nil {
		if b := linkBound(link, p); b > s.maxSplitLink.Load() {
			s.maxSplitLink.Store(b)
		}
	}
	return info, err
}

// LinkSplit registers a link split (OpLinkSplit).
func (c *Client) LinkSplit(r *LinkSplitRequest) (SplitInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(OpLinkSplit, AppendLinkSplitRequest(nil, r))
	if err != nil {
		return SplitInfo{}, err
	}
	var info SplitInfo
	return info, json.Unmarshal(f.Payload, &info)
}
