package chunkfmt

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
)

// Reader reads chunks and adjacency lists of a graph from edges.chunks
// through an io.ReaderAt, trusting a validated manifest for the layout.
//
// Every chunk's CRC-32C is checked before any of its content is returned
// (Manifest.CheckChunk; a mismatch is a *ChecksumError, errors.Is
// ErrChecksum): ReadChunk checks the bytes it read; Neighbors and Degree
// read and check a chunk's ChunkReadSize bytes the first time they touch
// it, and remember that it passed. It also checks every offset it reads
// against the chunk's bounds, so a corrupt file gives errors, never a
// panic, a read outside the chunk or a different adjacency. Only Verify
// checks the format's other invariants (sorted lists, ids below
// num_nodes, zero fill). A Reader is safe for concurrent use when its
// io.ReaderAt is.
type Reader struct {
	r    io.ReaderAt
	m    *Manifest
	ix   *Index
	mem  []byte // the whole file when memory-mapped: reads are slices of it
	file string // named in checksum errors
	// checked[i] is set once chunk i's CRC-32C has matched; for a
	// memory-mapped file the bytes then used are the ones checked.
	checked []atomic.Bool
}

// NewReader returns a Reader over r, the content of edges.chunks described
// by m. When r has a Size() int64 method (bytes.Reader, io.SectionReader)
// its size must match the manifest.
func NewReader(r io.ReaderAt, m *Manifest) (*Reader, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if s, ok := r.(interface{ Size() int64 }); ok && s.Size() != m.FileSize() {
		return nil, defect(m, ChunksFile, -1, -1, -1, "size %d bytes, want %d for %d chunks", s.Size(), m.FileSize(), len(m.Chunks))
	}
	return newReader(r, m, nil)
}

func newReader(r io.ReaderAt, m *Manifest, mem []byte) (*Reader, error) {
	ix, err := NewIndex(m.Starts(), m.NumNodes)
	if err != nil {
		return nil, err
	}
	return &Reader{r: r, m: m, ix: ix, mem: mem, file: ChunksFile, checked: make([]atomic.Bool, len(m.Chunks))}, nil
}

// NumChunks is the number of chunks.
func (r *Reader) NumChunks() int { return len(r.m.Chunks) }

// ChunkOf returns the chunk holding node, -1 if there is none.
func (r *Reader) ChunkOf(node uint32) int { return r.ix.ChunkOf(node) }

// Chunk returns chunk i's first ChunkReadSize(i) bytes: the header and
// neighbors (BytesUsed) rounded up to SectorSize, which is what a device
// needs, after checking their CRC-32C. For a memory-mapped graph the bytes
// are the mapping itself and must not be modified.
func (r *Reader) Chunk(i int) ([]byte, error) { return r.ReadChunk(i, nil) }

// ReadChunk is Chunk reading into buf when it is large enough (ignored for
// a memory-mapped graph, whose chunks are checked once).
func (r *Reader) ReadChunk(i int, buf []byte) ([]byte, error) {
	if i < 0 || i >= len(r.m.Chunks) {
		return nil, fmt.Errorf("chunkfmt: chunk %d: out of range [0,%d)", i, len(r.m.Chunks))
	}
	off, n := r.m.ChunkOffset(i), r.m.ChunkReadSize(i)
	if r.mem != nil {
		b := r.mem[off : off+n : off+n]
		if err := r.checkOnce(i, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := r.r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("chunkfmt: reading chunk %d (%d bytes at %d): %w", i, n, off, err)
	}
	// Fresh bytes are checked every time: they are what the caller uses.
	if err := r.m.CheckChunk(r.file, i, buf); err != nil {
		return nil, err
	}
	r.checked[i].Store(true)
	return buf, nil
}

// checkOnce checks chunk i's bytes b unless the chunk has passed before.
func (r *Reader) checkOnce(i int, b []byte) error {
	if r.checked[i].Load() {
		return nil
	}
	if err := r.m.CheckChunk(r.file, i, b); err != nil {
		return err
	}
	r.checked[i].Store(true)
	return nil
}

// ensureChecked makes sure chunk c has passed its CRC check before
// Neighbors or Degree use any of its words, reading it once if needed.
func (r *Reader) ensureChecked(c int) error {
	if r.checked[c].Load() {
		return nil
	}
	_, err := r.ReadChunk(c, nil)
	return err
}

// ChunkWords returns chunk i as little-endian words (see Chunk and Words).
func (r *Reader) ChunkWords(i int) ([]uint32, error) {
	b, err := r.Chunk(i)
	if err != nil {
		return nil, err
	}
	return Words(b), nil
}

// span locates node's adjacency: its chunk and the word range [lo, hi)
// inside it, checked against the chunk's header and used bytes.
func (r *Reader) span(node uint32) (c int, lo, hi uint32, err error) {
	c = r.ix.ChunkOf(node)
	if c < 0 {
		return -1, 0, 0, fmt.Errorf("chunkfmt: node %d: not below the number of nodes %d", node, r.m.NumNodes)
	}
	if err := r.ensureChecked(c); err != nil {
		return c, 0, 0, err
	}
	ci := &r.m.Chunks[c]
	i := int64(node - ci.Start)
	word := 2 + i
	pos := r.m.ChunkOffset(c) + word*4
	var b []byte
	if r.mem != nil {
		b = r.mem[pos : pos+8]
	} else {
		var a [8]byte
		if _, err := r.r.ReadAt(a[:], pos); err != nil {
			return c, 0, 0, fmt.Errorf("chunkfmt: node %d: reading offsets of chunk %d: %w", node, c, err)
		}
		b = a[:]
	}
	lo, hi = binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	hdr := headerWords(uint64(ci.NNodes))
	used := uint64(ci.BytesUsed / 4)
	if uint64(lo) < hdr || hi < lo || uint64(hi) > used {
		return c, 0, 0, defect(r.m, ChunksFile, c, int64(node), word,
			"offsets [%d,%d) at word %d outside the chunk's neighbors [%d,%d)", lo, hi, word, hdr, used)
	}
	return c, lo, hi, nil
}

// Degree returns node's number of neighbors, reading only its offsets.
func (r *Reader) Degree(node uint32) (int, error) {
	_, lo, hi, err := r.span(node)
	if err != nil {
		return 0, err
	}
	return int(hi - lo), nil
}

// Neighbors returns node's adjacency, reading only its two header offsets
// and its neighbors. For a memory-mapped graph on a little-endian host the
// slice points into the mapping (no copy) and must not be modified.
func (r *Reader) Neighbors(node uint32) ([]uint32, error) {
	c, lo, hi, err := r.span(node)
	if err != nil {
		return nil, err
	}
	return r.words(node, c, lo, hi)
}

// words returns words [lo, hi) of chunk c, node's adjacency.
func (r *Reader) words(node uint32, c int, lo, hi uint32) ([]uint32, error) {
	pos := r.m.ChunkOffset(c) + int64(lo)*4
	n := int64(hi-lo) * 4
	if r.mem != nil {
		return Words(r.mem[pos : pos+n : pos+n]), nil
	}
	b := make([]byte, n)
	if _, err := r.r.ReadAt(b, pos); err != nil {
		return nil, fmt.Errorf("chunkfmt: node %d: reading neighbors in chunk %d: %w", node, c, err)
	}
	return Words(b), nil
}

// CSR reads the whole graph into CSR arrays: node v's neighbors are
// indices[indptr[v]:indptr[v+1]]. Every chunk is CRC-checked as it is
// read, and every neighbor id is checked against num_nodes (which a
// consistent manifest with a wrong CRC could otherwise pass on), so the
// arrays are safe to hand to a kernel that indexes by id; the error, a
// *DefectError, names the chunk, node and word (ChunkCSR).
func (r *Reader) CSR() (indptr []uint64, indices []uint32, err error) {
	indptr = make([]uint64, r.m.NumNodes+1)
	indices = make([]uint32, 0, r.m.NumEdges)
	for i := range r.m.Chunks {
		adj, err := r.ChunkCSR(i, indptr)
		if err != nil {
			return nil, nil, err
		}
		indices = append(indices, adj...)
	}
	return indptr, indices, nil
}

// ChunkCSR returns chunk i's part of the graph's CSR without copying its
// adjacency: the neighbors of its nodes back to back in node order (for a
// memory-mapped graph on a little-endian host, a slice of the mapping that
// must not be modified), and it fills indptr[start+1 .. start+n_nodes] from
// the chunk's offsets, given indptr[start] (the number of edges of the
// chunks before it; indptr has num_nodes+1 entries). Calling it for chunks
// 0, 1, … in order and appending the slices builds what CSR returns, so a
// caller can stream a graph chunk by chunk (to a GPU, say) holding only
// indptr.
//
// The chunk's CRC-32C is checked first (ReadChunk), then its header
// against the manifest, every node's offsets against the chunk's bounds,
// and every neighbor id against num_nodes; an error is a *ChecksumError or
// a *DefectError naming the chunk, node and word.
func (r *Reader) ChunkCSR(i int, indptr []uint64) ([]uint32, error) {
	if uint64(len(indptr)) != uint64(r.m.NumNodes)+1 {
		return nil, fmt.Errorf("chunkfmt: ChunkCSR: indptr has %d entries, want num_nodes+1 = %d", len(indptr), uint64(r.m.NumNodes)+1)
	}
	b, err := r.ReadChunk(i, nil)
	if err != nil {
		return nil, err
	}
	w := ChunkView(Words(b))
	ci := &r.m.Chunks[i]
	if len(w) < MinHeaderWords || w.NumNodes() != ci.NNodes || w.StartNode() != ci.Start {
		return nil, defect(r.m, ChunksFile, i, -1, 0, "header does not match the manifest's %d nodes from %d", ci.NNodes, ci.Start)
	}
	hdr := w.HeaderWords()
	used := uint64(ci.BytesUsed / 4)
	if hdr > used || used > uint64(len(w)) {
		return nil, defect(r.m, ChunksFile, i, -1, -1, "header of %d words outside the chunk's %d used words", hdr, used)
	}
	n := r.m.NumNodes
	base := indptr[ci.Start]
	for j := uint32(0); j < ci.NNodes; j++ {
		v := ci.Start + j
		lo, hi := w.Span(j)
		if uint64(lo) < hdr || hi < lo || uint64(hi) > used {
			word := int64(2 + j)
			return nil, defect(r.m, ChunksFile, i, int64(v), word,
				"offsets [%d,%d) at word %d outside the chunk's neighbors [%d,%d)", lo, hi, word, hdr, used)
		}
		for k, u := range w[lo:hi] {
			if u >= n {
				return nil, defect(r.m, ChunksFile, i, int64(v), int64(lo)+int64(k),
					"neighbor %d at word %d is not below num_nodes %d", u, int64(lo)+int64(k), n)
			}
		}
		indptr[v+1] = base + uint64(hi) - uint64(w[2])
	}
	if ci.NNodes == 0 {
		return w[:0:0], nil
	}
	lo, hi := w[2], w[2+ci.NNodes]
	return w[lo:hi:hi], nil
}
