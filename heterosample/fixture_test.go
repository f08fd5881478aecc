package heterosample

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/host"
)

// splitmix is the tests' deterministic generator.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (s *splitmix) below(n uint32) uint32 { return uint32(s.next() % uint64(n)) }

// edge is a typed edge src → dst (local ids of the relation's two types).
type edge struct{ src, dst uint32 }

// inCSR is relation (s, r, d)'s in-edge store as the heterogeneous
// directory holds it: max(ns, nd) rows, row v (v < nd) the sorted distinct
// src nodes of v's in-edges, rows from nd on empty.
func inCSR(edges []edge, ns, nd uint32) *host.CSR {
	rows := make([][]uint32, max(ns, nd))
	for _, e := range edges {
		rows[e.dst] = append(rows[e.dst], e.src)
	}
	g := &host.CSR{Indptr: make([]uint64, 1, len(rows)+1)}
	for _, row := range rows {
		slices.Sort(row)
		row = slices.Compact(row)
		g.Indices = append(g.Indices, row...)
		g.Indptr = append(g.Indptr, uint64(len(g.Indices)))
	}
	return g
}

// randomEdges draws m edges between types of ns and nd nodes, skewed
// towards low ids on both ends (so that degrees vary: hubs and leaves).
func randomEdges(rng *splitmix, m int, ns, nd uint32) []edge {
	out := make([]edge, m)
	for i := range out {
		s := rng.below(ns)
		if rng.next()&1 == 0 {
			s = rng.below(ns/8 + 1)
		}
		out[i] = edge{s, rng.below(nd)}
	}
	return out
}

func reversed(es []edge) []edge {
	out := make([]edge, len(es))
	for i, e := range es {
		out[i] = edge{e.dst, e.src}
	}
	return out
}

// fixture is a heterogeneous test graph: its schema, each relation's
// in-edge CSR, and (once written) each relation's graph directory.
type fixture struct {
	schema *heteroepoch.Schema
	csrs   []*host.CSR
}

func (f *fixture) graphs() []host.Adjacency {
	out := make([]host.Adjacency, len(f.csrs))
	for i, g := range f.csrs {
		out[i] = g
	}
	return out
}

// academic is the fixture of the brief: two node types (author, paper)
// and three relations, a self relation (paper cites paper) and a reverse
// pair (author writes paper, paper rev_writes author).
func academic(na, np uint32, seed uint64) *fixture {
	r := splitmix(seed)
	writes := randomEdges(&r, int(3*np), na, np)
	cites := randomEdges(&r, int(4*np), np, np)
	return &fixture{
		schema: &heteroepoch.Schema{
			NodeTypes: []heteroepoch.NodeType{{Name: "author", Count: na}, {Name: "paper", Count: np}},
			Relations: []heteroepoch.Relation{{Src: "author", Name: "writes", Dst: "paper"}, {Src: "paper", Name: "cites", Dst: "paper"}, {Src: "paper", Name: "rev_writes", Dst: "author"}},
		},
		csrs: []*host.CSR{inCSR(writes, na, np), inCSR(cites, np, np), inCSR(reversed(writes), np, na)},
	}
}

// write packs every relation into a graph directory with chunkSize-byte
// chunks and returns the directories in the schema's order.
func (f *fixture) write(t testing.TB, chunkSize int64) []string {
	t.Helper()
	base := t.TempDir()
	dirs := make([]string, len(f.csrs))
	for i, g := range f.csrs {
		dirs[i] = filepath.Join(base, f.schema.Relations[i].String())
		writeCSR(t, dirs[i], g, chunkSize)
	}
	return dirs
}

func writeCSR(t testing.TB, dir string, g *host.CSR, chunkSize int64) {
	t.Helper()
	w, err := chunkfmt.NewWriter(dir, g.NumNodes(), chunkSize, chunkfmt.Options{Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < g.NumNodes(); v++ {
		nb, _ := g.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// pick returns m distinct nodes of 0..n-1 in a seeded order.
func pick(n uint32, m int, seed uint64) []uint32 {
	r := splitmix(seed)
	seen := map[uint32]bool{}
	var out []uint32
	for len(out) < m && len(out) < int(n) {
		v := r.below(n)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
