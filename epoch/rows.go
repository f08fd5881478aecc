package epoch

import (
	"slices"

	"github.com/streamsampler/streamsampler/internal/radix"
)

// rows returns the row of each dst node in layer h's frontier (in
// a.rowBuf, reused), the first step of a hop. There are three ways:
//   - with an index, one rank-set lookup per node (rankRows);
//   - without an index, when dst is large next to the frontier, by sorting
//     dst and walking the frontier once (mergeRows): sequential instead of
//     ~log2 cache misses per node. With relabelling by sorting this made
//     BenchmarkSample/search about 1.9× faster than binary search plus a
//     hash table;
//   - otherwise node by node, through the map index or by binary search
//     (rowOf).
//
// A node missing from the frontier is an error naming it.
//
// order caches dst sorted by id for mergeRows (a hop's relabelling may
// share it, when it starts from the same nodes).
func (a *Assembler) rows(h int, dst []uint32, order *dstOrder) ([]int32, error) {
	rows, bad := a.rowBuf[:0], -1
	switch f := a.r.Layers[h].Frontier; {
	case a.ix != nil && a.ix.rank != nil:
		rows, a.blkBuf, bad = rankRows(rows, a.ix.rank[h], dst, a.blkBuf)
	case a.ix == nil && len(dst)*mergeRatio >= len(f):
		rows, bad = mergeRows(rows, f, order.sorted(dst))
	default:
		for i, v := range dst {
			row, ok := a.rowOf(h, v)
			if !ok {
				bad = i
				break
			}
			rows = append(rows, int32(row))
		}
	}
	a.rowBuf = rows
	if bad >= 0 {
		return nil, a.notInFrontier(h, bad, dst[bad])
	}
	return rows, nil
}

// mergeRatio: Sample finds rows by sorting and merging rather than by
// binary search when len(dst)·mergeRatio >= len(frontier). A variable so
// that tests can force either method.
var mergeRatio = 64

// rowOf finds node in layer l's frontier through the map index, or
// without an index by binary search.
func (a *Assembler) rowOf(l int, node uint32) (int, bool) {
	if a.ix != nil && a.ix.maps != nil {
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

// dstOrder is a hop's dst sorted by node id, as (node<<32 | index in dst)
// pairs: computed once per hop for whichever of mergeRows and sortRelabel
// asks first. Sample forgets it at each hop, since a new dst may reuse an
// old one's memory.
type dstOrder struct {
	of       []uint32 // the dst sorted, or nil
	byID     []uint64 // the result: pairs or pairsTmp
	pairs    []uint64
	pairsTmp []uint64
}

func (o *dstOrder) forget() { o.of = nil }

// sorted returns dst's (node<<32 | index) pairs sorted by node.
func (o *dstOrder) sorted(dst []uint32) []uint64 {
	if len(dst) > 0 && len(o.of) == len(dst) && &o.of[0] == &dst[0] {
		return o.byID
	}
	n := len(dst)
	o.pairs = slices.Grow(o.pairs[:0], n)[:n]
	o.pairsTmp = slices.Grow(o.pairsTmp[:0], n)[:n]
	for i, v := range dst {
		o.pairs[i] = uint64(v)<<32 | uint64(i)
	}
	o.byID, o.of = radix.ByHigh32(o.pairs, o.pairsTmp), dst
	return o.byID
}

// mergeRows sets rows (reused, returned) to the position of each dst node
// in the sorted frontier f by walking f once along the dst nodes sorted by
// id (dstByID, from dstOrder). bad is the index in dst of a node missing
// from f (the smallest such node), or -1.
func mergeRows(rows []int32, f []uint32, dstByID []uint64) ([]int32, int) {
	n := len(dstByID)
	rows = slices.Grow(rows[:0], n)[:n]
	j := 0
	for _, p := range dstByID {
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
