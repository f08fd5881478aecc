// Package testgraph draws the small random graphs the samplers' and
// walkers' tests share (host, walk), so that a test that moves between
// them walks the same graph, draw for draw. It is for tests only.
package testgraph

import (
	"math/rand/v2"
	"slices"
)

// RandomCSR draws a graph of n nodes with a skewed degree distribution
// (most nodes small, a few hubs, some isolated) as CSR arrays, each
// adjacency sorted and unique.
func RandomCSR(n uint32, avgDeg int, seed uint64) (indptr []uint64, indices []uint32) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	indptr = make([]uint64, n+1)
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
		indices = append(indices, nb...)
		indptr[v+1] = uint64(len(indices))
	}
	return indptr, indices
}

// RandomSeeds picks m node ids below n, with repeats, unsorted.
func RandomSeeds(n uint32, m int, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]uint32, m)
	for i := range s {
		s[i] = uint32(r.IntN(int(n)))
	}
	return s
}

// FromAdjacency builds CSR arrays from adjacency lists, each sorted
// (repeats allowed: a multigraph).
func FromAdjacency(adj [][]uint32) (indptr []uint64, indices []uint32) {
	indptr = make([]uint64, len(adj)+1)
	for v, nb := range adj {
		if !slices.IsSorted(nb) {
			panic("testgraph.FromAdjacency: unsorted adjacency")
		}
		indices = append(indices, nb...)
		indptr[v+1] = uint64(len(indices))
	}
	return indptr, indices
}

// RandomRepeatsCSR is RandomCSR with about one neighbor in five repeated
// (adjacency lists keep their duplicates when a graph is built without
// dedup).
func RandomRepeatsCSR(n uint32, avgDeg int, seed uint64) (indptr []uint64, indices []uint32) {
	gp, gi := RandomCSR(n, avgDeg, seed)
	r := rand.New(rand.NewPCG(seed, 3))
	adj := make([][]uint32, n)
	for v := range n {
		for _, x := range gi[gp[v]:gp[v+1]] {
			adj[v] = append(adj[v], x)
			if r.IntN(5) == 0 {
				adj[v] = append(adj[v], x)
			}
		}
	}
	return FromAdjacency(adj)
}
