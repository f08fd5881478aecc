package randread

import (
	"context"
	"fmt"

	"github.com/streamsampler/streamsampler/epoch"
)

// Session is one sequence of layers sampled by random reads for a caller
// that builds the frontiers itself: the streaming sampler's per-chunk
// choice (host.Options.RandomReads) samples, for each layer, the targets
// of the chunks it does not stream through a Session. Blocks read by
// one layer are kept for the session's later layers (up to
// SessionKeepBytes), as a Sample request keeps them. A Session is used
// by one goroutine at a time; Close it when done.
type Session struct {
	rq   *request
	kept int64
}

// SessionKeepBytes bounds the blocks a Session keeps between layers:
// past it, the blocks kept so far are let go (a later layer reads again
// what it needs), so that a session whose layers read most of the graph
// does not hold the graph.
const SessionKeepBytes = 1 << 30

// NewSession starts a session; it holds one of the Sampler's AIO
// contexts until Close.
func (s *Sampler) NewSession() (*Session, error) {
	if !s.enter() {
		return nil, ErrClosed
	}
	return &Session{rq: &request{s: s, aio: s.aioContext(), blocks: make(map[int64][]byte)}}, nil
}

// Layer samples layer l of key for nodes (sorted, distinct, each below
// NumNodes: a subset of the layer's frontier) with fanout k (1..64, or
// epoch.AllNeighbors): the rows are those an epoch of that key gives
// these nodes at layer l, bit for bit, edge ids included when edgeIDs.
// The layer's Frontier is nodes. An error about a neighbor word names
// the chunk, the node and the word (a *chunkfmt.DefectError).
func (se *Session) Layer(ctx context.Context, l int, nodes []uint32, k int, key epoch.Key, edgeIDs bool) (epoch.Layer, LayerStats, error) {
	if err := checkFanout(k, l); err != nil {
		return epoch.Layer{}, LayerStats{}, err
	}
	n := se.rq.s.m.NumNodes
	for i, v := range nodes {
		if v >= n || (i > 0 && v <= nodes[i-1]) {
			return epoch.Layer{}, LayerStats{}, fmt.Errorf("%w: node %d at position %d: want sorted distinct nodes below %d", ErrInvalid, v, i, n)
		}
	}
	if err := ctx.Err(); err != nil {
		return epoch.Layer{}, LayerStats{}, err
	}
	ly, ls, err := se.rq.layer(ctx, l, nodes, k, key, edgeIDs)
	if err != nil {
		return epoch.Layer{}, ls, err
	}
	se.kept += ls.BytesRead
	if se.kept > SessionKeepBytes {
		se.rq.blocks = make(map[int64][]byte)
		se.kept = 0
	}
	return ly, ls, nil
}

// Close ends the session, giving its AIO context back to the Sampler.
func (se *Session) Close() {
	if se.rq == nil {
		return
	}
	rq := se.rq
	se.rq = nil
	for _, bo := range rq.bos {
		bo.Free()
	}
	rq.s.release(rq.aio)
	rq.s.busy.Done()
}
