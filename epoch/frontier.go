package epoch

import (
	"math/bits"
	"slices"

	"github.com/streamsampler/streamsampler/internal/radix"
)

// NextFrontier returns sorted unique(frontier ∪ valid samples): frontier_{l+1}
// from frontier_l (sorted unique) and samples_l (-1 entries ignored). It is
// on every epoch's critical path, so it picks its method by density: a
// bitmap over [0, max] when the ids are dense enough that scanning the
// bitmap costs less than sorting, otherwise an LSD radix sort of the valid
// samples (comparison sort for small inputs) merged with the frontier.
// The result is a new slice.
func NextFrontier(frontier []uint32, samples []int32) []uint32 {
	n, maxID := countValid(samples)
	if len(frontier) > 0 && frontier[len(frontier)-1] > maxID {
		maxID = frontier[len(frontier)-1]
	}
	if n == 0 {
		return slices.Clone(frontier)
	}
	switch {
	case useBitmap(n+len(frontier), maxID):
		return nextBitmap(frontier, samples, maxID)
	case n < radixMin:
		return nextSort(frontier, samples, n)
	default:
		return nextRadix(frontier, samples, n)
	}
}

// radixMin is the input size below which slices.Sort beats the radix sort's
// fixed histogram costs.
const radixMin = 1 << 10

// useBitmap reports whether a bitmap over [0, maxID] is cheaper than
// sorting n ids: clearing and scanning span/64 words is sequential, while
// a radix sort makes several scattered passes over n ids. The crossover
// at 16 bits of bitmap per id is an estimate between the two ends that
// BenchmarkNextFrontier measures: at under 1 bit per id the bitmap is
// about 7× faster than the radix sort, at ~1800 bits per id 6× slower.
func useBitmap(n int, maxID uint32) bool {
	return uint64(maxID)+1 <= 16*uint64(n)
}

// countValid counts the non-negative samples and finds the largest. It is
// branch-free: -1 padding is scattered unpredictably, and a branch on it
// cost more than the rest of NextFrontier's bitmap path.
func countValid(samples []int32) (n int, maxID uint32) {
	var mx int32 = -1
	for _, s := range samples {
		n += int(^uint32(s) >> 31)
		mx = max(mx, s)
	}
	if mx < 0 {
		return n, 0
	}
	return n, uint32(mx)
}

func nextBitmap(frontier []uint32, samples []int32, maxID uint32) []uint32 {
	return unionBitmap(frontier, [][]int32{samples}, maxID)
}

// UnionFrontier returns sorted unique(frontier ∪ the valid samples of
// every part), all ids below span: a heterogeneous layer's next frontier
// of a node type, from its frontier and the samples of every relation
// whose source is that type. It is NextFrontier's union over several
// sample arrays: one bitmap over [0, span) where the ids are dense enough
// (useBitmap's rule, with every part's entries counted), else NextFrontier
// part by part. The result is a new slice.
func UnionFrontier(frontier []uint32, parts [][]int32, span uint32) []uint32 {
	n := len(frontier)
	for _, p := range parts {
		n += len(p)
	}
	if len(parts) > 1 && span > 0 && useBitmap(n, span-1) {
		return unionBitmap(frontier, parts, span-1)
	}
	if len(parts) == 0 {
		return slices.Clone(frontier)
	}
	out := frontier
	for _, p := range parts {
		out = NextFrontier(out, p) // a new slice each time
	}
	return out
}

// unionBitmap is the union of frontier and every part's valid samples by
// one bitmap over [0, maxID] (every id at most maxID).
func unionBitmap(frontier []uint32, parts [][]int32, maxID uint32) []uint32 {
	words := make([]uint64, uint64(maxID)/64+1)
	for _, v := range frontier {
		words[v>>6] |= 1 << (v & 63)
	}
	for _, samples := range parts {
		for _, s := range samples {
			// Branch-free: a -1 sets nothing (bit 0 of word 0 ORed with 0).
			v := uint32(s)
			valid := ^v >> 31
			v &= -valid
			words[v>>6] |= uint64(valid) << (v & 63)
		}
	}
	total := 0
	for _, w := range words {
		total += bits.OnesCount64(w)
	}
	out := make([]uint32, 0, total)
	for i, w := range words {
		base := uint32(i) << 6
		for w != 0 {
			out = append(out, base+uint32(bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return out
}

// gatherValid returns the n valid samples, branch-free: every sample is
// written and the position advances only past valid ones.
func gatherValid(samples []int32, n int) []uint32 {
	buf := make([]uint32, n+1)
	j := 0
	for _, s := range samples {
		buf[j] = uint32(s)
		j += int(^uint32(s) >> 31)
		if j > n { // only with a wrong n; keeps the writes in bounds
			break
		}
	}
	return buf[:n]
}

func nextSort(frontier []uint32, samples []int32, n int) []uint32 {
	buf := gatherValid(samples, n)
	slices.Sort(buf)
	return mergeUnique(frontier, buf)
}

func nextRadix(frontier []uint32, samples []int32, n int) []uint32 {
	buf := gatherValid(samples, n)
	buf = radix.Uint32(buf, make([]uint32, len(buf)))
	return mergeUnique(frontier, buf)
}

// mergeUnique merges sorted unique a with sorted b (duplicates allowed)
// into a new sorted unique slice.
func mergeUnique(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		switch {
		case x < y:
			out = append(out, x)
			i++
		case y < x:
			out = append(out, y)
			j++
			for j < len(b) && b[j] == y {
				j++
			}
		default:
			out = append(out, x)
			i++
			j++
			for j < len(b) && b[j] == y {
				j++
			}
		}
	}
	out = append(out, a[i:]...)
	for j < len(b) {
		y := b[j]
		out = append(out, y)
		j++
		for j < len(b) && b[j] == y {
			j++
		}
	}
	return out
}
