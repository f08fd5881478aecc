package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/memavail"
)

func TestBuildBundledGraph(t *testing.T) {
	out := filepath.Join(t.TempDir(), "wiki")
	stdout, stderr, err := run(t, "build", "../../testdata/Wiki-Vote.txt", "-o", out, "--chunk-size", "64KiB", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum ingest.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if sum.NumNodes != 8298 || sum.NumEdges != 103689 || sum.InputEdges != 103689 || sum.ChunkSize != 64<<10 || !sum.Options.Dedup {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.Contains(stderr, "chunkify: built "+out+": 8298 nodes, 103689 edges stored") {
		t.Fatalf("summary line missing from stderr: %q", stderr)
	}
	if err := chunkfmt.Verify(out); err != nil {
		t.Fatal(err)
	}
	m, _ := chunkfmt.ReadManifest(out)
	if len(m.Chunks) != sum.NumChunks || m.NumEdges != sum.NumEdges {
		t.Fatalf("manifest %d chunks %d edges; summary %+v", len(m.Chunks), m.NumEdges, sum)
	}
}

func TestBuildOptionsReachManifest(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.csv")
	os.WriteFile(in, []byte("src,dst\n0,1\n1,1\n0,1\n2,0\n"), 0o644)
	out := filepath.Join(dir, "g")
	_, stderr, err := run(t, "build", in, "-o", out, "--symmetrize", "--reverse", "--dedup=false", "--self-loops", "drop", "--num-nodes", "4", "--chunk-size", "512", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Fatalf("--quiet printed %q", stderr)
	}
	g, err := chunkfmt.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	o := g.Manifest.Options
	if !o.Symmetrize || !o.Reverse || o.Dedup || o.SelfLoops != "drop" || g.Manifest.NumNodes != 4 || g.Manifest.ChunkSize != 512 {
		t.Fatalf("manifest %+v", g.Manifest)
	}
	want := [][]uint32{{1, 1, 2}, {0, 0}, {0}, nil}
	for u, w := range want {
		nb, _ := g.Neighbors(uint32(u))
		if len(nb) != len(w) {
			t.Fatalf("node %d: %v, want %v", u, nb, w)
		}
		for i := range w {
			if nb[i] != w[i] {
				t.Fatalf("node %d: %v, want %v", u, nb, w)
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte("0 1\n"), 0o644)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("0 1\n1 xyz\n"), 0o644)
	existing := filepath.Join(dir, "existing")
	if _, _, err := run(t, "build", good, "-o", existing, "-q"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"build", bad, "-o", filepath.Join(dir, "x")}, `bad.txt:2: found "xyz", expected two non-negative integer node ids`},
		{[]string{"build", good, "-o", existing}, "already exists (use --force to replace it)"},
		{[]string{"build", good}, "-o DIR is required"},
		{[]string{"build", "-o", filepath.Join(dir, "x")}, "requires at least 1 arg"},
		{[]string{"build", good, "-o", filepath.Join(dir, "x"), "--chunk-size", "1000"}, "must be a positive multiple of 512"},
		{[]string{"build", good, "-o", filepath.Join(dir, "x"), "--chunk-size", "12 parsecs"}, "unknown unit"},
		{[]string{"build", good, "-o", filepath.Join(dir, "x"), "--format", "xml"}, `unknown format "xml"`},
		{[]string{"build", good, "-o", filepath.Join(dir, "x"), "--self-loops", "maybe"}, `self-loops "maybe"`},
		{[]string{"build", good, "-o", filepath.Join(dir, "x"), "--num-nodes", "1"}, "ids must be below --num-nodes 1"},
		{[]string{"build", filepath.Join(dir, "nope.txt"), "-o", filepath.Join(dir, "x")}, "no such file"},
	} {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v; want %q", c.args[1:], err, c.want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("failed builds left files: %v", names)
	}
	if _, _, err := run(t, "build", good, "-o", existing, "--force", "-q"); err != nil {
		t.Fatalf("--force: %v", err)
	}
}

// TestBuildNumNodesOverMemory is issue 15's finding 4 at the command line:
// --num-nodes 2147483647 with a 2-edge input must fail at once (exit 1)
// with the figure, the budget and the flag, and leave nothing behind.
func TestBuildNumNodesOverMemory(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "two.txt")
	os.WriteFile(in, []byte("0 1\n1 2\n"), 0o644)
	cases := [][]string{{"--memory", "1GiB"}}
	if avail := memavail.Available(); avail > 0 && avail < 24<<30 {
		cases = append(cases, nil) // the default budget on this machine
	}
	for _, extra := range cases {
		args := append([]string{"build", in, "-o", filepath.Join(dir, "g"), "--num-nodes", "2147483647"}, extra...)
		t0 := time.Now()
		_, stderr, code := cli(t, args...)
		if code != 1 || time.Since(t0) > 5*time.Second {
			t.Fatalf("%v: exit %d after %v: %s", extra, code, time.Since(t0), stderr)
		}
		for _, want := range []string{"--num-nodes 2147483647: over the memory budget", "about 24.0 GiB", "budget of ", "(--memory)"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr %q lacks %q", extra, stderr, want)
			}
		}
		if extra != nil && !strings.Contains(stderr, "budget of 1.0 GiB") {
			t.Errorf("stderr %q lacks the budget given", stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the refused build left %v", ents)
	}
}

// TestBuildChunkSizeSuggestionWorks: after --chunk-size 512 fails on a
// graph with several high-degree nodes, the size the error suggests
// builds the graph on the first retry.
func TestBuildChunkSizeSuggestionWorks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.txt")
	var text []byte
	for u, deg := range []int{150, 0, 400, 0, 900} {
		for k := range deg {
			text = fmt.Appendf(text, "%d %d\n", u, 5+k)
		}
	}
	os.WriteFile(in, text, 0o644)
	out := filepath.Join(dir, "g")
	_, stderr, code := cli(t, "build", in, "-o", out, "--chunk-size", "512")
	m := regexp.MustCompile(`node 4 has degree 900: .*rebuild with --chunk-size (\d+) `).FindStringSubmatch(stderr)
	if code != 1 || m == nil {
		t.Fatalf("exit %d, stderr %q; want node 4's suggestion", code, stderr)
	}
	if _, stderr, code := cli(t, "build", in, "-o", out, "--chunk-size", m[1], "-q"); code != 0 {
		t.Fatalf("retry with the suggested --chunk-size %s: exit %d: %s", m[1], code, stderr)
	}
	if err := chunkfmt.Verify(out); err != nil {
		t.Fatal(err)
	}
}
