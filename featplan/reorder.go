package featplan

import (
	"container/heap"
	"fmt"
	"slices"
)

// SketchSize is the number of hashes kept per minibatch by MatchReorder
// (bottom-k MinHash): the overlap estimates' relative error is about
// 1/sqrt(SketchSize).
const SketchSize = 128

// ReorderReport compares the shared fraction of the input order with the
// order MatchReorder returns. The shared fraction of an order is, exactly,
// the sum over consecutive pairs (A, B) of |A∩B| divided by the sum of |B|:
// the share of the rows of every minibatch but the first that its
// predecessor already had.
type ReorderReport struct {
	Batches      int     `json:"batches"`
	SharedBefore float64 `json:"shared_before"`
	SharedAfter  float64 `json:"shared_after"`
	// Kept is true when the greedy chain was not better than the input
	// order, which is then returned unchanged.
	Kept bool `json:"kept_input_order"`
	// SharedBound estimates the most any order could share: every
	// minibatch but one preceded by the one it overlaps most (estimated
	// from the sketches, the largest of B-1 noisy estimates, so it leans
	// high). Where it is close to SharedBefore, the minibatches overlap
	// about equally whichever follows which, and no order helps.
	SharedBound float64 `json:"shared_bound"`
}

// MatchReorder returns an order of batches (a permutation of their indices:
// every minibatch exactly once, compositions unchanged) in which consecutive
// minibatches share many nodes (FastGL's Match-Reorder), and the shared
// fraction before and after. It is a function of the batches and seed.
//
// Overlaps are estimated from bottom-k MinHash sketches (SketchSize hashes of
// each node set under a hash seeded by seed), and the order is a greedy
// chain: starting from the input's first minibatch, always the unvisited one
// with the largest estimated intersection next (ties: the lowest index).
// The shared fractions are then computed exactly; the input order is kept
// when the chain does not share more. Time O(accesses + B²·SketchSize) for B
// minibatches, memory O(numNodes + B·SketchSize).
func MatchReorder(batches [][]uint32, numNodes uint32, seed uint64) ([]int, ReorderReport, error) {
	rep := ReorderReport{Batches: len(batches)}
	identity := make([]int, len(batches))
	for i := range identity {
		identity[i] = i
	}
	mark := make([]int32, numNodes)
	before, err := sharedFraction(batches, identity, mark)
	if err != nil {
		return nil, rep, err
	}
	rep.SharedBefore = before
	if len(batches) < 3 {
		rep.SharedAfter, rep.Kept = before, true
		return identity, rep, nil
	}
	sk := make([][]uint64, len(batches))
	h := &maxHeap{}
	for b, nid := range batches {
		sk[b] = bottomK(h, nid, seed)
	}
	// Each pair's overlap is estimated once, when the first of the two to
	// join the chain is its end: the bound's best overlaps come free.
	bestOverlap := make([]float64, len(batches))
	order := make([]int, 0, len(batches))
	visited := make([]bool, len(batches))
	cur := 0
	for {
		order = append(order, cur)
		visited[cur] = true
		if len(order) == len(batches) {
			break
		}
		best, bestEst := -1, -1.0
		for j := range batches {
			if visited[j] {
				continue
			}
			e := estIntersection(sk[cur], sk[j], len(batches[cur]), len(batches[j]))
			bestOverlap[cur], bestOverlap[j] = max(bestOverlap[cur], e), max(bestOverlap[j], e)
			if e > bestEst {
				best, bestEst = j, e
			}
		}
		cur = best
	}
	rep.SharedBound = sharedBound(bestOverlap, batches)
	after, err := sharedFraction(batches, order, mark)
	if err != nil {
		return nil, rep, err
	}
	if after <= before {
		rep.SharedAfter, rep.Kept = before, true
		return identity, rep, nil
	}
	rep.SharedAfter = after
	return order, rep, nil
}

// sharedBound is ReorderReport.SharedBound from every minibatch's largest
// estimated intersection with another (best): their sum, less the first
// minibatch's, over the sum of the sizes less the first's, for the best
// first.
func sharedBound(best []float64, batches [][]uint32) float64 {
	// Any order starts with some minibatch h, which has no predecessor:
	// its share is at most (Σ best − best_h) / (Σ size − size_h).
	var shared, total float64
	for b, nid := range batches {
		best[b] = min(best[b], float64(len(nid)))
		shared += best[b]
		total += float64(len(nid))
	}
	bound := 0.0
	for h, nid := range batches {
		if rest := total - float64(len(nid)); rest > 0 {
			bound = max(bound, (shared-best[h])/rest)
		}
	}
	return min(1, bound)
}

// SharedFraction is the exact shared fraction of batches served in order
// (see ReorderReport); numNodes bounds the ids.
func SharedFraction(batches [][]uint32, order []int, numNodes uint32) (float64, error) {
	seen := make([]bool, len(batches))
	for k, b := range order {
		if b < 0 || b >= len(batches) || seen[b] {
			return 0, fmt.Errorf("%w: order position %d: minibatch %d out of range or repeated", ErrInput, k, b)
		}
		seen[b] = true
	}
	if len(order) != len(batches) {
		return 0, fmt.Errorf("%w: order has %d minibatches, want %d", ErrInput, len(order), len(batches))
	}
	return sharedFraction(batches, order, make([]int32, numNodes))
}

// sharedFraction marks each minibatch's nodes with its position+1 in mark
// and counts the next one's nodes that carry the previous position.
func sharedFraction(batches [][]uint32, order []int, mark []int32) (float64, error) {
	clear(mark)
	var shared, total int64
	for k, b := range order {
		for i, v := range batches[b] {
			if int(v) >= len(mark) {
				return 0, errOutside(b, i, v, uint64(len(mark)))
			}
			if k > 0 {
				total++
				if mark[v] == int32(k) {
					shared++
				}
			}
			mark[v] = int32(k + 1)
		}
	}
	if total == 0 {
		return 0, nil
	}
	return float64(shared) / float64(total), nil
}

// hash64 is SplitMix64's finalizer of v under seed: a seeded hash good
// enough for MinHash.
func hash64(v uint32, seed uint64) uint64 {
	z := uint64(v) + seed*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

type maxHeap []uint64

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// bottomK is the sorted SketchSize smallest hashes of nid (fewer when nid
// is smaller); h is scratch.
func bottomK(h *maxHeap, nid []uint32, seed uint64) []uint64 {
	*h = (*h)[:0]
	for _, v := range nid {
		x := hash64(v, seed)
		if len(*h) < SketchSize {
			heap.Push(h, x)
		} else if x < (*h)[0] {
			(*h)[0] = x
			heap.Fix(h, 0)
		}
	}
	out := slices.Clone([]uint64(*h))
	slices.Sort(out)
	return out
}

// estIntersection estimates |A∩B| from the sketches of A and B: the
// Jaccard index J is the share of the union's SketchSize smallest hashes
// found in both, and |A∩B| = J/(1+J)·(|A|+|B|).
func estIntersection(a, b []uint64, na, nb int) float64 {
	var i, j, common, taken int
	for taken < SketchSize && i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
		taken++
	}
	// The union's sketch may continue with one side alone; those hashes are
	// in the union but not the intersection.
	for taken < SketchSize && (i < len(a) || j < len(b)) {
		if i < len(a) {
			i++
		} else {
			j++
		}
		taken++
	}
	if taken == 0 {
		return 0
	}
	jac := float64(common) / float64(taken)
	return jac / (1 + jac) * float64(na+nb)
}
