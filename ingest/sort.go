package ingest

import "slices"

// radixMin is the adjacency length from which sortAdj uses radix sort:
// below it pdqsort (insertion sort for the shortest) wins; above it an
// LSD radix sort's two or three linear passes beat n·log n comparisons,
// which matters for the hubs of skewed graphs.
const radixMin = 1024

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
	if cap(tmp) < n {
		tmp = make([]uint32, n)
	}
	src, dst := a, tmp[:n]
	const digit = 11
	const mask = 1<<digit - 1
	var cnt [1 << digit]int
	for shift := 0; shift < idBits; shift += digit {
		clear(cnt[:])
		for _, x := range src {
			cnt[x>>shift&mask]++
		}
		if cnt[src[0]>>shift&mask] == n {
			continue // every key has this digit: the pass would not move anything
		}
		sum := 0
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		for _, x := range src {
			d := x >> shift & mask
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
