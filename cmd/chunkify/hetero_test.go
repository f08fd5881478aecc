package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeteroBuildVerifyInfo: the bundled heterogeneous dataset builds
// from its OGB raw layout, verifies, and info and --json describe it; a
// relation edited afterwards fails verify naming it.
func TestHeteroBuildVerifyInfo(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g")
	out, stderr, code := cli(t, "build", "--ogb-raw", "../../testdata/hetero-mini", "-o", g, "--add-reverse", "--chunk-size", "64KiB", "--json")
	if code != 0 {
		t.Fatalf("build: exit %d: %s", code, stderr)
	}
	var sum struct {
		NumEdges  uint64 `json:"num_edges"`
		Relations []struct {
			Relation  string `json:"relation"`
			ReverseOf string `json:"reverse_of"`
		} `json:"relations"`
		Features []struct{ Dim int } `json:"features"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// 10 relations given (4 within a type, stored both ways; 6 between
	// two types), and the 6 reverses of the latter.
	if len(sum.Relations) != 16 || len(sum.Features) != 4 || sum.Features[0].Dim != 16 {
		t.Fatalf("summary %+v", sum)
	}
	out, stderr, code = cli(t, "verify", g)
	if code != 0 || !strings.Contains(out, "ok (heterogeneous: 4 node types, 16 relations") || !strings.Contains(out, "company 6495 × 16 float32") {
		t.Fatalf("verify: exit %d %q %q", code, out, stderr)
	}
	out, _, code = cli(t, "info", g)
	if code != 0 || !strings.Contains(out, "node type  government: 6880 nodes") || !strings.Contains(out, "tvshow___rev_likes___politician, the reverse of politician___likes___tvshow") {
		t.Fatalf("info: %d %q", code, out)
	}
	// Corrupt one byte of a relation's chunks: verify names it.
	p := filepath.Join(g, "relations", "politician___likes___tvshow", "edges.chunks")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	os.WriteFile(p, b, 0o644)
	_, stderr, code = cli(t, "verify", g)
	if code != 1 || !strings.Contains(stderr, "relations/politician___likes___tvshow: relation (politician, likes, tvshow)") {
		t.Fatalf("verify of a corrupt relation: exit %d %q", code, stderr)
	}
	// Without hetero.json, a half-written directory.
	os.Remove(filepath.Join(g, "hetero.json"))
	_, stderr, code = cli(t, "verify", g)
	if code != 1 || !strings.Contains(stderr, "no hetero.json") {
		t.Fatalf("verify without hetero.json: exit %d %q", code, stderr)
	}
}

// TestHeteroRelationFlags: --relation/--node-types, with an id past its
// type's count named by file and line, and the usage errors.
func TestHeteroRelationFlags(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "w.csv")
	os.WriteFile(w, []byte("0,1\n2,0\n"), 0o644)
	c := filepath.Join(dir, "c.txt")
	os.WriteFile(c, []byte("0 1\n1 0\n"), 0o644)
	g := filepath.Join(dir, "g")
	_, stderr, code := cli(t, "build", "--node-types", "author=3,paper=2", "--relation", "author,writes,paper="+w, "--relation", "paper,cites,paper="+c, "-o", g, "--chunk-size", "4KiB", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, _, code := cli(t, "verify", g, "-q"); code != 0 {
		t.Fatal("verify failed")
	}
	_, stderr, code = cli(t, "build", "--node-types", "author=2,paper=2", "--relation", "author,writes,paper="+w, "-o", filepath.Join(dir, "h"), "-q")
	if code != 1 || !strings.Contains(stderr, "relation (author, writes, paper): "+w+":2: src id 2") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--relation", "a,r,b=" + w, "-o", out}, "--relation needs --node-types"},
		{[]string{"build", "--node-types", "a=1", "-o", out}, "--node-types needs --relation"},
		{[]string{"build", "--node-types", "a=x", "--relation", "a,r,a=" + w, "-o", out}, "--node-types \"a=x\""},
		{[]string{"build", "--node-types", "a=1", "--relation", "a,r=" + w, "-o", out}, "want SRC,REL,DST=PATH"},
		{[]string{"build", "--node-types", "a=1", "--relation", "a,r,a=" + w, "-o", out, w}, "not as arguments"},
		{[]string{"build", "--node-types", "a=1", "--relation", "a,r,a=" + w, "-o", out, "--reverse"}, "--reverse is for a homogeneous graph"},
		{[]string{"build", w, "-o", out, "--add-reverse"}, "--add-reverse is for --relation"},
		{[]string{"build", "--ogb-raw", dir, "--relation", "a,r,a=" + w, "-o", out}, "--ogb-raw takes its node types"},
		{[]string{"build", "--node-types", "a=1", "--relation", "a,r,a=" + w, "--node-labels", "a=y.npy", "-o", out}, "give --node-features a=PATH too"},
		{[]string{"generate", "hetero", "-o", out}, "--edges is required"},
		{[]string{"generate", "hetero", "--edges", "100", "--preset", "imdb", "-o", out}, "preset \"imdb\""},
		{[]string{"generate", "hetero", "--edges", "100"}, "-o DIR is required"},
		{[]string{"generate", "hetero", "--edges", "100", "-o", out, "--edge-lists", out}, "not both"},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("chunkify %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestGenerateHetero: the typed generator writes a directory that
// verifies, the same for the same seed.
func TestGenerateHetero(t *testing.T) {
	dir := t.TempDir()
	var outs [2]string
	for i := range outs {
		g := filepath.Join(dir, string(rune('a'+i)))
		if _, e, code := cli(t, "generate", "hetero", "--edges", "50000", "--seed", "9", "-o", g, "--chunk-size", "256KiB", "--add-reverse", "-q"); code != 0 {
			t.Fatal(e)
		}
		b, err := os.ReadFile(filepath.Join(g, "hetero.json"))
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = string(b)
	}
	if outs[0] != outs[1] {
		t.Fatal("two runs of one seed differ")
	}
	if !strings.Contains(outs[0], `"rel": "rev_writes"`) || !strings.Contains(outs[0], `"name": "institution"`) {
		t.Fatalf("hetero.json %s", outs[0])
	}
	if o, e, code := cli(t, "verify", filepath.Join(dir, "a")); code != 0 {
		t.Fatal(o, e)
	}
}

// TestFeaturesNodeType: features --node-type packs one type's store into
// a heterogeneous directory, which verify then checks; a failed pack
// leaves no directory behind.
func TestFeaturesNodeType(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g")
	w := filepath.Join(dir, "w.csv")
	os.WriteFile(w, []byte("0,1\n2,0\n"), 0o644)
	if _, e, code := cli(t, "build", "--node-types", "author=3,paper=2", "--relation", "author,writes,paper="+w, "-o", g, "-q"); code != 0 {
		t.Fatal(e)
	}
	raw := filepath.Join(dir, "x.f32")
	os.WriteFile(raw, make([]byte, 2*3*4), 0o644) // 2 papers × 3 float32
	if _, e, code := cli(t, "features", raw, "--dim", "3", "--dtype", "float32", "-o", g, "--node-type", "paper", "-q"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := cli(t, "verify", g)
	if code != 0 || !strings.Contains(out, "paper 2 × 3 float32") {
		t.Fatalf("verify: %d %q %q", code, out, e)
	}
	_, e, code = cli(t, "features", raw, "--dim", "3", "--dtype", "float32", "-o", g, "--node-type", "author", "-q")
	if code != 1 || !strings.Contains(e, "node type author (3 nodes)") {
		t.Fatalf("author: %d %q", code, e)
	}
	if _, err := os.Stat(filepath.Join(g, "features", "author")); !os.IsNotExist(err) {
		t.Errorf("a failed pack left features/author: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"features", raw, "--dim", "3", "--dtype", "float32", "-o", g}, "give --node-type TYPE"},
		{[]string{"features", raw, "--dim", "3", "--dtype", "float32", "-o", g, "--node-type", "venue"}, "no such node type"},
	} {
		if _, e, code := cli(t, tc.args...); code != 2 || !strings.Contains(e, tc.want) {
			t.Errorf("%v: %d %q", tc.args, code, e)
		}
	}
}
