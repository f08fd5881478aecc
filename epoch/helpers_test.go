package epoch

import (
	"math/rand/v2"
	"slices"

	"github.com/streamsampler/streamsampler/rng"
)

// csr is a small in-memory graph for tests.
type csr struct {
	off []int
	adj []uint32
}

func (g *csr) neighbors(v uint32) []uint32 { return g.adj[g.off[v]:g.off[v+1]] }

// randomGraph draws a graph with n nodes and degrees in [0, maxDeg]; with
// dups, neighbor lists may repeat a node (multigraph), which exercises
// duplicate samples in a row.
func randomGraph(r *rand.Rand, n, maxDeg int, dups bool) *csr {
	g := &csr{off: make([]int, n+1)}
	for v := 0; v < n; v++ {
		d := r.IntN(maxDeg + 1)
		if r.IntN(10) == 0 {
			d = 0
		}
		nb := make([]uint32, d)
		for i := range nb {
			nb[i] = uint32(r.IntN(n))
		}
		slices.Sort(nb)
		if !dups {
			nb = slices.Compact(nb)
		}
		g.adj = append(g.adj, nb...)
		g.off[v+1] = len(g.adj)
	}
	return g
}

// sampleEpoch is the test's own epoch sampler: rng.Sample per frontier node,
// then NextFrontier.
func sampleEpoch(g *csr, seeds []uint32, fanouts []int, key Key) *Result {
	f := slices.Clone(seeds)
	slices.Sort(f)
	f = slices.Compact(f)
	res := &Result{Key: key}
	for l, k := range fanouts {
		s := make([]int32, len(f)*k)
		for i, v := range f {
			rng.Sample(s[i*k:(i+1)*k], g.neighbors(v), v, key.Layer(l), key.Replace)
		}
		res.Layers = append(res.Layers, Layer{Frontier: f, Fanout: k, Samples: s})
		f = NextFrontier(f, s)
	}
	res.Final = f
	return res
}

// randomSeeds picks m distinct nodes of [0, n).
func randomSeeds(r *rand.Rand, n, m int) []uint32 {
	p := r.Perm(n)[:m]
	out := make([]uint32, m)
	for i, v := range p {
		out[i] = uint32(v)
	}
	return out
}
