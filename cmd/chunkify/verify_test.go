package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	out := filepath.Join(t.TempDir(), "g")
	if _, _, err := run(t, "build", "../../testdata/email-Eu-core.txt.gz", "-o", out, "--chunk-size", "16KiB", "-q"); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := run(t, "verify", out)
	if err != nil || !strings.Contains(stdout, "ok (1005 nodes, 25571 edges") {
		t.Fatalf("verify: %q, %v", stdout, err)
	}
	// Flip one neighbor id in the second chunk: verify must fail and say where.
	p := filepath.Join(out, "edges.chunks")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[16<<10+4000] ^= 0x01
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = run(t, "verify", out)
	if err == nil || !strings.Contains(err.Error(), "chunk 1") {
		t.Fatalf("corrupt graph: err = %v; want a defect in chunk 1", err)
	}
	if _, _, err := run(t, "verify", filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("verify of a missing directory succeeded")
	}
}
