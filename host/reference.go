package host

import (
	"errors"
	"fmt"
	"slices"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/rng"
)

// ErrInvalid is wrapped by every error about the caller's arguments (a seed
// out of range, a fanout outside 1..hls.MaxFanout other than
// epoch.AllNeighbors, too many layers), so
// that a CLI can tell bad input from a device or I/O failure.
var ErrInvalid = errors.New("invalid sampling request")

// Adjacency is what the reference sampler needs of a graph: its node count
// and each node's sorted neighbor list.
type Adjacency interface {
	NumNodes() uint32
	Neighbors(node uint32) ([]uint32, error)
}

// CSR is an in-memory graph in compressed sparse row form: the neighbors of
// node v are Indices[Indptr[v]:Indptr[v+1]], sorted ascending.
type CSR struct {
	Indptr  []uint64
	Indices []uint32
}

// NumNodes returns len(Indptr)-1.
func (c *CSR) NumNodes() uint32 {
	if len(c.Indptr) == 0 {
		return 0
	}
	return uint32(len(c.Indptr) - 1)
}

// Neighbors returns node's adjacency, a sub-slice of Indices.
func (c *CSR) Neighbors(node uint32) ([]uint32, error) {
	if uint64(node)+1 >= uint64(len(c.Indptr)) {
		return nil, fmt.Errorf("node %d: %w: graph has %d nodes", node, ErrInvalid, c.NumNodes())
	}
	return c.Indices[c.Indptr[node]:c.Indptr[node+1]], nil
}

// validateRequest checks fanouts (1..hls.MaxFanout or
// epoch.AllNeighbors, at most epoch.MaxLayers layers) and that every seed
// is a node of the graph.
func validateRequest(numNodes uint32, seeds []uint32, fanouts []int) error {
	if len(fanouts) == 0 {
		return fmt.Errorf("%w: no fanouts (need at least one layer)", ErrInvalid)
	}
	if len(fanouts) > epoch.MaxLayers {
		return fmt.Errorf("%w: %d layers, at most %d", ErrInvalid, len(fanouts), epoch.MaxLayers)
	}
	for l, k := range fanouts {
		if (k < 1 || k > hls.MaxFanout) && k != epoch.AllNeighbors {
			return fmt.Errorf("%w: fanout %d of layer %d (hop %d), want 1..%d or %d (every neighbor)", ErrInvalid, k, l, l+1, hls.MaxFanout, epoch.AllNeighbors)
		}
	}
	for i, s := range seeds {
		if s >= numNodes {
			return fmt.Errorf("%w: seed %d (position %d) is not a node: graph has %d nodes", ErrInvalid, s, i, numNodes)
		}
	}
	return nil
}

// EdgeAdjacency is an Adjacency that also knows where each node's
// adjacency starts in the graph's stored CSR: FirstEdge(v) is the global
// edge index of v's first neighbor (CSR.Indptr[v]).
type EdgeAdjacency interface {
	Adjacency
	FirstEdge(node uint32) (uint64, error)
}

// FirstEdge returns Indptr[node].
func (c *CSR) FirstEdge(node uint32) (uint64, error) {
	if uint64(node)+1 >= uint64(len(c.Indptr)) {
		return 0, fmt.Errorf("node %d: %w: graph has %d nodes", node, ErrInvalid, c.NumNodes())
	}
	return c.Indptr[node], nil
}

// ReferenceEdgeIDs is Reference with edge ids: every layer also carries
// EdgeIDs, FirstEdge(v) plus the position rng.Positions chose in v's
// adjacency, -1 at empty slots. It is the oracle of the backends' edge ids.
func ReferenceEdgeIDs(g EdgeAdjacency, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	return reference(g, g, seeds, fanouts, key)
}

// Reference samples an epoch entirely in memory, as plainly as possible:
// it is the oracle the streaming and GPU backends are tested against.
//
// frontier_0 is the sorted unique seeds; layer l samples fanouts[l]
// neighbors of every frontier_l node with rng.Sample under key.Layer(l);
// frontier_{l+1} is the sorted unique union of frontier_l and the valid
// samples (computed here with a set, independently of epoch.NextFrontier).
func Reference(g Adjacency, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	return reference(g, nil, seeds, fanouts, key)
}

// reference is Reference, with edge ids when edges is not nil.
func reference(g Adjacency, edges EdgeAdjacency, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	if err := validateRequest(g.NumNodes(), seeds, fanouts); err != nil {
		return nil, err
	}
	frontier := sortedUnique(seeds)
	res := &epoch.Result{Key: key, Layers: make([]epoch.Layer, len(fanouts))}
	for l, k := range fanouts {
		ly, err := referenceLayer(g, edges, l, frontier, k, key.Layer(l), key.Replace)
		if err != nil {
			return nil, err
		}
		res.Layers[l] = ly
		frontier = nextFrontierSet(frontier, ly.Samples)
	}
	res.Final = frontier
	return res, nil
}

// referenceAll is a full layer (fanout epoch.AllNeighbors) of the
// reference: every neighbor of every frontier node, in CSR order
// (rng.AppendAll), row i at Samples[Offsets[i]:Offsets[i+1]], and with
// edges each one's id FirstEdge(v) + its position.
func referenceAll(g Adjacency, edges EdgeAdjacency, frontier []uint32, l int) (epoch.Layer, error) {
	ly := epoch.Layer{Frontier: frontier, Fanout: epoch.AllNeighbors, Samples: []int32{}, Offsets: make([]int64, 1, len(frontier)+1)}
	if edges != nil {
		ly.EdgeIDs = []int64{}
	}
	for _, v := range frontier {
		nb, err := g.Neighbors(v)
		if err != nil {
			return epoch.Layer{}, fmt.Errorf("reference: layer %d node %d: %w", l, v, err)
		}
		ly.Samples = rng.AppendAll(ly.Samples, nb)
		ly.Offsets = append(ly.Offsets, int64(len(ly.Samples)))
		if edges == nil {
			continue
		}
		first, err := edges.FirstEdge(v)
		if err != nil {
			return epoch.Layer{}, fmt.Errorf("reference: layer %d node %d: %w", l, v, err)
		}
		for p := range nb {
			ly.EdgeIDs = append(ly.EdgeIDs, int64(first)+int64(p))
		}
	}
	return ly, nil
}

// nextFrontierSet is the sorted unique union of frontier and the valid
// samples, computed with a set (independently of epoch.NextFrontier, which
// the backends use).
func nextFrontierSet(frontier []uint32, samples []int32) []uint32 {
	set := make(map[uint32]struct{}, len(frontier)*2)
	for _, v := range frontier {
		set[v] = struct{}{}
	}
	for _, s := range samples {
		if s >= 0 {
			set[uint32(s)] = struct{}{}
		}
	}
	next := make([]uint32, 0, len(set))
	for v := range set {
		next = append(next, v)
	}
	slices.Sort(next)
	return next
}

// sortedUnique returns a sorted copy of xs without duplicates.
func sortedUnique(xs []uint32) []uint32 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
