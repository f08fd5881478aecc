// One layer over a given frontier under a given key: the entry point a
// heterogeneous epoch (package heterosample) samples each relation's layer
// through, with the relation's key (rng.RelationKey, DESIGN §3
// "Relations"), where SampleEpoch derives every layer's key from an
// epoch.Key and its frontiers from the previous layer.

package host

import (
	"context"
	"fmt"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/rng"
)

// checkKeyedRequest checks a keyed layer's arguments: a fanout of
// 1..maxK or epoch.AllNeighbors, a layer index an epoch may have, and a
// frontier that is sorted, without repeats, of nodes below numNodes.
func checkKeyedRequest(numNodes uint32, layer int, frontier []uint32, fanout, maxK int) error {
	if layer < 0 || layer >= epoch.MaxLayers {
		return fmt.Errorf("%w: layer %d, want 0..%d", ErrInvalid, layer, epoch.MaxLayers-1)
	}
	if (fanout < 1 || fanout > maxK) && fanout != epoch.AllNeighbors {
		return fmt.Errorf("%w: fanout %d of layer %d (hop %d), want 1..%d or %d (every neighbor)", ErrInvalid, fanout, layer, layer+1, maxK, epoch.AllNeighbors)
	}
	for i, v := range frontier {
		if v >= numNodes {
			return fmt.Errorf("%w: frontier node %d (position %d) is not a node: graph has %d nodes", ErrInvalid, v, i, numNodes)
		}
		if i > 0 && v <= frontier[i-1] {
			return fmt.Errorf("%w: frontier not sorted and unique at position %d (%d after %d)", ErrInvalid, i, v, frontier[i-1])
		}
	}
	return nil
}

// SampleLayerKeyed samples one layer: fanout neighbors (or every neighbor,
// epoch.AllNeighbors) of every node of frontier, which must be sorted and
// without repeats, under the layer key layerKey (rng.Sample's key) instead
// of an epoch's key.Layer(layer). layer only names the layer in errors,
// statistics and Options.OnChunk. The returned layer is exactly the one
// SampleEpoch computes for that frontier when layerKey is key.Layer(layer)
// (the same chunk jobs, kernel launches, checks and edge ids), so every
// backend that gives SampleEpoch's bytes gives these.
//
// It shares the Sampler's devices and chunk cache with SampleEpoch (one
// call at a time) and, like it, notices cancellation between chunks.
func (s *Sampler) SampleLayerKeyed(ctx context.Context, layer int, frontier []uint32, fanout int, layerKey uint64, replace bool) (epoch.Layer, *LayerStats, error) {
	if err := checkKeyedRequest(s.manifest.NumNodes, layer, frontier, fanout, s.maxK); err != nil {
		return epoch.Layer{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return epoch.Layer{}, nil, fmt.Errorf("host: sampler is closed")
	}
	ly, ls, err := sampleLayer(ctx, s.stream(), s.index, layer, frontier, fanout, layerKey, replace, s.onChunk, s.edgeBase)
	if err != nil {
		return epoch.Layer{}, nil, fmt.Errorf("host: keyed layer %d: %w", layer, err)
	}
	return ly, &ls, nil
}

// ReferenceLayerKeyed is one layer of Reference over a given frontier
// (sorted, without repeats) under the layer key layerKey: rng.Sample of
// every frontier node's adjacency, or every neighbor for
// epoch.AllNeighbors; with edgeIDs (g must then be an EdgeAdjacency) each
// sample's id FirstEdge(v) plus its position. It is the oracle of
// Sampler.SampleLayerKeyed, and Reference's layers are exactly it under
// key.Layer(l).
func ReferenceLayerKeyed(g Adjacency, layer int, frontier []uint32, fanout int, layerKey uint64, replace, edgeIDs bool) (epoch.Layer, error) {
	if err := checkKeyedRequest(g.NumNodes(), layer, frontier, fanout, hls.MaxFanout); err != nil {
		return epoch.Layer{}, err
	}
	var edges EdgeAdjacency
	if edgeIDs {
		e, ok := g.(EdgeAdjacency)
		if !ok {
			return epoch.Layer{}, fmt.Errorf("%w: edge ids asked of a graph (%T) that does not know its edges' positions", ErrInvalid, g)
		}
		edges = e
	}
	return referenceLayer(g, edges, layer, frontier, fanout, layerKey, replace)
}

// referenceLayer is one layer of the reference (Reference's loop body):
// fanout k under lkey, or a full layer.
func referenceLayer(g Adjacency, edges EdgeAdjacency, l int, frontier []uint32, k int, lkey uint64, replace bool) (epoch.Layer, error) {
	if k == epoch.AllNeighbors {
		return referenceAll(g, edges, frontier, l)
	}
	samples := make([]int32, len(frontier)*k)
	var edgeIDs []int64
	var pos []int32
	if edges != nil {
		edgeIDs = make([]int64, len(samples))
		pos = make([]int32, k)
	}
	for i, v := range frontier {
		nb, err := g.Neighbors(v)
		if err != nil {
			return epoch.Layer{}, fmt.Errorf("reference: layer %d node %d: %w", l, v, err)
		}
		rng.Sample(samples[i*k:(i+1)*k], nb, v, lkey, replace)
		if edges == nil {
			continue
		}
		first, err := edges.FirstEdge(v)
		if err != nil {
			return epoch.Layer{}, fmt.Errorf("reference: layer %d node %d: %w", l, v, err)
		}
		rng.Positions(pos, len(nb), v, lkey, replace)
		for s, p := range pos {
			edgeIDs[i*k+s] = -1
			if p >= 0 {
				edgeIDs[i*k+s] = int64(first) + int64(p)
			}
		}
	}
	return epoch.Layer{Frontier: frontier, Fanout: k, Samples: samples, EdgeIDs: edgeIDs}, nil
}
