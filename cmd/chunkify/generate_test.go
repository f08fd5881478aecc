package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/usage"
)

func TestGenerateRMAT(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.bin32")
	b := filepath.Join(dir, "b.txt")
	_, stderr, err := run(t, "generate", "rmat", "--scale", "10", "--edge-factor", "8", "--seed", "5", "-o", a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "1024 nodes, 8192 edges") {
		t.Fatalf("summary: %q", stderr)
	}
	if st, _ := os.Stat(a); st == nil || st.Size() != 8192*8 {
		t.Fatalf("bin32 file size %v", st)
	}
	if _, _, err := run(t, "generate", "rmat", "--scale", "10", "--edge-factor", "8", "--seed", "5", "-o", b, "--format", "text", "-q"); err != nil {
		t.Fatal(err)
	}
	// Same seed, same graph, whichever format: the two builds agree.
	ga, gb := filepath.Join(dir, "ga"), filepath.Join(dir, "gb")
	if _, _, err := run(t, "build", a, "-o", ga, "-q", "--chunk-size", "4KiB"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "build", b, "-o", gb, "-q", "--chunk-size", "4KiB"); err != nil {
		t.Fatal(err)
	}
	ca, _ := os.ReadFile(filepath.Join(ga, "edges.chunks"))
	cb, _ := os.ReadFile(filepath.Join(gb, "edges.chunks"))
	if len(ca) == 0 || !bytes.Equal(ca, cb) {
		t.Fatal("text and bin32 R-MAT of the same seed built different graphs")
	}
	for _, args := range [][]string{
		{"generate", "rmat", "--scale", "0", "-o", filepath.Join(dir, "x")},
		{"generate", "rmat", "--scale", "4"},
		{"generate", "rmat", "--edge-factor", "4", "-o", filepath.Join(dir, "x")},
		{"generate", "rmat", "--scale", "4", "-o", filepath.Join(dir, "x.npy"), "--format", "npy"},
	} {
		if _, _, err := run(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Fatalf("unexpected files: %v", ents)
	}
}

// TestGenerateFeatures: generated features and labels for a graph pack
// into its feature store, verify, and read back as ingest.SyntheticRow
// and SyntheticLabel say; the flags' mistakes are usage errors.
func TestGenerateFeatures(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.txt")
	os.WriteFile(in, []byte("0 1\n1 2\n2 3\n3 4\n5 0\n"), 0o644)
	g := filepath.Join(dir, "g")
	if _, _, err := run(t, "build", in, "-o", g, "--chunk-size", "4KiB", "-q"); err != nil {
		t.Fatal(err)
	}
	feat, lab := filepath.Join(dir, "f.npy"), filepath.Join(dir, "l.npy")
	if _, _, err := run(t, "generate", "features", "--graph", g, "--dim", "5", "--classes", "3", "--labels", lab, "--seed", "4", "-o", feat, "-q"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "features", feat, "--labels", lab, "-o", g, "-q"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, "verify", g); err != nil || !strings.Contains(out, "features ok") {
		t.Fatalf("verify: %q, %v", out, err)
	}
	fs, err := featstore.Open(g)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	ids := []uint32{5, 0, 3}
	x := make([]byte, 3*fs.RowBytes())
	y := make([]int32, 3)
	if err := fs.ReadRows(ids, x); err != nil {
		t.Fatal(err)
	}
	if err := fs.ReadLabels(ids, y); err != nil {
		t.Fatal(err)
	}
	row := make([]float32, 5)
	for i, v := range ids {
		ingest.SyntheticRow(4, v, 3, row)
		for c, want := range row {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(x[4*(5*i+c):])); got != want {
				t.Fatalf("node %d column %d: %g, want %g", v, c, got, want)
			}
		}
		if y[i] != ingest.SyntheticLabel(4, v, 3) {
			t.Fatalf("node %d: label %d", v, y[i])
		}
	}
	for _, args := range [][]string{
		{"generate", "features", "--dim", "4", "-o", feat},                             // no size
		{"generate", "features", "--num-nodes", "3", "--graph", g, "-o", feat},         // both
		{"generate", "features", "--num-nodes", "3", "--dtype", "float64", "-o", feat}, // dtype
		{"generate", "features", "--num-nodes", "3", "--dim", "0", "-o", feat},         // dim
		{"generate", "features", "--num-nodes", "3", "--labels", lab, "-o", feat},      // labels without classes
		{"generate", "features", "--num-nodes", "3"},                                   // no -o
	} {
		if _, _, err := run(t, args...); err == nil || !usage.Is(err) {
			t.Errorf("%v: %v", args, err)
		}
	}
}
