package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterofmt"
)

// typedEdges is one relation's input edges, for the reference.
type typedEdges struct {
	src, rel, dst string
	pairs         []uint32 // (src id, dst id)
}

// wantInEdges is the reference in-edge CSR of a relation: row v (a dst
// id) lists the src ids u of the edges (u, v), sorted, deduplicated;
// rows is the relation's num_nodes, rows past nd empty.
func wantInEdges(pairs []uint32, rows uint32, flip, sym bool) [][]uint32 {
	adj := make([][]uint32, rows)
	put := func(row, nb uint32) { adj[row] = append(adj[row], nb) }
	for k := 0; k+1 < len(pairs); k += 2 {
		u, v := pairs[k], pairs[k+1]
		switch {
		case sym:
			put(v, u)
			put(u, v)
		case flip:
			put(u, v)
		default:
			put(v, u)
		}
	}
	for i := range adj {
		slices.Sort(adj[i])
		adj[i] = slices.Compact(adj[i])
	}
	return adj
}

func randomTyped(rng *rand.Rand, ns, nd uint32, m int) []uint32 {
	p := make([]uint32, 0, 2*m)
	for range m {
		p = append(p, rng.Uint32N(ns), rng.Uint32N(nd))
	}
	return p
}

func textPairs(p []uint32) []byte {
	var b strings.Builder
	b.WriteString("# a typed edge list\n")
	for k := 0; k+1 < len(p); k += 2 {
		fmt.Fprintf(&b, "%d,%d\n", p[k], p[k+1])
	}
	return []byte(b.String())
}

// checkRelation compares every row of relation (src, rel, dst) of g with want.
func checkRelation(t *testing.T, g *heterofmt.Graph, src, rel, dst string, want [][]uint32) {
	t.Helper()
	rg, r := g.Relation(src, rel, dst)
	if rg == nil {
		t.Fatalf("relation (%s, %s, %s) missing", src, rel, dst)
	}
	if rg.Manifest.NumNodes != uint32(len(want)) {
		t.Fatalf("%s: num_nodes %d, want %d", r, rg.Manifest.NumNodes, len(want))
	}
	for v := range want {
		got, err := rg.Neighbors(uint32(v))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[v]) && !(len(got) == 0 && len(want[v]) == 0) {
			t.Fatalf("%s: row %d: %v, want %v", r, v, got, want[v])
		}
	}
}

func TestBuildHeteroRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 1))
	types := []heterofmt.NodeType{{Name: "author", Count: 37}, {Name: "paper", Count: 23}, {Name: "institution", Count: 4}}
	count := map[string]uint32{"author": 37, "paper": 23, "institution": 4}
	rels := []typedEdges{
		{"author", "writes", "paper", nil},
		{"author", "affiliated_with", "institution", nil},
		{"paper", "cites", "paper", nil},
	}
	var in []RelationInput
	for i := range rels {
		r := &rels[i]
		r.pairs = randomTyped(rng, count[r.src], count[r.dst], 300)
		var path string
		switch i {
		case 0: // npy (2, E)
			var s, d []int64
			for k := 0; k < len(r.pairs); k += 2 {
				s, d = append(s, int64(r.pairs[k])), append(d, int64(r.pairs[k+1]))
			}
			path = writeFile(t, dir, "writes.npy", npyBytes(s, d, "<i8", true, false))
		case 1: // gzip text
			path = writeFile(t, dir, "aff.csv.gz", gz(t, textPairs(r.pairs)))
		default:
			path = writeFile(t, dir, "cites.txt", textPairs(r.pairs))
		}
		in = append(in, RelationInput{Src: r.src, Rel: r.rel, Dst: r.dst, Inputs: []string{path}})
	}
	for _, addRev := range []bool{false, true} {
		t.Run(fmt.Sprintf("add-reverse=%v", addRev), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("g-%v", addRev))
			sum, err := BuildHetero(context.Background(), out, HeteroOptions{NodeTypes: types, Relations: in, AddReverse: addRev,
				Build: BuildOptions{Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep, ChunkSize: 1024, CreatedBy: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			g, err := heterofmt.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			wantRels := 3
			if addRev {
				wantRels = 5 // rev_writes, rev_affiliated_with; cites symmetrized in place
			}
			if len(g.Manifest.Relations) != wantRels || len(sum.Relations) != wantRels {
				t.Fatalf("%d relations (summary %d), want %d", len(g.Manifest.Relations), len(sum.Relations), wantRels)
			}
			for _, r := range rels {
				rows := max(count[r.src], count[r.dst])
				sym := addRev && r.src == r.dst
				checkRelation(t, g, r.src, r.rel, r.dst, wantInEdges(r.pairs, rows, false, sym))
				if addRev && r.src != r.dst {
					checkRelation(t, g, r.dst, "rev_"+r.rel, r.src, wantInEdges(r.pairs, rows, true, false))
					_, rr := g.Relation(r.dst, "rev_"+r.rel, r.src)
					if rr.ReverseOf != heterofmt.Key(r.src, r.rel, r.dst) {
						t.Errorf("%s: reverse_of %q", rr, rr.ReverseOf)
					}
				}
			}
			if err := heterofmt.Verify(context.Background(), out); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBuildHeteroColumnBounds(t *testing.T) {
	dir := t.TempDir()
	types := []heterofmt.NodeType{{Name: "author", Count: 10}, {Name: "paper", Count: 50}}
	// Line 4 holds an author id of 10: below paper's count (and the
	// relation's num_nodes, 50), but not below author's.
	p := writeFile(t, dir, "w.csv", []byte("src,dst\n1,2\n\n10,3\n4,5\n"))
	_, err := BuildHetero(context.Background(), filepath.Join(dir, "g"), HeteroOptions{NodeTypes: types,
		Relations: []RelationInput{{Src: "author", Rel: "writes", Dst: "paper", Inputs: []string{p}}}, Build: BuildOptions{ChunkSize: 4096}})
	if !errors.Is(err, ErrIDRange) {
		t.Fatalf("err %v, want ErrIDRange", err)
	}
	for _, s := range []string{"(author, writes, paper)", p + ":4:", "src id 10", "author has 10 nodes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "g")); !os.IsNotExist(err) {
		t.Errorf("a failed build left its output: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed build left %v", dirNames(t, dir))
	}
	// A dst id past paper's count, in a binary input: named by edge.
	q := writeFile(t, dir, "w.bin32", bin32([]uint32{1, 2, 3, 50}))
	_, err = BuildHetero(context.Background(), filepath.Join(dir, "g"), HeteroOptions{NodeTypes: types,
		Relations: []RelationInput{{Src: "author", Rel: "writes", Dst: "paper", Inputs: []string{q}}}, Build: BuildOptions{ChunkSize: 4096}})
	if err == nil || !strings.Contains(err.Error(), "edge 1: dst id 50") || !strings.Contains(err.Error(), "paper has 50 nodes") {
		t.Fatalf("err %v", err)
	}
}

func TestBuildHeteroBadOptions(t *testing.T) {
	types := []heterofmt.NodeType{{Name: "a", Count: 3}}
	for name, o := range map[string]HeteroOptions{
		"unknown type":   {NodeTypes: types, Relations: []RelationInput{{Src: "a", Rel: "r", Dst: "b", Inputs: []string{"x"}}}},
		"bad name":       {NodeTypes: types, Relations: []RelationInput{{Src: "a", Rel: "r__s", Dst: "a", Inputs: []string{"x"}}}},
		"twice":          {NodeTypes: types, Relations: []RelationInput{{Src: "a", Rel: "r", Dst: "a", Inputs: []string{"x"}}, {Src: "a", Rel: "r", Dst: "a", Inputs: []string{"y"}}}},
		"no relations":   {NodeTypes: types},
		"features type":  {NodeTypes: types, Relations: []RelationInput{{Src: "a", Rel: "r", Dst: "a", Inputs: []string{"x"}}}, Features: []NodeFeatures{{Type: "z", Features: "f"}}},
		"no node types":  {Relations: []RelationInput{{Src: "a", Rel: "r", Dst: "a", Inputs: []string{"x"}}}},
		"reverse option": {NodeTypes: types, Relations: []RelationInput{{Src: "a", Rel: "r", Dst: "a", Inputs: []string{"x"}}}, Build: BuildOptions{Reverse: true}},
	} {
		if _, err := BuildHetero(context.Background(), filepath.Join(t.TempDir(), "g"), o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseFlags(t *testing.T) {
	ts, err := ParseNodeTypes("paper=10, author=3,institution=0")
	if err != nil || len(ts) != 3 || ts[1] != (heterofmt.NodeType{Name: "author", Count: 3}) {
		t.Fatalf("%v %v", ts, err)
	}
	for _, bad := range []string{"paper", "paper=x", "paper=1,paper=2", "a/b=1", "p=3000000000"} {
		if _, err := ParseNodeTypes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	r, err := ParseRelationFlag("author,writes,paper=data/w.csv")
	if err != nil || r.Src != "author" || r.Rel != "writes" || r.Dst != "paper" || r.Inputs[0] != "data/w.csv" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"author,writes=x", "a,b,c", "a,b,c=", "a,b_,c=x"} {
		if _, err := ParseRelationFlag(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// writeOGBRaw writes a tiny dataset in OGB's heterogeneous raw layout.
func writeOGBRaw(t *testing.T, root string, rels []typedEdges, withFeat bool) {
	t.Helper()
	raw := filepath.Join(root, "raw")
	os.MkdirAll(raw, 0o755)
	writeFile(t, raw, "num-node-dict.csv.gz", gz(t, []byte("author,paper\n6,4\n")))
	for _, r := range rels {
		d := filepath.Join(raw, "relations", heterofmt.Key(r.src, r.rel, r.dst))
		os.MkdirAll(d, 0o755)
		var b strings.Builder
		for k := 0; k < len(r.pairs); k += 2 {
			fmt.Fprintf(&b, "%d,%d\n", r.pairs[k], r.pairs[k+1])
		}
		writeFile(t, d, "edge.csv.gz", gz(t, []byte(b.String())))
	}
	if withFeat {
		fd := filepath.Join(raw, "node-feat", "paper")
		ld := filepath.Join(raw, "node-label", "paper")
		os.MkdirAll(fd, 0o755)
		os.MkdirAll(ld, 0o755)
		writeFile(t, fd, "node-feat.csv.gz", gz(t, []byte("0.5,1\n-1,2\n3,0.25\n4,5\n")))
		writeFile(t, ld, "node-label.csv.gz", gz(t, []byte("1\n0\nnan\n2\n")))
	}
}

func TestBuildOGBRaw(t *testing.T) {
	dir := t.TempDir()
	rels := []typedEdges{
		{"author", "writes", "paper", []uint32{0, 0, 5, 3, 2, 1, 2, 0, 5, 3}},
		{"paper", "cites", "paper", []uint32{0, 1, 1, 2, 3, 0, 3, 3}},
	}
	writeOGBRaw(t, dir, rels, true)
	types, in, feats, err := OGBHetero(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 2 || types[0] != (heterofmt.NodeType{Name: "author", Count: 6}) || len(in) != 2 || len(feats) != 1 || feats[0].Type != "paper" {
		t.Fatalf("types %v relations %v features %v", types, in, feats)
	}
	out := filepath.Join(dir, "g")
	sum, err := BuildHetero(context.Background(), out, HeteroOptions{NodeTypes: types, Relations: in, Features: feats, AddReverse: true,
		Build: BuildOptions{Dedup: true, ChunkSize: 512}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Features) != 1 || sum.Features[0].NumNodes != 4 || sum.Features[0].Dim != 2 || sum.Features[0].Labeled != 3 {
		t.Fatalf("features %+v", sum.Features)
	}
	g, err := heterofmt.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkRelation(t, g, "author", "writes", "paper", [][]uint32{{0, 2}, {2}, nil, {5}, nil, nil})
	checkRelation(t, g, "paper", "rev_writes", "author", [][]uint32{{0}, nil, {0, 1}, nil, nil, {3}})
	checkRelation(t, g, "paper", "cites", "paper", [][]uint32{{1, 3}, {0, 2}, {1}, {0, 3}})
	fp, _ := g.Manifest.NodeTypeFingerprint("paper")
	s, err := featstore.OpenFor(filepath.Join(out, "features", "paper"), fp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	row := make([]byte, 8)
	if err := s.ReadRows([]uint32{2}, row); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(row) != fmt.Sprint([]byte{0, 0, 0x40, 0x40, 0, 0, 0x80, 0x3e}) { // 3.0, 0.25 as float32
		t.Errorf("row 2 bytes %v", row)
	}
	lab := make([]int32, 4)
	if err := s.ReadLabels([]uint32{0, 1, 2, 3}, lab); err != nil || !slices.Equal(lab, []int32{1, 0, -1, 2}) {
		t.Errorf("labels %v %v", lab, err)
	}
	// Bound to this graph: the author type's fingerprint is refused.
	afp, _ := g.Manifest.NodeTypeFingerprint("author")
	if _, err := featstore.OpenFor(filepath.Join(out, "features", "paper"), afp); !errors.Is(err, featstore.ErrGraphMismatch) {
		t.Errorf("store opened for another node type: %v", err)
	}
	if err := heterofmt.Verify(context.Background(), out); err != nil {
		t.Fatal(err)
	}
}

// TestOGBTripletOrder: triplet-type-list.csv.gz orders the relations,
// and must list exactly the relation directories.
func TestOGBTripletOrder(t *testing.T) {
	dir := t.TempDir()
	rels := []typedEdges{
		{"author", "writes", "paper", []uint32{0, 0}},
		{"paper", "cites", "paper", []uint32{0, 1}},
	}
	writeOGBRaw(t, dir, rels, false)
	raw := filepath.Join(dir, "raw")
	writeFile(t, raw, "triplet-type-list.csv.gz", gz(t, []byte("paper,cites,paper\nauthor,writes,paper\n")))
	_, in, _, err := OGBHetero(dir)
	if err != nil || len(in) != 2 || in[0].Rel != "cites" || in[1].Rel != "writes" {
		t.Fatalf("%v %v", in, err)
	}
	writeFile(t, raw, "triplet-type-list.csv.gz", gz(t, []byte("paper,cites,paper\n")))
	if _, _, _, err := OGBHetero(dir); err == nil || !strings.Contains(err.Error(), "does not list relations/author___writes___paper") {
		t.Errorf("err %v", err)
	}
	writeFile(t, raw, "triplet-type-list.csv.gz", gz(t, []byte("paper,cites,paper\nauthor,writes,paper\nauthor,reads,paper\n")))
	if _, _, _, err := OGBHetero(dir); err == nil || !strings.Contains(err.Error(), "triplet-type-list.csv.gz:3: relation (author, reads, paper) has no directory") {
		t.Errorf("err %v", err)
	}
}

func TestOGBRawErrors(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw")
	os.MkdirAll(filepath.Join(raw, "relations", "a___r"), 0o755)
	writeFile(t, raw, "num-node-dict.csv.gz", gz(t, []byte("a,b\n3\n")))
	if _, _, _, err := OGBHetero(dir); err == nil || !strings.Contains(err.Error(), "num-node-dict.csv.gz:2: 1 counts for 2 node types") {
		t.Errorf("err %v", err)
	}
	writeFile(t, raw, "num-node-dict.csv.gz", gz(t, []byte("a,b\n3,4\n")))
	if _, _, _, err := OGBHetero(dir); err == nil || !strings.Contains(err.Error(), "a___r") {
		t.Errorf("err %v", err)
	}
}

func TestPresetProportions(t *testing.T) {
	for _, total := range []int64{1000, 10_000_000, 1_000_000_000} {
		o, err := Preset(PresetMAG240M, total)
		if err != nil {
			t.Fatal(err)
		}
		if o.NumEdges() != total {
			t.Fatalf("%d: %d edges", total, o.NumEdges())
		}
		var all int64
		for _, r := range mag240mRels {
			all += r.Edges
		}
		for i, r := range o.Relations {
			want := float64(mag240mRels[i].Edges) / float64(all)
			if got := float64(r.Edges) / float64(total); got < want-2.0/float64(total)-1e-12 || got > want+2.0/float64(total)+1e-12 {
				t.Errorf("%d: %s share %.6f, want %.6f", total, r.Rel, got, want)
			}
		}
		f := float64(total) / float64(all)
		for i, nt := range o.NodeTypes {
			want := max(1, float64(mag240mTypes[i].Count)*f)
			if d := float64(nt.Count) - want; d < -1 || d > 1 {
				t.Errorf("%d: %s %d nodes, want %.1f", total, nt.Name, nt.Count, want)
			}
		}
	}
	if _, err := Preset("ogbn-mag", 100); err == nil {
		t.Error("unknown preset accepted")
	}
}

func TestTypedRMAT(t *testing.T) {
	o, err := Preset(PresetMAG240M, 200_000)
	if err != nil {
		t.Fatal(err)
	}
	o.Seed = 3
	dir := t.TempDir()
	build := func(name string) *HeteroSummary {
		oo := o
		s, err := BuildHetero(context.Background(), filepath.Join(dir, name), HeteroOptions{Generate: &oo, Build: BuildOptions{ChunkSize: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := build("a"), build("b")
	for i := range a.Relations {
		if a.Manifest.Relations[i].Graph != b.Manifest.Relations[i].Graph {
			t.Errorf("relation %s differs between two builds of one seed", a.Relations[i].Relation)
		}
		if a.Relations[i].InputEdges != uint64(o.Relations[i].Edges) {
			t.Errorf("%s: %d edges generated, want %d", a.Relations[i].Relation, a.Relations[i].InputEdges, o.Relations[i].Edges)
		}
	}
	if err := heterofmt.Verify(context.Background(), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	// The same graph written as edge lists and built from them.
	rels, err := WriteTypedEdgeLists(context.Background(), filepath.Join(dir, "lists"), o)
	if err != nil {
		t.Fatal(err)
	}
	types, err := ReadNodeDict(filepath.Join(dir, "lists", "num-node-dict.csv"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := BuildHetero(context.Background(), filepath.Join(dir, "f"), HeteroOptions{NodeTypes: types, Relations: rels, Build: BuildOptions{ChunkSize: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Manifest.Relations {
		if f.Manifest.Relations[i].Graph != a.Manifest.Relations[i].Graph {
			t.Errorf("relation %s: built from its edge list differs from generated in the build", f.Relations[i].Relation)
		}
	}
	// Any number of workers gives the same edges, and they are skewed:
	// the busiest dst of cites has many times the mean in-degree.
	g := newTypedGen(&o, 2)
	one, many := newBlockSource((g.edges+rmatBlock-1)/rmatBlock, 1, g.block), g.source()
	defer one.Close()
	defer many.Close()
	deg := make([]int, o.NodeTypes[0].Count)
	for {
		p, err := one.Next()
		q, err2 := many.Next()
		if (err == nil) != (err2 == nil) || !slices.Equal(p, q) {
			t.Fatal("1 worker and GOMAXPROCS workers differ")
		}
		if err != nil {
			break
		}
		for k := 1; k < len(p); k += 2 {
			deg[p[k]]++
		}
	}
	mean := float64(g.edges) / float64(len(deg))
	if m := slices.Max(deg); float64(m) < 10*mean {
		t.Errorf("max in-degree %d, mean %.1f: not skewed", m, mean)
	}
	c, err := Preset(PresetMAG240M, 300)
	if err != nil {
		t.Fatal(err)
	}
	c.Seed = 4
	if _, err := BuildHetero(context.Background(), filepath.Join(dir, "c"), HeteroOptions{Generate: &c, Build: BuildOptions{ChunkSize: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
}

// TestBuildHeteroCancelled: a build cancelled between relations, or during
// one, leaves neither the output nor a temporary directory.
func TestBuildHeteroCancelled(t *testing.T) {
	o, err := Preset(PresetMAG240M, 400_000)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, after := range []int{0, 1} {
		ctx, cancel := context.WithCancel(context.Background())
		var pr progressCanceller
		pr.after, pr.cancel = after, cancel
		oo := o
		_, err := BuildHetero(ctx, filepath.Join(dir, "g"), HeteroOptions{Generate: &oo, Build: BuildOptions{ChunkSize: 1 << 20, Progress: &pr}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after %d relations: err %v, want context.Canceled", after, err)
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Fatalf("a cancelled build left %v", names)
		}
	}
}

// progressCanceller cancels the build when the progress line of relation
// after+1 is written (after = 0: as the first relation starts).
type progressCanceller struct {
	after, seen int
	cancel      func()
}

func (p *progressCanceller) Write(b []byte) (int, error) {
	if strings.HasPrefix(string(b), "relation ") {
		if p.seen == p.after {
			p.cancel()
		}
		p.seen++
	}
	return len(b), nil
}
