package gpu_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/rng"
)

// buildFake compiles testdata/fakelib.c into a shared library with the
// given -D flags and returns its path; the test is skipped without a C
// compiler.
func buildFake(t *testing.T, name string, defines ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler to build the fake library")
		}
	}
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"-shared", "-fPIC", "-O1", "-I.", "-o", out, "testdata/fakelib.c"}, defines...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, b)
	}
	return out
}

// rmat returns a symmetric R-MAT graph (a=.57, b=.19, c=.19) on n nodes
// with about 2*edges directed edges, no self-loops, no duplicates, as CSR.
func rmat(n uint32, edges int, seed uint64) (indptr []uint64, indices []uint32) {
	scale := 0
	for (uint32(1) << scale) < n {
		scale++
	}
	adj := make([][]uint32, n)
	ctr := seed
	next := func() uint64 { ctr++; return rng.Mix64(ctr) }
	for e := 0; e < edges; {
		var u, v uint32
		for b := 0; b < scale; b++ {
			r := float64(next()>>11) / (1 << 53)
			switch {
			case r < 0.57:
			case r < 0.76:
				v |= 1 << b
			case r < 0.95:
				u |= 1 << b
			default:
				u |= 1 << b
				v |= 1 << b
			}
		}
		if u >= n || v >= n || u == v {
			continue
		}
		adj[u] = append(adj[u], v)
		adj[v] = append(adj[v], u)
		e++
	}
	indptr = make([]uint64, n+1)
	for v := range adj {
		slices.Sort(adj[v])
		adj[v] = slices.Compact(adj[v])
		indices = append(indices, adj[v]...)
		indptr[v+1] = uint64(len(indices))
	}
	return indptr, indices
}

// pickSeeds returns about frac of the nodes, deterministically.
func pickSeeds(n uint32, frac float64, seed uint64) []uint32 {
	var s []uint32
	lim := uint64(frac * (1 << 32))
	for v := uint32(0); v < n; v++ {
		if rng.Mix64(seed^uint64(v))>>32 < lim {
			s = append(s, v)
		}
	}
	return s
}

// diffResults returns a description of the first difference, or nil.
func diffResults(got, want *epoch.Result) error {
	if len(got.Layers) != len(want.Layers) {
		return fmt.Errorf("%d layers, want %d", len(got.Layers), len(want.Layers))
	}
	if got.Key != want.Key {
		return fmt.Errorf("key %+v, want %+v", got.Key, want.Key)
	}
	for l := range want.Layers {
		g, w := &got.Layers[l], &want.Layers[l]
		if g.Fanout != w.Fanout {
			return fmt.Errorf("layer %d: fanout %d, want %d", l, g.Fanout, w.Fanout)
		}
		if !slices.Equal(g.Frontier, w.Frontier) {
			return fmt.Errorf("layer %d: frontier of %d nodes differs from the reference's %d at %d", l,
				len(g.Frontier), len(w.Frontier), firstDiff(g.Frontier, w.Frontier))
		}
		if i := firstDiff(g.Offsets, w.Offsets); i >= 0 {
			return fmt.Errorf("layer %d: row offset %d is %v, want %v", l, i, at(g.Offsets, i), at(w.Offsets, i))
		}
		if i := firstDiff(g.Samples, w.Samples); i >= 0 {
			row, slot := slotOf(w, i)
			return fmt.Errorf("layer %d: node %v slot %d: sample %v, want %v", l, at(w.Frontier, row), slot,
				at(g.Samples, i), at(w.Samples, i))
		}
		if (g.EdgeIDs == nil) != (w.EdgeIDs == nil) {
			return fmt.Errorf("layer %d: edge ids present %v, want %v", l, g.EdgeIDs != nil, w.EdgeIDs != nil)
		}
		if i := firstDiff(g.EdgeIDs, w.EdgeIDs); i >= 0 {
			row, slot := slotOf(w, i)
			return fmt.Errorf("layer %d: node %v slot %d: edge id %v, want %v", l, at(w.Frontier, row), slot,
				at(g.EdgeIDs, i), at(w.EdgeIDs, i))
		}
	}
	if !slices.Equal(got.Final, want.Final) {
		return fmt.Errorf("final frontier of %d nodes differs from the reference's %d at %d", len(got.Final),
			len(want.Final), firstDiff(got.Final, want.Final))
	}
	return nil
}

// slotOf is the row and slot of sample i of layer ly (a full layer's rows
// through its offsets); a position past the samples is the last row's.
func slotOf(ly *epoch.Layer, i int) (row, slot int) {
	if len(ly.Frontier) == 0 {
		return 0, i
	}
	if !ly.Full() {
		return min(i/ly.Fanout, len(ly.Frontier)-1), i % ly.Fanout
	}
	row = sort.Search(len(ly.Frontier), func(r int) bool { return ly.Offsets[r+1] > int64(i) })
	row = min(row, len(ly.Frontier)-1)
	return row, i - int(ly.Offsets[row])
}

func firstDiff[T comparable](a, b []T) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func at[T any](a []T, i int) any {
	if i < len(a) {
		return a[i]
	}
	return "nothing"
}

// diffBlocks compares two minibatches.
func diffBlocks(got, want *epoch.Blocks) error {
	if got.Epoch != want.Epoch || !slices.Equal(got.Seeds, want.Seeds) || len(got.Hops) != len(want.Hops) {
		return fmt.Errorf("header differs: epoch %d/%d, %d/%d seeds, %d/%d hops", got.Epoch, want.Epoch,
			len(got.Seeds), len(want.Seeds), len(got.Hops), len(want.Hops))
	}
	for h := range want.Hops {
		g, w := &got.Hops[h], &want.Hops[h]
		switch {
		case !slices.Equal(g.Dst, w.Dst):
			return fmt.Errorf("hop %d: dst differs", h+1)
		case !slices.Equal(g.Src, w.Src):
			return fmt.Errorf("hop %d: src differs at %d", h+1, firstDiff(g.Src, w.Src))
		case !slices.Equal(g.EdgeSrc, w.EdgeSrc) || !slices.Equal(g.EdgeDst, w.EdgeDst):
			return fmt.Errorf("hop %d: edges differ", h+1)
		}
	}
	return nil
}

// multigraph repeats every neighbor of the CSR one to three times, so that
// a neighbor id does not tell which stored edge was sampled.
func multigraph(indptr []uint64, indices []uint32) ([]uint64, []uint32) {
	mi := []uint64{0}
	var mx []uint32
	for v := range len(indptr) - 1 {
		for i := indptr[v]; i < indptr[v+1]; i++ {
			for range 1 + (uint64(v)+i)%3 {
				mx = append(mx, indices[i])
			}
		}
		mi = append(mi, uint64(len(mx)))
	}
	return mi, mx
}
