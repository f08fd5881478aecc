package featstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// TestVerifyFlippedBit flips one bit in every block of both data files in
// turn: Verify names the file and the block, and Open still succeeds
// (it checks sizes only) while ReadBlock catches the block.
func TestVerifyFlippedBit(t *testing.T) {
	dir := newGraph(t, 3000, false)
	m := pack(t, dir, Options{DType: Float32, Dim: 3, BlockSize: 8192}, randomBytes(10, 3000*12), randomLabels(10, 3000, 5))
	for _, df := range []*DataFile{&m.Features.DataFile, &m.Labels.DataFile} {
		path := filepath.Join(dir, df.File)
		orig, _ := os.ReadFile(path)
		for i := range df.Blocks() {
			off, n := df.BlockRange(i)
			b := append([]byte(nil), orig...)
			b[off+n/2] ^= 0x10
			os.WriteFile(path, b, 0o644)
			err := Verify(dir)
			var d *DefectError
			if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) || d.File != df.File || d.Block != i || d.Off != off || d.End != off+n {
				t.Fatalf("%s block %d flipped: %v", df.File, i, err)
			}
			if !strings.Contains(err.Error(), df.File) || !strings.Contains(err.Error(), "CRC-32C") {
				t.Fatalf("message %q", err)
			}
			if df == &m.Features.DataFile {
				s, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.ReadBlock(i, nil); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("ReadBlock of flipped block %d: %v", i, err)
				}
				s.Close()
			}
		}
		os.WriteFile(path, orig, 0o644)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyTruncated(t *testing.T) {
	dir := newGraph(t, 1000, false)
	m := pack(t, dir, Options{DType: Int8, Dim: 10, BlockSize: 4096}, randomBytes(11, 10000), randomLabels(11, 1000, 2))
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

// TestVerifyLabelRange rewrites a label beyond num_classes with a
// matching CRC: only the value check can catch it, and it names the node.
func TestVerifyLabelRange(t *testing.T) {
	dir := newGraph(t, 100, false)
	m := pack(t, dir, Options{DType: Uint8, Dim: 1, BlockSize: 4096}, randomBytes(12, 100), randomLabels(12, 100, 4))
	path := filepath.Join(dir, m.Labels.File)
	b, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(b[4*37:], 9)
	os.WriteFile(path, b, 0o644)
	m.Labels.BlockCRCs[0] = crc32c.Checksum(b)
	j, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, ManifestFile), j, 0o644)
	var d *DefectError
	if err := Verify(dir); !errors.As(err, &d) || d.Node != 37 || !strings.Contains(err.Error(), "label 9") {
		t.Fatalf("Verify = %v", err)
	}
}

func TestVerifyOtherGraph(t *testing.T) {
	a, b := newGraph(t, 50, false), newGraph(t, 50, true)
	pack(t, a, Options{DType: Uint8, Dim: 2}, randomBytes(13, 100), nil)
	if err := Verify(b); !errors.Is(err, ErrNoFeatures) {
		t.Fatalf("Verify without a store: %v", err)
	}
	for _, f := range []string{ManifestFile, "features-1.bin"} {
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
