package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/internal/failpoint"
	"github.com/streamsampler/streamsampler/xrt"
)

// Backends Open accepts.
const (
	BackendEmu = "emu" // the emulated SmartSSD (xrt.OpenEmulated); the default
	BackendXRT = "xrt" // real devices through XRT (xrt.Open; needs -tags xrt)
)

// DefaultBufferBudget is the device memory, per device, that Open spends on
// the targets and results buffers when Options.MaxTargets is zero.
const DefaultBufferBudget = 64 << 20

// ioAlign is the granularity of chunk reads: a page, so that O_DIRECT and
// P2P DMA move whole pages into page-aligned buffers.
const ioAlign = 4096

// Options configures Open.
type Options struct {
	// Backend is BackendEmu ("" means emu) or BackendXRT.
	Backend string
	// Devices is the number of devices to stream over (default 1); device
	// indices 0..Devices-1.
	Devices int
	// Xclbin is the kernel binary for BackendXRT ("" for the emulator's
	// built-in kernel).
	Xclbin string
	// MaxTargets is the most targets one kernel launch takes; a chunk with
	// more targets is sampled in several launches. 0 derives it from
	// BufferBudget (capped at the most nodes any chunk holds).
	MaxTargets int
	// MaxFanout sizes the results buffer; fanouts above it are rejected.
	// 0 means hls.MaxFanout.
	MaxFanout int
	// BufferBudget is the per-device bytes for targets+results buffers
	// when MaxTargets is 0 (default DefaultBufferBudget).
	BufferBudget int64
	// Buffered disables O_DIRECT on edges.chunks (it is also dropped, with
	// a note in Stats, when the filesystem refuses it).
	Buffered bool
	// Emulator configures emulated devices.
	Emulator xrt.EmulatorConfig
	// RunTimeout bounds one kernel run (default 1 minute).
	RunTimeout time.Duration
	// OnChunk, if set, is called after each chunk read (for progress
	// reporting), from the devices' reader goroutines concurrently.
	OnChunk func(layer, chunk int, bytes int64)
	// VerifyReads checks every chunk read into a device buffer by reading
	// the same bytes again into host memory and checking their CRC-32C
	// there (--verify-reads). It is for BackendXRT, where the P2P read
	// goes from the SSD to the FPGA and the host never sees the bytes;
	// the emulated devices, which check what they read themselves, then
	// stream as SmartSSDs do (peer-to-peer into two buffers of their own,
	// no chunk cache), which is how that path is tested without
	// hardware. It costs a second read of every chunk, in the reader
	// goroutine (docs/KERNEL.md).
	VerifyReads bool
	// EdgeIDs asks for edge ids: every Result's layers carry
	// epoch.Layer.EdgeIDs (each sample's position in the stored CSR). The
	// kernel writes a chunk-local index per slot after the samples, so the
	// result buffers are twice as large (and, with MaxTargets 0, a launch
	// takes fewer targets within BufferBudget).
	EdgeIDs bool
	// ChunkCache is the host memory, in bytes, for chunks kept between
	// the passes that use them (the layers of an epoch, the epochs, the
	// walker's steps): up to ChunkCache / the largest chunk's read size of
	// them (DESIGN §4b; AutoChunkCache is the
	// commands' default), never fewer than two per device, the double
	// buffering streaming needs anyway; 0 gives that floor. The emulated
	// devices run their kernel over the cached chunks in place; a
	// SmartSSD (BackendXRT) keeps reading each chunk peer-to-peer into its
	// own two buffers, as do the emulated devices with VerifyReads, and
	// the option is noted in Stats and not used.
	ChunkCache int64

	// RandomReads lets each layer sample a chunk's targets by random
	// reads instead of streaming the chunk (DESIGN §4d): RandomOff (the
	// zero value), RandomAuto (per chunk, by the cost model) or
	// RandomAlways. The samples are the same either way. The emulated
	// backend only, without VerifyReads: elsewhere RandomAuto is off
	// (noted in Stats) and RandomAlways an error.
	RandomReads RandomReads
	// DiskRates are the rates RandomAuto's cost model weighs; a zero
	// field starts at PriorDiskRates', is measured by a short probe of
	// edges.chunks (about 50 ms) once a layer reads more than the probe
	// costs, and follows what the layers' reads achieve.
	DiskRates DiskRates
	// RandomOffsetBudget bounds the memory RandomAuto spends on the row
	// offsets (8 bytes per node); 0 means DefaultRandomOffsetBudget.
	// RandomAlways loads them whatever their size.
	RandomOffsetBudget int64

	// skipChecksum turns the CRC check of chunk reads off: only the
	// benchmarks that measure its cost set it.
	skipChecksum bool
}

// Sampler is the chunk-streaming Backend: it owns the devices, their
// buffer objects (allocated once, at Open, at the largest size they will
// need) and the open edges.chunks file. One SampleEpoch runs at a time.
type Sampler struct {
	dir      string
	manifest *chunkfmt.Manifest
	index    *chunkfmt.Index
	file     *os.File
	direct   bool
	notes    []string
	backend  string
	maxK     int
	lanes    []*deviceLane
	onChunk  func(layer, chunk int, bytes int64)
	check    readCheck
	// cache is the chunk cache (BackendEmu); nil for BackendXRT, whose
	// lanes read into their own buffers.
	cache *chunkCache
	// edgeBase is chunk c's first global edge at c and the edge count at
	// len(Chunks) (prefix sums of NEdges); nil without Options.EdgeIDs.
	edgeBase []int64

	// random is the per-chunk choice's state (nil: RandomReads off).
	random *randomSide

	mu   sync.Mutex // serialises SampleEpoch; guards last
	last *Stats
}

var _ Backend = (*Sampler)(nil)

// Open opens the graph directory and the devices and allocates every
// buffer object.
func Open(graphDir string, opts Options) (_ *Sampler, err error) {
	if opts.Backend == "" {
		opts.Backend = BackendEmu
	}
	if opts.Devices == 0 {
		opts.Devices = 1
	}
	if opts.Devices < 0 {
		return nil, fmt.Errorf("host: %w: %d devices", ErrInvalid, opts.Devices)
	}
	if opts.ChunkCache < 0 {
		return nil, fmt.Errorf("host: %w: chunk cache of %d bytes", ErrInvalid, opts.ChunkCache)
	}
	if opts.MaxFanout == 0 {
		opts.MaxFanout = hls.MaxFanout
	}
	if opts.MaxFanout < 1 || opts.MaxFanout > hls.MaxFanout {
		return nil, fmt.Errorf("host: %w: max fanout %d, want 1..%d", ErrInvalid, opts.MaxFanout, hls.MaxFanout)
	}
	if opts.BufferBudget == 0 {
		opts.BufferBudget = DefaultBufferBudget
	}
	if opts.RunTimeout == 0 {
		opts.RunTimeout = time.Minute
	}
	m, err := chunkfmt.ReadManifest(graphDir)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	// chunks.info must agree with the manifest and with every chunk's
	// header: the index routes each target to its chunk, and a start
	// that disagrees would send it to the wrong one.
	ix, err := chunkfmt.LoadIndex(graphDir, m)
	if err != nil {
		return nil, fmt.Errorf("host: %s: %w", graphDir, err)
	}
	path := filepath.Join(graphDir, chunkfmt.ChunksFile)
	if err := checkHeaders(path, m); err != nil {
		return nil, err
	}
	sm := &Sampler{dir: graphDir, manifest: m, index: ix, backend: opts.Backend, maxK: opts.MaxFanout, onChunk: opts.OnChunk}
	if opts.EdgeIDs {
		sm.edgeBase = make([]int64, len(m.Chunks)+1)
		for c, ci := range m.Chunks {
			sm.edgeBase[c+1] = sm.edgeBase[c] + int64(ci.NEdges)
		}
	}
	switch {
	case opts.skipChecksum:
		sm.check = checkNone
	case opts.VerifyReads:
		sm.check = checkReread
	case opts.Backend == BackendEmu:
		sm.check = checkBuffer
	default:
		// XRT without VerifyReads: the chunk goes SSD → FPGA; reading the
		// P2P buffer back over the PCIe BAR would cost more than the
		// read. The kernel checks the offsets it follows and the host
		// checks every sample against num_nodes (docs/KERNEL.md).
		sm.check = checkNone
	}
	defer func() {
		if err != nil {
			sm.Close()
		}
	}()

	// Every chunk buffer (a lane's or the cache's) holds the largest
	// chunk's read size.
	chunkBytes := slotBytes(m)
	var maxNodes int64
	for _, c := range m.Chunks {
		maxNodes = max(maxNodes, int64(c.NNodes))
	}
	mt := int64(opts.MaxTargets)
	if mt <= 0 {
		mt = min(max(opts.BufferBudget/int64(4*(1+opts.MaxFanout*resultWords(opts.EdgeIDs))), 1), max(maxNodes, 1))
	}

	if err := sm.openFile(path, !opts.Buffered); err != nil {
		return nil, err
	}
	laneChunkBytes := int(chunkBytes)
	switch {
	case opts.Backend == BackendEmu && !opts.VerifyReads:
		// The emulated devices read host memory (xrt.HostBuffers): their
		// kernels run over the cache's entries, and they need no chunk
		// buffers of their own.
		sm.cache = newChunkCache(opts.ChunkCache, chunkBytes, cacheCapacity(opts.ChunkCache, chunkBytes, opts.Devices, len(m.Chunks)), len(m.Chunks))
		laneChunkBytes = 0
	case opts.ChunkCache > 0 && opts.Backend == BackendEmu:
		sm.notes = append(sm.notes, fmt.Sprintf("chunk cache of %d bytes not used: with VerifyReads the emulated devices stream as SmartSSDs do, peer-to-peer into their own buffers, each chunk re-read and checked", opts.ChunkCache))
	case opts.ChunkCache > 0:
		sm.notes = append(sm.notes, fmt.Sprintf("chunk cache of %d bytes not used: the %s backend reads every chunk peer-to-peer into its devices' own buffers", opts.ChunkCache, opts.Backend))
	}
	rside, note, err := newRandomSide(graphDir, opts)
	if err != nil {
		return nil, err
	}
	sm.random = rside
	if note != "" {
		sm.notes = append(sm.notes, note)
	}
	for i := 0; i < opts.Devices; i++ {
		ln, err := openLane(i, opts, sm, laneChunkBytes, int(mt))
		if err != nil {
			return nil, err
		}
		sm.lanes = append(sm.lanes, ln)
	}
	if sm.direct && len(m.Chunks) > 0 {
		// Some filesystems accept O_DIRECT at open and refuse the read.
		// The chunk read stays in the buffer (or the cache), and its
		// bytes are counted by the first epoch (deviceLane.opened,
		// cacheEntry.opened): every byte read from edges.chunks is in
		// the statistics.
		if err := sm.probe(); errors.Is(err, chunkfmt.ErrChecksum) {
			return nil, fmt.Errorf("host: %w", err)
		} else if err != nil {
			note := fmt.Sprintf("O_DIRECT read of %s failed (%v); using buffered reads", path, err)
			if err := sm.openFile(path, false); err != nil {
				return nil, err
			}
			sm.notes = append(sm.notes, note)
		}
	}
	return sm, nil
}

// probe reads chunk 0 the way epochs will (into the cache's first entry,
// or lane 0's first buffer), leaving it there with its bytes to count.
func (s *Sampler) probe() error {
	if s.cache == nil {
		n, err := s.lanes[0].load(0, 0)
		if err == nil {
			s.lanes[0].opened[0] = n
		}
		return err
	}
	e := s.cache.holding(-1) // an empty entry, from a probe that failed
	if e == nil {
		var err error
		if e, err = s.cache.newEntry(); err != nil {
			return err
		}
		s.cache.prefault([]*cacheEntry{e})
	}
	<-e.ready
	n, err := s.readEntry(0, e.mem)
	if err == nil {
		e.chunk, e.opened = 0, n
	}
	return err
}

// FailpointOpenDirect is hit before edges.chunks is opened with O_DIRECT
// (internal/failpoint): an error there is the open's, as a filesystem that
// refuses O_DIRECT gives.
const FailpointOpenDirect = "host/open-direct"

// openFile (re)opens edges.chunks, with O_DIRECT when asked and allowed.
func (s *Sampler) openFile(path string, direct bool) error {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	if direct {
		// The failpoint plays a filesystem that refuses O_DIRECT.
		err := failpoint.Hit(FailpointOpenDirect)
		var f *os.File
		if err == nil {
			f, err = openDirectFile(path)
		}
		if err == nil {
			s.file, s.direct = f, true
			return s.checkSize()
		}
		s.notes = append(s.notes, fmt.Sprintf("O_DIRECT refused for %s (%v); using buffered reads", path, err))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	s.file, s.direct = f, false
	return s.checkSize()
}

func (s *Sampler) checkSize() error {
	fi, err := s.file.Stat()
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if want := s.manifest.FileSize(); fi.Size() != want {
		return fmt.Errorf("host: %s is %d bytes, the manifest says %d (truncated or from another graph?)", s.file.Name(), fi.Size(), want)
	}
	return nil
}

// readSize is the bytes read for chunk c: BytesUsed rounded up to a page,
// but never past the chunk's stored bytes (the last chunk is padded to a
// sector only).
func (s *Sampler) readSize(c int) int64 { return chunkReadSize(s.manifest, c) }

// chunkReadSize is Sampler.readSize for the graph of manifest m.
func chunkReadSize(m *chunkfmt.Manifest, c int) int64 {
	return min(roundUpTo(m.Chunks[c].BytesUsed, ioAlign), m.ChunkStoredSize(c))
}

// GraphReadBytes is one read of every chunk of the graph of manifest m
// (each chunk's read size: its BytesUsed rounded up to a page, within its
// stored bytes), the figure Stats.GraphBytes gives: an epoch that read
// every chunk once read that much.
func GraphReadBytes(m *chunkfmt.Manifest) int64 {
	var n int64
	for c := range m.Chunks {
		n += chunkReadSize(m, c)
	}
	return n
}

// Manifest is the graph's manifest.
func (s *Sampler) Manifest() *chunkfmt.Manifest { return s.manifest }

// NumNodes is the graph's node count.
func (s *Sampler) NumNodes() uint32 { return s.manifest.NumNodes }

// MaxTargets is the most targets one kernel launch takes.
func (s *Sampler) MaxTargets() int {
	if len(s.lanes) == 0 {
		return 0
	}
	return s.lanes[0].mt
}

// BufferBytes is the memory allocated for buffer objects, all devices
// together, and for the chunk cache's entries so far.
func (s *Sampler) BufferBytes() int64 {
	var n int64
	for _, l := range s.lanes {
		n += l.bytes()
	}
	if s.cache != nil {
		n += s.cache.allocated()
	}
	return n
}

// SampleEpoch samples every layer of an epoch by streaming the chunks that
// hold frontier nodes through the devices. It implements Backend.
func (s *Sampler) SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	r, _, err := s.SampleEpochStats(ctx, seeds, fanouts, key)
	return r, err
}

// SampleEpochStats is SampleEpoch returning the epoch's statistics too.
// On error (including cancellation, noticed between chunks) nothing is
// returned and every goroutine it started has exited.
func (s *Sampler) SampleEpochStats(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, *Stats, error) {
	if err := validateRequest(s.manifest.NumNodes, seeds, fanouts); err != nil {
		return nil, nil, err
	}
	for l, k := range fanouts {
		if k > s.maxK {
			return nil, nil, fmt.Errorf("%w: fanout %d of layer %d (hop %d) exceeds the buffers' max fanout %d (Options.MaxFanout)", ErrInvalid, k, l, l+1, s.maxK)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return nil, nil, fmt.Errorf("host: sampler is closed")
	}
	st := &Stats{Devices: len(s.lanes), Backend: s.backend, DirectIO: s.direct, Notes: s.notes, GraphBytes: s.graphBytes()}
	sm := s.stream()
	if s.random != nil {
		sm.side = &epochSide{r: s.random, s: s, key: key, edgeIDs: s.edgeBase != nil}
		defer sm.side.close()
	}
	res, err := sampleEpoch(ctx, sm, s.index, seeds, fanouts, key, st, s.onChunk, s.edgeBase)
	if s.cache != nil {
		st.Cache = s.cache.stats()
	}
	if s.random != nil {
		st.Random = s.random.stats()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("host: epoch %d: %w", key.Epoch, err)
	}
	s.last = st
	return res, st, nil
}

// stream is the way the sampler's passes reach its lanes: through the
// chunk cache where it has one.
func (s *Sampler) stream() stream {
	st := stream{lanes: make([]lane, len(s.lanes)), cache: s.cache, read: s.readEntry}
	for i, l := range s.lanes {
		st.lanes[i] = l
	}
	return st
}

// graphBytes is one read of every chunk: what an epoch reads at least
// from a cold start, where every layer-0 chunk is wanted.
func (s *Sampler) graphBytes() int64 { return GraphReadBytes(s.manifest) }

// LastStats returns the statistics of the last successful SampleEpoch
// (nil before the first).
func (s *Sampler) LastStats() *Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Close frees the buffers, closes kernels and devices and the file.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, l := range s.lanes {
		errs = append(errs, l.close())
	}
	s.lanes = nil
	errs = append(errs, s.random.close())
	s.random = nil
	// After the lanes: their devices' buffers over the entries are gone.
	if s.cache != nil {
		errs = append(errs, s.cache.close())
		s.cache = nil
	}
	if s.file != nil {
		errs = append(errs, s.file.Close())
		s.file = nil
	}
	return errors.Join(errs...)
}

// DropChunkCache forgets the chunks held in memory (the chunk cache's
// entries, the lanes' buffers), keeping the memory: the next epoch reads
// every chunk it streams, as from a cold start. Benchmarks that compare
// strategies cold use it; bytes read at Open and not yet counted by an
// epoch are dropped from the statistics with them.
func (s *Sampler) DropChunkCache() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache != nil {
		for _, e := range s.cache.entries {
			e.chunk, e.opened = -1, 0
		}
	}
	for _, l := range s.lanes {
		l.res = [2]int{-1, -1}
		l.opened = [2]int64{}
	}
}

// readCheck is how a chunk read into a device buffer is checked against
// its CRC-32C before the kernel uses it.
type readCheck int

const (
	checkNone   readCheck = iota // not checked (XRT without VerifyReads; benchmarks)
	checkBuffer                  // the buffer's bytes, through its host mapping (emulator)
	checkReread                  // the same bytes read again into host memory (VerifyReads)
)

// checkHeaders checks every chunk's header in the file at path against
// the manifest (and so against chunks.info). It reads through its own
// buffered descriptor: the sampler's may be O_DIRECT, which refuses reads
// of 8 bytes.
func checkHeaders(path string, m *chunkfmt.Manifest) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	defer f.Close()
	if err := chunkfmt.CheckHeaders(f, m); err != nil {
		return fmt.Errorf("host: %s: %w", filepath.Dir(path), err)
	}
	return nil
}

func roundUpTo(x, a int64) int64 { return (x + a - 1) / a * a }
