package chunkfmt

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// randomGraph returns n adjacency lists with degrees in [0, maxDeg],
// sorted, strictly when dedup.
func randomGraph(r *rand.Rand, n uint32, maxDeg int, dedup bool) [][]uint32 {
	adj := make([][]uint32, n)
	for v := range adj {
		d := 0
		switch r.IntN(4) {
		case 0: // degree 0 is common in real graphs
		case 1:
			d = r.IntN(maxDeg + 1)
		default:
			d = r.IntN(min(maxDeg, 8) + 1)
		}
		a := make([]uint32, d)
		for i := range a {
			a[i] = r.Uint32N(n)
		}
		slices.Sort(a)
		if dedup {
			a = slices.Compact(a)
		}
		adj[v] = a
	}
	return adj
}

// writeGraph writes adj into a fresh directory and returns it.
func writeGraph(t testing.TB, adj [][]uint32, chunkSize int64, opts Options) string {
	t.Helper()
	dir := t.TempDir()
	w, err := NewWriter(dir, uint32(len(adj)), chunkSize, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range adj {
		if err := w.Append(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkAdjacency asserts that every node's neighbors read back equal adj.
func checkAdjacency(t testing.TB, r *Reader, adj [][]uint32) {
	t.Helper()
	for v, want := range adj {
		got, err := r.Neighbors(uint32(v))
		if err != nil {
			t.Fatalf("Neighbors(%d): %v", v, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Neighbors(%d) = %v, want %v", v, got, want)
		}
	}
}

// dirFiles lists the names in dir.
func dirFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func readFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// csrGraph is a generated graph in flat CSR form, cheap to hold for
// millions of nodes.
type csrGraph struct {
	off []uint64 // node v's neighbors are nb[off[v]:off[v+1]]
	nb  []uint32
}

func (g *csrGraph) numNodes() uint32      { return uint32(len(g.off) - 1) }
func (g *csrGraph) adj(v uint32) []uint32 { return g.nb[g.off[v]:g.off[v+1]] }

// randomCSR makes n nodes with degrees uniform in [0, 2*avgDeg], sorted.
func randomCSR(seed uint64, n uint32, avgDeg int) *csrGraph {
	r := rand.New(rand.NewPCG(seed, seed+1))
	g := &csrGraph{off: make([]uint64, n+1), nb: make([]uint32, 0, uint64(n)*uint64(avgDeg))}
	for v := uint32(0); v < n; v++ {
		d := r.IntN(2*avgDeg + 1)
		start := len(g.nb)
		for i := 0; i < d; i++ {
			g.nb = append(g.nb, r.Uint32N(n))
		}
		slices.Sort(g.nb[start:])
		g.off[v+1] = uint64(len(g.nb))
	}
	return g
}

// writeCSR writes g into dir.
func writeCSR(tb testing.TB, dir string, g *csrGraph, chunkSize int64) {
	tb.Helper()
	w, err := NewWriter(dir, g.numNodes(), chunkSize, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	for v := uint32(0); v < g.numNodes(); v++ {
		if err := w.Append(g.adj(v)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// median of xs (xs is reordered).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
