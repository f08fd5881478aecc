package randread

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// headerReadSize is how many bytes of a chunk's header loadOffsets reads
// at a time: large enough to stream, small enough to stay in cache.
const headerReadSize = 1 << 20

// offsets are a graph's row offsets: indptr (NumNodes+1 global CSR
// offsets, 8 bytes per node) and, per chunk, the byte in edges.chunks of
// global edge 0 as if the chunk held every edge (base), so that edge e of
// a node of chunk c is the word at byte base[c] + 4e.
type offsets struct {
	indptr []uint64
	base   []int64
}

// loadOffsets reads every chunk's header from r (edges.chunks, path in
// errors) and checks it against the manifest: word 0 = n_nodes, word 1 =
// start, off_0 = 3 + n_nodes, offsets that never decrease, and off_n =
// bytes_used/4. The error is a *chunkfmt.DefectError naming the chunk,
// the node and the word.
func loadOffsets(ctx context.Context, r io.ReaderAt, m *chunkfmt.Manifest) (*offsets, error) {
	o := &offsets{indptr: make([]uint64, uint64(m.NumNodes)+1), base: make([]int64, len(m.Chunks))}
	buf := make([]byte, headerReadSize)
	var first uint64 // the chunk's first global edge
	for c, ci := range m.Chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bad := func(node, word int64, format string, args ...any) error {
			return &chunkfmt.DefectError{File: chunkfmt.ChunksFile, Chunk: c, Start: ci.Start, End: ci.End, Node: node, Word: word, What: fmt.Sprintf(format, args...)}
		}
		chunkAt := m.ChunkOffset(c)
		words := int64(3) + int64(ci.NNodes) // n_nodes, start, off_0..off_n
		hdr := 3 + uint64(ci.NNodes)
		o.base[c] = chunkAt + 4*int64(hdr) - 4*int64(first)
		var prev uint64
		for w := int64(0); w < words; {
			n := min(words-w, int64(len(buf))/4)
			b := buf[:4*n]
			if _, err := r.ReadAt(b, chunkAt+4*w); err != nil {
				return nil, fmt.Errorf("randread: reading the header of chunk %d (nodes %d..%d) at byte %d: %w", c, ci.Start, ci.End-1, chunkAt+4*w, err)
			}
			for i := int64(0); i < n; i++ {
				x := uint64(binary.LittleEndian.Uint32(b[4*i:]))
				switch word := w + i; {
				case word == 0:
					if x != uint64(ci.NNodes) {
						return nil, bad(-1, 0, "header word 0 (n_nodes) is %d, manifest says %d", x, ci.NNodes)
					}
				case word == 1:
					if x != uint64(ci.Start) {
						return nil, bad(-1, 1, "header word 1 (start node) is %d, manifest says %d", x, ci.Start)
					}
				case word == 2:
					if x != hdr {
						return nil, bad(int64(ci.Start), 2, "off_0 is %d, want 3 + n_nodes = %d", x, hdr)
					}
					prev = x
				default:
					j := word - 2 // off_j: node start+j-1 ends, start+j begins
					if x < prev {
						return nil, bad(int64(ci.Start)+j-1, word, "offset %d below the previous %d: offsets never decrease", x, prev)
					}
					o.indptr[int64(ci.Start)+j] = first + (x - hdr)
					if j == int64(ci.NNodes) && 4*x != uint64(ci.BytesUsed) {
						return nil, bad(-1, word, "off_%d (one past the last neighbor) is %d, want bytes_used/4 = %d", j, x, ci.BytesUsed/4)
					}
					prev = x
				}
			}
			w += n
		}
		o.indptr[ci.Start] = first
		first += ci.NEdges
		if o.indptr[ci.End] != first {
			return nil, bad(-1, words-1, "the offsets hold %d edges, manifest says %d", o.indptr[ci.End]-o.indptr[ci.Start], ci.NEdges)
		}
	}
	return o, nil
}
