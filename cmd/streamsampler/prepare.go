package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
)

func init() { register(newPrepareCmd) }

type prepareOptions struct {
	graph, train, fanouts, state, compress string
	seed                                   uint64
	epoch                                  uint32
	replace, json                          bool
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPrepare(cmd.Context(), cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.state, "state", "", "state directory")
	f.StringVar(&o.graph, "graph", "", "graph directory (from chunkify)")
	f.StringVar(&o.train, "train", "", "training node ids: text (one per line, OGB csv/csv.gz) or .npy")
	f.StringVar(&o.fanouts, "fanouts", "", "neighbors per hop, hop 1 first, e.g. 15,10,5")
	f.Uint64Var(&o.seed, "seed", 0, "sampling seed")
	f.Uint32Var(&o.epoch, "epoch", 0, "epoch to prepare (default: after the newest prepared)")
	f.BoolVar(&o.replace, "replace", false, "sample with replacement")
	f.StringVar(&o.compress, "compress", "", `compress the epoch's arrays: "" or zstd`)
	f.IntVar(&o.rank, "rank", 0, "this rank (data-parallel training)")
	f.IntVar(&o.world, "world-size", 1, "number of ranks")
	f.BoolVar(&o.json, "json", false, "print the statistics as one JSON line")
	o.backend.add(cmd)
	cmd.MarkFlagRequired("state")
	return cmd
}

// mergeConfig reconciles the flags with config.json (if any) and returns
// the configuration to use and whether it must be written.
func mergeConfig(cmd *cobra.Command, o prepareOptions, old stateConfig, have bool) (stateConfig, bool, error) {
	changed := cmd.Flags().Changed
	cfg := old
	conflict := func(flag string, got, rec any) error {
		return usagef("--%s %v conflicts with %v recorded in %s; use a new state directory", flag, got, rec, filepath.Join(o.state, epoch.ConfigName))
	}
	if changed("graph") {
		abs, err := filepath.Abs(o.graph)
		if err != nil {
			return cfg, false, err
		}
		if have && abs != old.Graph {
			return cfg, false, conflict("graph", abs, old.Graph)
		}
		cfg.Graph = abs
	}
	if changed("train") {
		abs, err := filepath.Abs(o.train)
		if err != nil {
			return cfg, false, err
		}
		if have && abs != old.Train {
			return cfg, false, conflict("train", abs, old.Train)
		}
		cfg.Train = abs
	}
	if changed("fanouts") {
		fan, err := parseFanouts(o.fanouts)
		if err != nil {
			return cfg, false, err
		}
		if have && !sameInts(fan, old.Fanouts) {
			return cfg, false, conflict("fanouts", o.fanouts, old.Fanouts)
		}
		cfg.Fanouts = fan
	}
	type scalar struct {
		flag   string
		differ bool
		set    func()
		got    any
		rec    any
	}
	for _, s := range []scalar{
		{"seed", o.seed != old.Seed, func() { cfg.Seed = o.seed }, o.seed, old.Seed},
		{"replace", o.replace != old.Replace, func() { cfg.Replace = o.replace }, o.replace, old.Replace},
		{"rank", o.rank != old.Rank, func() { cfg.Rank = o.rank }, o.rank, old.Rank},
		{"world-size", o.world != old.WorldSize, func() { cfg.WorldSize = o.world }, o.world, old.WorldSize},
		{"compress", o.compress != old.Compress, func() { cfg.Compress = o.compress }, o.compress, old.Compress},
	} {
		if !changed(s.flag) {
			continue
		}
		if have && s.differ {
			return cfg, false, conflict(s.flag, s.got, s.rec)
		}
		s.set()
	}
	if !have {
		if cfg.WorldSize == 0 {
			cfg.WorldSize = 1
		}
		for flag, missing := range map[string]bool{"graph": cfg.Graph == "", "train": cfg.Train == "", "fanouts": cfg.Fanouts == nil} {
			if missing {
				return cfg, false, usagef("--%s is required on the first prepare of %s", flag, o.state)
			}
		}
		if cfg.Compress != "" && cfg.Compress != "zstd" {
			return cfg, false, usagef("--compress %q: want zstd or nothing", cfg.Compress)
		}
	}
	return cfg, !have, nil
}

func runPrepare(ctx context.Context, cmd *cobra.Command, o prepareOptions) error {
	st := epoch.State{Dir: o.state}
	old, have, err := readStateConfig(st)
	if err != nil {
		return err
	}
	cfg, fresh, err := mergeConfig(cmd, o, old, have)
	if err != nil {
		return err
	}
	var m *chunkfmt.Manifest
	if fresh {
		if m, err = chunkfmt.ReadManifest(cfg.Graph); err != nil {
			return err
		}
		cfg.Fingerprint = graphFingerprint(m)
	} else if m, err = checkGraph(cfg, o.state); err != nil {
		return err
	}
	train, err := ingest.ReadNodeIDs(cfg.Train, m.NumNodes)
	if err != nil {
		return fmt.Errorf("training nodes: %w", err)
	}
	n := o.epoch
	if err := st.Init(); err != nil {
		return err
	}
	if !cmd.Flags().Changed("epoch") {
		if n, err = st.NextToPrepare(); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(st.EpochDir(n), epoch.ManifestName)); err == nil {
		return fmt.Errorf("epoch %d is already prepared in %s", n, st.EpochDir(n))
	}
	seeds, err := epoch.Shard(train, cfg.Rank, cfg.WorldSize, cfg.Seed, n)
	if err != nil {
		return usageError{err}
	}
	// Progress: at most every layer reads the whole file once.
	hook, bar := chunkProgress(cmd.ErrOrStderr(), o.json, fmt.Sprintf("epoch %d", n), int64(len(cfg.Fanouts))*m.FileSize())
	bar.SetUnit("chunks")
	o.backend.OnChunk = hook
	be, err := openBackend(cfg.Graph, o.backend)
	if err != nil {
		bar.Done()
		return err
	}
	defer be.Close()
	key := epoch.Key{Seed: cfg.Seed, Epoch: n, Replace: cfg.Replace}
	t0 := time.Now()
	res, err := be.SampleEpoch(ctx, seeds, cfg.Fanouts, key)
	bar.Done()
	if err != nil {
		return err
	}
	sampleWall := time.Since(t0)
	if err := epoch.Write(st.EpochDir(n), res, epoch.WriteOptions{Compress: cfg.Compress}); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("epoch %d was prepared concurrently: %w", n, err)
		}
		return err
	}
	// The configuration is recorded once the first epoch exists, so that a
	// first prepare that fails (a bad backend, Ctrl-C) binds nothing.
	if fresh {
		if err := st.WriteConfig(cfg); err != nil {
			return err
		}
	}
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
