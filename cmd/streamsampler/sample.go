package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/batchfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/statedir"
)

type sampleOptions struct {
	state, seeds, seedsFile, format, out, semantics string
	features                                        bool
	fresh                                           freshOptions // --graph: the random-read sampler (sample_graph.go)
}

func newSampleCmd() *cobra.Command {
	var o sampleOptions
	cmd := &cobra.Command{
		Use:   "sample (--state STATEDIR | --graph GRAPHDIR --fanouts 15,10,5) (--seeds 1,2,3 | --seeds-file F) [--features] [--format json|npz|summary] [-o FILE]",
		Short: "Assemble one minibatch's blocks from the current epoch, or sample it from the graph by random reads",
		Long: `sample prints the blocks of one minibatch of the current epoch: for each hop,
dst (the nodes it expands) and src (every node known after it; global ids)
and the edges as local indices (edge_src into src, edge_dst into dst), with
each edge's id (e_id, its position in the stored CSR) when the epoch was
prepared with --edge-ids. --semantics says which nodes a hop expands:
dgl (every node so far: src starts with dst) or pyg (the nodes the previous
hop reached first; docs/PROTOCOL.md). JSON is
{"epoch":N,"hops":[{"dst":[…],"src":[…],"edge_src":[…],"edge_dst":[…]},…]}
("semantics":"pyg" after the epoch, "e_id":[…] in each hop where they
apply); npz holds epoch, seeds and hopH_{dst,src,edge_src,edge_dst[,e_id]}
for H = 1..L;
summary prints one line per hop with the block's sizes.
Every seed must be a training node of the current epoch (this rank's shard).

With --features, the output also carries the minibatch's nodes n_id (the
last hop's src, or the seeds without hops), their feature rows x (shape
[len(n_id), dim], the store's dtype) and, when the store has labels, the
seeds' labels y (int32, -1 for a node without one), read from the feature
store of the graph the state was prepared from (chunkify features). npz
adds the arrays n_id (uint32), x (float32, float16, int8 or uint8, the
stored bytes) and y; JSON adds "n_id", "dtype", "dim", "x" (one array per
row) and "y", with float16 values widened exactly to float32 and printed as
the shortest decimal that reads back to it (so also to the same float16),
and NaN or infinities, which JSON cannot write, as null; summary adds one
line with the rows, dtype and bytes.

With --graph instead of --state, no state directory is needed: the seeds
(any distinct nodes) are sampled there and then by the random-read sampler
(package randread: the graph's row offsets in memory, only the disk blocks
holding the chosen neighbors read, with O_DIRECT and many reads in
flight), with the key --seed, --epoch and --replace, and printed in the
same shape. The samples are those of the streaming sampler for the same
key, bit for bit: the output equals sample --state's for a state prepared
from the graph with the same --fanouts, --seed and --replace (and
--edge-ids), whose current epoch is --epoch and whose training nodes
include the seeds. --stats prints what was read, as one JSON object on
stderr.`,
		Example: `  streamsampler sample --state st --seeds 0,2,4
  streamsampler sample --state st --seeds-file batch.npy --format npz -o batch.npz
  streamsampler sample --state st --seeds 0,2,4 --format summary
  streamsampler sample --state st --seeds 0,2,4 --features --format npz -o batch.npz
  streamsampler sample --graph g --fanouts 15,10,5 --seeds 0,2,4 --seed 7 --epoch 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSample(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.state, "state", "", "state directory")
	f.StringVar(&o.seeds, "seeds", "", "comma-separated seed node ids")
	f.StringVar(&o.seedsFile, "seeds-file", "", "seed node ids, one per line (or .npy)")
	f.StringVar(&o.format, "format", "json", "output format: json, npz or summary")
	f.StringVarP(&o.out, "output", "o", "", "write to this file instead of stdout")
	f.StringVar(&o.semantics, "semantics", "dgl", "how the hops are assembled: dgl (every hop expands all nodes so far, DGL's to_block) or pyg (a hop expands only the nodes the previous hop reached first, PyG's NeighborLoader)")
	f.BoolVar(&o.features, "features", false, "also output the feature rows of the minibatch's nodes (n_id order) and its seeds' labels, from the graph's feature store (chunkify features)")
	addFreshFlags(f, &o.fresh)
	return cmd
}

func runSample(cmd *cobra.Command, o sampleOptions) error {
	if (o.state == "") == (o.fresh.graph == "") {
		return usagef("give exactly one of --state (a prepared epoch) and --graph (random reads)")
	}
	if (o.seeds == "") == (o.seedsFile == "") {
		return usagef("give exactly one of --seeds and --seeds-file")
	}
	if o.format != "json" && o.format != "npz" && o.format != "summary" {
		return usagef("--format %q: want json, npz or summary", o.format)
	}
	if o.out != "" {
		if err := checkOutput("-o", o.out); err != nil {
			return err
		}
	}
	sem, err := epoch.ParseSemantics(o.semantics)
	if err != nil {
		return usageError{err}
	}
	if o.fresh.graph != "" {
		return runSampleGraph(cmd, o, sem)
	}
	if err := o.fresh.onlyWithGraph(cmd); err != nil {
		return err
	}
	st := statedir.State{Dir: o.state}
	// Read-only: the whole directory is checked, nothing is cleaned.
	c, err := openCommitted(st)
	if err != nil {
		return err
	}
	cfg, cur := c.Config, c.Current
	if !c.HasCurrent {
		return fmt.Errorf("%s has no current epoch: run prepare, then advance", o.state)
	}
	var seeds []uint32
	if o.seeds != "" {
		seeds, err = parseNodeList(o.seeds, cfg.Fingerprint.NumNodes)
	} else {
		seeds, err = ingest.ReadNodeIDs(o.seedsFile, cfg.Fingerprint.NumNodes)
	}
	if err != nil {
		return err
	}
	if len(seeds) == 0 {
		return usagef("no seeds given")
	}
	res, err := epochdir.Read(st.EpochDir(cur))
	if err != nil {
		if errors.Is(err, epochdir.ErrCorrupt) {
			return fmt.Errorf("current epoch %d is damaged (prepare it again into a new state directory): %w", cur, err)
		}
		return fmt.Errorf("current epoch %d: %w", cur, err)
	}
	b, err := epoch.NewAssembler(res, nil).Assemble(seeds, sem)
	if err != nil {
		if errors.Is(err, epoch.ErrNotInFrontier) {
			return fmt.Errorf("a seed is not a training node of epoch %d (see %s): %w", cur, cfg.Train, err)
		}
		return err
	}
	var f *batchfmt.Features
	if o.features {
		f, err = batchfmt.ReadFeatures(cfg.Graph, cfg.Fingerprint, b)
		if errors.Is(err, featstore.ErrNoFeatures) {
			return fmt.Errorf("sample --features: graph %s has no feature store; pack one with `chunkify features FEATURES -o %s` (%w)", cfg.Graph, cfg.Graph, err)
		}
		if err != nil {
			return fmt.Errorf("sample --features: %w", err)
		}
	}
	return writeSample(cmd, o, b, f)
}

// writeSample writes a minibatch's blocks (and its features, f nil:
// none) in o.format to -o or stdout.
func writeSample(cmd *cobra.Command, o sampleOptions, b *epoch.Blocks, f *batchfmt.Features) (err error) {
	var w io.Writer = cmd.OutOrStdout()
	var af *atomicfile.File
	if o.out != "" {
		// Temp + fsync + rename: a failed or interrupted write leaves any
		// previous file whole and no partial one.
		if af, err = atomicfile.Create(o.out, 0o644); err != nil {
			return err
		}
		defer af.Abort()
		w = af
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	switch o.format {
	case "json":
		err = batchfmt.WriteJSON(bw, b, f)
	case "npz":
		err = batchfmt.WriteNPZ(bw, b, f)
	default:
		err = batchfmt.WriteSummary(bw, b, f)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && af != nil {
		err = af.Commit()
	}
	return err
}
