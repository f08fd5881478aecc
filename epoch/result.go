package epoch

import (
	"errors"
	"fmt"
	"sort"

	"github.com/streamsampler/streamsampler/rng"
)

// MaxLayers is the most sampling layers an epoch may have: the one limit
// that every command, backend, file and the serve protocol check against.
// Two bounds meet at 255:
//
//   - rng.Key packs the layer index into 8 bits, so only layers
//     0..rng.LayerKeys-1 (256) draw distinct random streams;
//   - the layer count itself must fit in one byte: the serve protocol's
//     Blocks reply carries it as a u8 (docs/PROTOCOL.md), and an L-layer
//     epoch's L+1 frontiers are then numbered 0..L within a byte too.
//
// So L <= 255 = rng.LayerKeys-1, which keeps both. The GPU engine's C++
// side repeats the value as MAX_LAYERS (gpu/csrc).
const MaxLayers = rng.LayerKeys - 1

// ErrInvalid is wrapped by Validate's errors: the Result breaks an epoch
// invariant.
var ErrInvalid = errors.New("epoch: invalid result")

// Key names the random stream of one epoch: every layer's samples are a
// pure function of (Seed, Epoch, layer, node).
type Key struct {
	Seed    uint64
	Epoch   uint32
	Replace bool // sample with replacement
}

// Layer returns the RNG key of layer l (hop l+1), rng.Key(Seed, Epoch, l).
func (k Key) Layer(l int) uint64 { return rng.Key(k.Seed, k.Epoch, l) }

// AllNeighbors is the fanout of a full layer: every node of the frontier
// takes all of its neighbors, in CSR order (PyG's and DGL's -1; DESIGN
// §3, "Full neighborhoods"). It is rng.AllNeighbors.
const AllNeighbors = rng.AllNeighbors

// Layer is one sampling layer of an epoch: the sorted unique frontier, the
// fanout used, and len(Frontier)*Fanout samples, row i holding the
// neighbors drawn for Frontier[i] with -1 in empty slots.
//
// A full layer (Fanout == AllNeighbors) is shaped as a CSR instead: row i
// is Samples[Offsets[i]:Offsets[i+1]], every neighbor of Frontier[i] in
// CSR order, so rows have the nodes' degrees as lengths and hold no -1.
// Offsets has len(Frontier)+1 entries, starts at 0, never decreases and
// ends at len(Samples); it is nil in every other layer. A row's length is
// its node's degree, which may be anything (a hub's million neighbors are
// one row), so nothing about a full layer is sized by a fanout.
//
// EdgeIDs is nil when the epoch was sampled without edge ids (the
// default). Otherwise len(EdgeIDs) == len(Samples) and EdgeIDs[i] is the
// id of the edge Samples[i] came from: its position in the graph's stored
// CSR (indptr[node] + the position the sampler chose in node's adjacency,
// rng.Positions; the global edge index in edges.chunks order), so edge
// features can be looked up, and adjacencies that repeat a neighbor give
// each copy its own id. EdgeIDs[i] is -1 exactly where Samples[i] is -1.
// An epoch has edge ids in every layer or in none.
type Layer struct {
	Frontier []uint32
	Fanout   int
	Samples  []int32
	EdgeIDs  []int64
	// Offsets is a full layer's row offsets (see above); nil otherwise.
	Offsets []int64
}

// Full reports whether the layer takes every neighbor (Fanout ==
// AllNeighbors): its rows are variable-length, through Offsets.
func (l *Layer) Full() bool { return l.Fanout == AllNeighbors }

// Span returns where row i lies in Samples (and EdgeIDs): [lo, hi).
func (l *Layer) Span(i int) (lo, hi int) {
	if l.Offsets != nil {
		return int(l.Offsets[i]), int(l.Offsets[i+1])
	}
	return i * l.Fanout, (i + 1) * l.Fanout
}

// Row returns the samples of Frontier[i].
func (l *Layer) Row(i int) []int32 {
	lo, hi := l.Span(i)
	return l.Samples[lo:hi]
}

// slotOf returns the row and the slot within it of entry j of Samples.
func (l *Layer) slotOf(j int) (row, slot int) {
	if l.Offsets == nil {
		return j / l.Fanout, j % l.Fanout
	}
	// The last row starting at or before j (empty rows share a start).
	row = sort.Search(len(l.Offsets)-1, func(i int) bool { return l.Offsets[i+1] > int64(j) })
	return row, j - int(l.Offsets[row])
}

// checkOffsets checks the shape of layer l's rows: a full layer's Offsets
// (len(Frontier)+1 entries, 0 first, non-decreasing, len(Samples) last),
// or len(Frontier)·Fanout samples and no Offsets in any other layer.
func (ly *Layer) checkOffsets(l int) error {
	if !ly.Full() {
		if ly.Fanout < 1 {
			return fmt.Errorf("layer %d: fanout %d, want >= 1 or %d (every neighbor)", l, ly.Fanout, AllNeighbors)
		}
		if ly.Offsets != nil {
			return fmt.Errorf("layer %d: fanout %d with row offsets (only a full layer, fanout %d, has them)", l, ly.Fanout, AllNeighbors)
		}
		if want := int64(len(ly.Frontier)) * int64(ly.Fanout); int64(len(ly.Samples)) != want {
			return fmt.Errorf("layer %d: %d samples, want %d (%d frontier nodes × fanout %d)", l, len(ly.Samples), want, len(ly.Frontier), ly.Fanout)
		}
		return nil
	}
	if len(ly.Offsets) != len(ly.Frontier)+1 {
		return fmt.Errorf("layer %d (every neighbor): %d row offsets for %d frontier nodes, want %d", l, len(ly.Offsets), len(ly.Frontier), len(ly.Frontier)+1)
	}
	if ly.Offsets[0] != 0 {
		return fmt.Errorf("layer %d (every neighbor): row offsets start at %d, want 0", l, ly.Offsets[0])
	}
	for i := 1; i < len(ly.Offsets); i++ {
		if ly.Offsets[i] < ly.Offsets[i-1] {
			return fmt.Errorf("layer %d (every neighbor): row %d (node %d) ends at %d, before it starts (%d)", l, i-1, ly.Frontier[i-1], ly.Offsets[i], ly.Offsets[i-1])
		}
	}
	if last := ly.Offsets[len(ly.Offsets)-1]; last != int64(len(ly.Samples)) {
		return fmt.Errorf("layer %d (every neighbor): row offsets end at %d, the layer has %d samples", l, last, len(ly.Samples))
	}
	return nil
}

// Result is one epoch's sampling output. Layers[0].Frontier is the epoch's
// (sorted unique) training nodes; Layers[l+1].Frontier and finally Final are
// the sorted unique union of the previous frontier and its valid samples.
// A Result is immutable once built: any number of goroutines may assemble
// minibatches from it.
type Result struct {
	Key    Key
	Layers []Layer
	Final  []uint32 // frontier_L: every node a minibatch of this epoch can reach
}

// NumLayers returns the number of sampling layers (hops).
func (r *Result) NumLayers() int { return len(r.Layers) }

// Fanouts returns each layer's fanout, in hop order.
func (r *Result) Fanouts() []int {
	f := make([]int, len(r.Layers))
	for i := range r.Layers {
		f[i] = r.Layers[i].Fanout
	}
	return f
}

// Frontier returns frontier_l for l in 0..L; frontier_L is Final.
func (r *Result) Frontier(l int) []uint32 {
	if l == len(r.Layers) {
		return r.Final
	}
	return r.Layers[l].Frontier
}

// NumSampledEdges counts the valid (non-negative) samples of all layers.
func (r *Result) NumSampledEdges() int64 {
	var n int64
	for i := range r.Layers {
		for _, s := range r.Layers[i].Samples {
			if s >= 0 {
				n++
			}
		}
	}
	return n
}

// Bytes returns the memory held by the Result's arrays.
func (r *Result) Bytes() int64 {
	n := int64(len(r.Final)) * 4
	for i := range r.Layers {
		n += int64(len(r.Layers[i].Frontier))*4 + int64(len(r.Layers[i].Samples))*4 + int64(len(r.Layers[i].EdgeIDs))*8 + int64(len(r.Layers[i].Offsets))*8
	}
	return n
}

// checkEdgeIDs checks layer l's edge ids against its samples; want says
// whether the epoch has edge ids (layer 0 decides).
func (ly *Layer) checkEdgeIDs(l int, want bool) error {
	if (ly.EdgeIDs != nil) != want {
		if want {
			return fmt.Errorf("%w: layer %d has no edge ids, layer 0 has", ErrInvalid, l)
		}
		return fmt.Errorf("%w: layer %d has edge ids, layer 0 has none", ErrInvalid, l)
	}
	if !want {
		return nil
	}
	if len(ly.EdgeIDs) != len(ly.Samples) {
		return fmt.Errorf("%w: layer %d: %d edge ids for %d samples", ErrInvalid, l, len(ly.EdgeIDs), len(ly.Samples))
	}
	for i, e := range ly.EdgeIDs {
		if (e == -1) != (ly.Samples[i] == -1) || e < -1 {
			row, slot := ly.slotOf(i)
			return fmt.Errorf("%w: layer %d row %d (node %d) slot %d: edge id %d for sample %d, want -1 exactly at an empty slot and an edge id >= 0 elsewhere",
				ErrInvalid, l, row, ly.Frontier[row], slot, e, ly.Samples[i])
		}
	}
	return nil
}

// Validate checks every invariant of DESIGN §4: frontiers sorted and
// unique, sample rows of the right length with only -1 or node ids, and
// each next frontier (and Final) equal to the sorted unique union of the
// previous frontier and its valid samples; edge ids, where present, in
// every layer, one per sample, -1 exactly at the empty slots and
// non-negative elsewhere. The error wraps ErrInvalid and names the layer
// and row.
func (r *Result) Validate() error {
	if r == nil {
		return fmt.Errorf("%w: nil result", ErrInvalid)
	}
	if len(r.Layers) > MaxLayers {
		return fmt.Errorf("%w: %d layers, at most %d", ErrInvalid, len(r.Layers), MaxLayers)
	}
	for l := range r.Layers {
		ly := &r.Layers[l]
		if err := checkSortedUnique(ly.Frontier); err != nil {
			return fmt.Errorf("%w: layer %d frontier: %v", ErrInvalid, l, err)
		}
		if err := ly.checkOffsets(l); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		// A full layer's rows hold neighbors only: no empty slot.
		least := int32(-1)
		if ly.Full() {
			least = 0
		}
		for i, s := range ly.Samples {
			if s < least {
				row, slot := ly.slotOf(i)
				want := "-1 or a node id"
				if ly.Full() {
					want = "a node id (a full layer has no empty slot)"
				}
				return fmt.Errorf("%w: layer %d row %d (node %d) slot %d: sample %d, want %s",
					ErrInvalid, l, row, ly.Frontier[row], slot, s, want)
			}
		}
		if err := ly.checkEdgeIDs(l, r.Layers[0].EdgeIDs != nil); err != nil {
			return err
		}
	}
	if err := checkSortedUnique(r.Final); err != nil {
		return fmt.Errorf("%w: final frontier: %v", ErrInvalid, err)
	}
	for l := range r.Layers {
		ly := &r.Layers[l]
		next := r.Frontier(l + 1)
		want := NextFrontier(ly.Frontier, ly.Samples)
		if err := compareFrontier(l, ly, next, want); err != nil {
			return err
		}
	}
	return nil
}

func checkSortedUnique(a []uint32) error {
	for i := 1; i < len(a); i++ {
		if a[i] <= a[i-1] {
			return fmt.Errorf("entry %d (%d) not above entry %d (%d): not sorted unique", i, a[i], i-1, a[i-1])
		}
	}
	return nil
}

// compareFrontier explains the first difference between the stored
// frontier_{l+1} and the one computed from layer l.
func compareFrontier(l int, ly *Layer, got, want []uint32) error {
	n := min(len(got), len(want))
	i := 0
	for i < n && got[i] == want[i] {
		i++
	}
	if i == len(got) && i == len(want) {
		return nil
	}
	name := fmt.Sprintf("frontier %d", l+1)
	if i < len(want) && (i == len(got) || want[i] < got[i]) {
		v := want[i]
		// Name the row that put v into the frontier.
		for j, s := range ly.Samples {
			if s >= 0 && uint32(s) == v {
				row, slot := ly.slotOf(j)
				return fmt.Errorf("%w: %s lacks node %d, sampled by layer %d row %d (node %d) slot %d",
					ErrInvalid, name, v, l, row, ly.Frontier[row], slot)
			}
		}
		return fmt.Errorf("%w: %s lacks node %d of frontier %d", ErrInvalid, name, v, l)
	}
	return fmt.Errorf("%w: %s entry %d is node %d, which is neither in frontier %d nor sampled by layer %d",
		ErrInvalid, name, i, got[i], l, l)
}

// CheckShape is the cheap part of Validate that a writer needs: array
// lengths that agree with the fanouts (and a full layer's row offsets).
func (r *Result) CheckShape() error {
	if r == nil {
		return errors.New("nil result")
	}
	if len(r.Layers) > MaxLayers {
		return fmt.Errorf("%d layers, at most %d", len(r.Layers), MaxLayers)
	}
	edgeIDs := r.HasEdgeIDs()
	for l := range r.Layers {
		ly := &r.Layers[l]
		if err := ly.checkOffsets(l); err != nil {
			return err
		}
		if (ly.EdgeIDs != nil) != edgeIDs || (edgeIDs && len(ly.EdgeIDs) != len(ly.Samples)) {
			return fmt.Errorf("layer %d: %d edge ids for %d samples (layer 0 has edge ids: %v)", l, len(ly.EdgeIDs), len(ly.Samples), edgeIDs)
		}
	}
	return nil
}

// HasEdgeIDs reports whether the epoch has edge ids (layer 0 decides;
// Validate requires every layer to agree).
func (r *Result) HasEdgeIDs() bool { return len(r.Layers) > 0 && r.Layers[0].EdgeIDs != nil }
