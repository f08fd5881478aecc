package serve

import (
	"context"
	"errors"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/pipeline"
)

// MaxSplits is the most splits a server holds; each keeps its nodes and,
// per epoch, its sample.
const MaxSplits = 64

// SplitInfo is the JSON object a split request is answered with.
type SplitInfo struct {
	Split      uint32 `json:"split"` // the id split_batch names it by
	NumNodes   int    `json:"num_nodes"`
	BatchSize  int    `json:"batch_size"`
	NumBatches int    `json:"num_batches"`
}

// splitKey identifies a split by its content: asking again for the same
// nodes and batch size gets the same split (each evaluation loader, or
// each of its workers, may ask).
type splitKey struct {
	n, batchSize int
	crc          uint32
}

// Split registers a node list served beside the training stream (the
// validation or test nodes; pipeline.Split) and returns its id. The same
// nodes and batch size give the same split.
func (s *Server) Split(nodes []uint32, batchSize int) (SplitInfo, error) {
	if err := s.checkOpen(); err != nil {
		return SplitInfo{}, err
	}
	if s.cfg.NumNodes > 0 {
		for i, v := range nodes {
			if int64(v) >= s.cfg.NumNodes {
				return SplitInfo{}, newRequestError(CodeBadRequest, "split: node %d (position %d) is not in the graph of %d nodes", v, i, s.cfg.NumNodes)
			}
		}
	}
	key := splitKey{n: len(nodes), batchSize: batchSize, crc: crc32c.Checksum(hostorder.Bytes(nodes))}
	s.splitMu.Lock()
	defer s.splitMu.Unlock()
	if id, ok := s.splitIDs[key]; ok {
		return splitInfo(id, s.splits[id]), nil
	}
	if len(s.splits) >= MaxSplits {
		return SplitInfo{}, newRequestError(CodeBadRequest, "split: the server holds %d splits already, its most", MaxSplits)
	}
	sp, err := s.pipe.NewSplit(nodes, batchSize)
	if err != nil {
		return SplitInfo{}, newRequestError(CodeBadRequest, "%v", err)
	}
	id := uint32(len(s.splits))
	s.splits = append(s.splits, sp)
	if int64(batchSize) > s.maxSplitBatch.Load() {
		s.maxSplitBatch.Store(int64(batchSize))
	}
	s.splitIDs[key] = id
	return splitInfo(id, sp), nil
}

func splitInfo(id uint32, sp *pipeline.Split) SplitInfo {
	return SplitInfo{Split: id, NumNodes: sp.NumNodes(), BatchSize: sp.BatchSize(), NumBatches: sp.NumBatches()}
}

// SplitBatch assembles minibatch index of split id from the current
// epoch with the given semantics (DefaultSemantics: the server's); its
// features, with a feature store, are read directly. Past the split's last
// minibatch it answers End.
func (s *Server) SplitBatch(ctx context.Context, id uint32, index uint32, sem epoch.Semantics) (Minibatch, error) {
	return s.splitBatch(ctx, id, index, sem, nil)
}

func (s *Server) splitBatch(ctx context.Context, id uint32, index uint32, sem epoch.Semantics, pool *rowPool) (Minibatch, error) {
	if err := s.checkOpen(); err != nil {
		return Minibatch{}, err
	}
	s.splitMu.Lock()
	var sp *pipeline.Split
	if int(id) < len(s.splits) {
		sp = s.splits[id]
	}
	s.splitMu.Unlock()
	if sp == nil {
		return Minibatch{}, newRequestError(CodeUnknownSplit, "unknown split %d", id)
	}
	if int64(index) >= int64(sp.NumBatches()) {
		return Minibatch{End: true}, nil
	}
	b, err := sp.Batch(ctx, int(index), s.semantics(sem))
	if err != nil {
		if errors.Is(err, pipeline.ErrSplit) {
			return Minibatch{}, newRequestError(CodeBadRequest, "%v", err)
		}
		return Minibatch{}, asRequestError(err)
	}
	out := Minibatch{Epoch: b.Epoch, Index: int(index), Blocks: b}
	if out.Features, err = s.sampleFeatures(b, pool); err != nil {
		return Minibatch{}, err
	}
	return out, nil
}
