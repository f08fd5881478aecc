package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/serve"
)

// heteroServeFlags are serve's flags for a heterogeneous graph directory
// (one with hetero.json).
type heteroServeFlags struct {
	trainType string
	relFan    []string
}

func (h *heteroServeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&h.trainType, "train-type", "", "heterogeneous graph: the node type of the training nodes (--train holds local ids of that type)")
	fl.StringArrayVar(&h.relFan, "relation-fanouts", nil, "heterogeneous graph: fanouts of one relation, src___rel___dst=5,5 (0: the relation is not sampled at that hop; repeatable; the others take --fanouts)")
}

// isHetero reports whether dir is a heterogeneous graph directory.
func isHetero(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, heterofmt.ManifestFile))
	return err == nil
}

// relationFanouts parses --relation-fanouts into FanoutsFromMap's map.
func relationFanouts(specs []string) (map[string][]int, error) {
	m := make(map[string][]int, len(specs))
	for _, s := range specs {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usagef("--relation-fanouts %q: want src___rel___dst=FANOUTS", s)
		}
		if _, dup := m[k]; dup {
			return nil, usagef("--relation-fanouts: relation %s given twice", k)
		}
		f, err := parseFanoutList(v, "--relation-fanouts "+k, true)
		if err != nil {
			return nil, err
		}
		m[k] = f
	}
	return m, nil
}

// runServeHetero serves a heterogeneous graph's epochs (serve.HeteroServer).
func runServeHetero(cmd *cobra.Command, f *serveFlags, token []byte, sockMode os.FileMode, s epoch.Sampling) error {
	h := &f.hetero
	switch {
	case h.trainType == "":
		return usagef("--graph %s is heterogeneous (hetero.json): --train-type names the training nodes' type", f.stream.graph)
	case f.stream.train == "":
		return usagef("required flag \"train\" not set (local ids of --train-type %s)", h.trainType)
	case f.link.on():
		return usagef("link prediction over a heterogeneous graph is not served yet")
	case f.stream.features.on && f.stream.features.reorder != "none":
		return usagef("--reorder over a heterogeneous graph is not served yet")
	case f.stream.replace:
		return usagef("--replace over a heterogeneous graph is not served yet")
	case f.tcp != "" && token == nil:
		return usagef("--tcp needs a token that clients present: --token-file FILE or $%s", tokenEnv)
	case f.stream.dropLast:
		return usagef("--drop-last over a heterogeneous graph is not served yet")
	}
	relFan, err := relationFanouts(h.relFan)
	if err != nil {
		return err
	}
	sem, err := epoch.ParseSemantics(f.stream.semantics)
	if err != nil {
		return usageError{err}
	}
	smp, schema, err := heterosample.OpenDir(f.stream.graph, heteroOptions(f.backend))
	if err != nil {
		return err
	}
	defer smp.Close()
	fanouts, err := schema.FanoutsFromMap(relFan, s.Fanouts)
	if err != nil {
		return usageError{err}
	}
	t := schema.TypeIndex(h.trainType)
	if t < 0 {
		names := make([]string, len(schema.NodeTypes))
		for i, nt := range schema.NodeTypes {
			names[i] = nt.Name
		}
		return usagef("--train-type %q: not a node type of %s (its types: %s)", h.trainType, f.stream.graph, strings.Join(names, ", "))
	}
	var stores []*featstore.Store
	var labels []serve.HeteroLabels
	if f.stream.features.on {
		if stores, err = serve.OpenHeteroFeatures(f.stream.graph, schema); err != nil {
			return err
		}
		defer serve.CloseStores(stores)
		// Labels travel with the rows: a store's, or labels/<type>.npy
		// for a type without a store (from_pyg).
		if labels, err = serve.OpenHeteroLabels(f.stream.graph, schema, stores, func(path string, n uint32) ([]int32, error) {
			return ingest.ReadLabels(cmd.Context(), path, n)
		}); err != nil {
			return err
		}
		if stores == nil && labels == nil {
			return usagef("--features: %s has no feature store or labels of any node type (chunkify build --ogb-raw packs node-feat)", f.stream.graph)
		}
	}
	numEdges, err := serve.HeteroNumEdges(f.stream.graph, schema)
	if err != nil {
		return err
	}
	var maxInflight int64
	if f.maxInfl != "" {
		// Checked by runServe already.
		if maxInflight, err = ingest.ParseSize(f.maxInfl); err != nil {
			return usagef("--max-inflight %q: %v", f.maxInfl, err)
		}
	}
	train, err := ingest.ReadNodeIDs(f.stream.train, schema.NodeTypes[t].Count)
	if err != nil {
		return usageError{fmt.Errorf("--train (local ids of type %s, which has %d nodes): %w", h.trainType, schema.NodeTypes[t].Count, err)}
	}
	epochs, err := serve.NewHeteroEpochs(serve.HeteroConfig{Sampler: smp, Schema: schema, TrainType: h.trainType, Train: train,
		Fanouts: fanouts, BatchSize: f.stream.batchSize, Seed: s.Seed, Semantics: sem, Rank: s.Rank, World: s.World, EdgeIDs: f.backend.EdgeIDs, Features: stores,
		Labels: labels, NumEdges: numEdges, MaxInflight: maxInflight, StallTimeout: noneIfZero(f.stallTimeout)})
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if stores != nil {
		// The stores that fit the feature cache are held in memory whole;
		// the others' rows are read from their files for each minibatch.
		budget, how, err := f.stream.features.heteroCache(stores)
		if err != nil {
			return err
		}
		types, held, err := epochs.HoldFeatures(ctx, budget)
		if err != nil {
			return err
		}
		if !f.quiet {
			names := strings.Join(types, ", ")
			if names == "" {
				names = "none"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "streamsampler serve: feature cache %s: the stores of node types held in memory: %s (%s)\n", mib(held), names, how)
		}
	}
	srv, err := serve.NewHeteroServer(ctx, epochs, f.stream.firstEpoch, token, nil)
	if err != nil {
		return err
	}
	defer srv.Close()
	var lns []net.Listener
	if f.socket != "" {
		ln, err := serve.ListenUnixMode(f.socket, sockMode)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	if f.tcp != "" {
		ln, err := serve.ListenTCP(f.tcp)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			if errors.Is(err, serve.ErrNotLoopback) {
				return usageError{err}
			}
			return err
		}
		lns = append(lns, ln)
	}
	errs := make(chan error, len(lns))
	where := ""
	for _, ln := range lns {
		where += " " + ln.Addr().Network() + ":" + ln.Addr().String()
		go func() { errs <- srv.Serve(ln) }()
	}
	info := srv.Info()
	fmt.Fprintf(cmd.OutOrStdout(), "ready%s epoch=%d num_batches=%d rank=%d world_size=%d hetero train_type=%s\n",
		where, info.Epoch, info.NumBatches, info.Rank, info.WorldSize, h.trainType)
	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
	}
	for _, ln := range lns {
		ln.Close()
	}
	return first
}
