package chunkfmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// Verify checks every invariant of the graph directory dir and returns the
// first defect found, nil if there is none. A missing or invalid manifest
// gives an error wrapping ErrNoManifest or ErrBadManifest; every other
// defect is a *DefectError (errors.Is(err, ErrCorrupt)) naming the file,
// chunk, node and word. It reads every chunk once.
func Verify(dir string) error { return VerifyContext(context.Background(), dir) }

// VerifyContext is Verify, checking ctx between chunks.
func VerifyContext(ctx context.Context, dir string) error {
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	if _, err := LoadIndex(dir, m); err != nil {
		return err
	}
	path := filepath.Join(dir, ChunksFile)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("chunkfmt: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("chunkfmt: %w", err)
	}
	return VerifyReader(ctx, f, st.Size(), m)
}

// VerifyReader checks the content of edges.chunks, read from r of size
// bytes, against the manifest m (which it validates first): the file size,
// then every chunk in order (see VerifyChunk). It returns the first defect.
func VerifyReader(ctx context.Context, r io.ReaderAt, size int64, m *Manifest) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if size != m.FileSize() {
		return sizeDefect(m, size)
	}
	var buf []byte
	for i := range m.Chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := m.ChunkStoredSize(i)
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := r.ReadAt(buf, m.ChunkOffset(i)); err != nil {
			if errors.Is(err, io.EOF) {
				return sizeDefect(m, m.ChunkOffset(i))
			}
			return fmt.Errorf("chunkfmt: reading chunk %d: %w", i, err)
		}
		if err := VerifyChunk(m, i, buf); err != nil {
			return err
		}
	}
	return nil
}

// Verify checks every chunk of the graph (see VerifyReader).
func (g *Graph) Verify(ctx context.Context) error {
	if g.mm == nil && len(g.Manifest.Chunks) > 0 {
		return errGraphClosed
	}
	return VerifyReader(ctx, g.Reader.r, int64(len(g.Reader.mem)), g.Manifest)
}

// VerifyChunk checks chunk i of m, given its stored bytes (ChunkStoredSize
// of them): the header against the manifest, offsets, neighbors (below
// num_nodes, sorted, strictly under dedup, no self-loop under "drop"),
// zero fill, and last the CRC-32C. Structure comes before the CRC so that
// a defect is named by what is wrong rather than only by its checksum.
func VerifyChunk(m *Manifest, i int, stored []byte) error {
	c := m.Chunks[i]
	bad := func(node, word int64, format string, args ...any) error {
		return defect(m, ChunksFile, i, node, word, format, args...)
	}
	if int64(len(stored)) != m.ChunkStoredSize(i) {
		return bad(-1, -1, "%d bytes, want %d", len(stored), m.ChunkStoredSize(i))
	}
	w := Words(stored)
	nw := uint64(len(w))
	if w[0] != c.NNodes {
		return bad(-1, 0, "n_nodes %d at word 0, manifest and index say %d", w[0], c.NNodes)
	}
	if w[1] != c.Start {
		return bad(-1, 1, "start_node %d at word 1, manifest and index say %d", w[1], c.Start)
	}
	hdr := headerWords(uint64(c.NNodes))
	if hdr > nw {
		return bad(-1, -1, "header of %d words does not fit in the chunk's %d words", hdr, nw)
	}
	if uint64(w[2]) != hdr {
		return bad(int64(c.Start), 2, "off_0 %d at word 2, want %d (end of the header)", w[2], hdr)
	}
	for k := uint64(0); k < uint64(c.NNodes); k++ {
		word := 2 + k
		if w[word+1] < w[word] {
			return bad(int64(c.Start)+int64(k), int64(word+1), "offset %d at word %d is before the previous offset %d", w[word+1], word+1, w[word])
		}
	}
	end := uint64(w[2+c.NNodes])
	if end > nw {
		return bad(int64(c.End)-1, int64(2+c.NNodes), "last offset %d at word %d is beyond the chunk's %d words", end, 2+c.NNodes, nw)
	}
	if used := int64(end) * 4; used != c.BytesUsed {
		return bad(-1, int64(2+c.NNodes), "neighbors end at word %d (%d bytes used), manifest says bytes_used %d", end, used, c.BytesUsed)
	}
	if e := end - hdr; e != c.NEdges {
		return bad(-1, -1, "%d neighbors, manifest says n_edges %d", e, c.NEdges)
	}
	if err := checkNeighbors(m, c, w, bad); err != nil {
		return err
	}
	var acc uint32
	for _, x := range w[end:] {
		acc |= x
	}
	if acc != 0 {
		for j := end; j < nw; j++ {
			if w[j] != 0 {
				return bad(-1, int64(j), "nonzero word %#x at word %d in the zero fill (which starts at word %d)", w[j], j, end)
			}
		}
	}
	if got := crc32c.Checksum(stored); got != c.CRC32C {
		return bad(-1, -1, "CRC-32C %#08x, manifest says %#08x", got, c.CRC32C)
	}
	return nil
}

// checkNeighbors checks every adjacency list of a chunk whose offsets are
// known to be monotone and inside w. A branch-light pass proves a list
// sorted with its largest id in range; only a list that fails it is
// rescanned word by word, so that the first defect is the one reported.
func checkNeighbors(m *Manifest, c ChunkInfo, w []uint32, bad func(node, word int64, format string, args ...any) error) error {
	strict := m.Options.Dedup
	drop := m.Options.SelfLoops == SelfLoopsDrop
	offs := w[2 : 3+c.NNodes]
	for k := range c.NNodes {
		node := c.Start + k
		lo, hi := offs[k], offs[k+1]
		a := w[lo:hi]
		if len(a) == 0 {
			continue
		}
		ok := sortedBelow(a, strict, m.NumNodes)
		if ok && drop {
			_, found := slices.BinarySearch(a, node)
			ok = !found
		}
		if ok {
			continue
		}
		for j := range a {
			v, word := a[j], int64(lo)+int64(j)
			if v >= m.NumNodes {
				return bad(int64(node), word, "neighbor %d at word %d is not below num_nodes %d", v, word, m.NumNodes)
			}
			if drop && v == node {
				return bad(int64(node), word, "self-loop at word %d but self_loops is %q", word, SelfLoopsDrop)
			}
			if j > 0 {
				p := a[j-1]
				if v < p {
					return bad(int64(node), word, "neighbor %d at word %d not sorted after %d", v, word, p)
				}
				if v == p && strict {
					return bad(int64(node), word, "duplicate neighbor %d at word %d but dedup is on", v, word)
				}
			}
		}
		return bad(int64(node), int64(lo), "internal error: adjacency rejected without a defect")
	}
	return nil
}
