package chunkfmt

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/internal/hostorder"
)

// WriteIndices streams the graph's CSR adjacency (what CSR returns as
// indices: every node's neighbors, node after node, as little-endian
// uint32) to w, chunk by chunk, holding one chunk at a time, and returns
// indptr (num_nodes+1 entries). Each chunk is checked as ChunkCSR checks
// it before any of its bytes is written. It is how a graph directory is
// handed back to a tool that takes plain CSR (chunkify export).
func (r *Reader) WriteIndices(ctx context.Context, w io.Writer) (indptr []uint64, err error) {
	indptr = make([]uint64, r.m.NumNodes+1)
	for i := range r.m.Chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		adj, err := r.ChunkCSR(i, indptr)
		if err != nil {
			return nil, err
		}
		if err := writeUint32s(w, adj); err != nil {
			return nil, fmt.Errorf("chunkfmt: chunk %d's %d neighbors: %w", i, len(adj), err)
		}
	}
	return indptr, nil
}

// writeUint32s writes a little-endian: as it is on a little-endian host,
// else a piece at a time through a buffer.
func writeUint32s(w io.Writer, a []uint32) error {
	if len(a) == 0 {
		return nil
	}
	if hostorder.LittleEndian {
		_, err := w.Write(hostorder.Bytes(a))
		return err
	}
	buf := make([]byte, 0, 64<<10)
	for len(a) > 0 {
		n := min(len(a), cap(buf)/4)
		buf = buf[:0]
		for _, v := range a[:n] {
			buf = binary.LittleEndian.AppendUint32(buf, v)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		a = a[n:]
	}
	return nil
}
