package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamsampler/streamsampler/batchfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/randread"
)

// freshOptions are sample's flags for --graph: the random-read sampler
// (package randread), no state directory.
type freshOptions struct {
	graph, fanouts, io string
	seed               uint64
	epoch              uint32
	replace, edgeIDs   bool
	blockSize, depth   int
	stats              bool
}

// freshFlags are the flags that only --graph takes.
var freshFlags = []string{"graph", "fanouts", "seed", "epoch", "replace", "edge-ids", "block-size", "depth", "io", "stats"}

func addFreshFlags(f *pflag.FlagSet, o *freshOptions) {
	f.StringVar(&o.graph, "graph", "", "graph directory to sample by random reads, without a state directory (instead of --state)")
	addFanoutsFlag(f, &o.fanouts)
	addSeedFlag(f, &o.seed)
	f.Uint32Var(&o.epoch, "epoch", 0, "with --graph: the epoch whose random stream the sample takes (as a state's current epoch)")
	f.BoolVar(&o.replace, "replace", false, "with --graph: sample with replacement")
	f.BoolVar(&o.edgeIDs, "edge-ids", false, "with --graph: also output each edge's id (e_id, its position in the stored CSR)")
	f.IntVar(&o.blockSize, "block-size", randread.DefaultBlockSize, "with --graph: bytes read around each chosen neighbor (a power of two, 512 to 1 MiB)")
	f.IntVar(&o.depth, "depth", randread.DefaultDepth, "with --graph: reads in flight")
	f.StringVar(&o.io, "io", "aio", "with --graph: how reads are kept in flight: aio (Linux AIO, O_DIRECT) or pread (a goroutine per read in flight)")
	f.BoolVar(&o.stats, "stats", false, "with --graph: print what was read (blocks, reads, bytes, times per layer) as one JSON object on stderr")
}

// onlyWithGraph refuses --graph's flags without --graph.
func (o freshOptions) onlyWithGraph(cmd *cobra.Command) error {
	for _, name := range freshFlags {
		if cmd.Flags().Changed(name) {
			return usagef("--%s applies to --graph only (a state directory records its sampling)", name)
		}
	}
	return nil
}

// runSampleGraph is sample --graph: the seeds' minibatch sampled by random
// reads, printed as sample --state prints one.
func runSampleGraph(cmd *cobra.Command, o sampleOptions, sem epoch.Semantics) error {
	fo := o.fresh
	if fo.fanouts == "" {
		return usagef("--graph needs --fanouts")
	}
	fanouts, err := parseFanouts(fo.fanouts)
	if err != nil {
		return err
	}
	mode, err := randread.ParseIO(fo.io)
	if err != nil {
		return usageError{err}
	}
	ctx := cmd.Context()
	s, err := randread.Open(ctx, fo.graph, randread.Options{BlockSize: fo.blockSize, Depth: fo.depth, IO: mode})
	if err != nil {
		if errors.Is(err, randread.ErrInvalid) {
			return usageError{err}
		}
		return err
	}
	defer s.Close()
	var seeds []uint32
	if o.seeds != "" {
		seeds, err = parseNodeList(o.seeds, s.NumNodes())
	} else {
		seeds, err = ingest.ReadNodeIDs(o.seedsFile, s.NumNodes())
	}
	if err != nil {
		return err
	}
	if len(seeds) == 0 {
		return usagef("no seeds given")
	}
	req := randread.Request{Seeds: seeds, Fanouts: fanouts, Key: epoch.Key{Seed: fo.seed, Epoch: fo.epoch, Replace: fo.replace}, EdgeIDs: fo.edgeIDs}
	b, st, err := s.Blocks(ctx, req, sem)
	if err != nil {
		return err
	}
	var f *batchfmt.Features
	if o.features {
		f, err = batchfmt.ReadFeatures(fo.graph, s.Manifest().Fingerprint(), b)
		if errors.Is(err, featstore.ErrNoFeatures) {
			return fmt.Errorf("sample --features: graph %s has no feature store; pack one with `chunkify features FEATURES -o %s` (%w)", fo.graph, fo.graph, err)
		}
		if err != nil {
			return fmt.Errorf("sample --features: %w", err)
		}
	}
	if err := writeSample(cmd, o, b, f); err != nil {
		return err
	}
	if fo.stats {
		line, err := json.Marshal(st)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s\n", line)
	}
	return nil
}
