package chunkfmt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

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

	next   uint32   // id of the next node to append
	start  uint32   // first node of the chunk being built
	hdr    []uint32 // [n_nodes, start_node, rel off_0, rel off_1, ...]: becomes the chunk header
	nb     []uint32 // neighbors of the chunk being built
	hint   uint64   // SizeHint's bound on the neighbor words still to come
	hinted bool

	// Streaming: when SizeHint shows that every node left fits in the
	// chunk being started, that chunk is the last one and its node count
	// is known, hence where its neighbors start. They then go straight to
	// the file (after a zero placeholder for the header, written for real
	// at the end) instead of into nb: no chunk buffer, and the write to
	// the page cache overlaps the caller's work instead of following it.
	wa       io.WriterAt // the file, when it supports positioned writes
	off      int64       // file offset of the chunk being built
	stream   bool
	streamed uint64  // neighbors streamed so far in this chunk
	tee      *crcTee // under bw: CRCs the streamed chunk's bytes after its header

	// Background fsync: every syncEvery bytes written, an fsync runs in
	// a goroutine so that the device writes the file while the caller
	// fills the rest, and the final fsync only has the tail left.
	unsynced int64
	syncing  chan error // the fsync in flight, nil when none

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
	wa, _ := f.(io.WriterAt)
	tee := &crcTee{w: f, from: -1}
	return &Writer{
		CreatedBy: "streamsampler/chunkfmt",
		dir:       dir,
		numNodes:  numNodes,
		chunkSize: chunkSize,
		capWords:  uint64(chunkSize / 4),
		opts:      opts,
		f:         f,
		bw:        bufio.NewWriterSize(tee, writeBufSize),
		tee:       tee,
		hdr:       []uint32{0, 0},
		wa:        wa,
	}, nil
}

// SizeHint tells the writer that the nodes still to be appended hold at
// most about words neighbors in all, so that it can size its chunk buffer
// once (min(chunk size, words)) instead of growing it: growing copies the
// buffer and, for a large chunk, briefly holds the old and new copies.
// A hint larger than what comes only costs memory.
//
// The bound must hold: once the writer streams the last chunk (see
// Writer's comment on streaming) a node beyond it fails the Append.
func (w *Writer) SizeHint(words uint64) { w.hint, w.hinted = words, true }

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
	if n := uint64(len(w.hdr) - 2); !w.stream && n > 0 && headerWords(n+1)+uint64(len(w.nb))+d > w.capWords {
		if err := w.flush(false); err != nil {
			return w.fail(err)
		}
	}
	if len(w.hdr) == 2 && !w.stream && w.hinted && w.wa != nil {
		if rest := uint64(w.numNodes - node); headerWords(rest)+w.hint <= w.capWords {
			if err := w.startStream(rest); err != nil {
				return w.fail(err)
			}
		}
	}
	if w.stream {
		if d > w.hint {
			return w.fail(fmt.Errorf("chunkfmt: node %d: %d neighbors, more than the %d that SizeHint left", node, d, w.hint))
		}
		w.hdr = append(w.hdr, uint32(w.streamed))
		if err := w.put(wordBytes(adj)); err != nil {
			return w.fail(err)
		}
		w.streamed += d
		w.hint -= d
		w.next++
		w.numEdges += d
		if uint32(d) > w.maxDegree {
			w.maxDegree = uint32(d)
		}
		return nil
	}
	if need := uint64(len(w.nb)) + d; need > uint64(cap(w.nb)) {
		// Grow geometrically but never past one chunk's worth of words:
		// with 512 MiB chunks, append's own growth could overshoot by
		// hundreds of MiB.
		nc := min(max(need, 2*uint64(cap(w.nb)), 1<<16, uint64(len(w.nb))+w.hint), w.capWords)
		nb := make([]uint32, len(w.nb), nc)
		copy(nb, w.nb)
		w.nb = nb
		if w.hint > 0 && cap(w.hdr) == 2 {
			// The header grows by one word per node: size it with the
			// same bound (nodes left, capped at one chunk).
			hdr := make([]uint32, len(w.hdr), min(uint64(w.numNodes-node)+3, w.capWords))
			copy(hdr, w.hdr)
			w.hdr = hdr
		}
	}
	w.hint -= min(w.hint, d)
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

// startStream begins the last chunk, of nodes nodes, in streaming mode:
// a placeholder for its header, then neighbors as they are appended.
func (w *Writer) startStream(nodes uint64) error {
	w.stream, w.streamed = true, 0
	w.tee.from, w.tee.crc = w.off+int64(headerWords(nodes))*4, 0
	if uint64(cap(w.hdr)) < headerWords(nodes) {
		hdr := make([]uint32, len(w.hdr), headerWords(nodes))
		copy(hdr, w.hdr)
		w.hdr = hdr
	}
	w.nb = nil
	for left := int64(headerWords(nodes)) * 4; left > 0; {
		k := min(left, int64(len(zeros)))
		if _, err := w.bw.Write(zeros[:k]); err != nil {
			return fmt.Errorf("chunkfmt: writing %s: %w", filepath.Join(w.dir, ChunksFile), err)
		}
		left -= k
	}
	return nil
}

// put writes b after the header of a streamed chunk. The CRC is taken
// below the bufio buffer, over its 1 MiB flushes: per node (a few dozen
// bytes) the call overhead would cost more than the checksum.
func (w *Writer) put(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("chunkfmt: writing %s: %w", filepath.Join(w.dir, ChunksFile), err)
	}
	if w.unsynced += int64(len(b)); w.unsynced >= syncEvery {
		return w.backgroundSync()
	}
	return nil
}

// crcTee passes writes to w and keeps the CRC-32C of the bytes at file
// offsets from onwards (from < 0: none).
type crcTee struct {
	w    io.Writer
	pos  int64 // bytes passed so far
	from int64
	crc  uint32
}

func (t *crcTee) Write(b []byte) (int, error) {
	n, err := t.w.Write(b)
	if t.from >= 0 {
		if skip := t.from - t.pos; skip < int64(n) {
			t.crc = crc32c.Update(t.crc, b[max(skip, 0):n])
		}
	}
	t.pos += int64(n)
	return n, err
}

// syncEvery is how many bytes are written between background fsyncs (a
// variable for the fault tests).
var syncEvery int64 = 64 << 20

// backgroundSync starts an fsync of what was written so far when
// syncEvery bytes have been written since the last one and none is in
// flight, and reports the failure of a finished one.
func (w *Writer) backgroundSync() error {
	if w.syncing != nil {
		select {
		case err := <-w.syncing:
			w.syncing = nil
			if err != nil {
				return fmt.Errorf("chunkfmt: syncing %s: %w", filepath.Join(w.dir, ChunksFile), err)
			}
		default:
			return nil
		}
	}
	if w.unsynced >= syncEvery {
		w.unsynced = 0
		ch := make(chan error, 1)
		f := w.f
		go func() { ch <- f.Sync() }()
		w.syncing = ch
	}
	return nil
}

// waitSync waits for the background fsync in flight, if any.
func (w *Writer) waitSync() error {
	if w.syncing == nil {
		return nil
	}
	err := <-w.syncing
	w.syncing = nil
	if err != nil {
		return fmt.Errorf("chunkfmt: syncing %s: %w", filepath.Join(w.dir, ChunksFile), err)
	}
	return nil
}

// flushStream finishes a streamed chunk: zero fill to the sector
// boundary, then the real header over the placeholder; the chunk's CRC
// joins the header's CRC to that of the rest.
func (w *Writer) flushStream() error {
	n := uint32(len(w.hdr) - 2)
	e := w.streamed
	base := headerWords(uint64(n))
	if uint64(len(w.hdr)+1) != base || uint64(w.numNodes-w.start) != uint64(n) {
		return fmt.Errorf("chunkfmt: internal error: streamed chunk has %d nodes, planned %d", n, w.numNodes-w.start)
	}
	w.hdr[0] = n
	w.hdr[1] = w.start
	for i := 2; i < len(w.hdr); i++ {
		w.hdr[i] += uint32(base)
	}
	w.hdr = append(w.hdr, uint32(base+e))
	used := int64(base+e) * 4
	stored := roundUp(used)
	for fill := stored - used; fill > 0; {
		k := min(fill, int64(len(zeros)))
		if err := w.put(zeros[:k]); err != nil {
			return err
		}
		fill -= k
	}
	path := filepath.Join(w.dir, ChunksFile)
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("chunkfmt: writing %s: %w", path, err)
	}
	hb := wordBytes(w.hdr)
	if _, err := w.wa.WriteAt(hb, w.off); err != nil {
		return fmt.Errorf("chunkfmt: writing %s: %w", path, err)
	}
	crc := crc32c.Combine(crc32c.Update(0, hb), w.tee.crc, stored-int64(len(hb)))
	w.tee.from = -1
	w.chunks = append(w.chunks, ChunkInfo{
		Start: w.start, End: w.start + n, NNodes: n, NEdges: e,
		BytesUsed: used, FillBytes: stored - used, CRC32C: crc,
	})
	w.start += n
	w.off += stored
	w.hdr = w.hdr[:2]
	w.stream = false
	return nil
}

// flush writes the chunk being built: header, neighbors and zero fill up
// to chunkSize, or, for the last chunk, up to the next sector boundary.
func (w *Writer) flush(last bool) error {
	if w.stream {
		return w.flushStream()
	}
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
		crc = crc32c.Update(crc, b)
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
	w.off += stored
	w.hdr = w.hdr[:2]
	w.nb = w.nb[:0]
	w.unsynced += stored
	return w.backgroundSync()
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
	if err := w.waitSync(); err != nil {
		return err
	}
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
		w.waitSync()
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
