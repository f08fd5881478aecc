package epoch

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"

	"github.com/streamsampler/streamsampler/internal/radix"
)

var (
	// ErrNotInFrontier is wrapped by Sample when a seed is not in frontier_0
	// (not a training node of this epoch's shard), or, for a corrupt Result,
	// when a node reached at hop h is missing from frontier_{h-1}.
	ErrNotInFrontier = errors.New("epoch: node not in frontier")
	// ErrDuplicateSeed is wrapped by Sample when a seed appears twice in one
	// minibatch: DGL's blocks need distinct destination nodes.
	ErrDuplicateSeed = errors.New("epoch: duplicate seed")
)

// Hop is one message-passing block (DGL's to_block): edges run from Src to
// Dst in local ids. Src begins with Dst in order, then the new neighbors in
// order of first appearance; edges are ordered by destination, then by
// sample slot.
type Hop struct {
	Dst     []uint32 `json:"dst"`      // global ids of the destination nodes
	Src     []uint32 `json:"src"`      // global ids of the source nodes; Src[:len(Dst)] == Dst
	EdgeSrc []int32  `json:"edge_src"` // local index into Src of each edge's source
	EdgeDst []int32  `json:"edge_dst"` // local index into Dst of each edge's destination
}

// Blocks is one assembled minibatch: Hops[0] is hop 1 (its Dst are the
// seeds) and Hops[h+1].Dst == Hops[h].Src. Slices may share backing
// arrays (Seeds with Hops[0].Dst, each Src with the next Dst); treat them
// as read-only.
type Blocks struct {
	Epoch uint32   `json:"epoch"`
	Seeds []uint32 `json:"seeds"`
	Hops  []Hop    `json:"hops"`
}

// NumEdges returns the number of edges over all hops.
func (b *Blocks) NumEdges() int {
	n := 0
	for i := range b.Hops {
		n += len(b.Hops[i].EdgeSrc)
	}
	return n
}

// MarshalJSON writes {"epoch":N,"seeds":[…],"hops":[{"dst":[…],"src":[…],
// "edge_src":[…],"edge_dst":[…]},…]}, with [] for empty slices, faster than
// reflection for the long integer arrays of a minibatch.
func (b Blocks) MarshalJSON() ([]byte, error) { return b.AppendJSON(nil), nil }

// AppendJSON appends the JSON encoding of b (see MarshalJSON) to dst.
func (b *Blocks) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"epoch":`...)
	dst = strconv.AppendUint(dst, uint64(b.Epoch), 10)
	dst = append(dst, `,"seeds":`...)
	dst = appendU32s(dst, b.Seeds)
	dst = append(dst, `,"hops":[`...)
	for i := range b.Hops {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = b.Hops[i].AppendJSON(dst)
	}
	return append(dst, "]}"...)
}

// MarshalJSON writes {"dst":[…],"src":[…],"edge_src":[…],"edge_dst":[…]}.
func (h Hop) MarshalJSON() ([]byte, error) { return h.AppendJSON(nil), nil }

// AppendJSON appends the JSON encoding of h to dst.
func (h *Hop) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"dst":`...)
	dst = appendU32s(dst, h.Dst)
	dst = append(dst, `,"src":`...)
	dst = appendU32s(dst, h.Src)
	dst = append(dst, `,"edge_src":`...)
	dst = appendI32s(dst, h.EdgeSrc)
	dst = append(dst, `,"edge_dst":`...)
	dst = appendI32s(dst, h.EdgeDst)
	return append(dst, '}')
}

func appendU32s(dst []byte, a []uint32) []byte {
	dst = append(dst, '[')
	for i, v := range a {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	return append(dst, ']')
}

func appendI32s(dst []byte, a []int32) []byte {
	dst = append(dst, '[')
	for i, v := range a {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(v), 10)
	}
	return append(dst, ']')
}

// Index finds a node's row in each layer's frontier in O(1) instead of a
// binary search: either a dense []int32 per layer over all node ids (4
// bytes × layers × nodes) or a hash map per layer (about 4× the bytes of
// the frontiers). Build it once per Result; it is read-only afterwards.
type Index struct {
	dense [][]int32
	maps  []map[uint32]int32
	bytes int64
}

// Bytes returns the memory the index holds.
func (ix *Index) Bytes() int64 { return ix.bytes }

// DenseIndexBytes returns what Index(numNodes) would allocate; numNodes 0
// means max(Final)+1.
func (r *Result) DenseIndexBytes(numNodes uint32) int64 {
	if numNodes == 0 {
		numNodes = r.numNodes()
	}
	return int64(numNodes) * 4 * int64(len(r.Layers))
}

func (r *Result) numNodes() uint32 {
	if len(r.Final) == 0 {
		return 0
	}
	return r.Final[len(r.Final)-1] + 1
}

// Index builds a dense position index over node ids [0, numNodes); 0
// means max(Final)+1, the smallest that covers every frontier. It fails if
// the epoch reaches a node id >= numNodes.
func (r *Result) Index(numNodes uint32) (*Index, error) {
	if numNodes == 0 {
		numNodes = r.numNodes()
	}
	if f := r.Final; len(f) > 0 && f[len(f)-1] >= numNodes {
		return nil, fmt.Errorf("epoch: index: the epoch reaches node %d, beyond %d nodes", f[len(f)-1], numNodes)
	}
	ix := &Index{dense: make([][]int32, len(r.Layers))}
	for l := range r.Layers {
		f := r.Layers[l].Frontier
		if len(f) > 0 && f[len(f)-1] >= numNodes {
			return nil, fmt.Errorf("epoch: index: layer %d frontier holds node %d, beyond %d nodes", l, f[len(f)-1], numNodes)
		}
		p := make([]int32, numNodes)
		for i := range p {
			p[i] = -1
		}
		for i, v := range f {
			p[v] = int32(i)
		}
		ix.dense[l] = p
		ix.bytes += int64(numNodes) * 4
	}
	return ix, nil
}

// MapIndex builds a hash-map position index, for graphs whose dense index
// would not fit in memory.
func (r *Result) MapIndex() *Index {
	ix := &Index{maps: make([]map[uint32]int32, len(r.Layers))}
	for l := range r.Layers {
		f := r.Layers[l].Frontier
		m := make(map[uint32]int32, len(f))
		for i, v := range f {
			m[v] = int32(i)
		}
		ix.maps[l] = m
		ix.bytes += int64(len(f)) * 16 // keys, values and the table's slack, roughly
	}
	return ix
}

// Sample assembles the blocks of one minibatch (DESIGN §5). It is a
// convenience over a fresh Assembler with binary search; loops should keep
// an Assembler (or use Store) to reuse its scratch space.
func (r *Result) Sample(seeds []uint32) (*Blocks, error) {
	return NewAssembler(r, nil).Sample(seeds)
}

// Assembler turns seed lists into Blocks for one Result, reusing its
// scratch space (a hash table relabelling global ids to local ones, edge
// buffers) from call to call. It is not safe for concurrent use; use one
// per goroutine (they may share the Result and the Index).
type Assembler struct {
	r    *Result
	ix   *Index
	t    localTable
	d    denseTable
	es   []int32
	ed   []int32
	sr   []uint32
	gs   []uint32
	rows []int32
	// sort-based lookups and relabelling (mergeRows, relabelBySort)
	pairs, ptmp []uint64 // dst pairs
	dstSorted   []uint64
	dstFor      []uint32
	sa, sb      []uint64 // sample pairs
	na, nb      []uint64 // new nodes
	sink        uint64   // what gather's prefetching loads were or'ed into
}

// NewAssembler returns an Assembler over r; ix (from r.Index or
// r.MapIndex) may be nil, and then each row is found by binary search.
func NewAssembler(r *Result, ix *Index) *Assembler {
	return &Assembler{r: r, ix: ix}
}

// Result returns the Result the Assembler reads.
func (a *Assembler) Result() *Result { return a.r }

// Reset points the Assembler at another Result (and its index, or nil),
// keeping its scratch space.
func (a *Assembler) Reset(r *Result, ix *Index) { a.r, a.ix = r, ix }

// row finds node in layer l's frontier.
func (a *Assembler) row(l int, node uint32) (int, bool) {
	if a.ix != nil {
		if a.ix.dense != nil {
			p := a.ix.dense[l]
			if int(node) < len(p) && p[node] >= 0 {
				return int(p[node]), true
			}
			return 0, false
		}
		i, ok := a.ix.maps[l][node]
		return int(i), ok
	}
	return search(a.r.Layers[l].Frontier, node)
}

// search is a branch-light lower-bound binary search.
func search(f []uint32, x uint32) (int, bool) {
	lo, n := 0, len(f)
	for n > 1 {
		half := n / 2
		if f[lo+half-1] < x {
			lo += half
		}
		n -= half
	}
	if n == 1 && f[lo] < x {
		lo++
	}
	return lo, lo < len(f) && f[lo] == x
}

// Sample assembles the blocks of one minibatch: for hop h = 1..L, dst
// (the seeds at hop 1, then the previous hop's src), src (dst, then new
// neighbors in order of first appearance) and the edges from each dst
// node's valid samples in layer h-1, by dst and then sample slot. Seeds
// must be distinct members of frontier_0; otherwise the error wraps
// ErrDuplicateSeed or ErrNotInFrontier and names the node.
func (a *Assembler) Sample(seeds []uint32) (*Blocks, error) {
	r := a.r
	L := len(r.Layers)
	b := &Blocks{Epoch: r.Key.Epoch, Seeds: append(make([]uint32, 0, len(seeds)), seeds...), Hops: make([]Hop, L)}
	if L == 0 {
		a.t.reset(len(seeds))
		for i, v := range seeds {
			if _, ok := search(r.Final, v); !ok {
				return nil, fmt.Errorf("%w: seed %d (position %d) is not a training node of epoch %d", ErrNotInFrontier, v, i, r.Key.Epoch)
			}
			if _, fresh := a.t.insert(v, int32(i)); !fresh {
				return nil, fmt.Errorf("%w: seed %d at positions %d and later %d", ErrDuplicateSeed, v, a.firstPos(seeds, v), i)
			}
		}
		return b, nil
	}
	dst := b.Seeds
	for h := 0; h < L; h++ {
		ly := &r.Layers[h]
		k := ly.Fanout
		// With a dense index the node ids are known to be below its size, and
		// relabelling uses a dense table too: one memory access per sample
		// instead of hash probes.
		dense := a.ix != nil && a.ix.dense != nil
		// Without a dense index, a large hop is relabelled by sorting
		// (relabelBySort) rather than through a hash table far bigger than
		// the caches.
		bySort := !dense && len(dst)*k >= sortRelabelMin
		a.dstFor = nil // sortedDst's cache is per hop
		// The dense table is kept from hop to hop: this hop's dst is the
		// previous hop's src, already in the table under the local ids they
		// keep (their positions in dst), so only the seeds are inserted.
		if dense && h == 0 {
			a.d.reset(len(a.ix.dense[h]))
		} else if !dense && (!bySort || h == 0) {
			a.t.reset(min(len(dst)*(1+k), len(r.Final)))
		}
		src := append(a.sr[:0], dst...)
		for i, v := range dst {
			if (bySort || dense) && h > 0 {
				break // the previous hop's src is distinct by construction
			}
			var fresh bool
			if dense {
				if int(v) >= len(a.d.loc) {
					return nil, a.notInFrontier(h, i, v)
				}
				_, fresh = a.d.insert(v, int32(i))
			} else {
				_, fresh = a.t.insert(v, int32(i))
			}
			if !fresh {
				if h == 0 {
					return nil, fmt.Errorf("%w: seed %d at positions %d and %d", ErrDuplicateSeed, v, a.firstPos(seeds, v), i)
				}
				return nil, fmt.Errorf("epoch: internal error: node %d twice among hop %d destinations", v, h+1)
			}
		}
		// Three passes rather than one: rows of all dst nodes, then their
		// valid samples gathered in edge order, then the relabelling. Each
		// pass's random accesses are independent of each other, so the CPU
		// overlaps their cache misses (about 2× faster than one fused loop
		// on a 1M-node epoch; BenchmarkSample).
		rows := a.rows[:0]
		if dense {
			var bad int
			rows, bad = denseRows(rows, a.ix.dense[h], dst)
			if bad >= 0 {
				return nil, a.notInFrontier(h, bad, dst[bad])
			}
		} else if f := ly.Frontier; a.ix == nil && len(dst)*mergeRatio >= len(f) {
			// Many lookups: sort them and walk the frontier once instead of
			// binary-searching each (sequential instead of ~log2 cache misses
			// per node). With relabelBySort this made BenchmarkSample/search
			// about 1.9× faster than binary search plus a hash table.
			var bad int
			rows, bad = a.mergeRows(rows, f, a.sortedDst(dst))
			if bad >= 0 {
				return nil, a.notInFrontier(h, bad, dst[bad])
			}
		} else {
			for i, v := range dst {
				row, ok := a.row(h, v)
				if !ok {
					return nil, a.notInFrontier(h, i, v)
				}
				rows = append(rows, int32(row))
			}
		}
		maxEdges := len(rows)*k + 1
		gs, ed := slices.Grow(a.gs[:0], maxEdges)[:maxEdges], slices.Grow(a.ed[:0], maxEdges)[:maxEdges]
		j := a.gather(gs, ed, ly.Samples, rows, k)
		gs, ed = gs[:j], ed[:j]
		es := slices.Grow(a.es[:0], len(gs))[:len(gs)]
		if dense {
			var bad int
			src, bad = a.d.relabel(src, gs, es)
			if bad >= 0 {
				return nil, fmt.Errorf("%w: sample %d of node %d at hop %d is beyond the index's %d nodes", ErrNotInFrontier, gs[bad], dst[ed[bad]], h+1, len(a.d.loc))
			}
		} else if bySort {
			src = a.relabelBySort(src, a.sortedDst(dst), gs, es)
		} else {
			for j, s := range gs {
				loc, fresh := a.t.insert(s, int32(len(src)))
				if fresh {
					src = append(src, s)
				}
				es[j] = loc
			}
		}
		a.rows, a.gs = rows, gs
		hop := &b.Hops[h]
		hop.Dst = dst
		hop.Src = append(make([]uint32, 0, len(src)), src...)
		hop.EdgeSrc = append(make([]int32, 0, len(es)), es...)
		hop.EdgeDst = append(make([]int32, 0, len(ed)), ed...)
		a.sr, a.es, a.ed = src, es, ed
		dst = hop.Src
	}
	return b, nil
}

// gather writes the valid samples of the given rows of samples (k slots a
// row) to gs, in row and slot order, with the index of each one's row in
// rows to ed, and returns how many it wrote. gs and ed must hold
// len(rows)*k+1.
//
// The rows are at random places in an array far bigger than the caches,
// and copying a row of k slots takes too many instructions for the CPU to
// reach the next rows' misses on its own. So the rows are taken in blocks,
// and the next block's lines (both ends of each row, which may straddle
// two lines) are requested before the current block is copied: with
// prefetch instructions where there are (prefetch_amd64.s), otherwise by
// loading the current block's lines in a tight loop first. The copy is
// branch-free: every slot is written, and j moves past valid ones only
// (padding is scattered unpredictably). On BenchmarkSample/rmat2M/dense
// the touching loads made assembly 1.2× faster; prefetch instructions,
// here and in relabel, 1.7× faster again.
func (a *Assembler) gather(gs []uint32, ed []int32, smp []int32, rows []int32, k int) int {
	j := 0
	if k < 1 || len(smp) == 0 { // an unvalidated Result
		return 0
	}
	bs := gatherTouch
	if usePrefetch {
		bs = gatherPrefetch
		prefetchRows(&smp[0], rows[:min(bs, len(rows))], k)
	}
	for i0 := 0; i0 < len(rows); i0 += bs {
		blk := rows[i0:min(i0+bs, len(rows))]
		if usePrefetch {
			if next := i0 + bs; next < len(rows) {
				prefetchRows(&smp[0], rows[next:min(next+bs, len(rows))], k)
			}
		} else {
			var acc int32
			for _, row := range blk {
				acc |= smp[int(row)*k] | smp[int(row)*k+k-1]
			}
			a.sink |= uint64(acc) // keeps the loads
		}
		for ii, row := range blk {
			i := int32(i0 + ii)
			for _, s := range smp[int(row)*k : int(row)*k+k] {
				gs[j] = uint32(s)
				ed[j] = i
				j += int(^uint32(s) >> 31)
			}
		}
	}
	return j
}

// denseRows appends the position of each dst node in the frontier of
// index p to rows (as gather, prefetching the next block's entries) and
// returns it; bad is the index in dst of the first node missing from the
// frontier, or -1.
func denseRows(rows []int32, p []int32, dst []uint32) ([]int32, int) {
	pf := usePrefetch && len(p) > 0
	if pf {
		prefetchIdx4(&p[0], dst[:min(rowsPrefetch, len(dst))])
	}
	for i0 := 0; i0 < len(dst); i0 += rowsPrefetch {
		if next := i0 + rowsPrefetch; pf && next < len(dst) {
			prefetchIdx4(&p[0], dst[next:min(next+rowsPrefetch, len(dst))])
		}
		for ii, v := range dst[i0:min(i0+rowsPrefetch, len(dst))] {
			if int(v) >= len(p) || p[v] < 0 {
				return rows, i0 + ii
			}
			rows = append(rows, p[v])
		}
	}
	return rows, -1
}

// Rows (gather) and samples (relabel) taken per block: with prefetch
// instructions, the next block is requested while this one is worked on
// (16 and 32 measured best among 8 to 128); with touching loads, the block
// is loaded first.
const (
	gatherPrefetch  = 16
	gatherTouch     = 32
	relabelPrefetch = 32
	relabelTouch    = 64
	rowsPrefetch    = 32 // denseRows
)

// usePrefetch selects prefetch instructions over touching loads; a
// variable so that tests cover both ways where there are prefetches.
var usePrefetch = havePrefetch

// mergeRatio: Sample finds rows by sorting and merging rather than by
// binary search when len(dst)·mergeRatio >= len(frontier). A variable so
// that tests can force either method.
var mergeRatio = 64

// sortRelabelMin is the number of candidate edges in a hop (len(dst) ×
// fanout) from which Sample, without a dense index, relabels by sorting.
// A variable so that tests can force either method.
var sortRelabelMin = 1 << 15

// sortedDst returns (node<<32 | index) for dst sorted by node, computed
// once per hop (Sample clears the cache at each hop).
func (a *Assembler) sortedDst(dst []uint32) []uint64 {
	if len(dst) > 0 && len(a.dstFor) == len(dst) && &a.dstFor[0] == &dst[0] {
		return a.dstSorted
	}
	n := len(dst)
	bufA := slices.Grow(a.pairs[:0], n)[:n]
	bufB := slices.Grow(a.ptmp[:0], n)[:n]
	a.pairs, a.ptmp = bufA, bufB
	for i, v := range dst {
		bufA[i] = uint64(v)<<32 | uint64(i)
	}
	a.dstSorted, a.dstFor = radix.ByHigh32(bufA, bufB, 32), dst
	return a.dstSorted
}

// mergeRows sets rows (reused, returned) to the position of each dst node
// in the sorted frontier f by walking f once along the dst nodes sorted by
// id (pairs, from sortedDst). bad is the index in dst of a node missing
// from f (the smallest such node), or -1.
func (a *Assembler) mergeRows(rows []int32, f []uint32, pairs []uint64) ([]int32, int) {
	n := len(pairs)
	rows = slices.Grow(rows[:0], n)[:n]
	j := 0
	for _, p := range pairs {
		v := uint32(p >> 32)
		if j < len(f) && f[j] < v {
			// Gallop (the frontier may be much longer than dst), then
			// binary-search the last stride: f[lo] < v <= f[hi].
			lo, step := j, 1
			hi := lo + step
			for hi < len(f) && f[hi] < v {
				lo = hi
				step <<= 1
				hi = lo + step
			}
			hi = min(hi, len(f))
			k, _ := search(f[lo+1:hi], v)
			j = lo + 1 + k
		}
		if j == len(f) || f[j] != v {
			return rows, int(uint32(p))
		}
		rows[uint32(p)] = int32(j)
	}
	return rows, -1
}

// relabelBySort sets es[j] to the local id of sample gs[j] and appends the
// new nodes to src (which holds dst) in order of first appearance, by
// sorting instead of hashing: (node, j) pairs sorted by node (stably, so
// each run starts at the node's first appearance) are merged with the
// sorted dst; runs of new nodes are then sorted by first appearance to get
// their local ids. Every pass is sequential or a scatter of independent
// writes.
func (a *Assembler) relabelBySort(src []uint32, dstSorted []uint64, gs []uint32, es []int32) []uint32 {
	m := len(gs)
	bufA := slices.Grow(a.sa[:0], m)[:m]
	bufB := slices.Grow(a.sb[:0], m)[:m]
	a.sa, a.sb = bufA, bufB
	for j, v := range gs {
		bufA[j] = uint64(v)<<32 | uint64(j)
	}
	p := radix.ByHigh32(bufA, bufB, 32)
	news := a.na[:0] // first appearance << 32 | start of the run in p
	d := 0
	for t := 0; t < m; {
		v := uint32(p[t] >> 32)
		end := t + 1
		for end < m && uint32(p[end]>>32) == v {
			end++
		}
		for d < len(dstSorted) && uint32(dstSorted[d]>>32) < v {
			d++
		}
		if d < len(dstSorted) && uint32(dstSorted[d]>>32) == v {
			loc := int32(uint32(dstSorted[d]))
			for _, e := range p[t:end] {
				es[uint32(e)] = loc
			}
		} else {
			news = append(news, p[t]<<32|uint64(t))
		}
		t = end
	}
	nb := slices.Grow(a.nb[:0], len(news))[:len(news)]
	sorted := radix.ByHigh32(news, nb, bits.Len(uint(m))) // keys: first appearances, below m
	a.na, a.nb = news, nb
	base := int32(len(src))
	for rank, e := range sorted {
		t := int(uint32(e))
		v := uint32(p[t] >> 32)
		src = append(src, v)
		loc := base + int32(rank)
		for ; t < m && uint32(p[t]>>32) == v; t++ {
			es[uint32(p[t])] = loc
		}
	}
	return src
}

func (a *Assembler) notInFrontier(h, i int, v uint32) error {
	if h == 0 {
		return fmt.Errorf("%w: seed %d (position %d) is not a training node of epoch %d", ErrNotInFrontier, v, i, a.r.Key.Epoch)
	}
	return fmt.Errorf("%w: node %d of hop %d is missing from frontier %d of epoch %d (corrupt result)", ErrNotInFrontier, v, h+1, h, a.r.Key.Epoch)
}

// denseTable maps global to local ids through an array over all node ids,
// each entry packing a generation stamp (high half) with the local id, so
// that emptying it is O(1) and a lookup is one memory access.
type denseTable struct {
	loc  []uint64
	gen  uint32
	sink uint64 // what relabel's prefetching loads were or'ed into
}

func (t *denseTable) reset(numNodes int) {
	if len(t.loc) < numNodes {
		t.loc = make([]uint64, numNodes)
		t.gen = 0
	}
	t.gen++
	if t.gen == 0 {
		clear(t.loc)
		t.gen = 1
	}
}

// insert is localTable.insert for a key below len(t.loc).
func (t *denseTable) insert(key uint32, v int32) (int32, bool) {
	e := t.loc[key]
	if uint32(e>>32) == t.gen {
		return int32(uint32(e)), false
	}
	t.loc[key] = uint64(t.gen)<<32 | uint64(uint32(v))
	return v, true
}

// relabel sets es[j] to the local id of node gs[j], appending each node
// not yet in the table to src (whose length is the next local id), and
// returns src. bad is the first j whose node is beyond the table, or -1;
// src and es are then partly written.
//
// The table is far bigger than the caches and the samples hit it at
// random, so the time is in cache misses, and the loop is shaped for
// overlapping them:
//   - the samples are taken in blocks, and the next block's entries are
//     requested before the current block is relabelled (prefetch
//     instructions, or without them, a tight loop of loads over the
//     current block first: see gather);
//   - the relabelling has no data-dependent branch: whether a node is new
//     is unpredictable (about one sample in three is), and a mispredicted
//     branch would discard the loads in flight. Every iteration stores its
//     entry and writes src[n]; a new node bumps n by a conditional move.
//
// On the products-like BenchmarkSample/rmat2M/dense, the branch-free loop
// made the whole assembly about 1.1× faster than inserting with a branch,
// and touching loads about 1.13× faster again (interleaved runs on one
// Assembler, 2-core VM); prefetching: see gather.
func (t *denseTable) relabel(src []uint32, gs []uint32, es []int32) ([]uint32, int) {
	n := len(src)
	src = slices.Grow(src, len(gs))
	buf := src[:cap(src)]
	loc := t.loc
	gen := uint64(t.gen) << 32
	es = es[:len(gs)]
	pf := usePrefetch && len(loc) > 0
	bs := relabelTouch
	if pf {
		bs = relabelPrefetch
		prefetchIdx8(&loc[0], gs[:min(bs, len(gs))])
	}
	for j0 := 0; j0 < len(gs); j0 += bs {
		blk := gs[j0:min(j0+bs, len(gs))]
		if pf {
			if next := j0 + bs; next < len(gs) {
				prefetchIdx8(&loc[0], gs[next:min(next+bs, len(gs))])
			}
		} else {
			var acc uint64
			for _, s := range blk {
				if int(s) < len(loc) {
					acc |= loc[s]
				}
			}
			t.sink |= acc // keeps the loads
		}
		for jj, s := range blk {
			if int(s) >= len(loc) {
				return buf[:n], j0 + jj
			}
			e := loc[s]
			id := uint32(e)
			if e < gen { // stale stamp: a new node
				id = uint32(n)
			}
			loc[s] = gen | uint64(id)
			buf[n] = s
			es[j0+jj] = int32(id)
			if id == uint32(n) {
				n++
			}
		}
	}
	return buf[:n], -1
}

func (a *Assembler) firstPos(seeds []uint32, v uint32) int {
	for i, s := range seeds {
		if s == v {
			return i
		}
	}
	return -1
}

// localTable maps global node ids to local ones for one hop: open
// addressing with linear probing over packed slots (one cache line per
// probe), emptied in O(1) by bumping a generation stamp instead of
// clearing the slots.
type localTable struct {
	slots []slot
	gen   uint32
	shift uint
	n     int
	limit int
}

type slot struct {
	key, gen uint32
	val      int32
}

// reset empties the table, sized for about expect keys. The slots keep
// their largest capacity; a hop with few nodes uses a prefix of them, so
// that its probes stay in cache.
func (t *localTable) reset(expect int) {
	size := 16
	for size < expect+expect/2 && size < 1<<30 {
		size <<= 1
	}
	if size > cap(t.slots) {
		t.alloc(size)
	} else {
		t.gen++
		if t.gen == 0 { // wrapped: stale stamps could look current
			clear(t.slots[:cap(t.slots)])
			t.gen = 1
		}
		t.slots = t.slots[:size]
		t.shift = uint(64 - log2(size))
		t.limit = size / 4 * 3
	}
	t.n = 0
}

func (t *localTable) alloc(size int) {
	t.slots = make([]slot, size)
	t.gen = 1
	t.shift = uint(64 - log2(size))
	t.limit = size / 4 * 3
}

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// insert returns the value stored under key, or stores v and returns it
// with fresh set.
func (t *localTable) insert(key uint32, v int32) (int32, bool) {
	if t.n >= t.limit {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	i := (uint64(key) * 0x9E3779B97F4A7C15) >> t.shift
	for {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = slot{key: key, gen: t.gen, val: v}
			t.n++
			return v, true
		}
		if s.key == key {
			return s.val, false
		}
		i = (i + 1) & mask
	}
}

func (t *localTable) grow() {
	old, gen := t.slots, t.gen
	t.alloc(2 * len(old))
	t.n = 0
	for _, s := range old {
		if s.gen == gen {
			t.insert(s.key, s.val)
		}
	}
}
