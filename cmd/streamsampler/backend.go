package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/walk"
)

// backendFlags are the flags that pick and configure the sampling engine.
type backendFlags struct {
	Backend string
	Devices int
	Xclbin  string
	// VerifyReads re-reads every chunk a device reads and checks its
	// CRC-32C on the host (host.Options.VerifyReads).
	VerifyReads bool
	// EdgeIDs asks the engine for edge ids (--edge-ids; host.Options and
	// gpu.Options EdgeIDs). Commands with a state directory record it
	// there (statedir.FieldEdgeIDs) and take the recorded value.
	EdgeIDs bool
	// GPU holds the --gpu-* flags (backend_gpu.go).
	GPU gpuOptions
	// ChunkCache is --chunk-cache as given: "auto", 0 or a size
	// (host.Options.ChunkCache); chunkCache its bytes once resolved.
	ChunkCache string
	chunkCache *int64
	// OnChunk, if set, receives each chunk read (progress reporting).
	OnChunk func(layer, chunk int, bytes int64)
	// RandomReads is --random-reads (host.Options.RandomReads).
	RandomReads string
}

func (b *backendFlags) add(cmd *cobra.Command) { b.addWith(cmd, "auto", "auto") }

// addWith is add with chunkCache as --chunk-cache's default and
// randomReads as --random-reads': bench's are 0 and off, since it
// measures streaming against the file's sequential read rate; walk has
// no --random-reads (""): its passes always stream.
func (b *backendFlags) addWith(cmd *cobra.Command, chunkCache, randomReads string) {
	cmd.Flags().StringVar(&b.Backend, "backend", "emu", "sampling engine: emu (emulated SmartSSD), xrt (SmartSSD via XRT, needs -tags xrt) or gpu")
	b.Devices = 1
	cmd.Flags().Var(intInRange{&b.Devices, 1, maxDevices}, "devices", "number of devices to stream over")
	cmd.Flags().StringVar(&b.Xclbin, "xclbin", "", "kernel binary for --backend xrt")
	cmd.Flags().BoolVar(&b.EdgeIDs, "edge-ids", false, "also sample edge ids: each sampled edge's position in the graph's stored CSR (indptr[node] + the position chosen), for edge features")
	cmd.Flags().BoolVar(&b.VerifyReads, "verify-reads", false, "--backend xrt: read every chunk a device reads again on the host and check its CRC-32C (emu and gpu always check; emu then streams as a SmartSSD does, without the chunk cache, which is how that path is tested)")
	cmd.Flags().StringVar(&b.ChunkCache, "chunk-cache", chunkCache, "--backend emu: memory for graph chunks kept between the layers and epochs that read them (e.g. 4GiB; 0: only the two buffers per device streaming needs), in slots of the largest chunk; auto: every chunk when they fit in half of the memory this process may use (MemAvailable, or the tightest memory cgroup's room; a quarter with --features, whose auto cache takes the rest of the half), else that half")
	if randomReads == "" { // the command's passes take no per-chunk choice (walk)
		addGPUFlags(cmd.Flags(), &b.GPU)
		return
	}
	cmd.Flags().StringVar(&b.RandomReads, "random-reads", randomReads, "--backend emu: per chunk and layer, sample a chunk's targets by random reads of their rows' disk blocks instead of streaming the chunk, where that costs less (auto: by a cost model over the disk's rates, measured once by a short probe; the row offsets, 8 bytes per node, loaded when a layer first gains, within 1 GiB), never (off) or always; the samples are the same")
	addGPUFlags(cmd.Flags(), &b.GPU)
}

// resolveChunkCache turns --chunk-cache into bytes for the graph of
// manifest m, once, and returns the host memory the cache will hold at
// most (its slots; 0 where the backend keeps no chunk cache: xrt reads
// chunks peer-to-peer into the SmartSSDs, gpu holds the graph in GPU
// memory) with a line for the command to report at start ("" for those).
// The automatic caches take at most half of the memory the process may
// use between them, the rest being the epochs' and the page cache's: with
// features (a feature cache to share it with) the chunk cache's auto is
// every chunk when they fit a quarter of that memory, else that quarter,
// and --feature-cache auto takes what the chunk cache left of the half
// (featureFlags.planning).
func (b *backendFlags) resolveChunkCache(m *chunkfmt.Manifest, features bool) (held int64, report string, err error) {
	var n int64
	how := "--chunk-cache"
	// The emulated devices stream through the chunk cache, but with
	// --verify-reads as SmartSSDs do (host.Options.VerifyReads).
	emu := (b.Backend == "emu" || b.Backend == "") && !b.VerifyReads
	switch {
	case (b.ChunkCache == "auto" || b.ChunkCache == "") && !emu:
		// Nothing to size: xrt and gpu keep no chunk cache (a size
		// given for xrt is passed on, and noted in its statistics), nor
		// emu with --verify-reads.
	case b.ChunkCache == "auto" || b.ChunkCache == "":
		avail := memavail.Available()
		share := "half"
		if features {
			n, share = host.AutoChunkCache(m, avail/2), "a quarter"
		} else {
			n = host.AutoChunkCache(m, avail)
		}
		how = fmt.Sprintf("auto: %s of the %s this process may use, at most the graph; --chunk-cache sets it", share, mib(avail))
	default:
		if n, err = ingest.ParseSize(b.ChunkCache); err != nil || n < 0 {
			return 0, "", usagef("--chunk-cache %q: want a size such as 4GiB, 0, or auto", b.ChunkCache)
		}
	}
	b.chunkCache = &n
	if !emu {
		return 0, "", nil
	}
	slots, slot := host.ChunkCacheSlots(m, b.Devices, n)
	// Beyond the two buffers a device streams through, the cache is
	// memory the heap's cgroup limit did not leave room for.
	reserveGoMemory(int64(slots-2*max(b.Devices, 1)) * slot)
	return int64(slots) * slot, fmt.Sprintf("chunk cache %s: %d of the graph's %d chunks, in slots of %s (%s)", mib(int64(slots)*slot), min(slots, len(m.Chunks)), len(m.Chunks), mib(slot), how), nil
}

// maxDevices bounds --devices: every device gets its own chunk and result
// buffers, so a mistyped count (100000) would allocate until the machine
// gives out; 64 is well past the SmartSSDs or GPUs of any one host.
const maxDevices = 64

// intInRange is an int flag whose value must lie in [lo, hi]: an
// out-of-range value fails as the command line is parsed, naming the flag
// (a usage error, exit status 2), like a value that does not parse.
type intInRange struct {
	p      *int
	lo, hi int
}

func (v intInRange) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

// Set parses s as pflag's int flags do and checks the range.
func (v intInRange) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return err
	}
	if int(n) < v.lo || int(n) > v.hi {
		return fmt.Errorf("want %d..%d", v.lo, v.hi)
	}
	*v.p = int(n)
	return nil
}

// Type is what help shows for the value.
func (intInRange) Type() string { return "int" }

// gpuOptions configure the GPU engine (--gpu-lib, --gpu-device, --gpu-uva,
// --gpu-mode, --gpu-timeout); only commands that open a backend have them.
type gpuOptions struct {
	Lib     string
	Device  int
	UVA     bool
	Mode    string
	Timeout time.Duration
}

// openBackend opens the engine b names over graphDir.
func openBackend(graphDir string, b backendFlags) (host.Backend, error) {
	switch b.Backend {
	case "emu", "xrt":
		if b.chunkCache == nil {
			m, err := chunkfmt.ReadManifest(graphDir)
			if err != nil {
				return nil, err
			}
			if _, _, err := b.resolveChunkCache(m, false); err != nil {
				return nil, err
			}
		}
		rr := host.RandomOff
		if b.RandomReads != "" {
			var err error
			if rr, err = host.ParseRandomReads(b.RandomReads); err != nil {
				return nil, usagef("--random-reads %q: want auto, off or always", b.RandomReads)
			}
		}
		if rr == host.RandomAuto && (b.Backend != "emu" || b.VerifyReads) {
			rr = host.RandomOff // random reads go where the emulated devices read host memory only
		}
		return host.Open(graphDir, host.Options{Backend: b.Backend, Devices: b.Devices, Xclbin: b.Xclbin, VerifyReads: b.VerifyReads, EdgeIDs: b.EdgeIDs, OnChunk: b.OnChunk, ChunkCache: *b.chunkCache, RandomReads: rr})
	case "gpu":
		return openGPU(graphDir, b)
	default:
		return nil, usagef("--backend %q: want emu, xrt or gpu", b.Backend)
	}
}

// heteroOptions are heterosample's options for the backend b names: the
// emulated or XRT devices through a host.Sampler per relation, or a
// gpu.Backend per relation (gpuRelations).
func heteroOptions(b backendFlags) heterosample.Options {
	o := heterosample.Options{Backend: b.Backend, Host: host.Options{Devices: b.Devices, Xclbin: b.Xclbin, VerifyReads: b.VerifyReads, EdgeIDs: b.EdgeIDs}}
	if b.Backend == heterosample.BackendGPU {
		o.OpenRelation = gpuRelations(b)
	}
	return o
}

// chunkProgress returns an OnChunk hook drawing a progress line on stderr
// when it is a terminal (nil bar otherwise), and the bar to finish.
func chunkProgress(stderr io.Writer, quiet bool, label string, total int64) (func(layer, chunk int, bytes int64), *progress.Bar) {
	f, _ := stderr.(*os.File)
	bar := progress.New(stderr, total, label, progress.Enabled(f, quiet))
	return func(_, _ int, n int64) { bar.Add(n); bar.AddItems(1) }, bar
}

// backendWalker returns be as a walk.Walker where it walks (the
// streaming sampler, the GPU engine), nil where it does not: the one
// place the commands (walk, serve) ask a backend to walk, by what it
// implements, not by its name.
func backendWalker(be host.Backend) walk.Walker {
	if w, ok := be.(walk.Walker); ok {
		return w
	}
	return nil
}
