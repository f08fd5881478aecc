package ingest

import "slices"

// radixMin is the adjacency length from which sortAdj uses radix sort:
// below it pdqsort (insertion sort for the shortest) wins; above it an
// LSD radix sort's three or four linear passes beat n·log n comparisons
// (measured: 3.8x faster at 256 ids, 5x at 1024; BenchmarkSortAdj).
const radixMin = 128

// radixMax caps the scratch a worker keeps (64 MiB); longer lists use
// pdqsort so that memory stays bounded whatever the degrees.
const radixMax = 16 << 20

// sortAdj sorts a ascending. ids are below 1<<idBits. tmp is the caller's
// scratch, grown as needed and returned.
func sortAdj(a, tmp []uint32, idBits int) []uint32 {
	n := len(a)
	if n < 2 {
		return tmp
	}
	if n < radixMin || n > radixMax {
		slices.Sort(a)
		return tmp
	}
	return sortAdjRadix(a, tmp, idBits)
}

func sortAdjRadix(a, tmp []uint32, idBits int) []uint32 {
	n := len(a)
	if cap(tmp) < n {
		tmp = make([]uint32, n)
	}
	src, dst := a, tmp[:n]
	// 8-bit digits: 256 counters stay in L1 and are cheap to clear, which
	// matters for the many mid-sized lists of a skewed graph.
	var cnt [256]int32
	for shift := 0; shift < idBits; shift += 8 {
		clear(cnt[:])
		for _, x := range src {
			cnt[x>>shift&255]++
		}
		if int(cnt[src[0]>>shift&255]) == n {
			continue // every key has this digit: the pass would not move anything
		}
		var sum int32
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		for _, x := range src {
			d := x >> shift & 255
			dst[cnt[d]] = x
			cnt[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return tmp
}
