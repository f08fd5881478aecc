package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
