package featstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// TestFlipCaughtOnEveryRead flips one byte (the file's size kept) in
// every row of the features and in every page of the labels, in turn: Open still succeeds (it reads no rows),
// Verify names the file, the row (or the labels' rows) and the bytes, and
// ReadRows and ReadLabels refuse every read that needs the span, while
// reads of other spans succeed. No read returns a wrong row or label.
func TestFlipCaughtOnEveryRead(t *testing.T) {
	const n = 1200 // 1200 rows; 2 pages of labels
	dir := newGraph(t, n, false)
	rows := randomBytes(10, n*12)
	labels := randomLabels(10, n, 5)
	m := pack(t, dir, Options{DType: Float32, Dim: 3}, rows, labels)
	for _, df := range []*DataFile{&m.Features.DataFile, &m.Labels.DataFile} {
		unit := int64(12)
		if df == &m.Labels.DataFile {
			unit = 4
		}
		path := filepath.Join(dir, df.File)
		orig, _ := os.ReadFile(path)
		for i := range df.Spans() {
			off, size := df.SpanRange(i)
			at := off + (i*7)%size // a different byte of each span
			b := append([]byte(nil), orig...)
			b[at] ^= 0x10
			os.WriteFile(path, b, 0o644)
			err := Verify(dir)
			var d *DefectError
			first, last := off/unit, (off+size-1)/unit
			if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) || d.File != df.File || d.Span != i || d.Off != off || d.End != off+size ||
				d.FirstRow != first || d.LastRow != last {
				t.Fatalf("%s span %d flipped: Verify = %v", df.File, i, err)
			}
			msg := fmt.Sprintf("%s: rows %d..%d (bytes %d..%d): CRC-32C", df.File, first, last, off, off+size-1)
			if first == last {
				msg = fmt.Sprintf("%s: row %d (bytes %d..%d): CRC-32C", df.File, first, off, off+size-1)
			}
			if !strings.Contains(err.Error(), msg) {
				t.Fatalf("message %q, want it to contain %q", err, msg)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			node := uint32(at / unit) // the row the flipped byte is in
			far := uint32(0)          // a row of another span
			if i == 0 {
				far = n - 1
			}
			x := make([]byte, 2*12)
			y := make([]int32, 2)
			read := func(ids ...uint32) error {
				if df == &m.Features.DataFile {
					return s.ReadRows(ids, x)
				}
				return s.ReadLabels(ids, y)
			}
			if err := read(far, node); !errors.As(err, &d) || d.Span != i || d.File != df.File {
				t.Fatalf("%s: read of node %d, whose span %d is flipped: %v", df.File, node, i, err)
			}
			if err := read(far); err != nil {
				t.Fatalf("%s: read of node %d, span %d flipped: %v", df.File, far, i, err)
			}
			if unit == 12 {
				// The rows beside it are read in the same run, unharmed.
				if err := read(max(node, 1)-1, min(node+1, n-1)); node > 0 && node < n-1 && err != nil {
					t.Fatalf("the rows beside node %d: %v", node, err)
				}
			}
			s.Close()
		}
		os.WriteFile(path, orig, 0o644)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

// TestFlipChecksums: a byte flipped in a .crc file (its size kept) is
// refused by Open and Verify, naming the file, before any row is read; so
// is a .crc file truncated or missing.
func TestFlipChecksums(t *testing.T) {
	dir := newGraph(t, 5000, false)
	m := pack(t, dir, Options{DType: Uint8, Dim: 9}, randomBytes(3, 45000), randomLabels(3, 5000, 3))
	for _, df := range []*DataFile{&m.Features.DataFile, &m.Labels.DataFile} {
		path := filepath.Join(dir, df.CRCs.File)
		orig, _ := os.ReadFile(path)
		for at := 0; at < len(orig); at += 1 + at/7 {
			b := append([]byte(nil), orig...)
			b[at] ^= 0x01
			os.WriteFile(path, b, 0o644)
			var d *DefectError
			if _, err := Open(dir); !errors.As(err, &d) || d.File != df.CRCs.File || !strings.Contains(err.Error(), "features.json says") {
				t.Fatalf("%s byte %d flipped: Open = %v", df.CRCs.File, at, err)
			}
			if err := Verify(dir); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s byte %d flipped: Verify = %v", df.CRCs.File, at, err)
			}
		}
		os.WriteFile(path, orig[:len(orig)-4], 0o644)
		if _, err := Open(dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "4 per ") {
			t.Fatalf("%s truncated: Open = %v", df.CRCs.File, err)
		}
		os.Remove(path)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), df.CRCs.File) {
			t.Fatalf("%s missing: Open = %v", df.CRCs.File, err)
		}
		os.WriteFile(path, orig, 0o644)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyTruncated(t *testing.T) {
	dir := newGraph(t, 1000, false)
	m := pack(t, dir, Options{DType: Int8, Dim: 10}, randomBytes(11, 10000), randomLabels(11, 1000, 2))
	for _, df := range []*DataFile{&m.Features.DataFile, &m.Labels.DataFile} {
		path := filepath.Join(dir, df.File)
		orig, _ := os.ReadFile(path)
		for _, size := range []int64{0, df.Size - 1, df.Size + 1} {
			b := make([]byte, size)
			copy(b, orig)
			os.WriteFile(path, b, 0o644)
			var d *DefectError
			if err := Verify(dir); !errors.As(err, &d) || d.File != df.File || !strings.Contains(err.Error(), "manifest says") {
				t.Fatalf("%s of %d bytes: Verify = %v", df.File, size, err)
			}
			if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s of %d bytes: Open = %v", df.File, size, err)
			}
		}
		os.WriteFile(path, orig, 0o644)
		os.Remove(path)
		if err := Verify(dir); err == nil || !strings.Contains(err.Error(), df.File) {
			t.Fatalf("%s missing: Verify = %v", df.File, err)
		}
		os.WriteFile(path, orig, 0o644)
	}
}

// forgeLabel rewrites node u's label to l in dir's store and makes every
// checksum agree (the page's, the .crc file's, the manifest's): what only
// the check of a label's value can catch.
func forgeLabel(t *testing.T, dir string, m *Manifest, u int, l int32) {
	t.Helper()
	path := filepath.Join(dir, m.Labels.File)
	b, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(b[4*u:], uint32(l))
	os.WriteFile(path, b, 0o644)
	crcs := ChecksumsOf(b, LabelCRCSpan)
	cb := make([]byte, 4*len(crcs))
	for i, c := range crcs {
		binary.LittleEndian.PutUint32(cb[4*i:], c)
	}
	os.WriteFile(filepath.Join(dir, m.Labels.CRCs.File), cb, 0o644)
	f := *m
	lab := *m.Labels
	lab.CRCs.CRC32C = crc32c.Checksum(cb)
	f.Labels = &lab
	writeManifest(t, dir, &f)
}

// writeManifest writes m as dir's features.json, its checksum made to
// agree: a consistent edit.
func writeManifest(t *testing.T, dir string, m *Manifest) {
	t.Helper()
	m.Checksum = m.ComputeChecksum()
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), j, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLabelRange rewrites a label to 999 (10 classes) with every checksum
// made to agree: only the value check can catch it, and it names the
// node, on delivery (ReadLabels) as in Verify.
func TestLabelRange(t *testing.T) {
	dir := newGraph(t, 2000, false)
	labels := randomLabels(12, 2000, 10)
	labels[0] = 9
	m := pack(t, dir, Options{DType: Uint8, Dim: 1}, randomBytes(12, 2000), labels)
	if m.Labels.NumClasses != 10 {
		t.Fatalf("num_classes %d", m.Labels.NumClasses)
	}
	for _, l := range []int32{999, 10, -2} {
		forgeLabel(t, dir, m, 1337, l)
		var d *DefectError
		if err := Verify(dir); !errors.As(err, &d) || d.Node != 1337 || !strings.Contains(err.Error(), fmt.Sprintf("node 1337: label %d out of range", l)) {
			t.Fatalf("label %d: Verify = %v", l, err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		y := make([]int32, 3)
		if err := s.ReadLabels([]uint32{5, 1337, 1999}, y); !errors.As(err, &d) || d.Node != 1337 || d.File != m.Labels.File || !strings.Contains(err.Error(), "0..9 (num_classes 10)") {
			t.Fatalf("label %d: ReadLabels = %v", l, err)
		}
		if err := s.ReadLabels([]uint32{5, 1999}, y); err != nil {
			t.Fatalf("label %d: ReadLabels of other nodes: %v", l, err)
		}
		s.Close()
	}
}

func TestVerifyOtherGraph(t *testing.T) {
	a, b := newGraph(t, 50, false), newGraph(t, 50, true)
	pack(t, a, Options{DType: Uint8, Dim: 2}, randomBytes(13, 100), nil)
	if err := Verify(b); !errors.Is(err, ErrNoFeatures) {
		t.Fatalf("Verify without a store: %v", err)
	}
	for _, f := range []string{ManifestFile, "features-1.bin", "features-1.crc"} {
		data, _ := os.ReadFile(filepath.Join(a, f))
		os.WriteFile(filepath.Join(b, f), data, 0o644)
	}
	if err := Verify(b); !errors.Is(err, ErrGraphMismatch) {
		t.Fatalf("Verify of a store copied to another graph: %v", err)
	}
	if _, err := Open(b); !errors.Is(err, ErrGraphMismatch) {
		t.Fatalf("Open of a store copied to another graph: %v", err)
	}
}
