package host

import (
	"math/rand/v2"
	"slices"
)

// randomCSR builds a graph of n nodes with a skewed degree distribution
// (most nodes small, a few hubs, some isolated), sorted unique adjacency.
func randomCSR(n uint32, avgDeg int, seed uint64) *CSR {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	c := &CSR{Indptr: make([]uint64, n+1)}
	for v := uint32(0); v < n; v++ {
		var d int
		switch x := r.IntN(100); {
		case x < 5:
			d = 0
		case x < 8:
			d = avgDeg * 8
		default:
			d = r.IntN(2*avgDeg + 1)
		}
		nb := make([]uint32, 0, d)
		for range d {
			nb = append(nb, uint32(r.IntN(int(n))))
		}
		slices.Sort(nb)
		nb = slices.Compact(nb)
		c.Indices = append(c.Indices, nb...)
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c
}

// randomSeeds picks m node ids (with repeats, unsorted) below n.
func randomSeeds(n uint32, m int, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]uint32, m)
	for i := range s {
		s[i] = uint32(r.IntN(int(n)))
	}
	return s
}
