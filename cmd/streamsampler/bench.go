package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

func init() { register(newBenchCmd) }

type benchOptions struct {
	graph      string
	fanoutSets []string
	runs       int
	trainFrac  float64
	batchSize  int
	maxBatches int
	seed       uint64
	json       bool
	backend    backendFlags
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench --graph DIR",
		Short: "Measure epoch streaming and minibatch assembly against floors measured in the same run",
		Long: `bench samples epochs of a graph directory with a training set of --train-frac of
its nodes, for each --fanouts set, and reports per layer and per epoch the wall
time, bytes read and read rate against the O_DIRECT sequential read rate of the
same file, and sampled slots/s against a random-gather floor (offsets plus k
random adjacency words per target, chunks in memory). It then assembles
minibatches and compares them with an in-memory per-minibatch (DGL-style)
sampler run in the same process, and checks peak RSS. Each target prints PASS
or FAIL; figures are medians of --runs runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.graph, "graph", "", "graph directory (from chunkify)")
	f.StringArrayVar(&o.fanoutSets, "fanouts", []string{"15,10,5", "10,10,10"}, "fanouts, hop order; repeat for several sets")
	f.IntVar(&o.runs, "runs", 3, "epochs (and assembly passes) per measurement; medians are reported")
	f.Float64Var(&o.trainFrac, "train-frac", 0.1, "fraction of nodes in the training set")
	f.IntVar(&o.batchSize, "batch-size", 1024, "minibatch size for the assembly benchmark")
	f.IntVar(&o.maxBatches, "max-batches", 0, "assemble at most this many minibatches per pass (0: the whole epoch)")
	f.Uint64Var(&o.seed, "seed", 1, "sampling seed")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of the human report")
	o.backend.add(cmd)
	cmd.MarkFlagRequired("graph")
	return cmd
}

// benchLayer is one layer's medians.
type benchLayer struct {
	Layer        int     `json:"layer"`
	Fanout       int     `json:"fanout"`
	Targets      int     `json:"targets"`
	SampledSlots int64   `json:"sampled_slots"`
	ChunksRead   int     `json:"chunks_read"`
	ChunksReused int     `json:"chunks_reused"`
	BytesRead    int64   `json:"bytes_read"`
	WallS        float64 `json:"wall_s"`
	ReadGBps     float64 `json:"read_gbps"`
	SlotsPerS    float64 `json:"slots_per_s"`
	IOFloorS     float64 `json:"io_floor_s"`
	GatherFloorS float64 `json:"gather_floor_s"`
	KernelFloorS float64 `json:"kernel_floor_s"`
}

// benchSet is one fanout set's results.
type benchSet struct {
	Fanouts        []int        `json:"fanouts"`
	Layers         []benchLayer `json:"layers"`
	EpochWallS     float64      `json:"epoch_wall_s"`
	EpochWalls     []float64    `json:"epoch_walls_s"`
	BytesRead      int64        `json:"bytes_read"`
	ReadGBps       float64      `json:"read_gbps"`
	SlotsPerS      float64      `json:"slots_per_s"`
	GatherSlotsPS  float64      `json:"gather_slots_per_s"`
	IOFloorS       float64      `json:"io_floor_s"`
	GatherFloorS   float64      `json:"gather_floor_s"`
	FloorRatio     float64      `json:"floor_ratio"`
	KernelFloorS   float64      `json:"kernel_floor_s"`
	KernelRatio    float64      `json:"kernel_floor_ratio"`
	ResultBytes    int64        `json:"result_bytes"`
	PeakRSS        int64        `json:"peak_rss"`
	RSSBudget      int64        `json:"rss_budget"`
	BufferBytes    int64        `json:"buffer_bytes"`
	IndexBytes     int64        `json:"index_bytes"`
	PassFloorRatio bool         `json:"pass_floor_ratio"`
	PassRSS        bool         `json:"pass_rss"`
}

type benchAssembly struct {
	Fanouts              []int   `json:"fanouts"`
	BatchSize            int     `json:"batch_size"`
	Batches              int     `json:"batches"`
	Edges                int64   `json:"edges"`
	MsPerBatch           float64 `json:"ms_per_batch"`
	EdgesPerS            float64 `json:"edges_per_s"`
	CPUMsPerBatch        float64 `json:"cpu_ms_per_batch"`
	EdgesPerCPUS         float64 `json:"edges_per_cpu_s"`
	BaselineMsPerBat     float64 `json:"baseline_ms_per_batch"`
	BaselineEdgesPS      float64 `json:"baseline_edges_per_s"`
	BaselineCPUMsPerBat  float64 `json:"baseline_cpu_ms_per_batch"`
	BaselineEdgesPerCPUS float64 `json:"baseline_edges_per_cpu_s"`
	Speedup              float64 `json:"speedup"`
	IdenticalBlocks      bool    `json:"identical_blocks"`
	PassVsBaseline       bool    `json:"pass_vs_baseline"`
	PassEdgesPerCore     bool    `json:"pass_30M_edges_per_core"`
}

type benchReport struct {
	Date        string        `json:"date"`
	Host        string        `json:"host"`
	CPUs        int           `json:"cpus"`
	Graph       string        `json:"graph"`
	NumNodes    uint32        `json:"num_nodes"`
	NumEdges    uint64        `json:"num_edges"`
	Chunks      int           `json:"chunks"`
	ChunkSize   int64         `json:"chunk_size"`
	FileBytes   int64         `json:"file_bytes"`
	Train       int           `json:"train_nodes"`
	Devices     int           `json:"devices"`
	Backend     string        `json:"backend"`
	DirectIO    bool          `json:"direct_io"`
	SeqReadGBps float64       `json:"seq_read_gbps"`
	SeqDirect   bool          `json:"seq_read_direct"`
	Runs        int           `json:"runs"`
	Sets        []benchSet    `json:"sets"`
	Assembly    benchAssembly `json:"assembly"`
	Pass        bool          `json:"pass"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func runBench(ctx context.Context, w io.Writer, o benchOptions) error {
	if o.runs < 1 {
		return usagef("--runs %d: want at least 1", o.runs)
	}
	if o.trainFrac <= 0 || o.trainFrac > 1 {
		return usagef("--train-frac %v: want (0, 1]", o.trainFrac)
	}
	sets := make([][]int, len(o.fanoutSets))
	for i, s := range o.fanoutSets {
		f, err := parseFanouts(s)
		if err != nil {
			return err
		}
		sets[i] = f
	}
	m, err := chunkfmt.ReadManifest(o.graph)
	if err != nil {
		return err
	}
	hostname, _ := os.Hostname()
	rep := &benchReport{
		Date: time.Now().UTC().Format(time.RFC3339), Host: hostname, CPUs: runtime.NumCPU(),
		Graph: o.graph, NumNodes: m.NumNodes, NumEdges: m.NumEdges, Chunks: len(m.Chunks),
		ChunkSize: m.ChunkSize, FileBytes: m.FileSize(), Devices: o.backend.Devices, Backend: o.backend.Backend, Runs: o.runs,
	}
	logf := func(format string, a ...any) {
		if !o.json {
			fmt.Fprintf(w, format, a...)
		}
	}

	// The I/O floor: this file's sequential O_DIRECT read rate, now.
	var rates []float64
	for range o.runs {
		r, direct, err := seqReadRate(filepath.Join(o.graph, chunkfmt.ChunksFile), 4<<30)
		if err != nil {
			return err
		}
		rates = append(rates, r)
		rep.SeqDirect = direct
	}
	seqRate := median(rates)
	rep.SeqReadGBps = seqRate / 1e9
	logf("graph %s: %d nodes, %d edges, %d chunks of %d MiB; %s sequential read %.2f GB/s\n",
		o.graph, m.NumNodes, m.NumEdges, len(m.Chunks), m.ChunkSize>>20, ioKind(rep.SeqDirect), rep.SeqReadGBps)

	all := make([]uint32, m.NumNodes)
	for i := range all {
		all[i] = uint32(i)
	}
	train := epoch.Shuffle(all, o.seed^0x7a11, 0)[:max(1, int(float64(m.NumNodes)*o.trainFrac))]
	slices.Sort(train)
	all = nil
	rep.Train = len(train)

	be, err := openBackend(o.graph, o.backend)
	if err != nil {
		return err
	}
	defer be.Close()
	var bufBytes int64
	if s, ok := be.(*host.Sampler); ok {
		// Emulated normal buffers hold a host and a device copy.
		bufBytes = s.BufferBytes()
	}
	indexBytes := int64(len(m.Chunks))*4 + int64(len(train))*4

	for si, fan := range sets {
		// Peak RSS is measured per set, from a clean slate: what the
		// previous set, the floors and the assembly baseline held is
		// returned to the OS first.
		debug.FreeOSMemory()
		resetPeakRSS()
		set := benchSet{Fanouts: fan, BufferBytes: bufBytes, IndexBytes: indexBytes}
		var walls []float64
		per := make([][]host.LayerStats, len(fan))
		var prev, cur *epoch.Result
		for r := 0; r < o.runs; r++ {
			key := epoch.Key{Seed: o.seed, Epoch: uint32(r)}
			t0 := time.Now()
			res, err := be.SampleEpoch(ctx, train, fan, key)
			if err != nil {
				return err
			}
			walls = append(walls, time.Since(t0).Seconds())
			if st := backendStats(be); st != nil {
				rep.DirectIO = st.DirectIO
				for l, ls := range st.Layers {
					per[l] = append(per[l], ls)
				}
			}
			prev, cur = cur, res
		}
		// Two epochs resident (the current and the next), as in training.
		set.ResultBytes = cur.Bytes()
		if prev != nil {
			set.ResultBytes += prev.Bytes()
		} else {
			set.ResultBytes *= 2
		}
		set.PeakRSS = peakRSS()
		set.RSSBudget = int64(1.1 * float64(set.ResultBytes+bufBytes+indexBytes))
		set.PassRSS = set.PeakRSS > 0 && set.PeakRSS <= set.RSSBudget
		prev = nil
		set.EpochWalls = walls
		set.EpochWallS = median(walls)
		for l := range fan {
			bl := benchLayer{Layer: l, Fanout: fan[l], Targets: len(cur.Layers[l].Frontier)}
			var lw, gb []float64
			for _, ls := range per[l] {
				lw = append(lw, ls.Wall.Seconds())
				gb = append(gb, ls.ReadGBps())
				bl.SampledSlots, bl.ChunksRead, bl.ChunksReused, bl.BytesRead = ls.SampledSlots, ls.ChunksRead, ls.ChunksReused, ls.BytesRead
			}
			bl.WallS, bl.ReadGBps = median(lw), median(gb)
			if bl.WallS > 0 {
				bl.SlotsPerS = float64(bl.SampledSlots) / bl.WallS
			}
			bl.IOFloorS = float64(bl.BytesRead) / seqRate
			set.BytesRead += bl.BytesRead
			set.Layers = append(set.Layers, bl)
		}
		set.IOFloorS = float64(set.BytesRead) / seqRate
		set.ReadGBps = float64(set.BytesRead) / set.EpochWallS / 1e9
		if err := benchFloors(o, &set, cur); err != nil {
			return err
		}
		if si == 0 {
			asm, err := benchAssemble(o, cur, train, fan)
			if err != nil {
				return err
			}
			rep.Assembly = *asm
		}
		cur = nil
		rep.Sets = append(rep.Sets, set)
	}

	asm := &rep.Assembly
	rep.Pass = asm.PassVsBaseline && asm.PassEdgesPerCore && asm.IdenticalBlocks
	for _, s := range rep.Sets {
		rep.Pass = rep.Pass && s.PassFloorRatio && s.PassRSS
	}
	if o.json {
		enc := json.NewEncoder(w)
		return enc.Encode(rep)
	}
	printBench(w, rep)
	return nil
}

// benchFloors measures the gather and kernel floors of each layer of res
// on the memory-mapped graph (after a warm-up pass that faults it in).
func benchFloors(o benchOptions, set *benchSet, res *epoch.Result) error {
	g, err := chunkfmt.Open(o.graph)
	if err != nil {
		return err
	}
	defer g.Close()
	// Fault the whole mapping in first: the floors are memory floors, and
	// the epochs read the file with O_DIRECT, so it is not in the page cache.
	var sink uint32
	for c := range g.Manifest.Chunks {
		w, err := g.Reader.ChunkWords(c)
		if err != nil {
			return err
		}
		for i := 0; i < len(w); i += 1024 {
			sink += w[i]
		}
	}
	_ = sink
	workers := max(1, o.backend.Devices)
	var slots int64
	for l := range set.Layers {
		bl := &set.Layers[l]
		targets := res.Layers[l].Frontier
		gatherFloor(g, targets, bl.Fanout, workers)
		var ts []float64
		for range o.runs {
			d, _ := gatherFloor(g, targets, bl.Fanout, workers)
			ts = append(ts, d.Seconds())
		}
		bl.GatherFloorS = median(ts)
		set.GatherFloorS += bl.GatherFloorS
		ts = ts[:0]
		for range o.runs {
			d, err := kernelFloor(g, targets, bl.Fanout, res.Key.Layer(l), res.Key.Replace, workers)
			if err != nil {
				return err
			}
			ts = append(ts, d.Seconds())
		}
		bl.KernelFloorS = median(ts)
		set.KernelFloorS += bl.KernelFloorS
		slots += bl.SampledSlots
	}
	set.SlotsPerS = float64(slots) / set.EpochWallS
	set.GatherSlotsPS = float64(slots) / set.GatherFloorS
	set.FloorRatio = set.EpochWallS / max(set.IOFloorS, set.GatherFloorS)
	set.PassFloorRatio = set.FloorRatio <= 1.5
	set.KernelRatio = set.EpochWallS / max(set.IOFloorS, set.KernelFloorS)
	return nil
}

func benchAssemble(o benchOptions, res *epoch.Result, train []uint32, fan []int) (*benchAssembly, error) {
	batches := epoch.Batches(train, o.batchSize, o.seed, res.Key.Epoch)
	if o.maxBatches > 0 && len(batches) > o.maxBatches {
		batches = batches[:o.maxBatches]
	}
	a := &benchAssembly{Fanouts: fan, BatchSize: o.batchSize, Batches: len(batches)}
	ix, err := res.Index(0)
	if err != nil {
		return nil, err
	}
	as := epoch.NewAssembler(res, ix)
	csr, err := loadCSR(o.graph)
	if err != nil {
		return nil, err
	}
	base := &minibatchSampler{g: csr, fanouts: fan, key: res.Key}

	// One goroutine on one locked OS thread assembles every batch, so the
	// thread's CPU time is the single core's work, whatever else the
	// machine runs; wall time is reported beside it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pass := func(f func([]uint32) (*epoch.Blocks, error)) (wall, cpu float64, edges int64, err error) {
		c0 := threadCPU()
		t0 := time.Now()
		for _, b := range batches {
			blk, err := f(b)
			if err != nil {
				return 0, 0, 0, err
			}
			edges += int64(blk.NumEdges())
		}
		return time.Since(t0).Seconds(), threadCPU() - c0, edges, nil
	}
	var walls, cpus, bwalls, bcpus []float64
	for range o.runs {
		// Alternate the two so that both see the same machine.
		w, c, e, err := pass(as.Sample)
		if err != nil {
			return nil, err
		}
		walls, cpus, a.Edges = append(walls, w), append(cpus, c), e
		w, c, _, err = pass(base.sample)
		if err != nil {
			return nil, err
		}
		bwalls, bcpus = append(bwalls, w), append(bcpus, c)
	}
	n := float64(len(batches))
	t, c, bt, bc := median(walls), median(cpus), median(bwalls), median(bcpus)
	a.MsPerBatch, a.EdgesPerS = t*1e3/n, float64(a.Edges)/t
	a.CPUMsPerBatch, a.EdgesPerCPUS = c*1e3/n, float64(a.Edges)/c
	a.BaselineMsPerBat, a.BaselineEdgesPS = bt*1e3/n, float64(a.Edges)/bt
	a.BaselineCPUMsPerBat, a.BaselineEdgesPerCPUS = bc*1e3/n, float64(a.Edges)/bc
	a.Speedup = bc / c
	// The two must agree exactly: same rng contract, same block order.
	a.IdenticalBlocks = true
	for i := 0; i < min(len(batches), 20); i++ {
		x, err1 := as.Sample(batches[i])
		y, err2 := base.sample(batches[i])
		if err1 != nil || err2 != nil || !sameBlocks(x, y) {
			a.IdenticalBlocks = false
		}
	}
	a.PassVsBaseline = a.Speedup >= 1
	a.PassEdgesPerCore = a.EdgesPerCPUS >= 30e6
	return a, nil
}

func sameBlocks(a, b *epoch.Blocks) bool {
	if len(a.Hops) != len(b.Hops) {
		return false
	}
	for h := range a.Hops {
		x, y := a.Hops[h], b.Hops[h]
		if !slices.Equal(x.Dst, y.Dst) || !slices.Equal(x.Src, y.Src) || !slices.Equal(x.EdgeSrc, y.EdgeSrc) || !slices.Equal(x.EdgeDst, y.EdgeDst) {
			return false
		}
	}
	return true
}

func ioKind(direct bool) string {
	if direct {
		return "O_DIRECT"
	}
	return "buffered"
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func printBench(w io.Writer, r *benchReport) {
	fmt.Fprintf(w, "%s on %s (%d CPUs); backend %s, %d device(s), %s chunk reads; train %d nodes; medians of %d runs\n",
		r.Date, r.Host, r.CPUs, r.Backend, r.Devices, ioKind(r.DirectIO), r.Train, r.Runs)
	for _, s := range r.Sets {
		fmt.Fprintf(w, "\nfanouts %v\n", s.Fanouts)
		fmt.Fprintf(w, "%5s %6s %10s %12s %6s %6s %12s %9s %8s %12s %9s %9s %9s\n",
			"layer", "fanout", "targets", "slots", "read", "reused", "bytes", "wall s", "GB/s", "slots/s", "io-floor", "gather", "kernel")
		for _, l := range s.Layers {
			fmt.Fprintf(w, "%5d %6d %10d %12d %6d %6d %12d %9.3f %8.2f %12.3g %9.3f %9.3f %9.3f\n",
				l.Layer, l.Fanout, l.Targets, l.SampledSlots, l.ChunksRead, l.ChunksReused, l.BytesRead, l.WallS, l.ReadGBps, l.SlotsPerS, l.IOFloorS, l.GatherFloorS, l.KernelFloorS)
		}
		fmt.Fprintf(w, "epoch: wall %.3f s (runs %s), %d bytes at %.2f GB/s (sequential %.2f GB/s), %.3g slots/s (gather floor %.3g slots/s)\n",
			s.EpochWallS, fmtFloats(s.EpochWalls), s.BytesRead, s.ReadGBps, r.SeqReadGBps, s.SlotsPerS, s.GatherSlotsPS)
		fmt.Fprintf(w, "%s epoch wall / max(I/O floor %.3f s, gather floor %.3f s) = %.2f (target <= 1.5)\n",
			passFail(s.PassFloorRatio), s.IOFloorS, s.GatherFloorS, s.FloorRatio)
		fmt.Fprintf(w, "info epoch wall / max(I/O floor, kernel floor %.3f s: hls.Run on in-memory chunks) = %.2f (streaming overhead)\n",
			s.KernelFloorS, s.KernelRatio)
		fmt.Fprintf(w, "%s peak RSS %s vs 1.1 x (two epochs %s + buffers %s + index %s) = %s\n",
			passFail(s.PassRSS), mib(s.PeakRSS), mib(s.ResultBytes), mib(s.BufferBytes), mib(s.IndexBytes), mib(s.RSSBudget))
	}
	a := r.Assembly
	fmt.Fprintf(w, "\nassembly, batch %d, fanouts %v, %d batches, %.0f edges/batch, one thread:\n", a.BatchSize, a.Fanouts, a.Batches, float64(a.Edges)/float64(max(a.Batches, 1)))
	fmt.Fprintf(w, "  epoch assembly          %8.3f ms/batch CPU (%8.3f wall), %.3g edges per CPU-second (%.3g per wall-second)\n", a.CPUMsPerBatch, a.MsPerBatch, a.EdgesPerCPUS, a.EdgesPerS)
	fmt.Fprintf(w, "  per-minibatch sampler   %8.3f ms/batch CPU (%8.3f wall), %.3g edges per CPU-second (%.3g per wall-second)\n", a.BaselineCPUMsPerBat, a.BaselineMsPerBat, a.BaselineEdgesPerCPUS, a.BaselineEdgesPS)
	fmt.Fprintf(w, "  speedup %.2fx (CPU time)\n", a.Speedup)
	fmt.Fprintf(w, "%s blocks identical to the per-minibatch sampler's\n", passFail(a.IdenticalBlocks))
	fmt.Fprintf(w, "%s assembly at least as fast as the per-minibatch sampler\n", passFail(a.PassVsBaseline))
	fmt.Fprintf(w, "%s assembly >= 30M edges per CPU-second on one core\n", passFail(a.PassEdgesPerCore))
	fmt.Fprintf(w, "\n%s overall\n", passFail(r.Pass))
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

func fmtFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(s, " ")
}
