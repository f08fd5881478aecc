// Package gpu is the CUDA sampling backend: a persistent fused multi-hop
// kernel (and a per-hop BSP baseline) in libstreamsampler_gpu.so, loaded at
// run time through the C ABI of streamsampler_gpu.h.
//
// The library is opened with dlopen, so every Go binary builds and runs
// without CUDA; only Open needs the library and a device, and it fails with
// an error that says which is missing and how to fix it. With cgo disabled
// Open returns ErrNoCgo.
//
// A Backend holds the graph's CSR in GPU memory (or, with Options.UVA, in
// pinned host memory read over UVA) and implements host.Backend: its epoch
// results are bit-identical to host.Reference's (DESIGN §3–4). It also
// walks (walk.Walker): its walks are walk.Reference's.
package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/rng"
	"github.com/streamsampler/streamsampler/walk"
)

// LibName is the file name of the CUDA library.
const LibName = "libstreamsampler_gpu.so"

// EnvLib names the environment variable that points at the library.
const EnvLib = "STREAMSAMPLER_GPU_LIB"

// MaxFanout is the largest fanout the kernels accept (hls.MaxFanout).
const MaxFanout = 64

// Errors callers branch on. Errors from the library wrap one of them and
// carry the CUDA error name and string.
var (
	ErrLibraryNotFound = errors.New("gpu: " + LibName + " not found")
	ErrLibraryInvalid  = errors.New("gpu: unusable " + LibName)
	ErrNoCgo           = errors.New("gpu: built without cgo (CGO_ENABLED=0): the GPU backend needs cgo to load " + LibName)
	ErrNoDevice        = errors.New("gpu: no CUDA device")
	ErrOutOfMemory     = errors.New("gpu: out of memory")
	ErrInvalid         = errors.New("gpu: invalid request")
	ErrTimeout         = errors.New("gpu: watchdog timeout")
	ErrCUDA            = errors.New("gpu: CUDA error")
	ErrClosed          = errors.New("gpu: backend closed")
)

// Mode selects the engine of SampleEpoch.
type Mode int32

const (
	// Fused runs all hops in one persistent kernel with a global task queue.
	Fused Mode = 0
	// BSP runs one kernel per hop with CUB sort+unique in between (DGL's way).
	BSP Mode = 1
)

// String returns "fused" or "bsp".
func (m Mode) String() string {
	switch m {
	case Fused:
		return "fused"
	case BSP:
		return "bsp"
	}
	return fmt.Sprintf("Mode(%d)", int32(m))
}

// ParseMode parses "fused" or "bsp".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "fused":
		return Fused, nil
	case "bsp":
		return BSP, nil
	}
	return 0, fmt.Errorf("%w: mode %q, want fused or bsp", ErrInvalid, s)
}

// Options place the graph and tune the kernels; the zero value is the
// tuned default (docs/GPU.md).
type Options struct {
	Mode        Mode          // engine of SampleEpoch and SampleBlocks
	UVA         bool          // CSR in pinned host memory, read over UVA (--gpu-uva)
	BlockSize   int           // threads per block (default 512)
	FetchSize   int           // tasks a fused block claims at once (default 256)
	GroupSize   int           // lanes per task, a power of two ≤ 32 (default: ≥ fanout)
	BlocksPerSM int           // cap on resident fused blocks per SM (default: occupancy)
	Timeout     time.Duration // watchdog on every GPU wait (default 60 s)
	// EdgeIDs: every Result's layers carry epoch.Layer.EdgeIDs, each
	// sample's position in the stored CSR (indptr[node] + the position
	// chosen), from a second int64 output of the kernels
	// (ssg_options.edge_ids, ssg_fetch_edges).
	EdgeIDs bool
}

// Backend samples epochs and minibatches on one GPU. It implements
// host.Backend. Calls are serialised; a Backend may be shared.
type Backend struct {
	mu       sync.Mutex
	eng      engine
	numNodes uint32
	opts     Options
	device   string
	uva      bool
	libPath  string
}

// engine is the loaded library's context (cgo build) — an interface so
// that the marshalling above it is shared.
type engine interface {
	// sample runs ssg_sample_keyed: layer l with keys[l].
	sample(mode Mode, seeds []uint32, fanouts []int32, keys []uint64, replace bool) ([]uint64, error)
	fetch(frontiers []uint32, samples []int32, final []uint32) error
	fetchEdges(edgeIDs []int64) error
	layerSizes(layers int) ([]uint64, error)
	fetchOffsets(offsets []int64) error
	walk(req walkRequest, out []int32) error
	timings() [3]float64
	close()
}

// Open loads the library, opens CUDA device `device` and copies g's
// adjacency into GPU memory (or pinned host memory with opts.UVA).
//
// The adjacency goes to the library chunk by chunk, straight from the
// memory-mapped graph after each chunk's checks (StreamCSR): the Go heap
// holds only indptr (8 bytes a node), never a copy of the edges, so a
// graph of half the host's memory can be opened.
//
// libPath "" searches $STREAMSAMPLER_GPU_LIB, then LibName next to the
// executable, then the system library path (ldconfig, LD_LIBRARY_PATH).
func Open(libPath string, device int, g *chunkfmt.Graph, opts Options) (*Backend, error) {
	if g == nil || g.Manifest == nil || g.Reader == nil {
		return nil, fmt.Errorf("%w: nil graph", ErrInvalid)
	}
	if g.Manifest.NumNodes >= 1<<31 {
		return nil, fmt.Errorf("%w: %d nodes, at most 2^31-1", ErrInvalid, g.Manifest.NumNodes)
	}
	// Load first: a missing library or device should not cost a CSR read.
	lib, err := loadLibrary(libPath)
	if err != nil {
		return nil, err
	}
	if err := lib.deviceCheck(device); err != nil {
		return nil, err
	}
	return lib.openStream(device, g.Manifest.NumNodes, g.Manifest.NumEdges, opts, func(dst CSRSink) error {
		return StreamCSR(g, dst)
	})
}

// OpenCSR is Open over an in-memory CSR: the neighbors of node v are
// indices[indptr[v]:indptr[v+1]], sorted ascending. The arrays are copied.
func OpenCSR(libPath string, device int, indptr []uint64, indices []uint32, opts Options) (*Backend, error) {
	if len(indptr) == 0 || indptr[0] != 0 || indptr[len(indptr)-1] != uint64(len(indices)) {
		return nil, fmt.Errorf("%w: CSR indptr must start at 0 and end at len(indices)=%d", ErrInvalid, len(indices))
	}
	if len(indptr)-1 >= 1<<31 {
		return nil, fmt.Errorf("%w: %d nodes, at most 2^31-1", ErrInvalid, len(indptr)-1)
	}
	lib, err := loadLibrary(libPath)
	if err != nil {
		return nil, err
	}
	if err := lib.deviceCheck(device); err != nil {
		return nil, err
	}
	return lib.open(device, indptr, indices, opts)
}

// CSRFromGraph reads a graph directory's adjacency into CSR arrays,
// checking every chunk's CRC-32C and every neighbor id against num_nodes
// before anything reaches the GPU (chunkfmt.Reader.CSR): a corrupt graph
// is an error naming the file, chunk and node, never other samples. It
// holds the whole graph in the Go heap; Open streams it instead.
func CSRFromGraph(g *chunkfmt.Graph) (indptr []uint64, indices []uint32, err error) {
	indptr, indices, err = g.Reader.CSR()
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: reading CSR of %s: %w", g.Dir, err)
	}
	return indptr, indices, nil
}

// CSRSink receives a graph's CSR piece by piece from StreamCSR: first
// every neighbor id in order, then indptr. Open's sink is the library's
// loading API (ssg_load_indices, ssg_load_indptr).
type CSRSink interface {
	// Indices receives edges [first, first+len(a)); a is valid only during
	// the call (it may be the memory-mapped file itself) and must not be
	// modified.
	Indices(first uint64, a []uint32) error
	// Indptr receives the complete indptr (num_nodes+1 entries) after all
	// indices.
	Indptr(indptr []uint64) error
}

// StreamCSR passes g's CSR to dst one chunk at a time, each only after
// the checks of CSRFromGraph (chunkfmt.Reader.ChunkCSR: CRC-32C, offsets,
// neighbor ids below num_nodes): a corrupt chunk stops the stream with an
// error naming the file, chunk and node. Indices passes the chunk's
// adjacency without copying it, so the Go heap grows by indptr only
// (8 bytes × (num_nodes+1)).
func StreamCSR(g *chunkfmt.Graph, dst CSRSink) error {
	m := g.Manifest
	indptr := make([]uint64, uint64(m.NumNodes)+1)
	var edges uint64
	for i := 0; i < g.Reader.NumChunks(); i++ {
		adj, err := g.Reader.ChunkCSR(i, indptr)
		if err != nil {
			return fmt.Errorf("gpu: reading CSR of %s: %w", g.Dir, err)
		}
		if len(adj) > 0 {
			if err := dst.Indices(edges, adj); err != nil {
				return err
			}
		}
		edges += uint64(len(adj))
	}
	if edges != m.NumEdges {
		return fmt.Errorf("gpu: reading CSR of %s: %w: chunks hold %d edges, the manifest says %d", g.Dir, chunkfmt.ErrBadManifest, edges, m.NumEdges)
	}
	return dst.Indptr(indptr)
}

// Device returns the CUDA device's name.
func (b *Backend) Device() string { return b.device }

// UVA reports whether the CSR lives in pinned host memory.
func (b *Backend) UVA() bool { return b.uva }

// LibraryPath returns the path the library was loaded from.
func (b *Backend) LibraryPath() string { return b.libPath }

// Timings returns the last call's GPU times in milliseconds: sampling
// kernel(s), sort/gather (or sort/unique), whole call.
func (b *Backend) Timings() [3]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eng == nil {
		return [3]float64{}
	}
	return b.eng.timings()
}

// SampleEpoch samples every layer of an epoch from seeds with the engine
// of Options.Mode. The Result equals host.Reference's for the same input.
func (b *Backend) SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	return b.SampleEpochMode(ctx, b.opts.Mode, seeds, fanouts, key)
}

// SampleEpochMode is SampleEpoch with an explicit engine.
func (b *Backend) SampleEpochMode(ctx context.Context, mode Mode, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.validate(seeds, fanouts); err != nil {
		return nil, err
	}
	f32 := make([]int32, len(fanouts))
	for i, k := range fanouts {
		f32[i] = int32(k)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eng == nil {
		return nil, ErrClosed
	}
	keys := make([]uint64, len(fanouts))
	for l := range keys {
		keys[l] = key.Layer(l)
	}
	res, err := b.sampleLocked(mode, seeds, f32, keys, key.Replace)
	if err != nil {
		return nil, fmt.Errorf("gpu: %s epoch %d: %w", mode, key.Epoch, err)
	}
	res.Key = key
	return res, ctx.Err()
}

// sampleLocked samples layer l of seeds with fanouts[l] under keys[l]
// and fetches the result (b.mu held): frontiers, samples, edge ids, a full
// layer's row offsets, its shapes checked.
func (b *Backend) sampleLocked(mode Mode, seeds []uint32, fanouts []int32, keys []uint64, replace bool) (*epoch.Result, error) {
	counts, err := b.eng.sample(mode, seeds, fanouts, keys, replace)
	if err != nil {
		return nil, err
	}
	L := len(fanouts)
	// A full layer's rows are as long as its nodes' degrees: the library
	// says how many words each layer has, and where a full layer's rows
	// begin.
	sizes, err := b.eng.layerSizes(L)
	if err != nil {
		return nil, fmt.Errorf("layer sizes: %w", err)
	}
	var nf, ns, no uint64
	for l := 0; l < L; l++ {
		nf += counts[l]
		ns += sizes[l]
		if fanouts[l] == epoch.AllNeighbors {
			no += counts[l] + 1
		}
	}
	fronts := make([]uint32, nf)
	samples := make([]int32, ns)
	final := make([]uint32, counts[L])
	if err := b.eng.fetch(fronts, samples, final); err != nil {
		return nil, fmt.Errorf("fetching: %w", err)
	}
	var edgeIDs []int64
	if b.opts.EdgeIDs {
		edgeIDs = make([]int64, ns)
		if err := b.eng.fetchEdges(edgeIDs); err != nil {
			return nil, fmt.Errorf("fetching edge ids: %w", err)
		}
	}
	var offsets []int64
	if no > 0 {
		offsets = make([]int64, no)
		if err := b.eng.fetchOffsets(offsets); err != nil {
			return nil, fmt.Errorf("fetching row offsets: %w", err)
		}
	}
	res := &epoch.Result{Layers: make([]epoch.Layer, L), Final: final}
	var fo, so, oo uint64
	for l := 0; l < L; l++ {
		n, w := counts[l], sizes[l]
		ly := epoch.Layer{
			Frontier: fronts[fo : fo+n : fo+n],
			Fanout:   int(fanouts[l]),
			Samples:  samples[so : so+w : so+w],
		}
		if edgeIDs != nil {
			ly.EdgeIDs = edgeIDs[so : so+w : so+w]
		}
		if fanouts[l] == epoch.AllNeighbors {
			ly.Offsets = offsets[oo : oo+n+1 : oo+n+1]
			oo += n + 1
		}
		res.Layers[l] = ly
		fo += n
		so += w
	}
	// The library's sizes against the fanouts and offsets: a layer whose
	// words disagree is an error, not a misaligned result.
	if err := res.CheckShape(); err != nil {
		return nil, err
	}
	return res, nil
}

// SampleLayer samples one layer on the GPU: fanout neighbors (or
// every neighbor, epoch.AllNeighbors) of every node of frontier (sorted,
// without repeats) under the layer key layerKey (rng.Sample's key; a
// heterogeneous epoch's relation key, rng.RelationKey) with the engine of
// Options.Mode. layer only names the layer in errors. It is
// heterosample.LayerSampler's method, so a heterogeneous epoch's
// relations can be sampled on GPUs, one Backend per relation; the layer
// equals host.ReferenceLayerKeyed's.
func (b *Backend) SampleLayer(ctx context.Context, layer int, frontier []uint32, fanout int, layerKey uint64, replace bool) (epoch.Layer, error) {
	if err := ctx.Err(); err != nil {
		return epoch.Layer{}, err
	}
	if err := b.validate(frontier, []int{fanout}); err != nil {
		return epoch.Layer{}, fmt.Errorf("layer %d: %w", layer, err)
	}
	for i := 1; i < len(frontier); i++ {
		if frontier[i] <= frontier[i-1] {
			return epoch.Layer{}, fmt.Errorf("%w: layer %d: frontier not sorted and unique at position %d (%d after %d)", ErrInvalid, layer, i, frontier[i], frontier[i-1])
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eng == nil {
		return epoch.Layer{}, ErrClosed
	}
	res, err := b.sampleLocked(b.opts.Mode, frontier, []int32{int32(fanout)}, []uint64{layerKey}, replace)
	if err != nil {
		return epoch.Layer{}, fmt.Errorf("gpu: %s layer %d: %w", b.opts.Mode, layer, err)
	}
	return res.Layers[0], ctx.Err()
}

// EdgeIDs reports whether the layers carry edge ids (Options.EdgeIDs).
func (b *Backend) EdgeIDs() bool { return b.opts.EdgeIDs }

// SampleBlocks samples one minibatch on the GPU — the fused (or BSP)
// engine over just these seeds — and relabels it into DGL-style blocks on
// the host. Because a node's sample depends only on (seed, epoch, layer,
// node), the blocks equal those that (*epoch.Result).Sample(seeds) gives
// from a whole epoch's result under the same key.
func (b *Backend) SampleBlocks(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Blocks, error) {
	res, err := b.SampleEpoch(ctx, seeds, fanouts, key)
	if err != nil {
		return nil, err
	}
	return res.Assemble(seeds, epoch.DGL)
}

// walkRequest is one ssg_walk call: a walk set with its thresholds
// computed on the host (walk.Config.Thresholds), so that no device
// floating point decides a walk.
type walkRequest struct {
	mode          walk.Mode // SSG_WALK_*: the same numbers (header_test.go)
	starts        []uint32
	walksPerNode  uint32
	length        uint32
	seed          uint64
	restart       uint64
	stopAtRestart bool
	node2vec      rng.Node2VecThresholds
}

// EngineGPU is the GPU engine's walk.Stats.Engine.
const EngineGPU = "gpu"

var _ walk.Walker = (*Backend)(nil)

// Walks runs a walk set on the GPU (WalksInto) into a new slice of
// exactly c.OutputLen(len(starts)) entries, for callers that hold no
// output of their own.
func (b *Backend) Walks(ctx context.Context, starts []uint32, c walk.Config) ([]int32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.CheckStarts(starts, b.numNodes); err != nil {
		return nil, invalidWalks(err)
	}
	out := make([]int32, c.OutputLen(len(starts)))
	if _, err := b.walksInto(ctx, starts, c, out); err != nil {
		return nil, err
	}
	return out, nil
}

// WalksInto runs a walk set on the GPU (walk.Walker): every start
// c.WalksPerNode times, one kernel for whole walks (docs/GPU.md,
// "Walks"), the rows copied by the library straight into out (the
// caller's memory: a buffer, a memory-mapped .npy), which must have
// exactly c.OutputLen(len(starts)) entries. The rows are walk.Reference's
// over the same graph. A request walk.Config.CheckOutput refuses is an
// error wrapping both ErrInvalid and walk.ErrInvalid, and writes nothing.
// The statistics are what the library times (ssg_last_timings): the walk
// kernels, the copies of the rows, and the call's wall time.
func (b *Backend) WalksInto(ctx context.Context, starts []uint32, c walk.Config, out []int32) (*walk.Stats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.CheckOutput(starts, b.numNodes, out); err != nil {
		return nil, invalidWalks(err)
	}
	return b.walksInto(ctx, starts, c, out)
}

// invalidWalks is a walk set's refusal as the engine reports it: a bad
// request of this package's (ErrInvalid) and of walk's.
func invalidWalks(err error) error { return fmt.Errorf("%w: walks: %w", ErrInvalid, err) }

// walksInto is WalksInto after its checks.
func (b *Backend) walksInto(ctx context.Context, starts []uint32, c walk.Config, out []int32) (*walk.Stats, error) {
	t0 := time.Now()
	thr := c.Thresholds()
	req := walkRequest{
		mode:          c.Mode,
		starts:        starts,
		walksPerNode:  uint32(c.WalksPerNode),
		length:        uint32(c.Length),
		seed:          c.Seed,
		restart:       thr.Restart,
		stopAtRestart: c.StopAtRestart,
		node2vec:      thr.Node2Vec,
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eng == nil {
		return nil, ErrClosed
	}
	if err := b.eng.walk(req, out); err != nil {
		return nil, fmt.Errorf("gpu: %s walks from %d starts: %w", c.Mode, len(starts), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tm := b.eng.timings() // ms: walk kernels, copies, the whole call
	return &walk.Stats{
		Engine: EngineGPU, Devices: 1,
		KernelTime: msDuration(tm[0]), SyncTime: msDuration(tm[1]), Wall: time.Since(t0),
	}, nil
}

// msDuration converts the library's milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// Close frees the GPU context. It is safe to call twice.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eng != nil {
		b.eng.close()
		b.eng = nil
	}
	return nil
}

func (b *Backend) validate(seeds []uint32, fanouts []int) error {
	if len(fanouts) == 0 || len(fanouts) > epoch.MaxLayers {
		return fmt.Errorf("%w: %d layers, want 1..%d", ErrInvalid, len(fanouts), epoch.MaxLayers)
	}
	for l, k := range fanouts {
		if k != epoch.AllNeighbors && (k < 1 || k > MaxFanout) {
			return fmt.Errorf("%w: fanout %d of layer %d (hop %d), want 1..%d or %d (every neighbor)", ErrInvalid, k, l, l+1, MaxFanout, epoch.AllNeighbors)
		}
	}
	for i, s := range seeds {
		if s >= b.numNodes {
			return fmt.Errorf("%w: seed %d (position %d) is not a node: graph has %d nodes", ErrInvalid, s, i, b.numNodes)
		}
	}
	return nil
}

// searchPaths lists where the library is looked for, in order; the last
// entry is the bare name, which dlopen resolves on the system path.
func searchPaths(libPath string) []string {
	if libPath != "" {
		return []string{libPath}
	}
	var paths []string
	if env := os.Getenv(EnvLib); env != "" {
		paths = append(paths, env)
	}
	if exe, err := os.Executable(); err == nil {
		paths = append(paths, filepath.Join(filepath.Dir(exe), LibName))
	}
	return append(paths, LibName)
}

// notFound builds the error for a library found nowhere.
func notFound(tried []string, reasons []string) error {
	var sb strings.Builder
	for i := range tried {
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(tried[i])
		if reasons[i] != "" {
			sb.WriteString(" (" + reasons[i] + ")")
		}
	}
	if os.Getenv(EnvLib) == "" {
		sb.WriteString("; $" + EnvLib + " unset")
	}
	return fmt.Errorf("%w (searched %s): build it with `make gpu` on a CUDA machine and put it next to the executable or set $%s",
		ErrLibraryNotFound, sb.String(), EnvLib)
}

// libError is an error reported by the library: its message (with the
// CUDA error name and string) and the sentinel of its status code.
type libError struct {
	sentinel error
	msg      string
}

func (e *libError) Error() string {
	if e.sentinel == ErrNoDevice && strings.HasPrefix(e.msg, "no CUDA device") {
		return "gpu: " + e.msg
	}
	return e.sentinel.Error() + ": " + e.msg
}

func (e *libError) Unwrap() error { return e.sentinel }
