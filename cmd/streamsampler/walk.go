package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/npy"
	"github.com/streamsampler/streamsampler/internal/procio"
	"github.com/streamsampler/streamsampler/internal/progress"
	"github.com/streamsampler/streamsampler/walk"
)

type walkOptions struct {
	graph, start, mode, out string
	all, stop, json, quiet  bool
	inMemory                bool
	backend                 backendFlags
	walksPerNode, length    int
	restart, p, q           float64
	seed                    uint64
}

func newWalkCmd() *cobra.Command { return walkCmd(nil) }

// walkCmd builds the walk command walking with w; nil opens the walker
// the flags name (openWalker).
func walkCmd(w walk.Walker) *cobra.Command {
	var o walkOptions
	cmd := &cobra.Command{
		Use:   "walk --graph DIR (--start FILE | --all) --length L -o walks.npy",
		Short: "Random walks (DeepWalk, personalized PageRank, node2vec) from start nodes, to an int32 .npy",
		Long: `walk takes --walks-per-node R random walks of --length L steps from each start
node (those of --start, in file order, or with --all every node of the graph)
and writes them as an int32 .npy of shape [W, L+1], W = R × starts: row
w = r × starts + i is the r-th walk from start i (PyG's batch.repeat(R) order),
the start first; a walk that ends early is padded with -1. A node without
neighbors ends its walk, in every mode.

--mode deepwalk steps to a uniform neighbor (a repeated neighbor counts as
often as it is stored). --mode ppr (personalized PageRank) restarts at the
walk's start with probability --restart at each step, or with
--stop-at-restart ends the walk there. --mode node2vec weighs the next node x
of a walk that came from u by 1/p (x = u), 1 (x a neighbor of u) or 1/q
(otherwise), by rejection: after 64 rejected candidates the 64th is taken,
which leaves node2vec's law unchanged up to (1 - min weight / max weight)^64.

The walks are a pure function of --seed, the start nodes and the walk flags
(docs/DESIGN.md §3, "Walks"): every backend gives the same ones. The file is
written atomically, through a memory mapping of its data: the walks are
never held in memory whole. With --json, one JSON line summarises the run:
walks, steps taken, seconds, walks/s, the bytes the process read from
storage, the engine, and the streaming walker's passes, chunk bytes and
time split (the GPU engine's kernel and copy time).`,
		Example: `  streamsampler walk --graph g --all --walks-per-node 10 --length 80 --seed 1 -o walks.npy
  streamsampler walk --graph g --start nodes.txt --length 20 --mode ppr --restart 0.15 -o ppr.npy
  streamsampler walk --graph g --all --length 80 --mode node2vec --p 0.5 --q 2 -o n2v.npy --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWalk(cmd, o, w)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.graph, "graph", "", "graph directory (from chunkify)")
	f.StringVar(&o.start, "start", "", "start node ids, one per line (or .npy); walks go in file order, repeats kept")
	f.BoolVar(&o.all, "all", false, "start from every node of the graph, in id order")
	f.IntVar(&o.walksPerNode, "walks-per-node", 1, "walks R from each start node")
	f.IntVar(&o.length, "length", 0, "steps L of each walk (a row holds L+1 nodes, the start first)")
	f.StringVar(&o.mode, "mode", "deepwalk", "deepwalk (uniform), ppr (personalized PageRank) or node2vec")
	f.Float64Var(&o.restart, "restart", 0.15, "ppr: the probability of restarting at the start, each step, in [0, 1)")
	f.BoolVar(&o.stop, "stop-at-restart", false, "ppr: end the walk at its first restart instead of going back to the start")
	f.Float64Var(&o.p, "p", 1, "node2vec: return parameter (the walk goes back to the previous node with weight 1/p)")
	f.Float64Var(&o.q, "q", 1, "node2vec: in-out parameter (the walk moves away from the previous node with weight 1/q); not -q, which is --quiet")
	f.Uint64Var(&o.seed, "seed", 0, "random seed; the walks are a pure function of it, the start nodes and the walk flags")
	f.StringVarP(&o.out, "output", "o", "", "the .npy file to write (int32, shape [walks, length+1])")
	f.BoolVar(&o.json, "json", false, "print a JSON summary line on stdout")
	f.BoolVar(&o.inMemory, "in-memory", false, "walk the graph loaded into memory (walk.Reference) instead of streaming its chunks through --backend")
	o.backend.addWith(cmd, "auto", "")
	addQuietFlag(f, &o.quiet, "progress")
	cmd.MarkFlagRequired("graph")
	cmd.MarkFlagRequired("length")
	cmd.MarkFlagRequired("output")
	return cmd
}

// openWalker opens the walker the flags name over the graph: with
// --in-memory the graph loaded whole (host.LoadCSR) and walked by
// walk.InMemory; otherwise the engine of --backend, which walks where it
// is a walk.Walker (backendWalker): the streaming sampler (emu, xrt; a
// pass per step, its chunk bytes drawn on bar) or the GPU engine (the
// graph in GPU memory). release closes it.
func openWalker(o walkOptions, bar *progress.Bar) (_ walk.Walker, release func() error, _ error) {
	if o.inMemory {
		bar.SetLabel("walk: loading graph")
		g, err := host.LoadCSR(o.graph)
		if err != nil {
			return nil, nil, err
		}
		bar.SetLabel("walk: in memory")
		return walk.InMemory{Graph: g}, func() error { return nil }, nil
	}
	b := o.backend
	b.OnChunk = func(_, _ int, n int64) { bar.Add(n) }
	be, err := openBackend(o.graph, b)
	if err != nil {
		return nil, nil, err
	}
	w := backendWalker(be)
	if w == nil {
		be.Close()
		return nil, nil, fmt.Errorf("--backend %s does not walk", b.Backend)
	}
	bar.SetLabel("walk: " + b.Backend)
	return w, be.Close, nil
}

// walkSummary is what walk --json prints.
type walkSummary struct {
	Mode      string  `json:"mode"`
	Starts    int     `json:"starts"`
	Walks     int     `json:"walks"`
	Length    int     `json:"length"`
	Steps     int64   `json:"steps"` // steps taken: nodes after the starts, -1 padding not counted
	Ended     int     `json:"ended"` // walks padded with -1 (ended before step L)
	Seconds   float64 `json:"seconds"`
	WalksPerS float64 `json:"walks_per_s"`
	ReadBytes int64   `json:"read_bytes"` // storage reads while walking (/proc/self/io read_bytes; -1: unknown)
	Output    string  `json:"output"`
	Engine    string  `json:"engine"` // walk.Stats.Engine: emu, xrt, gpu or memory
	// The streaming walker's passes (walk.Stats; zero in memory and on
	// the GPU): /proc/self/io misses O_DIRECT reads served from a device
	// buffer, so the I/O floor is computed from these. The seconds split
	// the walk: reading chunks and running the kernel (summed over
	// devices, so they may overlap each other; the GPU engine's kernels
	// and copies of the rows), the passes' wall time, and the host's time
	// outside the passes (grouping walkers, deciding their steps).
	Passes        int     `json:"passes"`
	ChunksRead    int     `json:"chunks_read"`
	ChunksReused  int     `json:"chunks_reused"` // needed by a pass but still in memory (the chunk cache, a device buffer): not read
	ChunkBytes    int64   `json:"chunk_bytes"`   // walk.Stats.BytesRead: the passes' chunk bytes, summed
	ReadSeconds   float64 `json:"read_seconds"`
	KernelSeconds float64 `json:"kernel_seconds"`
	SyncSeconds   float64 `json:"sync_seconds"`
	PassSeconds   float64 `json:"pass_seconds"`
	HostSeconds   float64 `json:"host_seconds"`
	OutputSeconds float64 `json:"output_seconds"` // sizing, mapping and syncing the output file
}

// walkConfig checks the flags and turns them into a walk.Config; every
// error is a usage error naming its flag.
func walkConfig(cmd *cobra.Command, o walkOptions) (walk.Config, error) {
	c := walk.Config{Length: o.length, WalksPerNode: o.walksPerNode, Seed: o.seed}
	var err error
	if c.Mode, err = walk.ParseMode(o.mode); err != nil {
		return c, usagef("--mode %q: want deepwalk, ppr or node2vec", o.mode)
	}
	switch {
	case (o.start == "") == !o.all:
		return c, usagef("give exactly one of --start and --all")
	case o.length < 1 || uint64(o.length) > math.MaxUint32:
		return c, usagef("--length %d: want 1..%d steps", o.length, uint32(math.MaxUint32))
	case o.walksPerNode < 1 || uint64(o.walksPerNode) > walk.MaxWalks:
		return c, usagef("--walks-per-node %d: want 1..%d", o.walksPerNode, uint32(walk.MaxWalks))
	case o.backend.EdgeIDs:
		return c, usagef("--edge-ids: walks carry no edge ids")
	}
	// A parameter of another mode is a mistake: it would change nothing.
	for _, f := range []struct {
		name string
		mode walk.Mode
	}{{"restart", walk.PPR}, {"stop-at-restart", walk.PPR}, {"p", walk.Node2Vec}, {"q", walk.Node2Vec}} {
		if cmd.Flags().Changed(f.name) && c.Mode != f.mode {
			return c, usagef("--%s applies to --mode %s only (this is --mode %s)", f.name, f.mode, c.Mode)
		}
	}
	switch c.Mode {
	case walk.PPR:
		if !(o.restart >= 0 && o.restart < 1) {
			return c, usagef("--restart %v: want a probability in [0, 1)", o.restart)
		}
		c.Restart, c.StopAtRestart = o.restart, o.stop
	case walk.Node2Vec:
		for _, x := range []struct {
			name string
			v    float64
		}{{"p", o.p}, {"q", o.q}} {
			if !(x.v > 0) || math.IsInf(x.v, 0) || math.IsInf(1/x.v, 0) {
				return c, usagef("--%s %v: want a positive number", x.name, x.v)
			}
		}
		c.P, c.Q = o.p, o.q
	}
	if err := c.Check(); err != nil {
		return c, usageError{err} // unreachable after the checks above, kept as a guard
	}
	return c, nil
}

// runWalk walks with w (nil: the walker the flags name, opened here:
// its opening counts in the walk's seconds, as a load of the graph is
// part of an in-memory walk) into the mapped output, and commits it.
func runWalk(cmd *cobra.Command, o walkOptions, w walk.Walker) error {
	cfg, err := walkConfig(cmd, o)
	if err != nil {
		return err
	}
	if err := checkOutput("-o", o.out); err != nil {
		return err
	}
	g, err := chunkfmt.Open(o.graph)
	if err != nil {
		return err
	}
	numNodes := g.Manifest.NumNodes
	g.Close()
	var starts []uint32
	if o.all {
		starts = make([]uint32, numNodes)
		for v := range starts {
			starts[v] = uint32(v)
		}
	} else if starts, err = ingest.ReadNodeIDs(o.start, numNodes); err != nil {
		return err
	}
	if len(starts) == 0 {
		return usagef("no start nodes (--start %s, or a graph without nodes)", o.start)
	}
	if err := cfg.CheckStarts(starts, numNodes); err != nil {
		if errors.Is(err, walk.ErrInvalid) {
			return usagef("--walks-per-node %d, --length %d with %d starts: %w", o.walksPerNode, o.length, len(starts), err)
		}
		return err
	}

	stderr := cmd.ErrOrStderr()
	f, _ := stderr.(*os.File)
	bar := progress.New(stderr, 0, "walk", progress.Enabled(f, o.quiet))
	bar.SetUnit("walks")
	nw := walk.NumWalks(len(starts), cfg)
	t0 := time.Now()
	npyOut, err := npy.CreateMappedInt32(o.out, nw, cfg.Length+1)
	if err != nil {
		return err
	}
	defer npyOut.Abort()
	tOut := time.Since(t0)
	read0 := procio.ReadBytesOr(-1)
	t0 = time.Now()
	st, err := walkInto(cmd.Context(), o, w, starts, cfg, bar, npyOut.Data)
	secs := time.Since(t0).Seconds()
	read1 := procio.ReadBytesOr(-1)
	bar.Done()
	if err != nil {
		return err
	}
	bar.AddItems(int64(nw))

	s := walkSummary{Mode: cfg.Mode.String(), Starts: len(starts), Walks: nw, Length: cfg.Length, Seconds: secs, ReadBytes: -1, Output: o.out}
	// The figures come from the mapped output: what the file will hold.
	s.Steps, s.Ended = cfg.Taken(npyOut.Data)
	t0 = time.Now()
	if err := npyOut.Commit(); err != nil {
		return err
	}
	s.OutputSeconds = (tOut + time.Since(t0)).Seconds()
	if secs > 0 {
		s.WalksPerS = float64(nw) / secs
	}
	if read0 >= 0 && read1 >= read0 {
		s.ReadBytes = read1 - read0
	}
	if st != nil {
		s.Engine = st.Engine
		s.Passes = len(st.Passes)
		s.ChunksRead, s.ChunksReused, s.ChunkBytes = st.ChunksRead, st.ChunksReused, st.BytesRead
		s.ReadSeconds = st.ReadTime.Seconds()
		s.KernelSeconds = st.KernelTime.Seconds()
		s.SyncSeconds = st.SyncTime.Seconds()
		s.PassSeconds = st.PassTime.Seconds()
		s.HostSeconds = st.HostTime().Seconds()
	}
	if o.json {
		return writeJSONLine(cmd.OutOrStdout(), s)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: %d walks of %d steps from %d starts (%d steps taken, %d ended early) in %.3f s, %.0f walks/s -> %s\n",
		s.Mode, s.Walks, s.Length, s.Starts, s.Steps, s.Ended, s.Seconds, s.WalksPerS, s.Output)
	return err
}

// walkInto walks with w, or with the walker the flags name (openWalker),
// closed again when done.
func walkInto(ctx context.Context, o walkOptions, w walk.Walker, starts []uint32, cfg walk.Config, bar *progress.Bar, out []int32) (*walk.Stats, error) {
	if w == nil {
		opened, release, err := openWalker(o, bar)
		if err != nil {
			return nil, err
		}
		defer release()
		w = opened
	}
	return w.WalksInto(ctx, starts, cfg, out)
}
