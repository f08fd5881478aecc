package walk

import (
	"fmt"

	"github.com/streamsampler/streamsampler/internal/testgraph"
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

// randomCSR is testgraph.RandomCSR as a csrGraph: host's test graph of
// the same name, draw for draw, so that the walk tests that moved here
// from host walk the same graphs.
func randomCSR(n uint32, avgDeg int, seed uint64) *csrGraph {
	indptr, indices := testgraph.RandomCSR(n, avgDeg, seed)
	return &csrGraph{Indptr: indptr, Indices: indices}
}

// randomSeeds is testgraph.RandomSeeds, as host's test helper.
func randomSeeds(n uint32, m int, seed uint64) []uint32 { return testgraph.RandomSeeds(n, m, seed) }
