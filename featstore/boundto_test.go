package featstore

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// TestBoundToFingerprint: a store bound to a given fingerprint (a node
// type of a heterogeneous graph) needs no manifest.json beside it, opens
// and verifies against that fingerprint only, and delivers what was
// packed.
func TestBoundToFingerprint(t *testing.T) {
	dir := t.TempDir()
	fp := chunkfmt.Fingerprint{NumNodes: 5, NumEdges: 40, Chunks: 3, ChunkCRCs: 0xabcdef}
	w, err := Create(dir, Options{DType: Float32, Dim: 2, Labels: true, Graph: &fp})
	if err != nil {
		t.Fatal(err)
	}
	rows := randomBytes(3, 5*8)
	if err := w.Append(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendLabels([]int32{0, 1, -1, 2, 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFor(dir, fp)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if err := s.ReadRows([]uint32{3}, got); err != nil || !slices.Equal(got, rows[24:32]) {
		t.Fatalf("row 3: %v %v", got, err)
	}
	s.Close()
	if err := VerifyFor(context.Background(), dir, fp); err != nil {
		t.Fatal(err)
	}
	other := fp
	other.ChunkCRCs++
	if _, err := OpenFor(dir, other); !errors.Is(err, ErrGraphMismatch) {
		t.Errorf("OpenFor another fingerprint: %v", err)
	}
	if err := VerifyFor(context.Background(), dir, other); !errors.Is(err, ErrGraphMismatch) {
		t.Errorf("VerifyFor another fingerprint: %v", err)
	}
	// Bound to no graph directory: Open, which reads dir's manifest.json,
	// refuses it.
	if _, err := Open(dir); !errors.Is(err, chunkfmt.ErrNoManifest) {
		t.Errorf("Open: %v", err)
	}
}
