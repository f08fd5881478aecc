package host

import (
	"fmt"
	"strings"
	"time"
)

// LayerStats describes how one layer of an epoch was sampled.
type LayerStats struct {
	Layer         int           `json:"layer"`
	Fanout        int           `json:"fanout"`
	Targets       int           `json:"targets"`        // |frontier_l|
	SampledSlots  int64         `json:"sampled_slots"`  // non-empty (>= 0) sample entries
	ChunksRead    int           `json:"chunks_read"`    // chunks holding at least one target
	ChunksSkipped int           `json:"chunks_skipped"` // chunks with no target, never read
	ChunksReused  int           `json:"chunks_reused"`  // chunks with targets still in memory (the chunk cache, a device buffer), not read again
	Launches      int           `json:"launches"`       // kernel runs (a chunk's targets may need several)
	BytesRead     int64         `json:"bytes_read"`     // every byte read from edges.chunks, the probe read at Open included (by the first epoch)
	ReadTime      time.Duration `json:"read_ns"`        // summed over devices
	KernelTime    time.Duration `json:"kernel_ns"`      // start..wait, summed over devices
	SyncTime      time.Duration `json:"sync_ns"`        // target upload + result download, summed
	Wall          time.Duration `json:"wall_ns"`
	// ResultBytes is the memory of the layer's arrays in the epoch's
	// Result (frontier, samples, edge ids, a full layer's row offsets):
	// a full layer's grows with its frontier's degrees, not a fanout.
	ResultBytes int64 `json:"result_bytes"`
	// The per-chunk choice (Options.RandomReads): chunks whose targets
	// were random-read instead of streamed, their targets, the distinct
	// blocks and the reads that fetched them (RandomBytes, also counted
	// in BytesRead), and the random half's wall time (it runs while the
	// streamed chunks go through the lanes). ChunksRead counts streamed
	// chunks only.
	ChunksRandom  int           `json:"chunks_random"`
	RandomTargets int           `json:"random_targets"`
	RandomBlocks  int64         `json:"random_blocks"`
	RandomReads   int64         `json:"random_reads"`
	RandomBytes   int64         `json:"random_bytes"`
	RandomTime    time.Duration `json:"random_ns"`
}

// ReadGBps is the achieved read rate over the layer's wall time (the rate
// the layer actually streamed at, overlap included), in 10^9 bytes/s.
func (s LayerStats) ReadGBps() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.BytesRead) / s.Wall.Seconds() / 1e9
}

// StatsReporter is implemented by backends that describe their last
// epoch: the chunk-streaming Sampler does; the GPU backend does not.
// Callers holding a Backend check for it with a type assertion.
type StatsReporter interface {
	// LastStats returns the statistics of the last successful
	// SampleEpoch, nil before the first.
	LastStats() *Stats
}

// Stats describes one SampleEpoch call.
type Stats struct {
	Devices  int           `json:"devices"`
	Backend  string        `json:"backend"`
	DirectIO bool          `json:"direct_io"` // edges.chunks opened with O_DIRECT
	Notes    []string      `json:"notes,omitempty"`
	Layers   []LayerStats  `json:"layers"`
	Wall     time.Duration `json:"wall_ns"`
	// GraphBytes is one read of every chunk (each chunk's read size):
	// BytesRead over it is the epoch's reads in graphs.
	GraphBytes int64 `json:"graph_bytes"`
	// Cache is the chunk cache after the epoch (nil without one: the XRT
	// backend).
	Cache *CacheStats `json:"chunk_cache,omitempty"`
	// Random is the random-read side after the epoch (nil with
	// RandomReads off).
	Random *RandomStats `json:"random_reads,omitempty"`
}

// ChunksRandom sums the layers' random-read chunks.
func (s *Stats) ChunksRandom() int {
	n := 0
	for _, l := range s.Layers {
		n += l.ChunksRandom
	}
	return n
}

// ChunksRead sums the layers' chunk reads.
func (s *Stats) ChunksRead() int {
	n := 0
	for _, l := range s.Layers {
		n += l.ChunksRead
	}
	return n
}

// ChunksReused sums the layers' chunks found in memory.
func (s *Stats) ChunksReused() int {
	n := 0
	for _, l := range s.Layers {
		n += l.ChunksReused
	}
	return n
}

// BytesRead sums the layers' bytes.
func (s *Stats) BytesRead() int64 {
	var n int64
	for _, l := range s.Layers {
		n += l.BytesRead
	}
	return n
}

// ReadGraphs is BytesRead over GraphBytes: the epoch's reads in graphs
// (0 without the graph's size).
func (s *Stats) ReadGraphs() float64 {
	if s.GraphBytes <= 0 {
		return 0
	}
	return float64(s.BytesRead()) / float64(s.GraphBytes)
}

// ResultBytes sums the layers' ResultBytes: the memory the epoch's
// Result holds, less its last frontier (4 bytes a node).
func (s *Stats) ResultBytes() int64 {
	var n int64
	for _, l := range s.Layers {
		n += l.ResultBytes
	}
	return n
}

// SampledSlots sums the layers' non-empty sample entries.
func (s *Stats) SampledSlots() int64 {
	var n int64
	for _, l := range s.Layers {
		n += l.SampledSlots
	}
	return n
}

// String renders the statistics as a small human-readable table.
func (s *Stats) String() string {
	var b strings.Builder
	io := "O_DIRECT"
	if !s.DirectIO {
		io = "buffered"
	}
	fmt.Fprintf(&b, "backend %s, %d device(s), %s reads, wall %v\n", s.Backend, s.Devices, io, s.Wall.Round(time.Microsecond))
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if c := s.Cache; c != nil {
		fmt.Fprintf(&b, "chunk cache: %d of %d slots of %d bytes hold chunks (%d bytes allocated, budget %d); %d bytes read = %.2f× the graph's %d\n",
			c.Resident, c.Slots, c.SlotBytes, c.Allocated, c.Budget, s.BytesRead(), s.ReadGraphs(), s.GraphBytes)
	}
	if r := s.Random; r != nil {
		fmt.Fprintf(&b, "random reads %s: %d of the layers' chunks random-read; disk %.0f MB/s sequential, %.0f random reads/s (measured %v); row offsets %d bytes",
			r.Mode, s.ChunksRandom(), r.Rates.SeqBytesPerSec/1e6, r.Rates.RandReadsPerSec, r.Measured, r.OffsetBytes)
		if r.Disabled != "" {
			fmt.Fprintf(&b, "; off: %s", r.Disabled)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "result: %d bytes in memory (layers' frontiers, samples, edge ids, row offsets)\n", s.ResultBytes())
	fmt.Fprintf(&b, "%5s %6s %10s %12s %7s %7s %7s %12s %8s %10s %10s %10s\n",
		"layer", "fanout", "targets", "sampled", "read", "reused", "skipped", "bytes", "GB/s", "kernel", "sync", "wall")
	for _, l := range s.Layers {
		fmt.Fprintf(&b, "%5d %6d %10d %12d %7d %7d %7d %12d %8.2f %10v %10v %10v\n",
			l.Layer, l.Fanout, l.Targets, l.SampledSlots, l.ChunksRead, l.ChunksReused, l.ChunksSkipped, l.BytesRead,
			l.ReadGBps(), l.KernelTime.Round(time.Microsecond), l.SyncTime.Round(time.Microsecond), l.Wall.Round(time.Microsecond))
	}
	return b.String()
}
