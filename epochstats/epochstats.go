// Package epochstats is one epoch's delivery figures and their one
// rendering for a person: what `streamsampler run` prints as each epoch
// ends (runloop) and what `streamsampler serve` logs and answers in
// epoch_info (serve). Minibatches, seeds and edges handed out; the wall
// from the first minibatch to the last; the sampling, assembly and
// feature-row time inside it; the feature rows needed, from the cache and
// from disk, the bytes and reads they cost.
//
// Every rate says what it is the rate of: ms/batch is the wall over the
// minibatches, features, assembly and any wait included; the edges/s is
// assembly's alone, and the rows/s and GB/s of features are over the
// feature reads' own time. No figure is a per-batch rate that leaves the
// features out.
package epochstats

import (
	"fmt"

	"github.com/streamsampler/streamsampler/featplan"
)

// Report is one epoch's figures (run's JSON lines, serve's epoch_info
// stats). Finish fills the rates from the counts and times.
type Report struct {
	Epoch uint32 `json:"epoch"`
	// NumBatches is the epoch's minibatch count where fewer may be
	// delivered (serve: an epoch left before its end, minibatches that
	// failed); 0 where every one is (run).
	NumBatches int   `json:"num_batches,omitempty"`
	Batches    int   `json:"batches"` // minibatches delivered
	Seeds      int   `json:"seeds"`
	Edges      int64 `json:"edges"`
	// WallS is the epoch as its consumers saw it: from asking for its
	// first minibatch to receiving (run) or being handed (serve) its
	// last, assembly, the wait for the epoch's sampling, feature rows and
	// labels (and in run the consumer's own time) included; MsPerBatch
	// is WallS per minibatch delivered.
	WallS      float64 `json:"wall_s"`
	MsPerBatch float64 `json:"ms_per_batch"`
	// AssembleS is the time minibatches were being assembled: the union
	// of their assembly intervals (pipeline.Minibatch.AssembleStart, End)
	// on every worker (run) or connection (serve), overlapping ones
	// counted once; EdgesPerS is the assembled edges over it: assembly's
	// rate, not the epoch's (features are in Features.ReadS, a wait for
	// the epoch's sampling only in WallS).
	AssembleS float64 `json:"assemble_s"`
	EdgesPerS float64 `json:"edges_per_s"`
	// SampleS is the wall time of sampling the epoch (0: not sampled by
	// this process, e.g. read back from a state directory), BytesRead
	// what the sampler read doing so (0 where it does not say: the GPU
	// engine; BytesKnown), ReadGBps their rate.
	SampleS   float64 `json:"sample_s"`
	BytesRead int64   `json:"bytes_read"`
	ReadGBps  float64 `json:"read_gbps"`
	// BytesKnown says the sampler told what it read (BytesRead is its
	// figure, 0 included: a graph in the page cache); without, the lines
	// leave the bytes out.
	BytesKnown bool `json:"-"`
	// GraphBytes is one read of every chunk of the graph (host.Stats'),
	// the figure BytesRead is told against: an epoch that streamed each
	// chunk once read 1× the graph, one that found every chunk in the
	// chunk cache 0×; 0 where not known.
	GraphBytes int64 `json:"graph_bytes,omitempty"`
	Overlapped bool  `json:"overlapped"` // sampled in the background during the previous epoch
	// ResultBytes is the memory the epoch's sampled Result holds
	// (epoch.Result.Bytes: frontiers, samples, edge ids, the row offsets
	// of full layers), one of the two epochs a pipeline keeps; 0 where
	// not sampled by this process. A layer with fanout -1 holds every
	// neighbor of its frontier: this is where its cost shows.
	ResultBytes int64 `json:"result_bytes,omitempty"`
	// Features, with a feature store, are the epoch's feature figures.
	Features *Features `json:"features,omitempty"`
}

// Features is an epoch's feature figures (Report.Features).
type Features struct {
	PlanS   float64                 `json:"plan_s"` // node sets, reorder and plan, during the epoch's preparation
	Reorder *featplan.ReorderReport `json:"reorder,omitempty"`
	// Reads is what the epoch's plan read for the minibatches delivered
	// (featrows.Epoch.Report): rows needed, from the cache and from disk,
	// reads and bytes.
	Reads featplan.Report `json:"reads"`
	// ReadS is the time in the feature reader (cache copies and disk
	// reads; serve: while any minibatch was in it, its wait for its turn
	// included, overlapping ones counted once). RowsPerS and GBps are the
	// rows delivered (Reads.RowsNeeded) and their bytes over it: the
	// reads' own rate.
	ReadS    float64 `json:"read_s"`
	GBps     float64 `json:"gbps"`
	RowsPerS float64 `json:"rows_per_s"`
	Direct   bool    `json:"o_direct"`
	Labels   int64   `json:"labels"` // seed labels delivered
}

// Direct is what minibatches delivered outside an epoch's feature plan
// cost (serve: sample replies, a split's minibatches, minibatches of the
// other semantics): their blocks, and their rows read directly, each
// from the file (through the page cache). Finish fills the rates.
type Direct struct {
	Batches int   `json:"batches"`
	Seeds   int   `json:"seeds"`
	Edges   int64 `json:"edges"`
	// WallS is from the first one asked for to the last handed out,
	// MsPerBatch WallS per minibatch.
	WallS      float64 `json:"wall_s"`
	MsPerBatch float64 `json:"ms_per_batch"`
	// AssembleS is the time they were being assembled (overlapping ones
	// counted once), a split's sampling of the epoch included; SampleS
	// and SampleBytes are that sampling's time and bytes read (a split:
	// once per epoch, on its first minibatch).
	AssembleS   float64 `json:"assemble_s"`
	SampleS     float64 `json:"sample_s"`
	SampleBytes int64   `json:"sample_bytes_read"`
	BytesKnown  bool    `json:"-"` // as Report.BytesKnown, for SampleBytes
	// Rows are the feature rows delivered (the minibatches' n_id, each
	// read: no cache), in Reads requests of BytesRead bytes in all;
	// ReadS the time they were being read (overlapping reads counted
	// once), RowsPerS and GBps (Rows × RowBytes) the reads' own rate.
	RowBytes  int64   `json:"row_bytes"`
	Rows      int64   `json:"rows"`
	Reads     int64   `json:"reads"`
	BytesRead int64   `json:"bytes_read"`
	ReadS     float64 `json:"read_s"`
	RowsPerS  float64 `json:"rows_per_s"`
	GBps      float64 `json:"gbps"`
	Labels    int64   `json:"labels"`
}

// Finish computes r's rates (MsPerBatch, EdgesPerS, ReadGBps and the
// features') from its counts and times; a rate over no time is 0.
func (r *Report) Finish() {
	r.MsPerBatch = perBatch(r.WallS, r.Batches)
	r.EdgesPerS = rate(float64(r.Edges), r.AssembleS)
	r.ReadGBps = rate(float64(r.BytesRead), r.SampleS) / 1e9
	if f := r.Features; f != nil {
		f.RowsPerS = rate(float64(f.Reads.RowsNeeded), f.ReadS)
		f.GBps = rate(float64(f.Reads.RowsNeeded*f.Reads.RowBytes), f.ReadS) / 1e9
	}
}

// Finish computes d's rates.
func (d *Direct) Finish() {
	d.MsPerBatch = perBatch(d.WallS, d.Batches)
	d.RowsPerS = rate(float64(d.Rows), d.ReadS)
	d.GBps = rate(float64(d.Rows*d.RowBytes), d.ReadS) / 1e9
}

func perBatch(s float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	return s * 1e3 / float64(n)
}

func rate(n, s float64) float64 {
	if s <= 0 {
		return 0
	}
	return n / s
}

// Lines renders r for a person: the epoch's line, then with features a
// line of their figures. r's rates are Finish's.
func (r *Report) Lines() []string {
	batches := fmt.Sprint(r.Batches)
	if r.NumBatches > 0 && r.NumBatches != r.Batches {
		batches = fmt.Sprintf("%d of %d", r.Batches, r.NumBatches)
	}
	parts := fmt.Sprintf("assembly %.3f s", r.AssembleS)
	if r.Features != nil {
		parts += fmt.Sprintf(", feature rows and labels %.3f s", r.Features.ReadS)
	}
	sampled := "its sampling not timed here"
	if r.SampleS > 0 {
		how := "before its first minibatch"
		if r.Overlapped {
			how = "in the background during the previous epoch"
		}
		sampled = fmt.Sprintf("sampled in %.3f s %s", r.SampleS, how)
		if r.ResultBytes > 0 {
			sampled += fmt.Sprintf(", %d bytes of samples in memory", r.ResultBytes)
		}
		if r.BytesKnown {
			sampled += fmt.Sprintf(", %d bytes read at %.2f GB/s", r.BytesRead, r.ReadGBps)
			if r.GraphBytes > 0 {
				sampled += fmt.Sprintf(" (%.2f× the graph's %d bytes of chunks)", float64(r.BytesRead)/float64(r.GraphBytes), r.GraphBytes)
			}
		}
	}
	lines := []string{fmt.Sprintf("epoch %d: %s minibatches (%d seeds, %d edges) in %.3f s, %.3f ms/batch (%s; assembly alone %.3g edges/s); %s",
		r.Epoch, batches, r.Seeds, r.Edges, r.WallS, r.MsPerBatch, parts, r.EdgesPerS, sampled)}
	if f := r.Features; f != nil {
		rd := f.Reads
		shared := ""
		if f.Reorder != nil {
			shared = fmt.Sprintf("; match-reorder: consecutive minibatches share %.1f%% of nodes (was %.1f%%; any order, estimated: at most %.1f%%)", 100*f.Reorder.SharedAfter, 100*f.Reorder.SharedBefore, 100*f.Reorder.SharedBound)
		}
		preload := ""
		if rd.PreloadRows > 0 {
			preload = fmt.Sprintf(" (all %d distinct rows preloaded in one sweep)", rd.PreloadRows)
		}
		lines = append(lines, fmt.Sprintf("  features: %d rows needed, %d from the cache (%.1f%%)%s, %d read on demand; %d reads of %d bytes in all (read amplification %.2f; %.3f× the optimum's %d; compulsory %d bytes); the reads alone: %.3g rows/s, %.2f GB/s delivered in %.3f s; planned in %.3f s%s",
			rd.RowsNeeded, rd.RowsFromCache, 100*float64(rd.RowsFromCache)/max(1, float64(rd.RowsNeeded)), preload, rd.RowsFromDisk, rd.Reads, rd.BytesRead, rd.ReadAmplification, rd.VsOptimum, rd.OptimumBytes, rd.CompulsoryBytes, f.RowsPerS, f.GBps, f.ReadS, f.PlanS, shared))
	}
	return lines
}

// Line renders d for a person, after what (e.g. "epoch 3, split 0"). d's
// rates are Finish's; without rows read (no feature store) it says
// nothing of features.
func (d *Direct) Line(what string) string {
	parts := fmt.Sprintf("assembly %.3f s", d.AssembleS)
	if d.SampleS > 0 {
		read := ""
		if d.BytesKnown {
			read = fmt.Sprintf(", %d bytes read", d.SampleBytes)
		}
		parts += fmt.Sprintf(" (sampling %.3f s of it%s)", d.SampleS, read)
	}
	if d.Rows > 0 || d.ReadS > 0 {
		parts += fmt.Sprintf(", feature rows and labels %.3f s", d.ReadS)
	}
	line := fmt.Sprintf("%s: %d minibatches (%d seeds, %d edges) in %.3f s, %.3f ms/batch (%s)", what, d.Batches, d.Seeds, d.Edges, d.WallS, d.MsPerBatch, parts)
	if d.Rows > 0 || d.ReadS > 0 {
		line += fmt.Sprintf("; features read directly: %d rows, %d reads of %d bytes in all; the reads alone: %.3g rows/s, %.2f GB/s delivered in %.3f s",
			d.Rows, d.Reads, d.BytesRead, d.RowsPerS, d.GBps, d.ReadS)
	}
	return line
}
