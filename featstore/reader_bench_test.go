package featstore

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// BenchmarkReadRows gathers minibatch-sized sets of random rows (1024 of
// 100000 rows of 512 bytes) from memory: the cost of sorting, coalescing
// and copying, without the disk.
func BenchmarkReadRows(b *testing.B) {
	const n, rb = 100000, 512
	m := &Manifest{NumNodes: n, Features: Features{DataFile: DataFile{File: "features-1.bin", Size: n * rb, CRCSpan: rb}, DType: Float32, Dim: rb / 4, RowBytes: rb}}
	data := randomBytes(1, n*rb)
	s, err := NewStore(m, bytes.NewReader(data), nil, ChecksumsOf(data, rb), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	ids := make([]uint32, 1024)
	for i := range ids {
		ids[i] = r.Uint32N(n)
	}
	dst := make([]byte, len(ids)*rb)
	b.SetBytes(int64(len(dst)))
	for b.Loop() {
		if err := s.ReadRows(ids, dst); err != nil {
			b.Fatal(err)
		}
	}
}
