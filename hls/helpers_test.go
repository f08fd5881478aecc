package hls

import (
	"github.com/streamsampler/streamsampler/rng"
)

// gen is a deterministic generator for test data (SplitMix64 over a
// counter), so that the committed golden file can be regenerated exactly.
type gen struct{ s uint64 }

func (g *gen) next() uint64 {
	g.s += 0x9E3779B97F4A7C15
	return rng.Mix64(g.s)
}

// intn returns a value in [0, n).
func (g *gen) intn(n int) int { return int(rng.Below(g.next(), uint32(n))) }

// sortedNeighbors returns d distinct ascending neighbor ids below 2^31.
func (g *gen) sortedNeighbors(d int) []uint32 {
	nb := make([]uint32, d)
	v := uint32(g.intn(1000))
	for i := range nb {
		nb[i] = v
		v += 1 + uint32(g.intn(64))
	}
	return nb
}

// buildChunk lays out adjacency lists of nodes start, start+1, … as a
// chunk, padded with pad zero words after the last neighbor.
func buildChunk(start uint32, adj [][]uint32, pad int) []uint32 {
	n := len(adj)
	total := 3 + n + pad
	for _, a := range adj {
		total += len(a)
	}
	c := make([]uint32, 0, total)
	c = append(c, uint32(n), start)
	off := uint32(3 + n)
	for _, a := range adj {
		c = append(c, off)
		off += uint32(len(a))
	}
	c = append(c, off)
	for _, a := range adj {
		c = append(c, a...)
	}
	return append(c, make([]uint32, pad)...)
}

// randomAdj returns n adjacency lists whose degrees are drawn from degrees.
func (g *gen) randomAdj(n int, degrees []int) [][]uint32 {
	adj := make([][]uint32, n)
	for i := range adj {
		adj[i] = g.sortedNeighbors(degrees[g.intn(len(degrees))])
	}
	return adj
}

// allNodes returns start..start+n-1.
func allNodes(start uint32, n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = start + uint32(i)
	}
	return t
}

// directSample computes the expected output with rng.Sample row by row,
// independent of Reference's chunk handling.
func directSample(start uint32, adj [][]uint32, targets []uint32, fanout int, key uint64, replace bool) []int32 {
	out := make([]int32, len(targets)*fanout)
	for r, t := range targets {
		rng.Sample(out[r*fanout:(r+1)*fanout], adj[t-start], t, key, replace)
	}
	return out
}

// directEdges computes the expected chunk-local edge indices with
// rng.Positions row by row: the node's first edge (the degrees of the
// nodes before it) plus the position, independent of the chunk's layout.
func directEdges(start uint32, adj [][]uint32, targets []uint32, fanout int, key uint64, replace bool) []int32 {
	first := make([]int32, len(adj)+1)
	for i, a := range adj {
		first[i+1] = first[i] + int32(len(a))
	}
	out := make([]int32, len(targets)*fanout)
	for r, t := range targets {
		row := out[r*fanout : (r+1)*fanout]
		rng.Positions(row, len(adj[t-start]), t, key, replace)
		for s, p := range row {
			if p >= 0 {
				row[s] = first[t-start] + p
			}
		}
	}
	return out
}

// directWalk computes a walk step's expected candidates and chunk-local
// edge indices with rng.Candidate walker by walker, from the adjacency
// lists rather than the chunk.
func directWalk(start uint32, adj [][]uint32, nodes, walks []uint32, k int, key uint64, attempt0 uint32) (out, edges []int32) {
	first := make([]int32, len(adj)+1)
	for i, a := range adj {
		first[i+1] = first[i] + int32(len(a))
	}
	out, edges = make([]int32, len(nodes)*k), make([]int32, len(nodes)*k)
	for r, v := range nodes {
		nb := adj[v-start]
		for t := range k {
			if len(nb) == 0 {
				out[r*k+t], edges[r*k+t] = -1, -1
				continue
			}
			p := rng.Candidate(key, walks[r], attempt0+uint32(t), uint32(len(nb)))
			out[r*k+t], edges[r*k+t] = int32(nb[p]), first[v-start]+int32(p)
		}
	}
	return out, edges
}
