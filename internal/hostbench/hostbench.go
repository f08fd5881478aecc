package hostbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

// ErrConfig is wrapped by Run's errors about the Config itself, so that a
// CLI can report them as usage errors.
var ErrConfig = errors.New("hostbench: bad configuration")

// seqLimit bounds the sequential read floor: 4 GiB is enough for a steady
// rate, and keeps the floor short on very large graphs.
const seqLimit = 4 << 30

// Config says what Run measures.
type Config struct {
	Graph      string  // graph directory (from chunkify)
	Fanouts    [][]int // one epoch measurement per set, hop order
	Runs       int     // epochs (and assembly passes) per measurement; medians are reported
	TrainFrac  float64 // fraction of nodes in the training set, (0, 1]
	BatchSize  int     // minibatch size for the assembly comparison
	MaxBatches int     // assemble at most this many minibatches per pass (0: the whole epoch)
	Seed       uint64  // sampling seed (the training set is drawn from it too)

	// Backend and Devices describe the engine in the report; Devices also
	// sets how many goroutines the memory floors use.
	Backend string
	Devices int
	// Open opens the engine over Graph; Run calls it once the sequential
	// read floor is measured (so that opening does not disturb it) and
	// closes it before returning.
	Open func() (host.Backend, error)

	// Log, if set, receives the report's header line (WriteHeader) as soon
	// as the read floor is known, so a long run shows what it measures.
	Log io.Writer
}

func (c *Config) check() error {
	switch {
	case c.Graph == "":
		return fmt.Errorf("%w: no graph directory", ErrConfig)
	case len(c.Fanouts) == 0:
		return fmt.Errorf("%w: no fanout sets", ErrConfig)
	case c.Runs < 1:
		return fmt.Errorf("%w: %d runs, want at least 1", ErrConfig, c.Runs)
	case !(c.TrainFrac > 0 && c.TrainFrac <= 1):
		return fmt.Errorf("%w: training fraction %v, want (0, 1]", ErrConfig, c.TrainFrac)
	case c.BatchSize < 1:
		return fmt.Errorf("%w: batch size %d, want at least 1", ErrConfig, c.BatchSize)
	case c.MaxBatches < 0:
		return fmt.Errorf("%w: max batches %d, want 0 (all) or more", ErrConfig, c.MaxBatches)
	case c.Open == nil:
		return fmt.Errorf("%w: no Open function", ErrConfig)
	}
	for i, f := range c.Fanouts {
		if len(f) == 0 {
			return fmt.Errorf("%w: fanout set %d is empty", ErrConfig, i+1)
		}
		// The floors (GatherFloor, KernelFloor) model a fixed fanout's
		// slots; a full layer's cost is its rows' lengths, which they do
		// not measure.
		for l, k := range f {
			if k < 1 {
				return fmt.Errorf("%w: fanout set %d: layer %d has fanout %d; bench measures sampled layers only (1 and up), not -1 (every neighbor)", ErrConfig, i+1, l, k)
			}
		}
	}
	return nil
}

// Run measures cfg.Graph as the package comment describes and returns the
// report, not yet judged (see Report.Judge); it stops early with ctx's
// error when ctx is cancelled.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m, err := chunkfmt.ReadManifest(cfg.Graph)
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	rep := &Report{
		Date: time.Now().UTC().Format(time.RFC3339), Host: hostname, CPUs: runtime.NumCPU(),
		Graph: cfg.Graph, NumNodes: m.NumNodes, NumEdges: m.NumEdges, Chunks: len(m.Chunks),
		ChunkSize: m.ChunkSize, FileBytes: m.FileSize(), Devices: cfg.Devices, Backend: cfg.Backend, Runs: cfg.Runs,
	}

	// The I/O floor: this file's sequential O_DIRECT read rate, now.
	var rates []float64
	for range cfg.Runs {
		r, direct, err := SeqReadRate(filepath.Join(cfg.Graph, chunkfmt.ChunksFile), seqLimit)
		if err != nil {
			return nil, err
		}
		rates = append(rates, r)
		rep.SeqDirect = direct
	}
	seqRate := Median(rates)
	rep.SeqReadGBps = seqRate / 1e9
	if cfg.Log != nil {
		if err := rep.WriteHeader(cfg.Log); err != nil {
			return nil, err
		}
	}

	train := trainingSet(m.NumNodes, cfg.TrainFrac, cfg.Seed)
	rep.Train = len(train)

	be, err := cfg.Open()
	if err != nil {
		return nil, err
	}
	defer be.Close()
	var bufBytes int64
	if s, ok := be.(*host.Sampler); ok {
		// Emulated normal buffers hold a host and a device copy.
		bufBytes = s.BufferBytes()
	}
	indexBytes := int64(len(m.Chunks))*4 + int64(len(train))*4

	for si, fan := range cfg.Fanouts {
		set, cur, err := measureSet(ctx, cfg, be, train, fan, seqRate, rep)
		if err != nil {
			return nil, err
		}
		set.BufferBytes, set.IndexBytes = bufBytes, indexBytes
		if err := measureFloors(ctx, cfg, set, cur); err != nil {
			return nil, err
		}
		if si == 0 {
			asm, err := measureAssembly(ctx, cfg, cur, train, fan)
			if err != nil {
				return nil, err
			}
			rep.Assembly = *asm
		}
		rep.Sets = append(rep.Sets, *set)
	}
	return rep, nil
}

// trainingSet draws a fraction frac of the nodes (at least one), sorted,
// from seed.
func trainingSet(numNodes uint32, frac float64, seed uint64) []uint32 {
	all := make([]uint32, numNodes)
	for i := range all {
		all[i] = uint32(i)
	}
	train := epoch.Shuffle(all, seed^0x7a11, 0)[:max(1, int(float64(numNodes)*frac))]
	slices.Sort(train)
	return train
}

// measureSet samples cfg.Runs epochs with fanouts fan and returns the
// set's epoch figures (floors and RSS budget still to fill in) and the
// last epoch.
func measureSet(ctx context.Context, cfg Config, be host.Backend, train []uint32, fan []int, seqRate float64, rep *Report) (*Set, *epoch.Result, error) {
	// Peak RSS is measured per set, from a clean slate: what the previous
	// set, the floors and the assembly baseline held is returned to the OS
	// first.
	debug.FreeOSMemory()
	resetPeakRSS()
	set := &Set{Fanouts: fan}
	var walls []float64
	per := make([][]host.LayerStats, len(fan))
	var prev, cur *epoch.Result
	for r := 0; r < cfg.Runs; r++ {
		key := epoch.Key{Seed: cfg.Seed, Epoch: uint32(r)}
		t0 := time.Now()
		res, err := be.SampleEpoch(ctx, train, fan, key)
		if err != nil {
			return nil, nil, err
		}
		walls = append(walls, time.Since(t0).Seconds())
		if s, ok := be.(host.StatsReporter); ok {
			if st := s.LastStats(); st != nil {
				rep.DirectIO = st.DirectIO
				for l, ls := range st.Layers {
					per[l] = append(per[l], ls)
				}
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
	set.EpochWalls = walls
	set.EpochWallS = Median(walls)
	need, err := bytesNeeded(cfg.Graph, cur)
	if err != nil {
		return nil, nil, err
	}
	for l := range fan {
		bl := Layer{Layer: l, Fanout: fan[l], Targets: len(cur.Layers[l].Frontier), BytesNeeded: need[l]}
		var lw, gb []float64
		for _, ls := range per[l] {
			lw = append(lw, ls.Wall.Seconds())
			gb = append(gb, ls.ReadGBps())
			bl.SampledSlots, bl.ChunksRead, bl.ChunksReused, bl.BytesRead = ls.SampledSlots, ls.ChunksRead, ls.ChunksReused, ls.BytesRead
		}
		bl.WallS, bl.ReadGBps = Median(lw), Median(gb)
		if bl.WallS > 0 {
			bl.SlotsPerS = float64(bl.SampledSlots) / bl.WallS
		}
		bl.IOFloorS = float64(bl.BytesNeeded) / seqRate
		set.BytesRead += bl.BytesRead
		set.BytesNeeded += bl.BytesNeeded
		set.Layers = append(set.Layers, bl)
	}
	set.IOFloorS = float64(set.BytesNeeded) / seqRate
	set.ReadGBps = float64(set.BytesRead) / set.EpochWallS / 1e9
	return set, cur, nil
}

// bytesNeeded is, per layer of res, what the work needs from the graph in
// graphDir: the used bytes of every chunk that holds a frontier node,
// once. The I/O floor is these bytes at the disk's rate, so that extra
// passes or re-reads of an implementation raise its bytes read, never its
// floor.
func bytesNeeded(graphDir string, res *epoch.Result) ([]int64, error) {
	m, err := chunkfmt.ReadManifest(graphDir)
	if err != nil {
		return nil, err
	}
	ix, err := chunkfmt.LoadIndex(graphDir, m)
	if err != nil {
		return nil, err
	}
	need := make([]int64, len(res.Layers))
	for l := range res.Layers {
		for c, part := range ix.ByChunk(res.Layers[l].Frontier) {
			if len(part) > 0 {
				need[l] += m.Chunks[c].BytesUsed
			}
		}
	}
	return need, nil
}

// measureFloors measures the gather and kernel floors of each layer of res
// on the memory-mapped graph (after a warm-up pass that faults it in).
func measureFloors(ctx context.Context, cfg Config, set *Set, res *epoch.Result) error {
	g, err := chunkfmt.Open(cfg.Graph)
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
	workers := max(1, cfg.Devices)
	var slots int64
	for l := range set.Layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		bl := &set.Layers[l]
		targets := res.Layers[l].Frontier
		if _, _, err := GatherFloor(g, targets, bl.Fanout, workers); err != nil { // warm-up
			return err
		}
		var ts []float64
		for range cfg.Runs {
			d, _, err := GatherFloor(g, targets, bl.Fanout, workers)
			if err != nil {
				return err
			}
			ts = append(ts, d.Seconds())
		}
		bl.GatherFloorS = Median(ts)
		set.GatherFloorS += bl.GatherFloorS
		ts = ts[:0]
		for range cfg.Runs {
			d, _, err := KernelFloor(g, targets, bl.Fanout, res.Key.Layer(l), res.Key.Replace, workers)
			if err != nil {
				return err
			}
			ts = append(ts, d.Seconds())
		}
		bl.KernelFloorS = Median(ts)
		set.KernelFloorS += bl.KernelFloorS
		slots += bl.SampledSlots
	}
	set.SlotsPerS = float64(slots) / set.EpochWallS
	set.GatherSlotsPS = float64(slots) / set.GatherFloorS
	set.FloorRatio = set.EpochWallS / max(set.IOFloorS, set.GatherFloorS)
	set.KernelRatio = set.EpochWallS / max(set.IOFloorS, set.KernelFloorS)
	return nil
}

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 for none; xs is not modified.
func Median(xs []float64) float64 {
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
