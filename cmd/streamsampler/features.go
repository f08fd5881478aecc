package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/pipeline"
)

// featureFlags are the flags of a command that delivers minibatches with
// their feature rows and labels (docs/FORMAT.md, "The feature store").
type featureFlags struct {
	on      bool
	cache   string
	reorder string
}

func (f *featureFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.on, "features", false, "read every minibatch's feature rows (n_id order) and its seeds' labels from the graph's feature store (chunkify features), planned per epoch (the plan, 4 bytes per row of every minibatch, in an unlinked file in $TMPDIR the kernel may write out when memory is short)")
	fl.StringVar(&f.cache, "feature-cache", "0", "with --features: memory for feature rows kept between minibatches (e.g. 4GiB), managed with the epoch's known future (Belady)")
	fl.StringVar(&f.reorder, "reorder", "none", "with --features: none|match (reorder each epoch's minibatches so consecutive ones share nodes: FastGL's Match-Reorder, seeded)")
}

// planning opens the graph's feature store and returns it with the
// pipeline's FeaturePlanning; nil, nil without --features.
func (f *featureFlags) planning(graph string) (*featstore.Store, *pipeline.FeaturePlanning, error) {
	if !f.on {
		if f.cache != "0" || f.reorder != "none" {
			return nil, nil, usagef("--feature-cache and --reorder need --features")
		}
		return nil, nil, nil
	}
	cache, err := ingest.ParseSize(f.cache)
	if err != nil || cache < 0 {
		return nil, nil, usagef("--feature-cache %q: want a size such as 4GiB, or 0", f.cache)
	}
	var reorder bool
	switch f.reorder {
	case "none":
	case "match":
		reorder = true
	default:
		return nil, nil, usagef("--reorder %q: want none or match", f.reorder)
	}
	fs, err := featstore.Open(graph)
	if err != nil {
		if errors.Is(err, featstore.ErrNoFeatures) {
			return nil, nil, fmt.Errorf("--features: %w (pack them with chunkify features FILE -o %s)", err, graph)
		}
		return nil, nil, err
	}
	// The plan's per-access array goes to a file in $TMPDIR, which the
	// kernel may write out where memory is short (featplan.SpillTo).
	return fs, &pipeline.FeaturePlanning{CacheRows: int(cache / fs.RowBytes()), Reorder: reorder, RowBytes: fs.RowBytes(), SpillDir: os.TempDir()}, nil
}
