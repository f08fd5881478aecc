package fullscan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// Sentinel errors, for callers that branch on why a pass stopped.
var (
	// ErrOptions is wrapped by every error about Options.
	ErrOptions = errors.New("fullscan: bad options")
	// ErrClosed: Next after Close.
	ErrClosed = errors.New("fullscan: scan closed")
)

// DefaultTableBytes is Options.TableBytes' default: 0, the hash table
// sized by the minibatch (see relabel, BenchmarkScan).
const DefaultTableBytes = 0

// readPiece is the largest single read of a chunk: a chunk is read in
// pieces of this size, one after another, as dd bs=4M would (a piece per
// request keeps the request queue short and the first bytes early).
const readPiece = 8 << 20

// align is the alignment of the chunk buffers: O_DIRECT needs the logical
// block size (512 on the disks chunkfmt's SectorSize is chosen for); a
// page is safe everywhere.
const align = 4096

// Options say how a pass cuts and reads the graph.
type Options struct {
	// BatchSize is the number of consecutive node ids per minibatch (the
	// last may be short); at least 1.
	BatchSize int
	// EdgeIDs: fill Batch.EdgeIDs (8 bytes per edge).
	EdgeIDs bool
	// Buffers is the number of chunk buffers: 2 (the default, 0) reads
	// the next chunk while the current one is cut; 1 reads and cuts in
	// turn.
	Buffers int
	// TableBytes allows a dense relabel table over every node id (8
	// bytes per node, per worker) where it is at most this many bytes;
	// otherwise (0, the default, or negative) a hash table sized by the
	// minibatch.
	TableBytes int64
	// Workers relabel minibatches in parallel (each minibatch's
	// adjacency is copied out of the chunks first, in order); 0 means
	// GOMAXPROCS.
	Workers int
}

func (o Options) check() error {
	if o.BatchSize < 1 {
		return fmt.Errorf("%w: batch size %d, want at least 1", ErrOptions, o.BatchSize)
	}
	if o.Buffers < 0 {
		return fmt.Errorf("%w: %d chunk buffers, want 0 (the default, 2) or more", ErrOptions, o.Buffers)
	}
	if o.Workers < 0 {
		return fmt.Errorf("%w: %d workers, want 0 (GOMAXPROCS) or more", ErrOptions, o.Workers)
	}
	return nil
}

// Batch is one minibatch of a pass: nodes [Start, End) with every
// in-neighbor (see the package doc for the order).
type Batch struct {
	// Index is the minibatch's position in the pass (Start / BatchSize).
	Index int
	// Start and End delimit the seeds, consecutive node ids.
	Start, End uint32
	// NID is the seeds in order, then every other neighbor in order of
	// first appearance: PyG's n_id, DGL's block's srcdata[NID].
	NID []uint32
	// EdgeSrc (into NID) and EdgeDst (into the seeds) are the edges, by
	// destination, then CSR position.
	EdgeSrc, EdgeDst []int32
	// EdgeIDs is each edge's position in the stored CSR (nil without
	// Options.EdgeIDs).
	EdgeIDs []int64
}

// NumSeeds is End − Start: PyG's batch_size.
func (b *Batch) NumSeeds() int { return int(b.End - b.Start) }

// Seeds returns the seeds: NID's first NumSeeds entries.
func (b *Batch) Seeds() []uint32 { return b.NID[:b.NumSeeds()] }

// Stats are what a pass has read so far.
type Stats struct {
	Chunks    int           `json:"chunks"`     // chunks read and checked
	BytesRead int64         `json:"bytes_read"` // their bytes (each chunk's read size)
	ReadTime  time.Duration `json:"read_ns"`    // time the reader spent reading and checking
	Direct    bool          `json:"o_direct"`   // whether edges.chunks is read with O_DIRECT
	Batches   int           `json:"batches"`    // minibatches returned
	Edges     int64         `json:"edges"`      // their edges
}

// Scan is one pass over a graph directory. Next returns its minibatches
// in order; Close stops it. Not safe for concurrent use.
type Scan struct {
	m         *chunkfmt.Manifest
	path      string
	f         *os.File
	direct    bool
	o         Options
	n         uint32   // nodes
	firstEdge []uint64 // per chunk, the global index of its first edge
	hdr       []uint64 // per chunk, its header words (3 + n_nodes)

	cancel context.CancelFunc
	full   chan *chunkBuf // chunks read and checked, in order (or an error)
	free   chan *chunkBuf
	done   chan struct{} // closed when the reader goroutine returns
	cur    *chunkBuf     // the cutter's chunk
	next   uint32        // the next minibatch's first node (the cutter's)

	order   chan *raw // the cut minibatches, in order, for Next
	work    chan *raw // the same, for the workers
	cutDone chan struct{}
	workers sync.WaitGroup

	returned int   // minibatches Next returned
	err      error // a pass that failed stays failed (Next's)

	mu    sync.Mutex // stats: the reader goroutine adds, Stats reads
	stats Stats
}

// chunkBuf holds one chunk, read and checked, as words.
type chunkBuf struct {
	mem   []byte
	words []uint32
	chunk int
	start uint32 // first node
	end   uint32 // one past the last
	err   error
}

// Open starts a pass over the graph directory dir: it reads and checks
// the manifest (chunkfmt.ReadManifest) and starts reading edges.chunks in
// the background. Close it.
func Open(dir string, o Options) (*Scan, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Buffers == 0 {
		o.Buffers = 2
	}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("fullscan: %w", err)
	}
	path := filepath.Join(dir, chunkfmt.ChunksFile)
	f, direct, err := openDirect(path)
	if err != nil {
		return nil, fmt.Errorf("fullscan: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fullscan: %w", err)
	}
	if want := m.FileSize(); st.Size() != want {
		f.Close()
		return nil, fmt.Errorf("fullscan: %s: %d bytes, the manifest says %d: %w", path, st.Size(), want, chunkfmt.ErrCorrupt)
	}
	s := &Scan{m: m, path: path, f: f, direct: direct, o: o, n: m.NumNodes,
		firstEdge: make([]uint64, len(m.Chunks)+1), hdr: make([]uint64, len(m.Chunks))}
	var biggest int64
	for i, c := range m.Chunks {
		s.firstEdge[i+1] = s.firstEdge[i] + c.NEdges
		s.hdr[i] = chunkfmt.MinHeaderWords + uint64(c.NNodes)
		biggest = max(biggest, m.ChunkReadSize(i))
	}
	s.stats.Direct = direct
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.full = make(chan *chunkBuf, o.Buffers)
	s.free = make(chan *chunkBuf, o.Buffers)
	s.done = make(chan struct{})
	if len(m.Chunks) > 0 {
		for range min(o.Buffers, len(m.Chunks)) {
			s.free <- &chunkBuf{mem: alignedBuffer(biggest)}
		}
	}
	go s.read(ctx)
	w := o.Workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	s.order = make(chan *raw, 2*w)
	s.work = make(chan *raw, w)
	s.cutDone = make(chan struct{})
	go s.cut(ctx)
	for range w {
		s.workers.Add(1)
		go s.relabelWorker()
	}
	return s, nil
}

// alignedBuffer returns n bytes starting at a multiple of align.
func alignedBuffer(n int64) []byte {
	b := make([]byte, n+align)
	o := int(-uintptr(unsafe.Pointer(&b[0])) & (align - 1))
	return b[o : int64(o)+n : int64(o)+n]
}

// NumNodes is the graph's node count.
func (s *Scan) NumNodes() uint32 { return s.n }

// NumEdges is the graph's edge count: every pass returns them all.
func (s *Scan) NumEdges() uint64 { return s.m.NumEdges }

// NumBatches is the number of minibatches of the pass.
func (s *Scan) NumBatches() int { return NumBatches(s.n, s.o.BatchSize) }

// NumBatches is the number of minibatches of batchSize consecutive nodes
// that cover n nodes (the last may be short).
func NumBatches(n uint32, batchSize int) int {
	return int((int64(n) + int64(batchSize) - 1) / int64(batchSize))
}

// Manifest is the graph's manifest. It must not be modified.
func (s *Scan) Manifest() *chunkfmt.Manifest { return s.m }

// Stats returns what the pass has read and returned so far.
func (s *Scan) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// read is the reader goroutine: every chunk in order into a free buffer,
// checked, then handed to Next. It stops at the first error (handed on
// as the chunk's err) or when the pass is closed.
func (s *Scan) read(ctx context.Context) {
	defer close(s.done)
	for c := range s.m.Chunks {
		var b *chunkBuf
		select {
		case b = <-s.free:
		case <-ctx.Done():
			return
		}
		t0 := time.Now()
		b.err = s.readChunk(c, b)
		s.mu.Lock()
		s.stats.ReadTime += time.Since(t0)
		if b.err == nil {
			s.stats.Chunks++
			s.stats.BytesRead += s.m.ChunkReadSize(c)
		}
		s.mu.Unlock()
		select {
		case s.full <- b:
		case <-ctx.Done():
			return
		}
		if b.err != nil {
			return
		}
	}
}

// readChunk reads chunk c into b and checks it: its CRC-32C (the stored
// fill taken as zero, chunkfmt.Manifest.CheckChunk), its header against
// the manifest, and its offsets (from the end of the header, never
// decreasing, the last at the chunk's used bytes). The neighbor ids are
// checked as Next reads them.
func (s *Scan) readChunk(c int, b *chunkBuf) error {
	n := s.m.ChunkReadSize(c)
	buf := b.mem[:n]
	off := s.m.ChunkOffset(c)
	for done := int64(0); done < n; {
		k := min(n-done, readPiece)
		if _, err := s.f.ReadAt(buf[done:done+k], off+done); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("fullscan: %s: reading chunk %d (%d bytes at %d): %w", s.path, c, k, off+done, err)
		}
		done += k
	}
	if err := s.m.CheckChunk(s.path, c, buf); err != nil {
		return fmt.Errorf("fullscan: %w", err)
	}
	w := chunkfmt.Words(buf)
	ci := s.m.Chunks[c]
	bad := func(word uint64, format string, a ...any) error {
		return fmt.Errorf("fullscan: %s: chunk %d (nodes %d..%d), word %d: %s: %w", s.path, c, ci.Start, ci.End-1, word, fmt.Sprintf(format, a...), chunkfmt.ErrCorrupt)
	}
	hdr := s.hdr[c]
	if uint64(len(w)) < hdr {
		return bad(0, "a header of %d words does not fit in the chunk's %d", hdr, len(w))
	}
	if w[0] != ci.NNodes || w[1] != ci.Start {
		return bad(0, "header says %d nodes from %d, the manifest %d from %d", w[0], w[1], ci.NNodes, ci.Start)
	}
	if uint64(w[2]) != hdr {
		return bad(2, "first offset %d, want %d (the end of the header)", w[2], hdr)
	}
	for j := uint64(0); j < uint64(ci.NNodes); j++ {
		if w[3+j] < w[2+j] {
			return bad(3+j, "node %d's offset %d is before the previous %d", uint64(ci.Start)+j+1, w[3+j], w[2+j])
		}
	}
	if end := uint64(w[2+uint64(ci.NNodes)]); end*4 != uint64(ci.BytesUsed) || end-hdr != ci.NEdges {
		return bad(2+uint64(ci.NNodes), "neighbors end at word %d, the manifest says %d bytes used and %d edges", end, ci.BytesUsed, ci.NEdges)
	}
	b.words, b.chunk, b.start, b.end = w, c, ci.Start, ci.End
	return nil
}

// chunkFor makes s.cur the chunk holding node v, giving the chunks before
// it back to the reader. The cutter's alone.
func (s *Scan) chunkFor(ctx context.Context, v uint32) error {
	for s.cur == nil || v >= s.cur.end {
		if s.cur != nil {
			s.free <- s.cur // never blocks: free has room for every buffer
			s.cur = nil
		}
		if err := ctx.Err(); err != nil {
			return err // before a chunk that is ready: select would pick either
		}
		select {
		case b := <-s.full:
			if b.err != nil {
				return b.err
			}
			s.cur = b
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if v < s.cur.start {
		return fmt.Errorf("fullscan: %s: node %d is before chunk %d's first node %d: %w", s.path, v, s.cur.chunk, s.cur.start, chunkfmt.ErrCorrupt)
	}
	return nil
}

// raw is a minibatch cut from the chunks, not yet relabelled: its seeds'
// adjacency copied out (so that the chunk buffers go back to the reader
// and minibatches are relabelled in parallel), or why the cut failed.
type raw struct {
	index int
	a, b  uint32
	deg   []int32  // per seed, its degree
	nb    []uint32 // every seed's neighbors, seed after seed
	first int64    // the global index of its first edge: its edges are consecutive in the CSR
	err   error
	done  chan *Batch // the relabelled minibatch (buffered)
}

// cut is the cutter goroutine: it cuts the minibatches in order, each
// handed to Next (order) and to a relabelling worker (work), until the
// last, the first error (handed to Next) or Close.
func (s *Scan) cut(ctx context.Context) {
	defer close(s.cutDone)
	defer close(s.work)
	defer close(s.order)
	guess := 0
	for index := 0; s.next < s.n; index++ {
		r, err := s.cutOne(ctx, index, guess)
		if err != nil {
			select {
			case s.order <- &raw{err: err}:
			case <-ctx.Done():
			}
			return
		}
		guess = len(r.nb) + len(r.nb)/8
		select {
		case s.order <- r:
		case <-ctx.Done():
			return
		}
		select {
		case s.work <- r:
		case <-ctx.Done():
			return
		}
	}
}

// cutOne copies the adjacency of the next minibatch's seeds out of the
// chunks, checking every neighbor id against the node count.
func (s *Scan) cutOne(ctx context.Context, index, guess int) (*raw, error) {
	a := s.next
	end := uint32(min(uint64(a)+uint64(s.o.BatchSize), uint64(s.n)))
	r := &raw{index: index, a: a, b: end, deg: make([]int32, end-a), nb: make([]uint32, 0, guess), done: make(chan *Batch, 1)}
	for v := a; v < end; v++ {
		if err := s.chunkFor(ctx, v); err != nil {
			return nil, err
		}
		c := s.cur
		j := v - c.start
		lo, hi := c.words[2+j], c.words[3+j]
		nb := c.words[lo:hi]
		if v == a {
			r.first = int64(s.firstEdge[c.chunk] + uint64(lo) - s.hdr[c.chunk])
		}
		for p, u := range nb {
			if u >= s.n {
				return nil, fmt.Errorf("fullscan: %s: chunk %d, word %d: node %d's neighbor %d is not a node (the graph has %d): %w",
					s.path, c.chunk, uint64(lo)+uint64(p), v, u, s.n, chunkfmt.ErrCorrupt)
			}
		}
		r.nb = append(r.nb, nb...)
		r.deg[v-a] = int32(len(nb))
	}
	s.next = end
	return r, nil
}

// relabelWorker relabels the minibatches of work, each with the worker's
// own table.
func (s *Scan) relabelWorker() {
	defer s.workers.Done()
	var rl relabel
	rl.init(s.n, s.o.TableBytes)
	for r := range s.work {
		r.done <- s.relabelRaw(r, &rl)
	}
}

// relabelRaw makes the Batch of a cut minibatch (see the package doc).
func (s *Scan) relabelRaw(r *raw, rl *relabel) *Batch {
	a := r.a
	ns := int(r.b - r.a)
	e := len(r.nb)
	b := &Batch{Index: r.index, Start: a, End: r.b, NID: make([]uint32, ns, ns+min(e, ns*32)),
		EdgeSrc: make([]int32, e), EdgeDst: make([]int32, e)}
	for i := range b.NID[:ns] {
		b.NID[i] = a + uint32(i)
	}
	rl.reset()
	src := b.EdgeSrc
	for k, u := range r.nb {
		if u-a < uint32(ns) { // a seed (u >= a, by unsigned wrap-around)
			src[k] = int32(u - a)
			continue
		}
		l, fresh := rl.local(u, int32(len(b.NID)))
		if fresh {
			b.NID = append(b.NID, u)
		}
		src[k] = l
	}
	k := 0
	for i, d := range r.deg {
		for j := range int(d) {
			b.EdgeDst[k+j] = int32(i)
		}
		k += int(d)
	}
	if s.o.EdgeIDs {
		b.EdgeIDs = make([]int64, e)
		for i := range b.EdgeIDs {
			b.EdgeIDs[i] = r.first + int64(i)
		}
	}
	return b
}

// Next returns the pass's next minibatch, or io.EOF after the last. The
// Batch is the caller's. An error (a chunk that fails its checks, a read
// error, ctx done) ends the pass: later calls return it again.
func (s *Scan) Next(ctx context.Context) (*Batch, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.cancel == nil {
		return nil, ErrClosed
	}
	fail := func(err error) (*Batch, error) {
		s.err = err
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	var r *raw
	select {
	case got, ok := <-s.order:
		if !ok {
			if s.returned == s.NumBatches() {
				return nil, io.EOF
			}
			return fail(fmt.Errorf("fullscan: %s: the pass stopped after %d of %d minibatches", s.path, s.returned, s.NumBatches()))
		}
		r = got
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if r.err != nil {
		return fail(r.err)
	}
	var b *Batch
	select {
	case b = <-r.done:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	s.returned++
	s.mu.Lock()
	s.stats.Batches++
	s.stats.Edges += int64(len(b.EdgeSrc))
	s.mu.Unlock()
	return b, nil
}

// Close stops the pass (the reader, the cutter, the workers) and closes
// edges.chunks. Closing twice is a no-op.
func (s *Scan) Close() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	<-s.done
	<-s.cutDone
	s.workers.Wait()
	s.cancel = nil
	s.cur = nil
	return s.f.Close()
}

// relabel gives the nodes of a minibatch that are not seeds their local
// ids: a table over every node id, or an open-addressing hash table sized
// by the minibatch. A dense entry is the minibatch stamp it was last set
// in (high 32 bits) and the node's local id in that minibatch (low 32):
// one word, one cache miss a lookup, nothing cleared between minibatches.
// A hash entry is the node + 1 (high 32 bits; 0: empty) and its local id;
// the table (a power of two, at most half full) is cleared per minibatch.
// The hash table is the default: a minibatch's few hundred thousand
// neighbors then live in a few MiB, where the dense table spreads them
// over 8 bytes per node of the graph, a cache miss for nearly every edge
// (BenchmarkScan).
type relabel struct {
	tab  []uint64
	cur  uint64 // the dense table's stamp, shifted into the high half
	hash []uint64
	n    int // entries in hash
	bits uint
}

// minHashBits is the hash table's smallest size (64 Ki entries, 512 KiB).
const minHashBits = 16

func (r *relabel) init(n uint32, tableBytes int64) {
	if tableBytes > 0 && int64(n)*8 <= tableBytes {
		r.tab = make([]uint64, n)
		return
	}
	r.bits = minHashBits
	r.hash = make([]uint64, 1<<r.bits)
}

// reset starts a minibatch.
func (r *relabel) reset() {
	if r.tab == nil {
		if r.n > 0 {
			clear(r.hash)
			r.n = 0
		}
		return
	}
	r.cur += 1 << 32
	if r.cur == 0 { // the stamps wrapped: start over
		clear(r.tab)
		r.cur = 1 << 32
	}
}

// local returns u's local id, giving it next if it has none yet (fresh).
func (r *relabel) local(u uint32, next int32) (l int32, fresh bool) {
	if r.tab != nil {
		if e := r.tab[u]; e&^0xFFFFFFFF == r.cur {
			return int32(uint32(e)), false
		}
		r.tab[u] = r.cur | uint64(uint32(next))
		return next, true
	}
	key := uint64(u+1) << 32
	mask := uint32(len(r.hash) - 1)
	for i := (u * 0x9E3779B1) >> (32 - r.bits); ; i = (i + 1) & mask {
		e := r.hash[i]
		switch {
		case e&^0xFFFFFFFF == key:
			return int32(uint32(e)), false
		case e == 0:
			r.hash[i] = key | uint64(uint32(next))
			r.n++
			if r.n*2 > len(r.hash) {
				r.grow()
			}
			return next, true
		}
	}
}

// grow doubles the hash table, keeping its entries.
func (r *relabel) grow() {
	old := r.hash
	r.bits++
	r.hash = make([]uint64, 1<<r.bits)
	mask := uint32(len(r.hash) - 1)
	for _, e := range old {
		if e == 0 {
			continue
		}
		u := uint32(e>>32) - 1
		i := (u * 0x9E3779B1) >> (32 - r.bits)
		for r.hash[i] != 0 {
			i = (i + 1) & mask
		}
		r.hash[i] = e
	}
}
