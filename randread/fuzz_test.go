package randread

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// FuzzLoadOffsets: chunk headers of any bytes (a damaged or foreign
// edges.chunks) never panic loadOffsets; what it accepts is a CSR offset
// array: starting at 0, never decreasing, ending at the manifest's edges.
func FuzzLoadOffsets(f *testing.F) {
	// Two chunks of 512 bytes: nodes 0..1 (3 edges), node 2 (1 edge).
	good := make([]byte, 1024)
	for i, w := range []uint32{2, 0, 5, 7, 8, 1, 2, 0} {
		binary.LittleEndian.PutUint32(good[4*i:], w)
	}
	for i, w := range []uint32{1, 2, 4, 5, 1} {
		binary.LittleEndian.PutUint32(good[512+4*i:], w)
	}
	f.Add(good)
	f.Add(good[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &chunkfmt.Manifest{Version: 1, NumNodes: 3, NumEdges: 4, ChunkSize: 512, Chunks: []chunkfmt.ChunkInfo{
			{Start: 0, End: 2, NNodes: 2, NEdges: 3, BytesUsed: 32, FillBytes: 480},
			{Start: 2, End: 3, NNodes: 1, NEdges: 1, BytesUsed: 20, FillBytes: 492},
		}}
		o, err := loadOffsets(context.Background(), bytes.NewReader(b), m)
		if err != nil {
			return
		}
		if o.indptr[0] != 0 || o.indptr[3] != 4 {
			t.Fatalf("indptr %v", o.indptr)
		}
		for v := 0; v < 3; v++ {
			if o.indptr[v+1] < o.indptr[v] {
				t.Fatalf("indptr %v decreases", o.indptr)
			}
		}
	})
}
