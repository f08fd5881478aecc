package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/streamsampler/streamsampler/epoch"
)

// ErrSplit is wrapped by the errors about a split's nodes or batches.
var ErrSplit = errors.New("epoch: bad split")

// Split is a fixed list of nodes served beside the training stream: the
// validation or test nodes, or any node list. Its minibatches are the
// nodes in the given order cut into BatchSize pieces (the last may be
// short): unshuffled, every node exactly once, nothing dropped, the same
// minibatches every epoch. Their samples come from the pipeline's current
// epoch (the same random stream as its training minibatches; a node both
// reach has the same neighbors in both), sampled for the split's nodes
// when a minibatch of the split is first asked for in that epoch.
//
// A Split may be used from many goroutines.
type Split struct {
	p         *Pipeline
	nodes     []uint32 // in the caller's order
	frontier  []uint32 // sorted
	batchSize int
	// links, for a link split (NewLinkSplit), is each minibatch's link
	// batch; nodes is then the union of their seeds.
	links []*epoch.LinkBatch
	edges int

	mu    sync.Mutex
	epoch uint32
	res   *epoch.Result // the split's sample under epoch's key, or nil
}

// NewSplit returns a split of the given nodes (distinct, each below the
// graph's node count, which sampling checks) cut into minibatches of
// batchSize. It samples nothing yet.
func (p *Pipeline) NewSplit(nodes []uint32, batchSize int) (*Split, error) {
	if batchSize < 1 {
		return nil, fmt.Errorf("%w: batch size %d, want >= 1", ErrSplit, batchSize)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrSplit)
	}
	f := slices.Sorted(slices.Values(nodes))
	for i := 1; i < len(f); i++ {
		if f[i] == f[i-1] {
			return nil, fmt.Errorf("%w: node %d appears twice (position %d and %d)", ErrSplit, f[i], slices.Index(nodes, f[i]), lastIndex(nodes, f[i]))
		}
	}
	return &Split{p: p, nodes: slices.Clone(nodes), frontier: f, batchSize: batchSize}, nil
}

func lastIndex(a []uint32, v uint32) int {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == v {
			return i
		}
	}
	return -1
}

// NewLinkSplit returns a split of supervision edges (validation or test
// edges: link.Edges, no exclusion) cut in their order into minibatches of
// batchSize edges, each with its negatives drawn under (seed, epoch 0):
// the same every epoch, so that evaluations compare on the same
// negatives. Its nodes, sampled per epoch as a node split's, are the
// union of the minibatches' seeds.
func (p *Pipeline) NewLinkSplit(link *epoch.Link, batchSize int, seed uint64) (*Split, error) {
	if batchSize < 1 {
		return nil, fmt.Errorf("%w: batch size %d, want >= 1", ErrSplit, batchSize)
	}
	if err := link.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSplit, err)
	}
	if link.Exclude != epoch.ExcludeNone {
		return nil, fmt.Errorf("%w: a link split excludes no edges", ErrSplit)
	}
	n := link.Edges.Len()
	sp := &Split{p: p, batchSize: batchSize, edges: n}
	for lo := 0; lo < n; lo += batchSize {
		ids := make([]uint32, min(batchSize, n-lo))
		for i := range ids {
			ids[i] = uint32(lo + i)
		}
		sp.links = append(sp.links, link.Batch(ids, seed, 0))
	}
	sp.frontier = epoch.LinkSeeds(sp.links)
	sp.nodes = sp.frontier
	return sp, nil
}

// NumEdges returns a link split's supervision edges (0 for a node split).
func (s *Split) NumEdges() int { return s.edges }

// Link returns minibatch i's link fields (nil for a node split).
func (s *Split) Link(i int) *epoch.LinkFields {
	if s.links == nil || i < 0 || i >= len(s.links) {
		return nil
	}
	return &s.links[i].Fields
}

// NumNodes returns the split's node count.
func (s *Split) NumNodes() int { return len(s.nodes) }

// BatchSize returns the split's minibatch size.
func (s *Split) BatchSize() int { return s.batchSize }

// NumBatches returns the split's minibatch count.
func (s *Split) NumBatches() int {
	if s.links != nil {
		return len(s.links)
	}
	return epoch.NumBatches(len(s.nodes), s.batchSize)
}

// Seeds returns minibatch i's nodes (a view; do not modify).
func (s *Split) Seeds(i int) []uint32 {
	if s.links != nil {
		return s.links[i].Seeds
	}
	lo := i * s.batchSize
	return s.nodes[lo:min(lo+s.batchSize, len(s.nodes))]
}

// Batch assembles minibatch i of the split from the pipeline's current
// epoch, with the given semantics; the blocks' Epoch says which epoch.
// i beyond the last minibatch is an error wrapping ErrSplit.
func (s *Split) Batch(ctx context.Context, i int, sem epoch.Semantics) (*epoch.Blocks, error) {
	if i < 0 || i >= s.NumBatches() {
		return nil, fmt.Errorf("%w: minibatch %d of a split of %d", ErrSplit, i, s.NumBatches())
	}
	res, err := s.result(ctx)
	if err != nil {
		return nil, err
	}
	if s.links != nil {
		return epoch.NewAssembler(res, nil).AssembleLink(s.links[i], sem)
	}
	return epoch.NewAssembler(res, nil).Assemble(s.Seeds(i), sem)
}

// result returns the split's sample under the current epoch's key,
// sampling it when the epoch has changed since the last one.
func (s *Split) result(ctx context.Context) (*epoch.Result, error) {
	if err := s.p.Start(ctx); err != nil {
		return nil, err
	}
	e := s.p.Info().Epoch
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res != nil && s.epoch == e {
		return s.res, nil
	}
	s.res = nil // a failed sampling keeps nothing of the old epoch
	key := s.p.cfg.Key(e)
	res, err := s.p.sample(ctx, s.frontier, s.p.cfg.Fanouts, key)
	if err != nil {
		return nil, fmt.Errorf("epoch: sampling a split of %d nodes for epoch %d: %w", len(s.nodes), e, err)
	}
	if res.Key != key {
		return nil, fmt.Errorf("epoch: split sampled with key %+v, want %+v", res.Key, key)
	}
	s.res, s.epoch = res, e
	return res, nil
}
