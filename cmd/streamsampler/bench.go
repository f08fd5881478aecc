package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/hostbench"
)

// benchTargets are the thresholds `streamsampler bench` prints PASS or
// FAIL against (docs/PERFORMANCE.md): an epoch within 1.5x of its floor,
// peak RSS within 1.1x of what two epochs need, and minibatch assembly at
// least as fast as a per-minibatch sampler and at 30M edges per
// CPU-second or more.
var benchTargets = hostbench.Targets{MaxFloorRatio: 1.5, RSSFactor: 1.1, MinSpeedup: 1, MinEdgesPerCPUSecond: 30e6}

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
	// epochOnly, trainCount, trainType and relFan are the epochs-only
	// measurement's (bench_hetero.go), which a heterogeneous graph always gets.
	epochOnly  bool
	trainCount int
	trainType  string
	relFan     []string
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
or FAIL; figures are medians of --runs runs.

With --epoch-only, and always for a heterogeneous graph directory (hetero.json;
--train-type names the seeds' node type, --relation-fanouts one relation's
fanouts), bench samples epochs only — no floors, no assembly, no targets — and
reports per epoch the wall and CPU time, the sampled edges (per relation), ns
per sampled edge, the bytes the sampler read and the process read from storage
(/proc/self/io), and the peak RSS: the same measurement for both kinds of
graph, which bench/hetero_scale.sh divides.`,
		Example: `  streamsampler bench --graph out/rmat-20
  streamsampler bench --graph g --fanouts 15,10,5 --fanouts 25,10 --runs 5 --json
  streamsampler bench --graph out/mag --train-type paper --train-frac 0.01 --fanouts 15,10
  streamsampler bench --graph out/rmat-26 --epoch-only --train-count 750000 --fanouts 15,10 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.graph, "graph", "", "graph directory (from chunkify)")
	f.StringArrayVar(&o.fanoutSets, "fanouts", []string{"15,10,5", "10,10,10"}, fanoutsHelp+"; repeat for several sets (sampled hops only: bench's floors do not model -1)")
	f.IntVar(&o.runs, "runs", 3, "epochs (and assembly passes) per measurement; medians are reported")
	f.Float64Var(&o.trainFrac, "train-frac", 0.1, "fraction of nodes in the training set")
	f.IntVar(&o.trainCount, "train-count", 0, "--epoch-only or a heterogeneous graph: this many training nodes instead of --train-frac of them (0: --train-frac)")
	f.BoolVar(&o.epochOnly, "epoch-only", false, "measure epochs only (wall, CPU, sampled edges, bytes read, peak RSS), no floors or assembly, as bench of a heterogeneous graph does")
	f.StringVar(&o.trainType, "train-type", "", "heterogeneous graph: the node type of the training nodes (drawn from that type's local ids)")
	f.StringArrayVar(&o.relFan, "relation-fanouts", nil, "heterogeneous graph: fanouts of one relation, src___rel___dst=15,10 (repeatable; the others take --fanouts)")
	f.IntVar(&o.batchSize, "batch-size", 1024, "minibatch size for the assembly benchmark")
	f.IntVar(&o.maxBatches, "max-batches", 0, "assemble at most this many minibatches per pass (0: the whole epoch)")
	addSeedFlag(f, &o.seed)
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of the human report")
	o.backend.addWith(cmd, "0", "off")
	cmd.MarkFlagRequired("graph")
	return cmd
}

// runBench turns the flags into a hostbench.Config, runs it and prints
// the report (its header as soon as it is known, for the human form).
func runBench(ctx context.Context, w io.Writer, o benchOptions) error {
	if o.runs < 1 {
		return usagef("--runs %d: want at least 1", o.runs)
	}
	if o.trainFrac <= 0 || o.trainFrac > 1 {
		return usagef("--train-frac %v: want (0, 1]", o.trainFrac)
	}
	if o.batchSize < 1 {
		return usagef("--batch-size %d: want at least 1", o.batchSize)
	}
	if o.maxBatches < 0 {
		return usagef("--max-batches %d: want 0 (all) or more", o.maxBatches)
	}
	if o.trainCount < 0 {
		return usagef("--train-count %d: want 0 (--train-frac) or more", o.trainCount)
	}
	if o.epochOnly || isHetero(o.graph) {
		return runBenchEpochs(ctx, w, o)
	}
	if o.trainCount > 0 || o.trainType != "" || len(o.relFan) > 0 {
		return usagef("--train-count, --train-type and --relation-fanouts are for --epoch-only or a heterogeneous graph")
	}
	cfg := hostbench.Config{
		Graph: o.graph, Runs: o.runs, TrainFrac: o.trainFrac, BatchSize: o.batchSize,
		MaxBatches: o.maxBatches, Seed: o.seed, Backend: o.backend.Backend, Devices: o.backend.Devices,
		Open: func() (host.Backend, error) { return openBackend(o.graph, o.backend) },
	}
	for _, s := range o.fanoutSets {
		f, err := parseFanouts(s)
		if err != nil {
			return err
		}
		cfg.Fanouts = append(cfg.Fanouts, f)
	}
	if !o.json {
		cfg.Log = w
	}
	rep, err := hostbench.Run(ctx, cfg)
	if errors.Is(err, hostbench.ErrConfig) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	rep.Judge(benchTargets)
	write := rep.WriteBody
	if o.json {
		write = rep.WriteJSON
	}
	if err := write(w); err != nil {
		return err
	}
	// The exit status is the verdict, as for the bench/ scripts.
	if !rep.Pass {
		return errTargetsMissed
	}
	return nil
}

// errTargetsMissed is bench's error when the report is complete but a
// target FAILs: the exit status says so to a script.
var errTargetsMissed = errors.New("bench: a target was missed (the FAIL lines above)")
