package walk

import (
	"context"
	"time"
)

// Walker runs walk sets. It is the one walking interface: the
// chunk-streaming sampler (host.Sampler), the GPU engine (gpu.Backend)
// and a graph in memory (InMemory) implement it, and the walk command
// and the server take any of them.
type Walker interface {
	// WalksInto walks every start c.WalksPerNode times and writes the
	// rows into out, which must have exactly c.OutputLen(len(starts))
	// entries (a walker writes every one, whatever out held: it may be
	// a reused buffer or a memory-mapped file): W = NumWalks rows of
	// c.Length+1 nodes, row-major, row r·len(starts)+i from starts[i],
	// -1 after a walk ends; exactly Reference's rows. A request that is
	// not a valid walk set on the walker's graph (Config.CheckOutput) is
	// refused before anything is written, with an error wrapping
	// ErrInvalid. Cancelling ctx stops the walk with ctx's error; out is
	// then partly written. The statistics are what the walker knows of
	// the call (never nil on success).
	WalksInto(ctx context.Context, starts []uint32, c Config, out []int32) (*Stats, error)
}

// Stats describes one WalksInto call. Every walker fills what it knows:
// its engine and wall time always; the streaming walker its passes over
// the chunks and their totals; the GPU engine its kernels' and copies'
// time. Its JSON is snake_case, durations in nanoseconds, as host.Stats'.
type Stats struct {
	// Engine is who walked: "emu" or "xrt" (the streaming sampler's
	// devices), "gpu", EngineMemory.
	Engine string `json:"engine"`
	// Devices is the devices walked on (0 in memory).
	Devices int `json:"devices"`
	// Passes are the streaming walker's passes over the chunks, in order
	// (nil for a walker that streams nothing).
	Passes []Pass `json:"passes,omitempty"`

	// Totals: the passes' sums for the streaming walker (AddPass keeps
	// them), the engine's own figures for the others. Read and kernel
	// times are summed over devices, so they may exceed Wall.
	ChunksRead   int           `json:"chunks_read"`
	ChunksReused int           `json:"chunks_reused"` // needed by a pass, still in memory (the chunk cache, a device buffer): not read again
	BytesRead    int64         `json:"chunk_bytes"`   // chunk bytes read
	ReadTime     time.Duration `json:"read_ns"`
	KernelTime   time.Duration `json:"kernel_ns"` // the GPU: its walk kernels
	SyncTime     time.Duration `json:"sync_ns"`   // transfers between host and device (the GPU: copies of the rows)
	PassTime     time.Duration `json:"pass_ns"`   // the passes' wall time, summed
	Wall         time.Duration `json:"wall_ns"`
}

// Pass is one pass of the streaming walker over the chunks that hold its
// targets (DESIGN §5b): a candidate pass through the devices, or
// node2vec's membership pass on the host.
type Pass struct {
	Step int `json:"step"` // the step t (1..Length) the pass serves
	// Membership marks node2vec's neighbor pass: the chunks of the
	// previous nodes, read on the host to answer "is x in u's
	// adjacency", rather than a candidate pass through the devices.
	Membership    bool          `json:"membership,omitempty"`
	Candidates    int           `json:"candidates"` // per walker (0 for a membership pass)
	Targets       int           `json:"targets"`    // walkers of a candidate pass, queries of a membership pass
	ChunksRead    int           `json:"chunks_read"`
	ChunksReused  int           `json:"chunks_reused"`
	ChunksSkipped int           `json:"chunks_skipped"` // chunks holding no target, never read
	Launches      int           `json:"launches"`
	BytesRead     int64         `json:"bytes_read"`
	ReadTime      time.Duration `json:"read_ns"`
	KernelTime    time.Duration `json:"kernel_ns"`
	SyncTime      time.Duration `json:"sync_ns"`
	Wall          time.Duration `json:"wall_ns"`
}

// AddPass appends p to s's passes and adds it to the totals.
func (s *Stats) AddPass(p Pass) {
	s.Passes = append(s.Passes, p)
	s.ChunksRead += p.ChunksRead
	s.ChunksReused += p.ChunksReused
	s.BytesRead += p.BytesRead
	s.ReadTime += p.ReadTime
	s.KernelTime += p.KernelTime
	s.SyncTime += p.SyncTime
	s.PassTime += p.Wall
}

// HostTime is the streaming walker's time outside its passes (grouping
// walkers by node, deciding their steps, writing the output): Wall less
// the passes' wall time; 0 for a walker without passes.
func (s *Stats) HostTime() time.Duration {
	if len(s.Passes) == 0 {
		return 0
	}
	return s.Wall - s.PassTime
}
