package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/pipeline"
)

// MaxSplits is the most splits a server holds at once; each keeps its
// nodes and, per epoch, its sample. drop_split (Server.DropSplit) makes
// room.
const MaxSplits = 64

// maxSplitShare: the splits together hold at most 1/maxSplitShare of the
// in-flight budget (--max-inflight), so that requests always have the
// rest.
const maxSplitShare = 4

// SplitInfo is the JSON object a split request is answered with.
type SplitInfo struct {
	Split      uint32 `json:"split"`               // the id split_batch names it by
	NumEdges   int    `json:"num_edges,omitempty"` // a link split's supervision edges
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
	link         bool // a link split (its crc over the request's payload)
}

// splitBytes bounds what a split of n nodes keeps while registered: its
// nodes twice (as given, and sorted), and one epoch's sample of them: per
// hop its frontier and its samples (and their edge ids), then the last
// frontier, each frontier at most the previous one with all its samples
// (and at most the graph's nodes). Sums saturate at 1<<62.
func (s *Server) splitBytes(n int64) int64 { return splitBound(&s.cfg, n) }

// splitBound is splitBytes for a server of configuration cfg.
func splitBound(cfg *Config, n int64) int64 {
	perSample := int64(4)
	if cfg.EdgeIDs {
		perSample += 8
	}
	size := satMul(8, n)
	d := n
	full := fullBound{maxDegree: cfg.MaxDegree, numEdges: cfg.NumEdges}
	for _, f := range cfg.Fanouts {
		edges := full.hopEdges(d, f)
		size = satAdd(size, satAdd(satMul(4, d), satMul(perSample, edges)))
		d = satAdd(d, edges)
		if cfg.NumNodes > 0 {
			d = min(d, cfg.NumNodes)
		}
	}
	return satAdd(size, satMul(4, d))
}

// Split registers a node list served beside the training stream (the
// validation or test nodes; pipeline.Split) and returns its id. The same
// nodes and batch size give the same split. A split holds splitBytes of
// the in-flight budget until it is dropped (DropSplit), waiting for them
// as a request waits for its bytes (until ctx ends); the splits together
// hold at most a quarter of the budget and number at most MaxSplits, and
// a split past either is refused with CodeOverBudget.
func (s *Server) Split(ctx context.Context, nodes []uint32, batchSize int) (SplitInfo, error) {
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
	return s.addSplit(ctx, key, int64(len(nodes)), int64(batchSize), func() (*pipeline.Split, error) { return s.pipe.NewSplit(nodes, batchSize) })
}

// addSplit registers the split newSplit makes (once, for its key) with
// a bound on its nodes and on a minibatch's seeds.
func (s *Server) addSplit(ctx context.Context, key splitKey, nodes, batchSeeds int64, newSplit func() (*pipeline.Split, error)) (SplitInfo, error) {
	id, sp, err := s.splits.add(ctx, s.budget, s.stopReading, key, s.splitBytes(nodes), fmt.Sprintf("%d nodes", nodes), newSplit,
		func(*pipeline.Split) {
			if batchSeeds > s.maxSplitBatch.Load() {
				s.maxSplitBatch.Store(batchSeeds)
			}
		})
	if err != nil {
		return SplitInfo{}, err
	}
	return splitInfo(id, sp), nil
}

// DropSplit forgets split id and gives back what it held of the in-flight
// budget; its id is unknown from then on (CodeUnknownSplit), also to
// split_batch requests already sent. Minibatches of it being assembled
// finish.
func (s *Server) DropSplit(id uint32) error { return s.splits.drop(id, s.budget) }

func splitInfo(id uint32, sp *pipeline.Split) SplitInfo {
	return SplitInfo{Split: id, NumEdges: sp.NumEdges(), NumNodes: sp.NumNodes(), BatchSize: sp.BatchSize(), NumBatches: sp.NumBatches()}
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
	sp, ok := s.splits.get(id)
	if !ok {
		return Minibatch{}, newRequestError(CodeUnknownSplit, "unknown split %d", id)
	}
	if int64(index) >= int64(sp.NumBatches()) {
		return Minibatch{End: true}, nil
	}
	// Counted in the split's figures of the epoch, its sampling (on its
	// first minibatch of the epoch) included.
	op := s.stats.directBegin(directSplit, id)
	sctx := context.WithValue(ctx, splitSampling{}, func(d time.Duration, bytes int64) { s.stats.directSampled(op, d, bytes) })
	tm := timing{asmStart: time.Now()}
	b, err := sp.Batch(sctx, int(index), s.semantics(sem))
	tm.asmEnd = time.Now()
	if err != nil {
		s.stats.directDone(op, nil, nil, featplan.Report{}, tm)
		if errors.Is(err, pipeline.ErrSplit) {
			return Minibatch{}, newRequestError(CodeBadRequest, "%v", err)
		}
		return Minibatch{}, asRequestError(err)
	}
	s.stats.seen(b.Epoch)
	out := Minibatch{Epoch: b.Epoch, Index: int(index), Blocks: b, Link: sp.Link(int(index))}
	var rep featplan.Report
	if s.features != nil {
		tm.readStart = time.Now()
		out.Features, rep, err = s.directFeatures(ctx, b, pool)
		tm.readEnd = time.Now()
		if err != nil {
			s.stats.directDone(op, nil, nil, rep, tm)
			return Minibatch{}, newRequestError(CodeInternal, "reading features: %v", err)
		}
	}
	s.stats.directDone(op, b, out.Features, rep, tm)
	return out, nil
}

// splitSampling is the context key of the function a split's sampling
// reports its time and bytes read to (Server.splitBatch; New's sample
// function): a split's, not its epoch's.
type splitSampling struct{}
