package chunkfmt

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Reader reads chunks and adjacency lists of a graph from edges.chunks
// through an io.ReaderAt, trusting a validated manifest for the layout. It
// checks every offset it reads against the chunk's bounds, so a corrupt
// file gives errors, never a panic or a read outside the chunk; it does
// not check CRCs (Verify does). A Reader is safe for concurrent use when
// its io.ReaderAt is.
type Reader struct {
	r   io.ReaderAt
	m   *Manifest
	ix  *Index
	mem []byte // the whole file when memory-mapped: reads are slices of it
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
	return &Reader{r: r, m: m, ix: ix, mem: mem}, nil
}

// NumChunks is the number of chunks.
func (r *Reader) NumChunks() int { return len(r.m.Chunks) }

// ChunkOf returns the chunk holding node, -1 if there is none.
func (r *Reader) ChunkOf(node uint32) int { return r.ix.ChunkOf(node) }

// Chunk returns chunk i's first ChunkReadSize(i) bytes: the header and
// neighbors (BytesUsed) rounded up to SectorSize, which is what a device
// needs. For a memory-mapped graph the bytes are the mapping itself and
// must not be modified.
func (r *Reader) Chunk(i int) ([]byte, error) { return r.ReadChunk(i, nil) }

// ReadChunk is Chunk reading into buf when it is large enough (ignored for
// a memory-mapped graph).
func (r *Reader) ReadChunk(i int, buf []byte) ([]byte, error) {
	if i < 0 || i >= len(r.m.Chunks) {
		return nil, fmt.Errorf("chunkfmt: chunk %d: out of range [0,%d)", i, len(r.m.Chunks))
	}
	off, n := r.m.ChunkOffset(i), r.m.ChunkReadSize(i)
	if r.mem != nil {
		return r.mem[off : off+n : off+n], nil
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := r.r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("chunkfmt: reading chunk %d (%d bytes at %d): %w", i, n, off, err)
	}
	return buf, nil
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
