package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.txt")
	// Degrees 3, 1, 0, 0, 2 over 5 nodes.
	os.WriteFile(in, []byte("0 1\n0 2\n0 3\n1 0\n4 0\n4 1\n"), 0o644)
	out := filepath.Join(dir, "g")
	if _, _, err := run(t, "build", in, "-o", out, "--num-nodes", "5", "--chunk-size", "1KiB", "-q"); err != nil {
		t.Fatal(err)
	}
	text, _, err := run(t, "info", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nodes      5\n", "edges      6\n", "chunks     1 of 1.0 KiB (1024 bytes)", "degree     min 0, median 1, mean 1.20, p99 3, max 3; 2 isolated nodes", "dedup=true self-loops=keep"} {
		if !strings.Contains(text, want) {
			t.Errorf("info lacks %q:\n%s", want, text)
		}
	}
	js, _, err := run(t, "info", out, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var gi graphInfo
	if err := json.Unmarshal([]byte(js), &gi); err != nil {
		t.Fatal(err)
	}
	if gi.NumNodes != 5 || gi.NumEdges != 6 || gi.Degree.Max != 3 || gi.Degree.Isolated != 2 || gi.Degree.Median != 1 || gi.NumChunks != 1 {
		t.Fatalf("%+v", gi)
	}
	if _, _, err := run(t, "info", dir); err == nil || !strings.Contains(err.Error(), "manifest") {
		t.Fatalf("info on a non-graph: %v", err)
	}
}
