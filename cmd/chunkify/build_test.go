package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
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
