package heterofmt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// writeRelation writes a relation directory of in-edge rows adj with the
// chunkfmt writer (no checks of the typed bounds: the tests break them).
func writeRelation(t *testing.T, dir, rel string, adj [][]uint32) chunkfmt.Fingerprint {
	t.Helper()
	d := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := chunkfmt.NewWriter(d, uint32(len(adj)), 512, chunkfmt.Options{Reverse: true, Dedup: true})
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
	m, err := chunkfmt.ReadManifest(d)
	if err != nil {
		t.Fatal(err)
	}
	return m.Fingerprint()
}

// sample writes a small valid directory: author (5), paper (3);
// (author, writes, paper) rows 0..4 (rows 3, 4 padding) and
// (paper, cites, paper).
func sample(t *testing.T) (string, *Manifest) {
	t.Helper()
	dir := t.TempDir()
	m := &Manifest{Version: FormatVersion, NodeTypes: []NodeType{{"author", 5}, {"paper", 3}}}
	w := RelationDir("author", "writes", "paper")
	c := RelationDir("paper", "cites", "paper")
	m.Relations = []Relation{
		{Src: "author", Rel: "writes", Dst: "paper", Dir: w, Graph: writeRelation(t, dir, w, [][]uint32{{0, 4}, {1}, {}, {}, {}})},
		{Src: "paper", Rel: "cites", Dst: "paper", Dir: c, Graph: writeRelation(t, dir, c, [][]uint32{{1, 2}, {}, {0}})},
	}
	if err := Write(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func TestRoundTrip(t *testing.T) {
	dir, m := sample(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if len(g.Relations) != 2 || g.Manifest.Checksum != m.Checksum {
		t.Fatalf("%d relations", len(g.Relations))
	}
	rg, r := g.Relation("author", "writes", "paper")
	if r == nil || rg.Manifest.NumNodes != 5 {
		t.Fatalf("writes: %v", r)
	}
	if nb, err := rg.Neighbors(0); err != nil || len(nb) != 2 || nb[1] != 4 {
		t.Fatalf("row 0: %v %v", nb, err)
	}
	if err := Verify(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if g, r := g.Relation("paper", "writes", "author"); g != nil || r != nil {
		t.Error("unknown relation found")
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"paper", "field_of_study", "rev_writes", "a-b.c", "A9"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a__b", "_a", "a_", ".a", "-a", "a/b", "a b", "é", strings.Repeat("a", MaxNameLen+1), "..", "a\x00"} {
		if err := ValidName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s, r, d, err := SplitKey("author___writes___paper"); err != nil || s != "author" || r != "writes" || d != "paper" {
		t.Errorf("%s %s %s %v", s, r, d, err)
	}
	for _, bad := range []string{"a___b", "a___b___c___d", "a____b___c", "a___b_c___"} {
		if _, _, _, err := SplitKey(bad); err == nil {
			t.Errorf("%q split", bad)
		}
	}
}

// edit rewrites hetero.json through f, keeping the checksum valid unless
// f breaks it, so that Validate's checks are reached.
func edit(t *testing.T, dir string, f func(m *Manifest), resum bool) {
	t.Helper()
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(&m)
	if resum {
		m.Checksum = m.ComputeChecksum()
	}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDefects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		is     error
		says   []string
	}{
		{"no manifest (half-written)", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestFile)) }, ErrNoManifest, []string{"hetero.json"}},
		{"edited count", func(t *testing.T, dir string) {
			edit(t, dir, func(m *Manifest) { m.NodeTypes[0].Count = 6 }, false)
		}, ErrBadManifest, []string{"checksum"}},
		{"count vs num_nodes", func(t *testing.T, dir string) {
			edit(t, dir, func(m *Manifest) { m.NodeTypes[0].Count = 6 }, true)
		}, ErrBadManifest, []string{"relations[0] (author, writes, paper): graph.num_nodes 5, want max(count(author), count(paper)) = 6"}},
		{"unknown type", func(t *testing.T, dir string) {
			edit(t, dir, func(m *Manifest) { m.Relations[1].Dst = "venue" }, true)
		}, ErrBadManifest, []string{"dst \"venue\": no such node type"}},
		{"wrong dir", func(t *testing.T, dir string) {
			edit(t, dir, func(m *Manifest) { m.Relations[1].Dir = "relations/../x" }, true)
		}, ErrBadManifest, []string{"dir \"relations/../x\", want \"relations/paper___cites___paper\""}},
		{"unknown field", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"version":1,"extra":2}`), 0o644)
		}, ErrBadManifest, []string{"extra"}},
		{"missing relation", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "relations", "paper___cites___paper"))
		}, chunkfmt.ErrNoManifest, []string{"relations/paper___cites___paper", "(paper, cites, paper)"}},
		{"relation replaced", func(t *testing.T, dir string) {
			writeRelation(t, dir, RelationDir("paper", "cites", "paper"), [][]uint32{{1}, {}, {0}})
		}, ErrMismatch, []string{"relations/paper___cites___paper/manifest.json", "replaced"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := sample(t)
			tc.break_(t, dir)
			_, err := Open(dir)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Open: %v, want %v", err, tc.is)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			if err := Verify(context.Background(), dir); !errors.Is(err, tc.is) {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

// TestTypedBounds: directories that chunkfmt accepts but break the typed
// bounds: a src id past its type's count, an edge in a padding row.
func TestTypedBounds(t *testing.T) {
	build := func(t *testing.T, writes [][]uint32, types []NodeType) string {
		dir := t.TempDir()
		w := RelationDir("author", "writes", "paper")
		m := &Manifest{Version: FormatVersion, NodeTypes: types,
			Relations: []Relation{{Src: "author", Rel: "writes", Dst: "paper", Dir: w, Graph: writeRelation(t, dir, w, writes)}}}
		if err := Write(dir, m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// 5 papers, 3 authors: rows 0..4; author id 3 is past the authors.
	dir := build(t, [][]uint32{{0}, {}, {1, 3}, {}, {}}, []NodeType{{"author", 3}, {"paper", 5}})
	if _, err := Open(dir); err != nil {
		t.Fatalf("Open checks no ids: %v", err)
	}
	err := Verify(context.Background(), dir)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "row 2: position 1: src id 3") || !strings.Contains(err.Error(), "src id 3 is not below the 3 author nodes") {
		t.Fatalf("Verify: %v", err)
	}
	// 5 authors, 2 papers: row 3 is padding but has an edge.
	dir = build(t, [][]uint32{{0}, {}, {}, {4}, {}}, []NodeType{{"author", 5}, {"paper", 2}})
	err = Verify(context.Background(), dir)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "row 3: 1 in-edges, but there are only 2 paper nodes") {
		t.Fatalf("Verify: %v", err)
	}
	// A stray relation directory.
	dir, _ = sample(t)
	writeRelation(t, dir, RelationDir("paper", "old", "paper"), [][]uint32{{}, {}, {}})
	if err := Verify(context.Background(), dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "paper___old___paper: not a relation") {
		t.Fatalf("Verify: %v", err)
	}
}

func TestNodeTypeFingerprint(t *testing.T) {
	_, m := sample(t)
	a, ok := m.NodeTypeFingerprint("author")
	p, _ := m.NodeTypeFingerprint("paper")
	if !ok || a.NumNodes != 5 || p.NumNodes != 3 || a.ChunkCRCs == p.ChunkCRCs || a.NumEdges != 6 {
		t.Fatalf("author %+v paper %+v", a, p)
	}
	m2 := *m
	m2.Relations = append([]Relation(nil), m.Relations...)
	m2.Relations[1].Graph.ChunkCRCs++
	if b, _ := m2.NodeTypeFingerprint("author"); b == a {
		t.Error("a rebuilt relation leaves the node type's fingerprint unchanged")
	}
	if _, ok := m.NodeTypeFingerprint("venue"); ok {
		t.Error("unknown type has a fingerprint")
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, &Manifest{Version: FormatVersion, NodeTypes: []NodeType{{"a", 1}}}); err == nil {
		t.Fatal("a manifest without relations was written")
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); !os.IsNotExist(err) {
		t.Error("invalid manifest left on disk")
	}
}
