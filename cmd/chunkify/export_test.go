package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// TestExport: both formats give exactly the graph's CSR (chunkfmt's own
// CSR, over several chunks), an existing output is kept without --force,
// and a corrupt chunk fails the export, leaving no file behind.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	graph := filepath.Join(dir, "g")
	if _, _, err := run(t, "build", filepath.Join("..", "..", "testdata", "email-Eu-core.txt.gz"), "-o", graph, "--chunk-size", "16KiB", "-q"); err != nil {
		t.Fatal(err)
	}
	g, err := chunkfmt.Open(graph)
	if err != nil {
		t.Fatal(err)
	}
	indptr, indices, err := g.CSR()
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	if g.NumChunks() < 3 {
		t.Fatalf("%d chunks: the test wants several", g.NumChunks())
	}
	le := func(a any) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, a)
		return b.Bytes()
	}
	npyOf := func(descr string, n int, data []byte) []byte {
		var b bytes.Buffer
		npy.Header{Descr: descr, Shape: []int{n}}.WriteTo(&b)
		return append(b.Bytes(), data...)
	}
	for _, tc := range []struct {
		format          string
		names           [2]string
		indptr, indices []byte
	}{
		{"npy", [2]string{"indptr.npy", "indices.npy"}, npyOf("<u8", len(indptr), le(indptr)), npyOf("<u4", len(indices), le(indices))},
		{"raw", [2]string{"indptr.bin", "indices.bin"}, le(indptr), le(indices)},
	} {
		out := filepath.Join(dir, tc.format)
		if _, _, err := run(t, "export", graph, "-o", out, "--format", tc.format, "-q"); err != nil {
			t.Fatal(err)
		}
		for i, want := range [][]byte{tc.indptr, tc.indices} {
			got, err := os.ReadFile(filepath.Join(out, tc.names[i]))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: %d bytes differ from the graph's CSR (%d bytes)", tc.format, tc.names[i], len(got), len(want))
			}
		}
		if _, _, err := run(t, "export", graph, "-o", out, "--format", tc.format, "-q"); err == nil || !strings.Contains(err.Error(), "--force") {
			t.Errorf("export over an existing output without --force: %v", err)
		}
		if _, _, err := run(t, "export", graph, "-o", out, "--format", tc.format, "--force", "-q"); err != nil {
			t.Errorf("--force: %v", err)
		}
	}
	if _, _, err := run(t, "export", graph, "-o", filepath.Join(dir, "x"), "--format", "csv"); err == nil || !strings.Contains(err.Error(), "npy or raw") {
		t.Errorf("--format csv: %v", err)
	}

	// A flipped byte in the last chunk: the export fails naming the
	// chunk, and the indices file is not left behind.
	chunks := filepath.Join(graph, chunkfmt.ChunksFile)
	b, err := os.ReadFile(chunks)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-16*1024+100] ^= 1
	if err := os.WriteFile(chunks, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "corrupt")
	_, _, err = run(t, "export", graph, "-o", out)
	if err == nil || !strings.Contains(err.Error(), "chunk") {
		t.Fatalf("export of a corrupt graph: %v", err)
	}
	left, _ := os.ReadDir(out)
	if names := slices.Collect(func(yield func(string) bool) {
		for _, e := range left {
			if !yield(e.Name()) {
				return
			}
		}
	}); len(names) != 0 {
		t.Errorf("a failed export left %v", names)
	}
}
