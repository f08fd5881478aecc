package host

import "github.com/streamsampler/streamsampler/internal/testgraph"

// randomCSR is testgraph.RandomCSR as a CSR.
func randomCSR(n uint32, avgDeg int, seed uint64) *CSR {
	indptr, indices := testgraph.RandomCSR(n, avgDeg, seed)
	return &CSR{Indptr: indptr, Indices: indices}
}

// randomSeeds is testgraph.RandomSeeds.
func randomSeeds(n uint32, m int, seed uint64) []uint32 { return testgraph.RandomSeeds(n, m, seed) }
