package serve

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/hostorder"
)

// HeteroSplitInfo is the JSON object a split request to a heterogeneous
// server is answered with: SplitInfo's fields and the split's node type.
type HeteroSplitInfo struct {
	Split      uint32 `json:"split"`
	NumNodes   int    `json:"num_nodes"`
	BatchSize  int    `json:"batch_size"`
	NumBatches int    `json:"num_batches"`
	NodeType   string `json:"node_type"`
}

// AppendHeteroSplitRequest appends the payload of a split request to a
// heterogeneous server: batch size, the node type's index in the schema,
// the nodes (local ids of that type).
func AppendHeteroSplitRequest(dst []byte, batchSize uint32, nodeType uint16, nodes []uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, batchSize)
	dst = binary.LittleEndian.AppendUint16(dst, nodeType)
	return appendU32s(dst, nodes)
}

// DecodeHeteroSplitRequest decodes AppendHeteroSplitRequest's payload.
func DecodeHeteroSplitRequest(p []byte) (batchSize uint32, nodeType uint16, nodes []uint32, err error) {
	d := &decoder{p: p}
	if batchSize, err = d.u32("batch size"); err != nil {
		return 0, 0, nil, err
	}
	if len(p)-d.off < 2 {
		return 0, 0, nil, d.fail("truncated node type")
	}
	nodeType = binary.LittleEndian.Uint16(p[d.off:])
	d.off += 2
	if nodes, err = d.u32s("nodes"); err != nil {
		return 0, 0, nil, err
	}
	return batchSize, nodeType, nodes, d.end()
}

// heteroSplitKey identifies a split by its content (splitKey's rule: the
// same type, nodes and batch size give the same split).
type heteroSplitKey struct {
	t, n, batchSize int
	crc             uint32
}

// heteroSplit is a registered split: its nodes as given and sorted, and
// the sample of the sorted nodes for one epoch (the one it last served).
type heteroSplit struct {
	t         int
	nodes     []uint32
	sorted    []uint32
	batchSize int
	held      int64 // the bound it holds of the in-flight budget (splitBound)

	mu    sync.Mutex // held while sampling: one sample per epoch
	epoch uint32
	res   *heteroepoch.Result
}

func (sp *heteroSplit) numBatches() int { return (len(sp.nodes) + sp.batchSize - 1) / sp.batchSize }

// growth bounds how a sample of n seeds of node type t grows: d[l][t'] is
// a bound on the frontier of type t' at layer l (frontiers are nested, each
// every node known so far; at most the type's count), e[l][r] on
// relation r's sample slots at layer l (frontier × fanout, or the
// relation's stored edges for a full hop, each destination being expanded
// once; unbounded without NumEdges). Sums saturate at 1<<62.
func (h *HeteroEpochs) growth(t int, n int64) (d [][]int64, e [][]int64) {
	s := h.cfg.Schema
	T, R := len(s.NodeTypes), len(s.Relations)
	d = make([][]int64, h.L+1)
	e = make([][]int64, h.L)
	d[0] = make([]int64, T)
	d[0][t] = n
	for l := 0; l < h.L; l++ {
		e[l] = make([]int64, R)
		next := slices.Clone(d[l])
		for r, rel := range s.Relations {
			src, dst := s.TypeIndex(rel.Src), s.TypeIndex(rel.Dst)
			switch f := h.cfg.Fanouts[r][l]; {
			case f == 0:
			case f < 0 && h.cfg.NumEdges != nil:
				e[l][r] = h.cfg.NumEdges[r]
			case f < 0:
				e[l][r] = 1 << 62
			default:
				e[l][r] = satMul(d[l][dst], int64(f))
			}
			next[src] = satAdd(next[src], e[l][r])
		}
		for ty := range next {
			next[ty] = min(next[ty], int64(s.NodeTypes[ty].Count))
		}
		d[l+1] = next
	}
	return d, e
}

// splitBound bounds what a split of n nodes of type t keeps while
// registered (as splitBytes does for a homogeneous one): its nodes twice
// (as given, sorted) and one epoch's sample of them (heteroepoch.Result:
// every layer's frontiers, each sampled relation's slots with their edge
// ids, a full hop's row offsets).
func (h *HeteroEpochs) splitBound(t int, n int64) int64 {
	d, e := h.growth(t, n)
	perSlot := int64(4)
	if h.cfg.EdgeIDs {
		perSlot += 8
	}
	s := h.cfg.Schema
	size := satMul(8, n)
	for l := range d {
		for _, c := range d[l] {
			size = satAdd(size, satMul(4, c))
		}
	}
	for l := range e {
		for r, rel := range s.Relations {
			size = satAdd(size, satMul(perSlot, e[l][r]))
			if h.cfg.Fanouts[r][l] < 0 {
				size = satAdd(size, satMul(8, d[l][s.TypeIndex(rel.Dst)]+1))
			}
		}
	}
	return size
}

// replyBound bounds the frame of a minibatch of n seeds of type t in
// either semantics (the larger of the two layouts), with its rows and
// labels: its nodes of each type are at most the last frontier's bound,
// a hop's edges at most the hop's slots.
func (h *HeteroEpochs) replyBound(t int, n int64) int64 {
	d, e := h.growth(t, n)
	L := int64(h.L)
	s := h.cfg.Schema
	perEdgeID := int64(0)
	if h.cfg.EdgeIDs {
		perEdgeID = 8
	}
	pyg, dgl := int64(HeaderSize+14), int64(HeaderSize+14)
	last := d[len(d)-1]
	for ty := range s.NodeTypes {
		pyg = satAdd(pyg, satAdd(satMul(4, last[ty]), 10+10+4*(L+1)+4))
		dgl = satAdd(dgl, satAdd(10, satMul(4, d[0][ty])))
		for l := 1; l < len(d); l++ {
			dgl = satAdd(dgl, satAdd(10, satMul(4, d[l][ty])))
		}
	}
	for r := range s.Relations {
		var edges int64
		for l := range e {
			edges = satAdd(edges, e[l][r])
			dgl = satAdd(dgl, satAdd(30, satMul(8+perEdgeID, e[l][r])))
		}
		pyg = satAdd(pyg, satAdd(18+10+10+4*L, satMul(16+perEdgeID, edges)))
	}
	size := max(pyg, dgl)
	for ty := range s.NodeTypes {
		if h.cfg.Features != nil && h.cfg.Features[ty] != nil {
			size = satAdd(size, satAdd(19, satMul(h.cfg.Features[ty].RowBytes(), last[ty])))
		} else if h.cfg.Features != nil {
			size = satAdd(size, 1)
		}
		if h.cfg.Labels != nil {
			size = satAdd(size, satAdd(11, satMul(4, last[ty])))
		}
	}
	return size
}

// Split registers a list of distinct nodes of node type t served beside
// the training stream (a validation or test set) and returns its id: its
// minibatches are the nodes in the given order cut into batchSize pieces,
// the last one short, each sampled from the current epoch's random stream
// (the key of the server's seed and its current epoch), so a node's
// sample is the one a training epoch of that epoch draws for it. The
// same type, nodes and batch size give the same split. As on the
// homogeneous server (Server.Split), a split holds splitBound bytes of
// the in-flight budget until it is dropped, the splits together at most
// a quarter of it and at most MaxSplits of them (CodeOverBudget past
// either).
func (s *HeteroServer) Split(ctx context.Context, t int, nodes []uint32, batchSize int) (HeteroSplitInfo, error) {
	sc := s.epochs.cfg.Schema
	if t < 0 || t >= len(sc.NodeTypes) {
		return HeteroSplitInfo{}, newRequestError(CodeBadRequest, "split: node type %d: the graph has %d node types (%q)", t, len(sc.NodeTypes), s.epochs.info.NodeTypes)
	}
	name, count := sc.NodeTypes[t].Name, sc.NodeTypes[t].Count
	if batchSize < 1 {
		return HeteroSplitInfo{}, newRequestError(CodeBadRequest, "split: batch size %d, want >= 1", batchSize)
	}
	if len(nodes) == 0 {
		return HeteroSplitInfo{}, newRequestError(CodeBadRequest, "split: no nodes of type %q", name)
	}
	for i, v := range nodes {
		if v >= count {
			return HeteroSplitInfo{}, newRequestError(CodeBadRequest, "split: node %d (position %d) of type %q is not a node: the type has %d nodes", v, i, name, count)
		}
	}
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			first := slices.Index(nodes, sorted[i])
			second := first + 1 + slices.Index(nodes[first+1:], sorted[i])
			return HeteroSplitInfo{}, newRequestError(CodeBadRequest, "split: node %d of type %q at positions %d and %d (a split's nodes are distinct)", sorted[i], name, first, second)
		}
	}
	key := heteroSplitKey{t: t, n: len(nodes), batchSize: batchSize, crc: crc32c.Checksum(hostorder.Bytes(nodes))}
	need := s.epochs.splitBound(t, int64(len(nodes)))
	what := fmt.Sprintf("%d nodes of type %q", len(nodes), name)
	id, sp, err := s.splits.add(ctx, s.budget, s.ctx.Done(), key, need, what, func() (*heteroSplit, error) {
		return &heteroSplit{t: t, nodes: slices.Clone(nodes), sorted: sorted, batchSize: batchSize, held: need}, nil
	}, nil)
	if err != nil {
		return HeteroSplitInfo{}, err
	}
	return s.splitInfo(id, sp), nil
}

func (s *HeteroServer) splitInfo(id uint32, sp *heteroSplit) HeteroSplitInfo {
	return HeteroSplitInfo{Split: id, NumNodes: len(sp.nodes), BatchSize: sp.batchSize, NumBatches: sp.numBatches(),
		NodeType: s.epochs.cfg.Schema.NodeTypes[sp.t].Name}
}

// DropSplit forgets split id and gives back what it held of the in-flight
// budget; its id is unknown from then on (CodeUnknownSplit). A minibatch
// of it being assembled finishes.
func (s *HeteroServer) DropSplit(id uint32) error { return s.splits.drop(id, s.budget) }

// heteroSplitOf returns split id, or nil.
func (s *HeteroServer) heteroSplitOf(id uint32) *heteroSplit {
	sp, _ := s.splits.get(id)
	return sp
}

// SplitBatch assembles minibatch index of split id from the current
// epoch's random stream with the given semantics (DefaultSemantics: the
// server's): its seeds are that piece of the split, of the split's type.
// Past the split's last minibatch it returns ok false. The split's nodes
// are sampled once per epoch, on its first minibatch of the epoch.
func (s *HeteroServer) SplitBatch(ctx context.Context, id, index uint32, sem epoch.Semantics) (*HeteroBatch, bool, error) {
	assemble, err := s.claimSplitBatch(ctx, id, index, sem)
	if err != nil {
		return nil, false, err
	}
	return readRows(assemble())
}

// claimSplitBatch checks a split_batch request and takes the epoch it is
// of (the current one, now: an advance requested after it does not move
// it), and returns what assembles it, the split's sample drawn first when
// it is of an earlier epoch. Past the split's end, what it returns
// answers the end, the split's id in Epoch.
func (s *HeteroServer) claimSplitBatch(ctx context.Context, id, index uint32, sem epoch.Semantics) (func() (*HeteroBatch, bool, error), error) {
	sp := s.heteroSplitOf(id)
	if sp == nil {
		return nil, newRequestError(CodeUnknownSplit, "unknown split %d", id)
	}
	if int64(index) >= int64(sp.numBatches()) {
		return func() (*HeteroBatch, bool, error) { return &HeteroBatch{Epoch: id}, false, nil }, nil
	}
	s.mu.Lock()
	e := s.cur.Epoch
	s.mu.Unlock()
	return func() (*HeteroBatch, bool, error) {
		c := &s.epochs.cfg
		name := c.Schema.NodeTypes[sp.t].Name
		sp.mu.Lock()
		if sp.res == nil || sp.epoch != e {
			sp.res = nil // the old epoch's sample goes before the new one is drawn
			res, err := c.Sampler.SampleEpoch(ctx, []heteroepoch.Seeds{{Type: name, Nodes: sp.sorted}}, c.Fanouts, epoch.Key{Seed: c.Seed, Epoch: e})
			if err != nil {
				sp.mu.Unlock()
				return nil, false, newRequestError(CodeInternal, "split %d: sampling its %d nodes of type %q for epoch %d: %v", id, len(sp.sorted), name, e, err)
			}
			sp.res, sp.epoch = res, e
		}
		res := sp.res
		sp.mu.Unlock()
		lo := int(index) * sp.batchSize
		piece := sp.nodes[lo:min(lo+sp.batchSize, len(sp.nodes))]
		b, err := s.epochs.assemble(res, []heteroepoch.Seeds{{Type: name, Nodes: piece}}, sem)
		if err != nil {
			return nil, false, newRequestError(CodeInternal, "split %d minibatch %d (epoch %d): %v", id, index, e, err)
		}
		b.Epoch, b.Index = e, int(index)
		return b, true, nil
	}, nil
}
