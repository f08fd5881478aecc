package walk

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// csrGraph is a graph in memory for the tests, as host.CSR is one (this
// package does not import host: host imports it).
type csrGraph struct {
	Indptr  []uint64
	Indices []uint32
}

func (c *csrGraph) NumNodes() uint32 { return uint32(len(c.Indptr) - 1) }

func (c *csrGraph) Neighbors(node uint32) ([]uint32, error) {
	if uint64(node)+1 >= uint64(len(c.Indptr)) {
		return nil, fmt.Errorf("node %d: not below the graph's %d nodes", node, c.NumNodes())
	}
	return c.Indices[c.Indptr[node]:c.Indptr[node+1]], nil
}

// randomCSR builds a graph of n nodes with a skewed degree distribution
// (most nodes small, a few hubs, some isolated), sorted unique adjacency:
// host's test graph of the same name, draw for draw, so that the walk
// tests that moved here from host walk the same graphs.
func randomCSR(n uint32, avgDeg int, seed uint64) *csrGraph {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	c := &csrGraph{Indptr: make([]uint64, n+1)}
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

// randomSeeds picks m node ids (with repeats, unsorted) below n, as
// host's test helper does.
func randomSeeds(n uint32, m int, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]uint32, m)
	for i := range s {
		s[i] = uint32(r.IntN(int(n)))
	}
	return s
}
