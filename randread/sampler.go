package randread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/internal/aio"
)

// ErrInvalid is wrapped by every error about the caller's request: a seed
// that is not a node, a fanout outside 1..hls.MaxFanout other than
// epoch.AllNeighbors (−1, every neighbor), too many layers,
// a seed given twice (also epoch.ErrDuplicateSeed).
var ErrInvalid = errors.New("randread: invalid sampling request")

// ErrClosed is returned by requests made after Close.
var ErrClosed = errors.New("randread: sampler closed")

// IO says how a Sampler keeps its reads in flight.
type IO int

const (
	// AIO submits every read of a layer from one goroutine through Linux
	// AIO (internal/aio), Depth in flight; it needs an O_DIRECT file (on
	// a buffered one, or where the kernel refuses AIO, Pread is used).
	AIO IO = iota
	// Pread runs Depth goroutines, each reading one block run at a time
	// with pread.
	Pread
)

// String returns "aio" or "pread".
func (m IO) String() string {
	if m == Pread {
		return "pread"
	}
	return "aio"
}

// ParseIO parses "aio" or "pread".
func ParseIO(s string) (IO, error) {
	switch s {
	case "aio":
		return AIO, nil
	case "pread":
		return Pread, nil
	}
	return AIO, fmt.Errorf("%w: I/O engine %q, want aio or pread", ErrInvalid, s)
}

// Defaults of Options.
const (
	// DefaultBlockSize is the unit read around each chosen neighbor word:
	// a page. docs/PERFORMANCE.md compares it with 512-byte sectors.
	DefaultBlockSize = 4096
	// DefaultDepth is how many reads are kept in flight: fio's reference
	// queue depth of the target.
	DefaultDepth = 128
	// DefaultMaxRun is the longest run of consecutive blocks read as one
	// request: adjacent blocks (a hub's sample, neighbors' lists) cost one
	// request instead of several.
	DefaultMaxRun = 64 << 10
)

// Options configure a Sampler; the zero value is the defaults.
type Options struct {
	// BlockSize is the read unit in bytes, a power of two from 512
	// (chunkfmt.SectorSize) to 1 MiB; 0 means DefaultBlockSize.
	BlockSize int
	// Depth is the number of reads in flight; 0 means DefaultDepth.
	Depth int
	// IO is how they are kept in flight (AIO, the default, or Pread).
	IO IO
	// Buffered opens edges.chunks without O_DIRECT (through the page
	// cache). Where the file system refuses O_DIRECT (tmpfs) the file is
	// read buffered anyway (Stats.Direct says which).
	Buffered bool
	// MaxRun is the longest run of consecutive blocks read as one
	// request, in bytes (at least BlockSize); 0 means DefaultMaxRun.
	MaxRun int
	// EdgeIDs makes SampleEpoch's results carry edge ids (Request.EdgeIDs
	// for the other entry points).
	EdgeIDs bool
	// Kernel takes the SmartSSD path on an emulated SmartSSD
	// (xrt.OpenEmulated): each layer's blocks are read into a P2P device
	// buffer (the same reads, into the device's memory), and the HLS
	// gather kernel (hls/gather_kernel.cpp, xrt.GatherKernel) gathers the
	// chosen words there. The samples are the same.
	Kernel bool
}

func (o Options) withDefaults() (Options, error) {
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockSize < chunkfmt.SectorSize || o.BlockSize > 1<<20 || o.BlockSize&(o.BlockSize-1) != 0 {
		return o, fmt.Errorf("%w: block size %d, want a power of two from %d to %d", ErrInvalid, o.BlockSize, chunkfmt.SectorSize, 1<<20)
	}
	if o.Depth == 0 {
		o.Depth = DefaultDepth
	}
	if o.Depth < 1 || o.Depth > 4096 {
		return o, fmt.Errorf("%w: depth %d, want 1..4096", ErrInvalid, o.Depth)
	}
	if o.MaxRun == 0 {
		o.MaxRun = DefaultMaxRun
	}
	o.MaxRun = max(o.MaxRun/o.BlockSize, 1) * o.BlockSize
	if o.IO != AIO && o.IO != Pread {
		return o, fmt.Errorf("%w: I/O engine %d", ErrInvalid, o.IO)
	}
	return o, nil
}

// maxContexts bounds the AIO contexts a Sampler keeps for concurrent
// requests; more requests at once set up and tear down their own.
const maxContexts = 4

// Sampler samples seeds of one graph directory by random reads. It is
// safe for concurrent use; Close it when done.
type Sampler struct {
	path   string
	m      *chunkfmt.Manifest
	ix     *chunkfmt.Index
	off    *offsets
	o      Options
	f      *os.File
	fd     int
	direct bool
	size   int64
	dev    *device // Options.Kernel: the emulated SmartSSD

	mu     sync.Mutex
	closed bool
	busy   sync.WaitGroup
	free   []*aio.Context // AIO contexts between requests
	noAIO  bool           // the kernel refused one: Pread from then on
}

// Open opens the graph in dir for random reads: it checks the manifest,
// chunks.info and the size of edges.chunks, and loads the row offsets
// from the chunks' headers (8 bytes per node; see the package comment).
func Open(ctx context.Context, dir string, o Options) (*Sampler, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	ix, err := chunkfmt.LoadIndex(dir, m)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, chunkfmt.ChunksFile)
	hf, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("randread: %w", err)
	}
	defer hf.Close()
	st, err := hf.Stat()
	if err != nil {
		return nil, fmt.Errorf("randread: %w", err)
	}
	if st.Size() != m.FileSize() {
		return nil, &chunkfmt.DefectError{File: chunkfmt.ChunksFile, Chunk: -1, Node: -1, Word: -1,
			What: fmt.Sprintf("file size %d bytes, want %d for %d chunks of %d bytes", st.Size(), m.FileSize(), len(m.Chunks), m.ChunkSize)}
	}
	off, err := loadOffsets(ctx, hf, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	s := &Sampler{path: path, m: m, ix: ix, off: off, o: o, size: st.Size()}
	if o.Buffered {
		s.f, err = os.Open(path)
	} else {
		s.f, s.direct, err = aio.OpenDirect(path)
	}
	if err != nil {
		return nil, fmt.Errorf("randread: %w", err)
	}
	s.fd = int(s.f.Fd())
	if s.direct && o.BlockSize < aio.Align {
		// O_DIRECT needs offsets and lengths in the device's logical
		// blocks; 512 works on 512-byte devices only.
		if err := checkDirect(s.f, o.BlockSize); err != nil {
			s.f.Close()
			return nil, fmt.Errorf("randread: %s: block size %d with O_DIRECT: %w", path, o.BlockSize, err)
		}
	}
	if o.Kernel {
		if s.dev, err = openDevice(); err != nil {
			s.f.Close()
			return nil, fmt.Errorf("randread: the SmartSSD path: %w", err)
		}
	}
	return s, nil
}

// checkDirect reads one block of size bs at offset 0 to learn
// whether the device takes O_DIRECT reads of that size.
func checkDirect(f *os.File, bs int) error {
	buf := aio.Aligned(int64(bs))
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// NumNodes is the graph's node count.
func (s *Sampler) NumNodes() uint32 { return s.m.NumNodes }

// Manifest is the graph's manifest.
func (s *Sampler) Manifest() *chunkfmt.Manifest { return s.m }

// Degree returns node's degree (node must be below NumNodes).
func (s *Sampler) Degree(node uint32) int {
	return int(s.off.indptr[node+1] - s.off.indptr[node])
}

// FirstEdge returns the global edge index of node's first neighbor,
// indptr[node] (node must be below NumNodes).
func (s *Sampler) FirstEdge(node uint32) uint64 { return s.off.indptr[node] }

// OffsetBytes is the memory the row offsets take (8 bytes per node).
func (s *Sampler) OffsetBytes() int64 { return int64(len(s.off.indptr)) * 8 }

// Direct reports whether edges.chunks is read with O_DIRECT.
func (s *Sampler) Direct() bool { return s.direct }

// Options returns the options in effect (defaults filled in).
func (s *Sampler) Options() Options { return s.o }

// Close closes the file and the AIO contexts, once requests in flight
// have ended.
func (s *Sampler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.busy.Wait()
	for _, a := range s.free {
		a.Destroy()
	}
	s.free = nil
	err := s.f.Close()
	if s.dev != nil {
		err = errors.Join(err, s.dev.close())
	}
	return err
}

// enter registers a request; false after Close.
func (s *Sampler) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.busy.Add(1)
	return true
}

// aioContext takes an AIO context for a request (nil: read with Pread).
func (s *Sampler) aioContext() *aio.Context {
	if s.o.IO != AIO || !s.direct {
		return nil
	}
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		a := s.free[n-1]
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return a
	}
	refused := s.noAIO
	s.mu.Unlock()
	if refused {
		return nil
	}
	a, err := aio.New(s.o.Depth)
	if err != nil {
		s.mu.Lock()
		s.noAIO = true
		s.mu.Unlock()
		return nil
	}
	return a
}

// release gives a request's AIO context back.
func (s *Sampler) release(a *aio.Context) {
	if a == nil {
		return
	}
	s.mu.Lock()
	if len(s.free) < maxContexts {
		s.free = append(s.free, a)
		a = nil
	}
	s.mu.Unlock()
	if a != nil {
		a.Destroy()
	}
}

// Request is one sampling request: its seeds (any distinct nodes), the
// fanout of each layer (hop order), the key of the random stream, and
// whether the result carries edge ids.
type Request struct {
	Seeds   []uint32
	Fanouts []int
	Key     epoch.Key
	EdgeIDs bool
}

// check checks the request against a graph of numNodes nodes: fanouts
// 1..hls.MaxFanout or epoch.AllNeighbors, at most epoch.MaxLayers
// layers, seeds that are nodes; with distinct, seeds given once each.
func (r *Request) check(numNodes uint32, distinct bool) error {
	if len(r.Fanouts) == 0 {
		return fmt.Errorf("%w: no fanouts (need at least one layer)", ErrInvalid)
	}
	if len(r.Fanouts) > epoch.MaxLayers {
		return fmt.Errorf("%w: %d layers, at most %d", ErrInvalid, len(r.Fanouts), epoch.MaxLayers)
	}
	for l, k := range r.Fanouts {
		if err := checkFanout(k, l); err != nil {
			return err
		}
	}
	for i, v := range r.Seeds {
		if v >= numNodes {
			return fmt.Errorf("%w: seed %d (position %d) is not a node: the graph has %d nodes (0..%d)", ErrInvalid, v, i, numNodes, int64(numNodes)-1)
		}
	}
	if distinct {
		seen := make(map[uint32]int, len(r.Seeds))
		for i, v := range r.Seeds {
			if j, ok := seen[v]; ok {
				return fmt.Errorf("%w: %w: seed %d at positions %d and %d", ErrInvalid, epoch.ErrDuplicateSeed, v, j, i)
			}
			seen[v] = i
		}
	}
	return nil
}

// checkFanout accepts 1..hls.MaxFanout and epoch.AllNeighbors as layer
// l's fanout.
func checkFanout(k, l int) error {
	if k == epoch.AllNeighbors || (k >= 1 && k <= hls.MaxFanout) {
		return nil
	}
	return fmt.Errorf("%w: fanout %d of layer %d (hop %d), want 1..%d or %d (every neighbor)", ErrInvalid, k, l, l+1, hls.MaxFanout, epoch.AllNeighbors)
}

// SampleEpoch samples the epoch of seeds (frontier_0 = the sorted unique
// seeds, DESIGN §4) by random reads: a host.Backend, with edge ids when
// Options.EdgeIDs.
func (s *Sampler) SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	res, _, err := s.Sample(ctx, Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: s.o.EdgeIDs})
	return res, err
}

// Sample samples the epoch of req's seeds (repeated seeds are sampled
// once) and says what it read. The Result equals host.Reference's (with
// edge ids, host.ReferenceEdgeIDs') for the same seeds, fanouts and key.
func (s *Sampler) Sample(ctx context.Context, req Request) (*epoch.Result, *Stats, error) {
	if err := req.check(s.m.NumNodes, false); err != nil {
		return nil, nil, err
	}
	if !s.enter() {
		return nil, nil, ErrClosed
	}
	defer s.busy.Done()
	start := time.Now()
	a := s.aioContext()
	defer s.release(a)
	st := &Stats{Direct: s.direct, BlockSize: s.o.BlockSize, Depth: s.o.Depth, IO: Pread.String()}
	if a != nil {
		st.IO = AIO.String()
	}
	rq := &request{s: s, aio: a, blocks: make(map[int64][]byte), stats: st}
	defer func() {
		for _, bo := range rq.bos {
			bo.Free()
		}
	}()
	frontier := slices.Clone(req.Seeds)
	slices.Sort(frontier)
	frontier = slices.Compact(frontier)
	res := &epoch.Result{Key: req.Key, Layers: make([]epoch.Layer, len(req.Fanouts))}
	for l, k := range req.Fanouts {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		ly, _, err := rq.layer(ctx, l, frontier, k, req.Key, req.EdgeIDs)
		if err != nil {
			return nil, nil, err
		}
		res.Layers[l] = ly
		frontier = epoch.NextFrontier(frontier, ly.Samples)
	}
	res.Final = frontier
	st.Wall = time.Since(start)
	return res, st, nil
}

// Blocks samples req's seeds (distinct, in the minibatch's order) and
// assembles their minibatch with sem: the blocks `streamsampler sample
// --state` prints for these seeds from any epoch of the same key whose
// training nodes include them.
func (s *Sampler) Blocks(ctx context.Context, req Request, sem epoch.Semantics) (*epoch.Blocks, *Stats, error) {
	if !sem.Valid() {
		return nil, nil, fmt.Errorf("%w: semantics %v", ErrInvalid, sem)
	}
	if err := req.check(s.m.NumNodes, true); err != nil {
		return nil, nil, err
	}
	res, st, err := s.Sample(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	t := time.Now()
	b, err := epoch.NewAssembler(res, nil).Assemble(req.Seeds, sem)
	if err != nil {
		return nil, nil, fmt.Errorf("randread: assembling the minibatch: %w", err)
	}
	st.Assemble = time.Since(t)
	st.Wall += st.Assemble
	return b, st, nil
}

// Row returns where node's adjacency lies in edges.chunks: the byte of
// its first neighbor word and its degree. chunk must be the chunk that
// holds node (chunkfmt.Index.ChunkOf); the streaming sampler's per-chunk
// choice estimates a chunk's random reads from its targets' rows.
func (s *Sampler) Row(chunk int, node uint32) (at int64, degree int) {
	first := s.off.indptr[node]
	return s.off.base[chunk] + 4*int64(first), int(s.off.indptr[node+1] - first)
}
