package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/ingest"
)

// TestScan: scan counts what build would store (the same edges, largest
// id and self-loops, in text and bin32 alike), fails where build fails
// with build's message, and writes nothing.
func TestScan(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "g.txt")
	os.WriteFile(txt, []byte("# comment\n0 1\n2 2\n7,3\n\n3\t0\n"), 0o644)
	bin := filepath.Join(dir, "g.bin32")
	os.WriteFile(bin, []byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}, 0o644)
	for _, in := range []string{txt, bin} {
		js, _, err := run(t, "scan", in, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var s ingest.ScanSummary
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		if s.Edges != 4 || s.MaxID != 7 || s.SelfLoops != 1 {
			t.Fatalf("%s: %+v", in, s)
		}
		text, _, err := run(t, "scan", in)
		if err != nil || !strings.Contains(text, "4 edges, largest node id 7, 1 self-loops") {
			t.Fatalf("%s: %q, %v", in, text, err)
		}
	}
	// Two inputs add up.
	js, _, err := run(t, "scan", txt, bin, "--json")
	var s ingest.ScanSummary
	if err != nil || json.Unmarshal([]byte(js), &s) != nil || s.Edges != 8 || s.InputBytes != int64(len("# comment\n0 1\n2 2\n7,3\n\n3\t0\n")+32) {
		t.Fatalf("two inputs: %q, %v", js, err)
	}
	// Build's errors: a bad line, an id beyond --num-nodes.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("0 1\n1 x\n"), 0o644)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"scan", bad}, []string{"bad.txt:2:", "expected two non-negative integer node ids"}},
		{[]string{"scan", txt, "--num-nodes", "5"}, []string{"g.txt", "7"}},
		{[]string{"scan", filepath.Join(dir, "missing.txt")}, []string{"missing.txt"}},
		{[]string{"scan", txt, "--format", "csv"}, []string{"--format"}},
	} {
		_, _, err := run(t, c.args...)
		if err == nil {
			t.Fatalf("%v: no error", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.args, err, w)
			}
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("scan wrote files: %v", ents)
	}
}
