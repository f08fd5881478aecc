package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/memavail"
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
	fl.StringVar(&f.cache, "feature-cache", "auto", "with --features: memory for feature rows kept between minibatches (e.g. 4GiB; 0: none), managed with the epoch's known future (Belady); auto: the whole store when it fits in half of the memory this process may use (MemAvailable, or the tightest memory cgroup's room), else that half; over a heterogeneous graph: memory for node types' stores held whole, the smallest first, the others read for each minibatch")
	fl.StringVar(&f.reorder, "reorder", "none", "with --features: none|match (reorder each epoch's minibatches so consecutive ones share nodes: FastGL's Match-Reorder, seeded)")
}

// planning opens the graph's feature store and returns it with the
// pipeline's FeaturePlanning and a line that says the cache chosen (for
// the command to report at start); nil, nil, "" without --features.
// reserved is the memory already promised to the chunk cache
// (backendFlags.resolveChunkCache): --feature-cache auto takes what it
// leaves of half the memory this process may use, so that the two caches
// together never take more than that half.
func (f *featureFlags) planning(graph string, reserved int64) (*featstore.Store, *pipeline.FeaturePlanning, string, error) {
	if !f.on {
		if (f.cache != "auto" && f.cache != "0") || f.reorder != "none" {
			return nil, nil, "", usagef("--feature-cache and --reorder need --features")
		}
		return nil, nil, "", nil
	}
	var cache int64
	if f.cache != "auto" {
		var err error
		if cache, err = ingest.ParseSize(f.cache); err != nil || cache < 0 {
			return nil, nil, "", usagef("--feature-cache %q: want a size such as 4GiB, 0, or auto", f.cache)
		}
	}
	var reorder bool
	switch f.reorder {
	case "none":
	case "match":
		reorder = true
	default:
		return nil, nil, "", usagef("--reorder %q: want none or match", f.reorder)
	}
	fs, err := featstore.Open(graph)
	if err != nil {
		if errors.Is(err, featstore.ErrNoFeatures) {
			return nil, nil, "", fmt.Errorf("--features: %w (pack them with chunkify features FILE -o %s)", err, graph)
		}
		return nil, nil, "", err
	}
	data := int64(fs.NumNodes()) * fs.RowBytes()
	how := "--feature-cache"
	if f.cache == "auto" {
		avail := memavail.Available()
		// Half of avail − 2·reserved is half of avail less reserved.
		cache = featplan.AutoCacheBytes(data, avail-2*reserved)
		how = fmt.Sprintf("auto: half of the %s this process may use, at most the store; --feature-cache sets it", mib(avail))
		if reserved > 0 {
			how = fmt.Sprintf("auto: half of the %s this process may use less the chunk cache's %s, at most the store; --feature-cache sets it", mib(avail), mib(reserved))
		}
	}
	rows := int(min(cache/fs.RowBytes(), int64(fs.NumNodes())))
	report := fmt.Sprintf("feature cache %s, %d of %d rows (%s)", mib(int64(rows)*fs.RowBytes()), rows, fs.NumNodes(), how)
	// The plan's per-access array goes to a file in $TMPDIR, which the
	// kernel may write out where memory is short (featplan.SpillTo).
	return fs, &pipeline.FeaturePlanning{CacheRows: rows, Reorder: reorder, RowBytes: fs.RowBytes(), SpillDir: os.TempDir()}, report, nil
}

// heteroCache is --feature-cache over a heterogeneous graph, whose server
// plans no epoch's reads: the memory for node types' stores held whole
// (serve.HeteroEpochs.HoldFeatures, the smallest first); auto: half of
// the memory this process may use, at most the stores. It returns the
// bytes and how they were chosen, for the report.
func (f *featureFlags) heteroCache(stores []*featstore.Store) (int64, string, error) {
	var data int64
	for _, fs := range stores {
		if fs != nil {
			data += int64(fs.NumNodes()) * fs.RowBytes()
		}
	}
	if f.cache != "auto" {
		cache, err := ingest.ParseSize(f.cache)
		if err != nil || cache < 0 {
			return 0, "", usagef("--feature-cache %q: want a size such as 4GiB, 0, or auto", f.cache)
		}
		return cache, "--feature-cache", nil
	}
	avail := memavail.Available()
	return featplan.AutoCacheBytes(data, avail), fmt.Sprintf("auto: half of the %s this process may use, at most the stores' %s; --feature-cache sets it", mib(avail), mib(data)), nil
}
