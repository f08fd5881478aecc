package main

import (
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
)

// streamFlags are the flags of every command that hands out minibatches
// (run, serve): they make one pipeline.Config, so each means the same thing
// in both.
type streamFlags struct {
	graph, train, fanouts string
	batchSize             int
	dropLast              bool
	semantics             string
	seed                  uint64
	replace               bool
	rank, world           int // -1: from $RANK / $WORLD_SIZE (torchrun), else 0 / 1
	prepareAt             float64
	firstEpoch            uint32
	features              featureFlags
}

func (f *streamFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.graph, "graph", "", "graph directory (made by chunkify)")
	fl.StringVar(&f.train, "train", "", "training node ids: text (one per line, OGB csv/csv.gz) or .npy")
	addFanoutsFlag(fl, &f.fanouts)
	fl.IntVar(&f.batchSize, "batch-size", 1024, "seeds per minibatch")
	fl.BoolVar(&f.dropLast, "drop-last", false, "leave out each epoch's last minibatch when it is short (PyG's and DGL's drop_last)")
	fl.StringVar(&f.semantics, "semantics", "dgl", "how a minibatch's hops are assembled from the epoch: dgl (every hop expands all nodes so far, DGL's to_block) or pyg (a hop expands only the nodes the previous hop reached first, PyG's NeighborLoader); serve requests may ask for either")
	addSeedFlag(fl, &f.seed)
	fl.BoolVar(&f.replace, "replace", false, "sample with replacement")
	fl.IntVar(&f.rank, "rank", -1, "data-parallel rank (default $RANK, else 0)")
	fl.IntVar(&f.world, "world-size", -1, "data-parallel world size (default $WORLD_SIZE, else 1)")
	fl.Float64Var(&f.prepareAt, "prepare-at", pipeline.DefaultPrepareAt,
		"fraction of an epoch's minibatches handed out when the next epoch's preparation starts (0: at once, 1: after the last)")
	fl.Uint32Var(&f.firstEpoch, "epoch", 0, "first epoch")
	f.features.add(cmd)
	cmd.MarkFlagRequired("graph")
	cmd.MarkFlagRequired("train")
	cmd.MarkFlagRequired("fanouts")
}

// sampling checks the flags that need no file and returns the Sampling
// they describe, without training nodes yet (so that a bad flag fails
// before any file is read).
func (f *streamFlags) sampling() (epoch.Sampling, error) {
	switch {
	case f.batchSize < 1:
		return epoch.Sampling{}, usagef("--batch-size %d: want >= 1", f.batchSize)
	case f.semantics != "dgl" && f.semantics != "pyg":
		return epoch.Sampling{}, usagef("--semantics %q: want dgl or pyg", f.semantics)
	case !(f.prepareAt >= 0 && f.prepareAt <= 1):
		return epoch.Sampling{}, usagef("--prepare-at %g: want a fraction in [0, 1]", f.prepareAt)
	}
	s := epoch.Sampling{Seed: f.seed, Replace: f.replace, Rank: f.rank, World: f.world}
	var err error
	if s.Fanouts, err = parseFanouts(f.fanouts); err != nil {
		return s, err
	}
	if s.Rank < 0 {
		if s.Rank, err = envInt("RANK", 0); err != nil {
			return s, err
		}
	}
	if s.World < 0 {
		if s.World, err = envInt("WORLD_SIZE", 1); err != nil {
			return s, err
		}
	}
	if s.World < 1 || s.Rank >= s.World {
		return s, usagef("rank %d of world size %d: want 0 <= rank < world size", s.Rank, s.World)
	}
	return s, nil
}

// config completes s (from sampling) into the run's pipeline.Config for the
// graph of manifest m: its training nodes read from --train, epochs epochs
// (0: no end). Every
// check of the configuration is a usage error.
func (f *streamFlags) config(s epoch.Sampling, m *chunkfmt.Manifest, epochs int) (pipeline.Config, error) {
	s, err := readSampling(s, f.train, m.NumNodes)
	if err != nil {
		return pipeline.Config{}, err
	}
	return f.configWith(s, epochs, nil)
}

// linkConfig is config for link epochs (DESIGN §4, "Link epochs"): the
// minibatches are link's training edges; --train is not read.
func (f *streamFlags) linkConfig(s epoch.Sampling, link *epoch.Link, epochs int) (pipeline.Config, error) {
	return f.configWith(s, epochs, link)
}

// configWith completes the pipeline.Config of s and checks it.
func (f *streamFlags) configWith(s epoch.Sampling, epochs int, link *epoch.Link) (pipeline.Config, error) {
	sem, err := epoch.ParseSemantics(f.semantics)
	if err != nil {
		return pipeline.Config{}, usageError{err}
	}
	cfg := pipeline.Config{Sampling: s, BatchSize: f.batchSize, DropLast: f.dropLast, Semantics: sem, PrepareAt: f.prepareAt, FirstEpoch: f.firstEpoch, Epochs: epochs, Link: link}
	if err := cfg.Check(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// envInt reads a non-negative integer from the environment.
func envInt(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, usagef("$%s=%q is not a non-negative integer", name, v)
	}
	return n, nil
}
