package hostbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Layer is one layer's medians over the runs of a fanout set.
type Layer struct {
	Layer        int     `json:"layer"`
	Fanout       int     `json:"fanout"`
	Targets      int     `json:"targets"`
	SampledSlots int64   `json:"sampled_slots"`
	ChunksRead   int     `json:"chunks_read"`
	ChunksReused int     `json:"chunks_reused"`
	BytesRead    int64   `json:"bytes_read"`
	BytesNeeded  int64   `json:"bytes_needed"` // the used bytes of the chunks holding a frontier node, once
	WallS        float64 `json:"wall_s"`
	ReadGBps     float64 `json:"read_gbps"`
	SlotsPerS    float64 `json:"slots_per_s"`
	IOFloorS     float64 `json:"io_floor_s"`
	GatherFloorS float64 `json:"gather_floor_s"`
	KernelFloorS float64 `json:"kernel_floor_s"`
}

// Set is one fanout set's epoch figures and, once judged, its two
// targets: the epoch wall against max(I/O floor, gather floor), and peak
// RSS against two resident epochs plus buffers and index (RSSBudget).
type Set struct {
	Fanouts        []int     `json:"fanouts"`
	Layers         []Layer   `json:"layers"`
	EpochWallS     float64   `json:"epoch_wall_s"`
	EpochWalls     []float64 `json:"epoch_walls_s"`
	BytesRead      int64     `json:"bytes_read"`
	BytesNeeded    int64     `json:"bytes_needed"` // the I/O floor's bytes: every chunk a layer needs, once
	ReadGBps       float64   `json:"read_gbps"`
	SlotsPerS      float64   `json:"slots_per_s"`
	GatherSlotsPS  float64   `json:"gather_slots_per_s"`
	IOFloorS       float64   `json:"io_floor_s"`
	GatherFloorS   float64   `json:"gather_floor_s"`
	FloorRatio     float64   `json:"floor_ratio"`
	KernelFloorS   float64   `json:"kernel_floor_s"`
	KernelRatio    float64   `json:"kernel_floor_ratio"`
	ResultBytes    int64     `json:"result_bytes"`
	PeakRSS        int64     `json:"peak_rss"`
	RSSBudget      int64     `json:"rss_budget"`
	BufferBytes    int64     `json:"buffer_bytes"`
	IndexBytes     int64     `json:"index_bytes"`
	PassFloorRatio bool      `json:"pass_floor_ratio"`
	PassRSS        bool      `json:"pass_rss"`
}

// Assembly compares minibatch assembly from the first set's epoch with
// host.SampleBlocks on the same minibatches, one thread each.
// PassEdgesPerCore keeps its JSON name from the 30M edges per CPU-second
// target of `streamsampler bench`, whatever Targets judged it.
type Assembly struct {
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
	// The same minibatches handed out by an pipeline.Pipeline with Workers
	// goroutines assembling (run's path), wall clock; ParallelScaling is
	// that rate over the one-goroutine wall rate above.
	Workers           int     `json:"workers"`
	ParallelEdgesPerS float64 `json:"parallel_edges_per_s"`
	ParallelScaling   float64 `json:"parallel_scaling"`
	IdenticalBlocks   bool    `json:"identical_blocks"`
	PassVsBaseline    bool    `json:"pass_vs_baseline"`
	PassEdgesPerCore  bool    `json:"pass_30M_edges_per_core"`
}

// Report is the outcome of Run. Its pass fields, RSSBudget included, are
// set by Judge: Pass is true when every target of every set and of the
// assembly passed.
type Report struct {
	Date        string   `json:"date"`
	Host        string   `json:"host"`
	CPUs        int      `json:"cpus"`
	Graph       string   `json:"graph"`
	NumNodes    uint32   `json:"num_nodes"`
	NumEdges    uint64   `json:"num_edges"`
	Chunks      int      `json:"chunks"`
	ChunkSize   int64    `json:"chunk_size"`
	FileBytes   int64    `json:"file_bytes"`
	Train       int      `json:"train_nodes"`
	Devices     int      `json:"devices"`
	Backend     string   `json:"backend"`
	DirectIO    bool     `json:"direct_io"`
	SeqReadGBps float64  `json:"seq_read_gbps"`
	SeqDirect   bool     `json:"seq_read_direct"`
	Runs        int      `json:"runs"`
	Sets        []Set    `json:"sets"`
	Assembly    Assembly `json:"assembly"`
	Pass        bool     `json:"pass"`

	targets Targets // what Judge held the report to, for WriteBody
}

// Targets are the thresholds a Report is judged against. They belong to
// the caller (`streamsampler bench` has its own, as tests do): Run only
// measures.
type Targets struct {
	// MaxFloorRatio bounds a set's epoch wall time over
	// max(I/O floor, gather floor).
	MaxFloorRatio float64
	// RSSFactor bounds a set's peak RSS: at most RSSFactor × (two
	// resident epochs + buffers + index), which is the set's RSSBudget.
	RSSFactor float64
	// MinSpeedup is the least CPU-time speedup of epoch assembly over
	// the per-minibatch sampler.
	MinSpeedup float64
	// MinEdgesPerCPUSecond is the least assembly rate on one core.
	MinEdgesPerCPUSecond float64
}

// Judge holds r to t: it sets each set's RSSBudget and pass flags, the
// assembly's, and Pass, and keeps t for WriteBody's target lines. Blocks
// that differ from the per-minibatch sampler's always fail. Judging again
// replaces the verdict.
func (r *Report) Judge(t Targets) {
	r.targets = t
	a := &r.Assembly
	a.PassVsBaseline = a.Speedup >= t.MinSpeedup
	a.PassEdgesPerCore = a.EdgesPerCPUS >= t.MinEdgesPerCPUSecond
	r.Pass = a.IdenticalBlocks && a.PassVsBaseline && a.PassEdgesPerCore
	for i := range r.Sets {
		s := &r.Sets[i]
		s.PassFloorRatio = s.FloorRatio <= t.MaxFloorRatio
		s.RSSBudget = int64(t.RSSFactor * float64(s.ResultBytes+s.BufferBytes+s.IndexBytes))
		s.PassRSS = s.PeakRSS > 0 && s.PeakRSS <= s.RSSBudget
		r.Pass = r.Pass && s.PassFloorRatio && s.PassRSS
	}
}

// WriteJSON writes r as one JSON object and a newline.
func (r *Report) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// WriteText writes the human report: the header line, then the body
// (judge the report first).
func (r *Report) WriteText(w io.Writer) error {
	if err := r.WriteHeader(w); err != nil {
		return err
	}
	return r.WriteBody(w)
}

// WriteHeader writes the line that describes the graph and its sequential
// read floor; Run writes it to Config.Log as soon as it is known.
func (r *Report) WriteHeader(w io.Writer) error {
	_, err := fmt.Fprintf(w, "graph %s: %d nodes, %d edges, %d chunks of %d MiB; %s sequential read %.2f GB/s\n",
		r.Graph, r.NumNodes, r.NumEdges, r.Chunks, r.ChunkSize>>20, ioKind(r.SeqDirect), r.SeqReadGBps)
	return err
}

// WriteBody writes the per-set tables, the assembly comparison and a PASS
// or FAIL line per target, with the targets Judge was given.
func (r *Report) WriteBody(w io.Writer) error {
	ew := &errWriter{w: w}
	t := r.targets
	fmt.Fprintf(ew, "%s on %s (%d CPUs); backend %s, %d device(s), %s chunk reads; train %d nodes; medians of %d runs\n",
		r.Date, r.Host, r.CPUs, r.Backend, r.Devices, ioKind(r.DirectIO), r.Train, r.Runs)
	for _, s := range r.Sets {
		fmt.Fprintf(ew, "\nfanouts %v\n", s.Fanouts)
		fmt.Fprintf(ew, "%5s %6s %10s %12s %6s %6s %12s %12s %9s %8s %12s %9s %9s %9s\n",
			"layer", "fanout", "targets", "slots", "read", "reused", "bytes read", "bytes needed", "wall s", "GB/s", "slots/s", "io-floor", "gather", "kernel")
		for _, l := range s.Layers {
			fmt.Fprintf(ew, "%5d %6d %10d %12d %6d %6d %12d %12d %9.3f %8.2f %12.3g %9.3f %9.3f %9.3f\n",
				l.Layer, l.Fanout, l.Targets, l.SampledSlots, l.ChunksRead, l.ChunksReused, l.BytesRead, l.BytesNeeded, l.WallS, l.ReadGBps, l.SlotsPerS, l.IOFloorS, l.GatherFloorS, l.KernelFloorS)
		}
		fmt.Fprintf(ew, "epoch: wall %.3f s (runs %s), %d bytes read (%d needed: the I/O floor's) at %.2f GB/s (sequential %.2f GB/s), %.3g slots/s (gather floor %.3g slots/s)\n",
			s.EpochWallS, fmtFloats(s.EpochWalls), s.BytesRead, s.BytesNeeded, s.ReadGBps, r.SeqReadGBps, s.SlotsPerS, s.GatherSlotsPS)
		fmt.Fprintf(ew, "%s epoch wall / max(I/O floor %.3f s, gather floor %.3f s) = %.2f (target <= %g)\n",
			passFail(s.PassFloorRatio), s.IOFloorS, s.GatherFloorS, s.FloorRatio, t.MaxFloorRatio)
		fmt.Fprintf(ew, "info epoch wall / max(I/O floor, kernel floor %.3f s: hls.Run on in-memory chunks) = %.2f (streaming overhead)\n",
			s.KernelFloorS, s.KernelRatio)
		fmt.Fprintf(ew, "%s peak RSS %s vs %g x (two epochs %s + buffers %s + index %s) = %s\n",
			passFail(s.PassRSS), mib(s.PeakRSS), t.RSSFactor, mib(s.ResultBytes), mib(s.BufferBytes), mib(s.IndexBytes), mib(s.RSSBudget))
	}
	a := r.Assembly
	fmt.Fprintf(ew, "\nassembly, batch %d, fanouts %v, %d batches, %.0f edges/batch, one thread:\n", a.BatchSize, a.Fanouts, a.Batches, float64(a.Edges)/float64(max(a.Batches, 1)))
	fmt.Fprintf(ew, "  epoch assembly          %8.3f ms/batch CPU (%8.3f wall), %.3g edges per CPU-second (%.3g per wall-second)\n", a.CPUMsPerBatch, a.MsPerBatch, a.EdgesPerCPUS, a.EdgesPerS)
	fmt.Fprintf(ew, "  pipeline, %2d workers    %.3g edges per wall-second (%.2fx one goroutine)\n", a.Workers, a.ParallelEdgesPerS, a.ParallelScaling)
	fmt.Fprintf(ew, "  per-minibatch sampler   %8.3f ms/batch CPU (%8.3f wall), %.3g edges per CPU-second (%.3g per wall-second)\n", a.BaselineCPUMsPerBat, a.BaselineMsPerBat, a.BaselineEdgesPerCPUS, a.BaselineEdgesPS)
	fmt.Fprintf(ew, "  speedup %.2fx (CPU time)\n", a.Speedup)
	fmt.Fprintf(ew, "%s blocks identical to the per-minibatch sampler's\n", passFail(a.IdenticalBlocks))
	fmt.Fprintf(ew, "%s assembly %s the per-minibatch sampler\n", passFail(a.PassVsBaseline), asFast(t.MinSpeedup))
	fmt.Fprintf(ew, "%s assembly >= %gM edges per CPU-second on one core\n", passFail(a.PassEdgesPerCore), t.MinEdgesPerCPUSecond/1e6)
	fmt.Fprintf(ew, "\n%s overall\n", passFail(r.Pass))
	return ew.err
}

// errWriter keeps the first write error, so that a report of many
// Fprintf calls checks once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// asFast says how fast assembly must be against the baseline.
func asFast(speedup float64) string {
	if speedup == 1 {
		return "at least as fast as"
	}
	return fmt.Sprintf("at least %gx as fast as", speedup)
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

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

func fmtFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(s, " ")
}
