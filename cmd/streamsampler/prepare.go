package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/failpoint"
	"github.com/streamsampler/streamsampler/statedir"
)

type prepareOptions struct {
	graph, train, fanouts, state, compress string
	seed                                   uint64
	epoch                                  uint32
	replace, json, quiet                   bool
	rank, world                            int
	backend                                backendFlags
}

func newPrepareCmd() *cobra.Command {
	var o prepareOptions
	cmd := &cobra.Command{
		Use:   "prepare --state STATEDIR [--graph DIR --train FILE --fanouts 15,10,5 --seed S]",
		Short: "Sample one epoch by streaming the graph's chunks and write it to STATEDIR/epoch-N",
		Long: `prepare samples every layer of one epoch for the training nodes (this rank's
shard) and writes STATEDIR/epoch-N atomically. The first call records --graph,
--train, --fanouts, --seed (and --replace, --rank, --world-size, --compress) in
STATEDIR/config.json; later calls may omit them, and a value that conflicts with
the recorded one is an error. Without --epoch it prepares the epoch after the
newest prepared one.`,
		Example: `  streamsampler prepare --state st --graph out/email --train train.txt --fanouts 15,10,5 --seed 1
  streamsampler prepare --state st            # the next epoch, as recorded in st/config.json
  streamsampler prepare --state st --epoch 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPrepare(cmd.Context(), cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.state, "state", "", "state directory")
	f.StringVar(&o.graph, "graph", "", "graph directory (from chunkify)")
	f.StringVar(&o.train, "train", "", "training node ids: text (one per line, OGB csv/csv.gz) or .npy")
	addFanoutsFlag(f, &o.fanouts)
	addSeedFlag(f, &o.seed)
	f.Uint32Var(&o.epoch, "epoch", 0, "epoch to prepare (default: after the newest prepared)")
	f.BoolVar(&o.replace, "replace", false, "sample with replacement")
	f.StringVar(&o.compress, "compress", "", `compress the epoch's arrays: "" or zstd`)
	f.Var(intInRange{&o.rank, 0, math.MaxInt32 - 1}, "rank", "this rank (data-parallel training)")
	o.world = 1
	f.Var(intInRange{&o.world, 1, math.MaxInt32}, "world-size", "number of ranks")
	f.BoolVar(&o.json, "json", false, "print the statistics as one JSON line (and no progress line)")
	addQuietFlag(f, &o.quiet, "progress line")
	o.backend.add(cmd)
	cmd.MarkFlagRequired("state")
	return cmd
}

// given is the StateConfig the flags describe; set reports which fields
// the command line gave (the others come from config.json).
func (o prepareOptions) given(cmd *cobra.Command) (statedir.Config, func(string) bool, error) {
	cfg := statedir.Config{Graph: o.graph, Train: o.train, Seed: o.seed, Replace: o.replace,
		Rank: o.rank, WorldSize: o.world, Compress: o.compress, EdgeIDs: o.backend.EdgeIDs}
	changed := cmd.Flags().Changed
	if changed("fanouts") {
		fan, err := parseFanouts(o.fanouts)
		if err != nil {
			return cfg, nil, err
		}
		cfg.Fanouts = fan
	}
	return cfg, func(field string) bool { return changed(flagName(field)) }, nil
}

// failpointSample is hit before prepare samples (internal/failpoint); the
// state directory's own steps are statedir's and epochdir's failpoints.
const failpointSample = "prepare/sample"

// runPrepare samples one epoch and commits it. Its one commit point is
// the rename that installs the epoch directory: a first prepare writes
// config.json before it and removes it again on any later failure, so
// that a non-zero exit leaves nothing new visible, and a kill at any step
// leaves the old state or the new one (a config.json without an epoch
// counts as nothing and the next command removes it).
func runPrepare(ctx context.Context, cmd *cobra.Command, o prepareOptions) (err error) {
	st := statedir.State{Dir: o.state}
	given, set, err := o.given(cmd)
	if err != nil {
		return err
	}
	plan, err := planState(st, given, set)
	if err != nil {
		return err
	}
	cfg, m := plan.Config, plan.Graph
	sampling, err := readSampling(cfg.Sampling(nil), cfg.Train, m.NumNodes)
	if err != nil {
		return err
	}
	// The backend is opened before the directory is created, so that a
	// bad --backend (or no device) leaves nothing behind; its chunk hook
	// reaches the progress line made once the epoch number is known.
	var onChunk func(layer, chunk int, bytes int64)
	o.backend.OnChunk = func(layer, chunk int, bytes int64) {
		if onChunk != nil {
			onChunk(layer, chunk, bytes)
		}
	}
	o.backend.EdgeIDs = cfg.EdgeIDs // as recorded, when --edge-ids is not given
	_, chunkReport, err := o.backend.resolveChunkCache(m, false)
	if err != nil {
		return err
	}
	if chunkReport != "" && !o.json && !o.quiet {
		fmt.Fprintln(cmd.ErrOrStderr(), chunkReport)
	}
	be, err := openBackend(cfg.Graph, o.backend)
	if err != nil {
		return err
	}
	defer be.Close()
	// Every argument is checked: only now may the directory be created.
	var report func(statedir.Leftover)
	if !o.json && !o.quiet {
		report = func(l statedir.Leftover) { reportRemoved(cmd.ErrOrStderr(), st, l) }
	}
	tx, err := plan.Begin(sampling.Train, report)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tx.Close()) }()
	n := o.epoch
	if !cmd.Flags().Changed("epoch") {
		n = tx.NextEpoch()
	}
	if _, err := os.Stat(filepath.Join(st.EpochDir(n), epochdir.ManifestName)); err == nil {
		return fmt.Errorf("epoch %d is already prepared in %s", n, st.EpochDir(n))
	}
	seeds := sampling.Seeds(n)
	// Progress: at most every layer reads the whole file once.
	hook, bar := chunkProgress(cmd.ErrOrStderr(), o.json || o.quiet, fmt.Sprintf("epoch %d", n), int64(len(cfg.Fanouts))*m.FileSize())
	bar.SetUnit("chunks")
	onChunk = hook
	if err := failpoint.Hit(failpointSample); err != nil {
		bar.Done()
		return err
	}
	t0 := time.Now()
	res, err := be.SampleEpoch(ctx, seeds, sampling.Fanouts, sampling.Key(n))
	bar.Done()
	if err != nil {
		return err
	}
	sampleWall := time.Since(t0)
	if err := tx.Commit(res, false); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("epoch %d was prepared concurrently: %w", n, err)
		}
		return err
	}
	// Committed: nothing below may fail the command.
	printEpochStats(cmd.OutOrStdout(), o.json, n, len(seeds), res, be, sampleWall, time.Since(t0))
	return nil
}

// printEpochStats reports a prepared epoch.
func printEpochStats(w io.Writer, asJSON bool, n uint32, seeds int, res *epoch.Result, be any, sample, total time.Duration) {
	var stats any
	if s, ok := be.(host.StatsReporter); ok {
		if st := s.LastStats(); st != nil {
			stats = st
		}
	}
	if asJSON {
		writeJSONLine(w, map[string]any{
			"epoch": n, "seeds": seeds, "final_frontier": len(res.Final), "sampled_edges": res.NumSampledEdges(),
			"result_bytes": res.Bytes(), "sample_s": sample.Seconds(), "total_s": total.Seconds(), "stats": stats,
		})
		return
	}
	fmt.Fprintf(w, "epoch %d prepared: %d seeds, %d sampled edges, final frontier %d nodes, %s in %v (sampling %v)\n",
		n, seeds, res.NumSampledEdges(), len(res.Final), mib(res.Bytes()), total.Round(time.Millisecond), sample.Round(time.Millisecond))
	if stats != nil {
		fmt.Fprint(w, stats)
	}
}
