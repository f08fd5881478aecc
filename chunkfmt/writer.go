package chunkfmt

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// castagnoli is the CRC-32C table; hash/crc32 uses the SSE4.2/ARMv8 CRC
// instructions for it where the CPU has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// syncWriter is what the writer needs from a file. It exists so that tests
// can inject write failures (a full disk) through createFile.
type syncWriter interface {
	io.Writer
	Sync() error
	Close() error
}

// createFile creates (truncating) a file for writing. Tests replace it to
// inject faults.
var createFile = func(name string) (syncWriter, error) { return os.Create(name) }

// zeros is the source of fill and padding bytes.
var zeros [64 << 10]byte

const writeBufSize = 1 << 20

// Writer writes a graph directory node by node. Nodes are appended in id
// order 0..numNodes-1; each chunk is built in memory and written when the
// next node does not fit, so memory stays within about one chunk whatever
// the graph's size. Close writes chunks.info and then, last and atomically,
// manifest.json. After any error nothing more is written and the directory
// has no manifest; Close or Abort removes the partial files.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	// CreatedBy is recorded in the manifest's created_by field; set it
	// before Close. It defaults to "streamsampler/chunkfmt".
	CreatedBy string

	dir       string
	numNodes  uint32
	chunkSize int64
	capWords  uint64
	opts      Options

	f  syncWriter
	bw *bufio.Writer

	next  uint32   // id of the next node to append
	start uint32   // first node of the chunk being built
	hdr   []uint32 // [n_nodes, start_node, rel off_0, rel off_1, ...]: becomes the chunk header
	nb    []uint32 // neighbors of the chunk being built

	chunks    []ChunkInfo
	numEdges  uint64
	maxDegree uint32

	err      error // first error; sticky
	closed   bool
	manifest *Manifest
}

// NewWriter starts writing a graph of numNodes nodes into dir (created if
// needed) with chunks of chunkSize bytes, a positive multiple of
// SectorSize. Any manifest already in dir is removed first: from that
// moment the directory is not a graph until Close succeeds.
func NewWriter(dir string, numNodes uint32, chunkSize int64, opts Options) (*Writer, error) {
	if err := checkChunkSize(chunkSize); err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	if numNodes > MaxNodes {
		return nil, fmt.Errorf("chunkfmt: %d nodes: more than the maximum %d", numNodes, MaxNodes)
	}
	if err := opts.normalize(); err != nil {
		return nil, fmt.Errorf("chunkfmt: options: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	mpath := filepath.Join(dir, ManifestFile)
	if err := os.Remove(mpath); err == nil {
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("chunkfmt: removing old manifest: %w", err)
	}
	path := filepath.Join(dir, ChunksFile)
	f, err := createFile(path)
	if err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	return &Writer{
		CreatedBy: "streamsampler/chunkfmt",
		dir:       dir,
		numNodes:  numNodes,
		chunkSize: chunkSize,
		capWords:  uint64(chunkSize / 4),
		opts:      opts,
		f:         f,
		bw:        bufio.NewWriterSize(f, writeBufSize),
		hdr:       []uint32{0, 0},
	}, nil
}

// Next is the id of the node the next Append describes.
func (w *Writer) Next() uint32 { return w.next }

// Append appends the adjacency of the next node (ids in order from 0).
// adj must be sorted ascending (strictly when Options.Dedup), hold ids
// below the number of nodes, and not contain the node itself when
// Options.SelfLoops is "drop". adj is copied; the caller may reuse it.
//
// A node whose adjacency cannot fit in an empty chunk fails with a
// *NodeTooLargeError. Every error is final: the writer accepts nothing
// more, and Close or Abort removes what was written.
func (w *Writer) Append(adj []uint32) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	node := w.next
	if node >= w.numNodes {
		return w.fail(fmt.Errorf("%w: node %d: all %d nodes were already appended", ErrBadAdjacency, node, w.numNodes))
	}
	if err := w.check(node, adj); err != nil {
		return w.fail(err)
	}
	d := uint64(len(adj))
	if headerWords(1)+d > w.capWords {
		return w.fail(&NodeTooLargeError{Node: node, Degree: len(adj), ChunkSize: w.chunkSize, MinChunkSize: MinChunkSizeFor(len(adj))})
	}
	n := uint64(len(w.hdr) - 2)
	if n > 0 && headerWords(n+1)+uint64(len(w.nb))+d > w.capWords {
		if err := w.flush(false); err != nil {
			return w.fail(err)
		}
	}
	if need := uint64(len(w.nb)) + d; need > uint64(cap(w.nb)) {
		// Grow geometrically but never past one chunk's worth of words:
		// with 512 MiB chunks, append's own growth could overshoot by
		// hundreds of MiB.
		nc := min(max(need, 2*uint64(cap(w.nb)), 1<<16), w.capWords)
		nb := make([]uint32, len(w.nb), nc)
		copy(nb, w.nb)
		w.nb = nb
	}
	w.hdr = append(w.hdr, uint32(len(w.nb)))
	w.nb = append(w.nb, adj...)
	w.next++
	w.numEdges += d
	if uint32(d) > w.maxDegree {
		w.maxDegree = uint32(d)
	}
	return nil
}

func (w *Writer) check(node uint32, adj []uint32) error {
	drop := w.opts.SelfLoops == SelfLoopsDrop
	if sortedBelow(adj, w.opts.Dedup, w.numNodes) {
		if !drop {
			return nil
		}
		if _, found := slices.BinarySearch(adj, node); !found {
			return nil
		}
	}
	for i, v := range adj {
		if v >= w.numNodes {
			return fmt.Errorf("%w: node %d: neighbor %d at position %d is not below the number of nodes %d", ErrBadAdjacency, node, v, i, w.numNodes)
		}
		if drop && v == node {
			return fmt.Errorf("%w: node %d: self-loop at position %d but self_loops is %q", ErrBadAdjacency, node, i, SelfLoopsDrop)
		}
		if i > 0 {
			p := adj[i-1]
			if v < p {
				return fmt.Errorf("%w: node %d: neighbor %d at position %d not sorted after %d", ErrBadAdjacency, node, v, i, p)
			}
			if v == p && w.opts.Dedup {
				return fmt.Errorf("%w: node %d: duplicate neighbor %d at position %d but dedup is on", ErrBadAdjacency, node, v, i)
			}
		}
	}
	return fmt.Errorf("chunkfmt: internal error: node %d: adjacency rejected without a defect", node)
}

// flush writes the chunk being built: header, neighbors and zero fill up
// to chunkSize, or, for the last chunk, up to the next sector boundary.
func (w *Writer) flush(last bool) error {
	n := uint32(len(w.hdr) - 2)
	e := uint32(len(w.nb))
	base := uint32(headerWords(uint64(n)))
	w.hdr[0] = n
	w.hdr[1] = w.start
	for i := 2; i < len(w.hdr); i++ {
		w.hdr[i] += base
	}
	w.hdr = append(w.hdr, base+e)
	used := int64(base+e) * 4
	stored := w.chunkSize
	if last {
		stored = roundUp(used)
	}
	crc := uint32(0)
	write := func(b []byte) error {
		crc = crc32.Update(crc, castagnoli, b)
		if _, err := w.bw.Write(b); err != nil {
			return fmt.Errorf("chunkfmt: writing %s: %w", filepath.Join(w.dir, ChunksFile), err)
		}
		return nil
	}
	if err := write(wordBytes(w.hdr)); err != nil {
		return err
	}
	if err := write(wordBytes(w.nb)); err != nil {
		return err
	}
	for fill := stored - used; fill > 0; {
		k := min(fill, int64(len(zeros)))
		if err := write(zeros[:k]); err != nil {
			return err
		}
		fill -= k
	}
	w.chunks = append(w.chunks, ChunkInfo{
		Start: w.start, End: w.start + n, NNodes: n, NEdges: uint64(e),
		BytesUsed: used, FillBytes: stored - used, CRC32C: crc,
	})
	w.start += n
	w.hdr = w.hdr[:2]
	w.nb = w.nb[:0]
	return nil
}

// fail records err as the writer's final error.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// Close finishes the graph: the last chunk, chunks.info, and manifest.json
// (atomically, last). It fails if fewer than numNodes nodes were appended.
// On failure it removes what was written and returns the first error.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	if w.err == nil && w.next < w.numNodes {
		w.err = fmt.Errorf("chunkfmt: closing %s: only %d of %d nodes were appended", w.dir, w.next, w.numNodes)
	}
	if w.err == nil {
		w.err = w.finish()
	}
	if w.err != nil {
		w.Abort()
		w.closed = true
		return w.err
	}
	w.closed = true
	return nil
}

func (w *Writer) finish() error {
	if len(w.hdr) > 2 {
		if err := w.flush(true); err != nil {
			return err
		}
	}
	path := filepath.Join(w.dir, ChunksFile)
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("chunkfmt: writing %s: %w", path, err)
	}
	w.hdr, w.nb = nil, nil
	f := w.f
	w.f = nil
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("chunkfmt: syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("chunkfmt: closing %s: %w", path, err)
	}
	m := &Manifest{
		Version:   FormatVersion,
		NumNodes:  w.numNodes,
		NumEdges:  w.numEdges,
		ChunkSize: w.chunkSize,
		Options:   w.opts,
		Chunks:    w.chunks,
		MaxDegree: w.maxDegree,
		CreatedBy: w.CreatedBy,
	}
	if m.Chunks == nil {
		m.Chunks = []ChunkInfo{}
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("chunkfmt: internal error: writer produced an invalid manifest: %w", err)
	}
	if err := writeSynced(filepath.Join(w.dir, IndexFile), wordBytes(m.Starts())); err != nil {
		return err
	}
	if err := writeManifest(w.dir, m); err != nil {
		return err
	}
	w.manifest = m
	return nil
}

// writeSynced writes b to path and fsyncs it.
func writeSynced(path string, b []byte) error {
	f, err := createFile(path)
	if err != nil {
		return fmt.Errorf("chunkfmt: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("chunkfmt: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("chunkfmt: syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("chunkfmt: closing %s: %w", path, err)
	}
	return nil
}

// Manifest returns the manifest written by a successful Close, nil before.
func (w *Writer) Manifest() *Manifest { return w.manifest }

// Abort stops writing and removes edges.chunks, chunks.info and any
// temporary file. After a successful Close it does nothing, so that
// "defer w.Abort()" is safe.
func (w *Writer) Abort() error {
	if w.closed && w.err == nil {
		return nil
	}
	w.closed = true
	if w.err == nil {
		w.err = ErrClosed
	}
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	w.hdr, w.nb = nil, nil
	var first error
	for _, name := range []string{manifestTemp, IndexFile, ChunksFile} {
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = fmt.Errorf("chunkfmt: abort: %w", err)
		}
	}
	return first
}
