package epoch

import (
	"fmt"
	"math"
	mathbits "math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/streamsampler/streamsampler/rng"
)

// NegMode is a link epoch's negative sampling (PyG's neg_sampling modes).
type NegMode uint8

const (
	// NegNone: no negatives; the supervision edges are the positives.
	NegNone NegMode = iota
	// NegBinary: ceil(P·amount) negative pairs per minibatch of P
	// positives, both endpoints drawn, labelled 0 after the positives.
	NegBinary
	// NegTriplet: amount negative destinations per positive, its source
	// kept (PyG's triplet mode; DGL's negative_sampler.Uniform(k)).
	NegTriplet
)

// String returns "none", "binary" or "triplet".
func (m NegMode) String() string {
	switch m {
	case NegNone:
		return "none"
	case NegBinary:
		return "binary"
	case NegTriplet:
		return "triplet"
	}
	return fmt.Sprintf("neg-mode(%d)", uint8(m))
}

// ParseNegMode parses "none", "binary" or "triplet" (ErrConfig otherwise).
func ParseNegMode(s string) (NegMode, error) {
	for m := NegNone; m <= NegTriplet; m++ {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: negative sampling %q, want none, binary or triplet", ErrConfig, s)
}

// ExcludeMode says which edges a link minibatch keeps out of its hops
// (DGL's as_edge_prediction_sampler exclude).
type ExcludeMode uint8

const (
	// ExcludeNone keeps every sampled edge.
	ExcludeNone ExcludeMode = iota
	// ExcludeSelf drops the minibatch's positive edges (DGL's "self").
	ExcludeSelf
	// ExcludeReverse drops them and their reverse edges (DGL's
	// "reverse_id", with Link.Reverse as reverse_eids).
	ExcludeReverse
)

// String returns "none", "self" or "reverse_id".
func (m ExcludeMode) String() string {
	switch m {
	case ExcludeNone:
		return "none"
	case ExcludeSelf:
		return "self"
	case ExcludeReverse:
		return "reverse_id"
	}
	return fmt.Sprintf("exclude(%d)", uint8(m))
}

// ParseExclude parses "none", "self" or "reverse_id" (ErrConfig otherwise).
func ParseExclude(s string) (ExcludeMode, error) {
	for m := ExcludeNone; m <= ExcludeReverse; m++ {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: exclude %q, want none, self or reverse_id", ErrConfig, s)
}

// NoEdge is an edge id that names no stored edge: a training pair that is
// not an edge of the stored graph (a held-out edge, say) has it, and has
// nothing to exclude.
const NoEdge = -1

// EdgeSet is a set of supervision edges (positives): pair i is
// (Src[i], Dst[i]), with its stored edge id EIDs[i] (NoEdge where the pair
// is not stored; EIDs nil where unknown) and at most one kind of label.
// RevEIDs, if not nil, is each pair's reverse's stored id, (Dst[i],
// Src[i]) (NoEdge where not stored): ExcludeReverse for a graph stored
// with both directions, without a reverse_eids array.
type EdgeSet struct {
	Src, Dst  []uint32
	EIDs      []int64
	RevEIDs   []int64
	LabelsF32 []float32
	LabelsI64 []int64
}

// Len returns the number of edges.
func (s *EdgeSet) Len() int { return len(s.Src) }

// Check reports the first thing wrong with s for a graph of numNodes nodes.
func (s *EdgeSet) Check(numNodes uint32) error {
	n := len(s.Src)
	switch {
	case n == 0:
		return fmt.Errorf("%w: no training edges", ErrConfig)
	case len(s.Dst) != n:
		return fmt.Errorf("%w: %d sources and %d destinations", ErrConfig, n, len(s.Dst))
	case uint64(n) > math.MaxUint32:
		return fmt.Errorf("%w: %d training edges, at most %d", ErrConfig, n, uint32(math.MaxUint32))
	case s.EIDs != nil && len(s.EIDs) != n, s.RevEIDs != nil && len(s.RevEIDs) != n:
		return fmt.Errorf("%w: %d edge ids (%d reverse) for %d edges", ErrConfig, len(s.EIDs), len(s.RevEIDs), n)
	case s.LabelsF32 != nil && len(s.LabelsF32) != n, s.LabelsI64 != nil && len(s.LabelsI64) != n:
		return fmt.Errorf("%w: %d labels for %d edges", ErrConfig, max(len(s.LabelsF32), len(s.LabelsI64)), n)
	case s.LabelsF32 != nil && s.LabelsI64 != nil:
		return fmt.Errorf("%w: float and integer labels both given", ErrConfig)
	}
	for i := range n {
		if s.Src[i] >= numNodes || s.Dst[i] >= numNodes {
			return fmt.Errorf("%w: training edge %d (%d, %d): a node is not below the graph's %d nodes", ErrConfig, i, s.Src[i], s.Dst[i], numNodes)
		}
	}
	return nil
}

// Link is a link-prediction epoch's supervision: the training edges, how
// negatives are drawn, and which sampled edges are excluded (DESIGN §4,
// "Link epochs"). Its minibatches are Batch's; the epoch's frontier_0 is
// the union of their seeds. Set it up, then share it by pointer and leave
// it unchanged: Batch may run on many goroutines.
type Link struct {
	Edges *EdgeSet
	Neg   NegMode
	// Amount: negatives per positive (binary: ceil(P·Amount) a minibatch;
	// triplet: Amount, a positive integer, per positive).
	Amount   float64
	NumNodes uint32
	// Indptr, if not nil, draws destinations by in-degree
	// (rng.Negatives.Indptr); otherwise uniformly.
	Indptr  []uint64
	Exclude ExcludeMode
	// Reverse maps a stored edge id to its reverse's (DGL's
	// reverse_eids), for ExcludeReverse; without it, Edges.RevEIDs.
	Reverse []int64

	// shift caches labelShift, a pass over every label: a Link is set up
	// once and then only read (Batch from many goroutines).
	shiftOnce sync.Once
	shift     bool
}

// Check reports (wrapping ErrConfig) the first thing wrong with l.
func (l *Link) Check() error {
	if l.Edges == nil {
		return fmt.Errorf("%w: link mode without training edges", ErrConfig)
	}
	if err := l.Edges.Check(l.NumNodes); err != nil {
		return err
	}
	switch l.Neg {
	case NegNone:
	case NegBinary:
		if !(l.Amount > 0) || math.IsInf(l.Amount, 0) {
			return fmt.Errorf("%w: binary negatives: amount %v, want > 0", ErrConfig, l.Amount)
		}
	case NegTriplet:
		if l.Amount < 1 || l.Amount != math.Trunc(l.Amount) || l.Amount > 1<<16 {
			return fmt.Errorf("%w: triplet negatives: amount %v, want a whole number in 1..65536", ErrConfig, l.Amount)
		}
		if l.Edges.LabelsF32 != nil || l.Edges.LabelsI64 != nil {
			return fmt.Errorf("%w: triplet negatives take no edge labels (as PyG's)", ErrConfig)
		}
	default:
		return fmt.Errorf("%w: %v", ErrConfig, l.Neg)
	}
	if l.Indptr != nil && (len(l.Indptr) != int(l.NumNodes)+1 || l.Indptr[l.NumNodes] == 0) {
		return fmt.Errorf("%w: degree-weighted negatives need the graph's %d+1 row offsets and at least one edge", ErrConfig, l.NumNodes)
	}
	switch l.Exclude {
	case ExcludeNone:
	case ExcludeSelf, ExcludeReverse:
		if l.Edges.EIDs == nil {
			return fmt.Errorf("%w: exclude %s needs the training edges' edge ids", ErrConfig, l.Exclude)
		}
		if l.Exclude == ExcludeReverse && l.Reverse == nil && l.Edges.RevEIDs == nil {
			return fmt.Errorf("%w: exclude reverse_id needs reverse edge ids", ErrConfig)
		}
	default:
		return fmt.Errorf("%w: %v", ErrConfig, l.Exclude)
	}
	return nil
}

// labelShift is PyG's LinkLoader's: with binary negatives and given
// labels whose minimum is 0, every label is raised by one so that 0 means
// negative. It is computed once (the Edges and Neg must not change after
// the first Batch).
func (l *Link) labelShift() bool {
	l.shiftOnce.Do(func() {
		if l.Neg != NegBinary {
			return
		}
		switch {
		case len(l.Edges.LabelsF32) > 0:
			l.shift = slices.Min(l.Edges.LabelsF32) == 0
		case len(l.Edges.LabelsI64) > 0:
			l.shift = slices.Min(l.Edges.LabelsI64) == 0
		}
	})
	return l.shift
}

// LinkFields is a link minibatch's supervision (Python's
// streamsampler.link.LinkFields; docs/PROTOCOL.md, "Link minibatches"):
// every index a local id, a position in the minibatch's n_id.
type LinkFields struct {
	Mode    NegMode
	Amount  float64 // as configured (binary, triplet)
	InputID []int64 // the positives' positions in the training edge set
	// None and binary: EdgeLabelIndex is [2, M] row-major (the M sources,
	// then the M destinations): the P positives, then the negatives;
	// EdgeLabel* their labels (one of the two, by the given labels'
	// kind; float32 ones without labels).
	EdgeLabelIndex []int64
	EdgeLabelF32   []float32
	EdgeLabelI64   []int64
	// Triplet: each positive's endpoints and its K negative destinations
	// ([P, K] row-major).
	SrcIndex, DstPosIndex, DstNegIndex []int64
	K                                  int
}

// NumPos returns P.
func (f *LinkFields) NumPos() int { return len(f.InputID) }

// LinkBatch is one link minibatch before assembly: its seeds (the sorted
// unique endpoints of its positives and negatives, the start of n_id),
// its supervision, and the edge ids its hops must not hold.
type LinkBatch struct {
	Seeds   []uint32
	Fields  LinkFields
	Exclude []int64 // sorted, unique; nil with ExcludeNone
}

// NumNegatives returns how many negatives a minibatch of p positives has:
// ceil(p·Amount) (binary), p·Amount (triplet), 0 (none).
func (l *Link) NumNegatives(p int) int {
	switch l.Neg {
	case NegBinary:
		return int(math.Ceil(float64(p) * l.Amount))
	case NegTriplet:
		return p * int(l.Amount)
	}
	return 0
}

// negatives returns the epoch's negative sampler.
func (l *Link) negatives(seed uint64, e uint32) rng.Negatives {
	return rng.Negatives{Key: rng.NegKey(seed, e), NumNodes: l.NumNodes, Indptr: l.Indptr}
}

// Batch builds the link minibatch of the given positives (positions in
// Edges, in minibatch order) for epoch e of seed: negative j of a binary
// minibatch belongs to positive ids[j mod P] as its (j div P)-th
// (rng.Negatives); a triplet positive's t-th negative destination is its
// own t-th. The seeds are PyG's torch.cat([src, dst(, dst_neg)]).unique().
func (l *Link) Batch(ids []uint32, seed uint64, e uint32) *LinkBatch {
	es := l.Edges
	p := len(ids)
	neg := l.negatives(seed, e)
	nn := l.NumNegatives(p)
	f := LinkFields{Mode: l.Neg, Amount: l.Amount, InputID: make([]int64, p)}
	for i, id := range ids {
		f.InputID[i] = int64(id)
	}
	var src, dst []uint32 // global endpoints, in field order
	switch l.Neg {
	case NegNone, NegBinary:
		m := p + nn
		src, dst = make([]uint32, m), make([]uint32, m)
		for i, id := range ids {
			src[i], dst[i] = es.Src[id], es.Dst[id]
		}
		for j := range nn {
			id, t := ids[j%p], uint32(j/p)
			src[p+j], dst[p+j] = neg.Src(id, t), neg.Dst(id, t)
		}
		shift := l.labelShift() // once per Link, not per minibatch
		switch {
		case es.LabelsI64 != nil:
			f.EdgeLabelI64 = make([]int64, m)
			for i, id := range ids {
				f.EdgeLabelI64[i] = es.LabelsI64[id]
				if shift {
					f.EdgeLabelI64[i]++
				}
			}
		default:
			f.EdgeLabelF32 = make([]float32, m)
			for i, id := range ids {
				f.EdgeLabelF32[i] = 1
				if es.LabelsF32 != nil {
					f.EdgeLabelF32[i] = es.LabelsF32[id]
					if shift {
						f.EdgeLabelF32[i]++
					}
				}
			}
		}
	case NegTriplet:
		k := int(l.Amount)
		f.K = k
		src = make([]uint32, p)
		dst = make([]uint32, p+nn)
		for i, id := range ids {
			src[i], dst[i] = es.Src[id], es.Dst[id]
			for t := range k {
				dst[p+i*k+t] = neg.Dst(id, uint32(t))
			}
		}
	}
	// One sort of (node, position) keys gives both the sorted unique
	// seeds and every endpoint's local id (its node's rank among them).
	all := len(src) + len(dst)
	keys := make([]uint64, all)
	for i, v := range src {
		keys[i] = uint64(v)<<32 | uint64(i)
	}
	for i, v := range dst {
		keys[len(src)+i] = uint64(v)<<32 | uint64(len(src)+i)
	}
	slices.Sort(keys)
	seeds := make([]uint32, 0, all)
	locals := make([]int64, all) // by position: src, then dst
	for _, k := range keys {
		v := uint32(k >> 32)
		if len(seeds) == 0 || seeds[len(seeds)-1] != v {
			seeds = append(seeds, v)
		}
		locals[uint32(k)] = int64(len(seeds) - 1)
	}
	seeds = slices.Clip(seeds)
	srcLocal, dstLocal := locals[:len(src):len(src)], locals[len(src):]
	switch l.Neg {
	case NegNone, NegBinary:
		// [2, M] row-major: the sources' locals, then the destinations'.
		f.EdgeLabelIndex = locals
	case NegTriplet:
		f.SrcIndex, f.DstPosIndex, f.DstNegIndex = srcLocal, dstLocal[:p:p], dstLocal[p:]
	}
	return &LinkBatch{Seeds: seeds, Fields: f, Exclude: l.excluded(ids)}
}

// excluded returns the sorted unique edge ids a minibatch of these
// positives keeps out of its hops: their stored edge ids (ExcludeSelf),
// and the reverses of those (ExcludeReverse: Reverse[eid], as DGL's
// reverse_eids[eids], or the pair's RevEIDs). A pair that is not a stored
// edge (NoEdge) adds nothing, not even its reverse; nor does a reverse
// id that is negative.
func (l *Link) excluded(ids []uint32) []int64 {
	if l.Exclude == ExcludeNone {
		return nil
	}
	out := make([]int64, 0, 2*len(ids))
	for _, id := range ids {
		eid := l.Edges.EIDs[id]
		if eid < 0 {
			continue
		}
		out = append(out, eid)
		if l.Exclude != ExcludeReverse {
			continue
		}
		r := int64(NoEdge)
		switch {
		case l.Reverse != nil && eid < int64(len(l.Reverse)):
			r = l.Reverse[eid]
		case l.Reverse == nil:
			r = l.Edges.RevEIDs[id]
		}
		if r >= 0 {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// LinkShard returns rank's share of the n training edges in epoch e (their
// positions 0..n-1, sorted), exactly as Shard shares nodes: a seeded
// permutation every rank computes alike, rank r taking [r·n/w, (r+1)·n/w).
func LinkShard(n, rank, world int, seed uint64, e uint32) ([]uint32, error) {
	all := make([]uint32, n)
	for i := range all {
		all[i] = uint32(i)
	}
	return Shard(all, rank, world, seed, e)
}

// LinkSeeds returns the epoch's frontier_0 for its link minibatches: the
// sorted union of their seeds, through a bitmap over the node ids (an
// epoch's seeds are several times its distinct nodes: sorting them all
// cost more than the bitmap's pass).
func LinkSeeds(batches []*LinkBatch) []uint32 {
	var maxID uint32
	for _, b := range batches {
		if len(b.Seeds) > 0 {
			maxID = max(maxID, b.Seeds[len(b.Seeds)-1]) // each batch's seeds are sorted
		}
	}
	bits := make([]uint64, maxID/64+1)
	n := 0
	for _, b := range batches {
		for _, v := range b.Seeds {
			w, m := v/64, uint64(1)<<(v%64)
			if bits[w]&m == 0 {
				bits[w] |= m
				n++
			}
		}
	}
	out := make([]uint32, 0, n)
	for w, x := range bits {
		for x != 0 {
			t := uint32(mathbits.TrailingZeros64(x))
			out = append(out, uint32(w)*64+t)
			x &= x - 1
		}
	}
	return out
}

// AssembleLink assembles a link minibatch: the blocks of its seeds (as
// Assemble), without every sampled edge whose id is in b.Exclude (DESIGN
// §5, "Exclusion"). The Result must carry edge ids when anything is
// excluded.
func (a *Assembler) AssembleLink(b *LinkBatch, sem Semantics) (*Blocks, error) {
	if len(b.Exclude) > 0 && !a.r.HasEdgeIDs() && len(a.r.Layers) > 0 {
		return nil, fmt.Errorf("%w: excluding edges needs an epoch sampled with edge ids", ErrConfig)
	}
	if len(b.Exclude) > 0 {
		a.exclude = b.Exclude
	}
	defer func() { a.exclude = nil }()
	return a.Assemble(b.Seeds, sem)
}

// dropExcluded removes, in place, the edges whose ids are in a.exclude
// from a hop's gathered samples (sampled, edgeDst and their ids eids, all
// in edge order) and returns the kept count. exclude is sorted: each id
// is looked up by binary search (a minibatch excludes at most twice its
// positives).
func (a *Assembler) dropExcluded(sampled []uint32, edgeDst []int32, eids []int64) int {
	j := 0
	for i, id := range eids {
		if k := sort.Search(len(a.exclude), func(x int) bool { return a.exclude[x] >= id }); k < len(a.exclude) && a.exclude[k] == id {
			continue
		}
		sampled[j], edgeDst[j], eids[j] = sampled[i], edgeDst[i], eids[i]
		j++
	}
	return j
}

// NodeSetLink is NodeSet for a link minibatch: its blocks' node list
// (AssembleLink's, exclusions applied) appended to dst.
func (a *Assembler) NodeSetLink(b *LinkBatch, sem Semantics, dst []uint32) ([]uint32, error) {
	if len(b.Exclude) > 0 && !a.r.HasEdgeIDs() && len(a.r.Layers) > 0 {
		return dst, fmt.Errorf("%w: excluding edges needs an epoch sampled with edge ids", ErrConfig)
	}
	if len(b.Exclude) > 0 {
		a.exclude = b.Exclude
	}
	defer func() { a.exclude = nil }()
	return a.NodeSet(b.Seeds, sem, dst)
}
