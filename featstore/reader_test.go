package featstore

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// faultReader counts reads and fails the one numbered failAt (from 1),
// with err, or with a short read when err is nil.
type faultReader struct {
	r      io.ReaderAt
	reads  atomic.Int64
	bytes  atomic.Int64
	failAt int64
	err    error
}

func (f *faultReader) ReadAt(p []byte, off int64) (int, error) {
	n := f.reads.Add(1)
	f.bytes.Add(int64(len(p)))
	if n == f.failAt {
		if f.err != nil {
			return 0, f.err
		}
		return len(p) / 2, io.EOF
	}
	return f.r.ReadAt(p, off)
}

func TestReadRowsCoalescesAndFails(t *testing.T) {
	const n, dim = 20000, 16
	rows := randomBytes(15, n*dim)
	m := &Manifest{NumNodes: n, Features: Features{DataFile: DataFile{File: "features-1.bin", Size: n * dim, CRCSpan: dim}, DType: Uint8, Dim: dim, RowBytes: dim}}
	crcs := ChecksumsOf(rows, dim)
	newStore := func(r io.ReaderAt) *Store {
		s, err := NewStore(m, r, nil, crcs, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A dense sorted run: 5000 consecutive rows, shuffled, are 80000
	// bytes: one read.
	ids := make([]uint32, 5000)
	for i := range ids {
		ids[i] = uint32(1000 + i)
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	fr := &faultReader{r: bytes.NewReader(rows)}
	s := newStore(fr)
	dst := make([]byte, len(ids)*dim)
	if err := s.ReadRows(ids, dst); err != nil {
		t.Fatal(err)
	}
	for i, u := range ids {
		if !bytes.Equal(dst[i*dim:(i+1)*dim], rows[int(u)*dim:int(u+1)*dim]) {
			t.Fatalf("row %d differs", i)
		}
	}
	if fr.reads.Load() != 1 || fr.bytes.Load() != 5000*dim {
		t.Fatalf("%d reads of %d bytes for one run of 5000 rows", fr.reads.Load(), fr.bytes.Load())
	}
	// Rows far apart are read one by one, never the gap between them.
	far := []uint32{19999, 0, 10000}
	fr = &faultReader{r: bytes.NewReader(rows)}
	if err := newStore(fr).ReadRows(far, dst); err != nil {
		t.Fatal(err)
	}
	if fr.reads.Load() != 3 || fr.bytes.Load() != 3*dim {
		t.Fatalf("%d reads of %d bytes for 3 distant rows", fr.reads.Load(), fr.bytes.Load())
	}
	boom := errors.New("EIO")
	fr = &faultReader{r: bytes.NewReader(rows), failAt: 2, err: boom}
	if err := newStore(fr).ReadRows(far, dst); !errors.Is(err, boom) {
		t.Fatalf("read error: %v", err)
	}
	fr = &faultReader{r: bytes.NewReader(rows), failAt: 1}
	if err := newStore(fr).ReadRows(far, dst); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short read: %v", err)
	}
	if err := s.ReadRows([]uint32{n}, dst); err == nil {
		t.Fatal("row of node num_nodes read")
	}
	if err := s.ReadRows(far, dst[:2*dim]); err == nil {
		t.Fatal("ReadRows into a short dst succeeded")
	}
	if err := s.ReadLabels(far, make([]int32, 3)); err == nil {
		t.Fatal("ReadLabels of a store without labels succeeded")
	}
}
