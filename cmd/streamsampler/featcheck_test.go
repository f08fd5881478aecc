package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// spoilByte flips the byte at off of graph's file name, its size kept.
func spoilByte(t *testing.T, graph, name string, off int64) {
	t.Helper()
	p := filepath.Join(graph, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x21
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// forgeLabel rewrites node u's label to l in graph's store with every
// checksum made to agree (the page's, the .crc file's, features.json's):
// what only the check of a label's value against num_classes catches.
func forgeLabel(t *testing.T, graph string, u int, l int32) {
	t.Helper()
	m, err := featstore.ReadManifest(graph)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(graph, m.Labels.File)
	b, _ := os.ReadFile(p)
	binary.LittleEndian.PutUint32(b[4*u:], uint32(l))
	os.WriteFile(p, b, 0o644)
	var cb []byte
	for _, c := range featstore.ChecksumsOf(b, m.Labels.CRCSpan) {
		cb = binary.LittleEndian.AppendUint32(cb, c)
	}
	os.WriteFile(filepath.Join(graph, m.Labels.CRCs.File), cb, 0o644)
	m.Labels.CRCs.CRC32C = crc32c.Checksum(cb)
	m.Checksum = m.ComputeChecksum()
	j, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(graph, featstore.ManifestFile), j, 0o644)
}

// editManifest replaces from by to in graph's features.json.
func editManifest(t *testing.T, graph string, from, to string) {
	t.Helper()
	p := filepath.Join(graph, featstore.ManifestFile)
	b, _ := os.ReadFile(p)
	e := bytes.Replace(b, []byte(from), []byte(to), 1)
	if bytes.Equal(e, b) {
		t.Fatalf("%q not in features.json", from)
	}
	os.WriteFile(p, e, 0o644)
}

// TestFeaturesCheckedCLI: sample --features (npz to a file, and JSON) and
// run --features over a store spoiled after it was packed — a byte of
// seed 7's row or seed 14's label flipped (sizes kept), a label forged to
// 999 of 9 classes with every checksum agreeing, features.json edited
// consistently (float16 dim 8 → int8 dim 16: the same row bytes), a
// version 1 manifest — exit 1 naming the defect (the file, the row or
// rows and their bytes; the node; the checksum; the rebuild), write no output
// file, and deliver no row (before: exit 0, x ≠ source[n_id], a label
// 999 served).
func TestFeaturesCheckedCLI(t *testing.T) {
	const n = 300
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, graph string)
		msg   string
	}{
		{"feature byte", func(t *testing.T, graph string) { spoilByte(t, graph, "features-1.bin", 7*16+10) },
			"features-1.bin: row 7 (bytes 112..127): CRC-32C"},
		{"label byte", func(t *testing.T, graph string) { spoilByte(t, graph, "labels-1.bin", 4*14+1) },
			"labels-1.bin: rows 0..299 (bytes 0..1199): CRC-32C"},
		{"label 999", func(t *testing.T, graph string) { forgeLabel(t, graph, 14, 999) },
			"node 14: label 999 out of range: want -1 (none) or 0..8 (num_classes 9)"},
		{"manifest edit", func(t *testing.T, graph string) {
			editManifest(t, graph, `"dtype": "float16"`, `"dtype": "int8"`)
			editManifest(t, graph, `"dim": 8`, `"dim": 16`)
		}, "features.json was edited or damaged"},
		{"version 1", func(t *testing.T, graph string) {
			os.WriteFile(filepath.Join(graph, featstore.ManifestFile), []byte(`{"version":1,"num_nodes":300}`), 0o644)
		}, "rebuild the store with `chunkify features FEATURES -o GRAPHDIR --force`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, graph := featureState(t, n)
			_, y := packStore(t, graph, n, featstore.Float16, 8, true)
			if mx := slices.Max(y); mx != 8 {
				t.Fatalf("largest label %d, the cases assume 8", mx)
			}
			if out, e, code := cli(t, "sample", "--state", state, "--seeds", "7,14", "--features", "--format", "npz", "-o", filepath.Join(t.TempDir(), "ok.npz")); code != 0 {
				t.Fatalf("before: exit %d %s %s", code, out, e)
			}
			tc.spoil(t, graph)
			npz := filepath.Join(t.TempDir(), "b.npz")
			for _, args := range [][]string{{"--format", "npz", "-o", npz}, {}} {
				out, e, code := cli(t, append([]string{"sample", "--state", state, "--seeds", "7,14", "--features"}, args...)...)
				if code != 1 || !strings.Contains(e, tc.msg) || out != "" {
					t.Fatalf("sample %v: exit %d, stdout %q, stderr %q; want 1 and %q", args, code, out, e, tc.msg)
				}
			}
			if _, err := os.Stat(npz); !os.IsNotExist(err) {
				t.Fatalf("sample wrote %s: %v", npz, err)
			}
			tf := writeTrain(t, []uint32{7, 14, 21, 28})
			out, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "3,2", "--batch-size", "2", "--epochs", "1", "--json", "--features")
			if code != 1 || !strings.Contains(e, tc.msg) {
				t.Fatalf("run: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, e, tc.msg)
			}
		})
	}
}
