package heteroepoch

import (
	"github.com/streamsampler/streamsampler/epoch"
)

// Result is one heterogeneous epoch: for every layer, every node type's
// frontier and every relation's samples.
type Result struct {
	Key     epoch.Key
	Schema  Schema
	Fanouts [][]int // one list per relation, in the schema's order
	// Frontiers[l][t] is node type t's frontier at layer l, sorted
	// unique local ids, for l = 0..L: Frontiers[0] the seeds,
	// Frontiers[L] every node the epoch reached. Frontiers are nested:
	// Frontiers[l][t] ⊆ Frontiers[l+1][t].
	Frontiers [][][]uint32
	// Layers[l][r] is relation r's layer l, a homogeneous layer of the
	// relation's graph (epoch.Layer): Frontier is Frontiers[l][dst(r)];
	// Samples are local ids of src(r), -1 in empty slots (a full layer,
	// Fanout epoch.AllNeighbors, as a CSR through Offsets); EdgeIDs, where
	// the epoch has them, are positions in the relation's own stored CSR.
	// Fanout 0 is a relation not sampled at that hop: no samples, and
	// Samples, EdgeIDs and Offsets are nil.
	Layers [][]epoch.Layer
}

// NumLayers returns L.
func (r *Result) NumLayers() int { return len(r.Layers) }

// SampledEdges returns the epoch's valid samples (non-negative entries)
// over every layer and relation: its sampled edges.
func (r *Result) SampledEdges() int64 {
	var n int64
	for _, layer := range r.Layers {
		for _, ly := range layer {
			for _, s := range ly.Samples {
				if s >= 0 {
					n++
				}
			}
		}
	}
	return n
}

// Bytes returns the memory of the result's arrays (frontiers, samples,
// edge ids, row offsets).
func (r *Result) Bytes() int64 {
	var n int64
	for _, fr := range r.Frontiers {
		for _, f := range fr {
			n += 4 * int64(len(f))
		}
	}
	for _, layer := range r.Layers {
		for _, ly := range layer {
			n += 4*int64(len(ly.Samples)) + 8*int64(len(ly.EdgeIDs)) + 8*int64(len(ly.Offsets))
		}
	}
	return n
}
