package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featrows"
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

// featureRecord is an epoch's feature figures in run's output.
type featureRecord struct {
	PlanS   float64                 `json:"plan_s"` // node sets, reorder and plan, during the epoch's preparation
	Reorder *featplan.ReorderReport `json:"reorder,omitempty"`
	Reads   featplan.Report         `json:"reads"`
	ReadS   float64                 `json:"read_s"` // time in the reader (cache copies and disk reads)
	GBps    float64                 `json:"gbps"`   // bytes delivered (rows needed × row bytes) / read_s
	Direct  bool                    `json:"o_direct"`
	Labels  int64                   `json:"labels"` // seed labels delivered
}

// featureReader delivers run's minibatches' feature rows and labels
// (featrows), epoch after epoch, and keeps each epoch's figures.
type featureReader struct {
	rows     *featrows.Executor
	rowBytes int64
	ep       *featrows.Epoch
	rec      featureRecord
	x        []byte
	y        []int32
}

func newFeatureReader(fs *featstore.Store) (*featureReader, error) {
	rows, err := featrows.New(fs)
	if err != nil {
		return nil, err
	}
	return &featureReader{rows: rows, rowBytes: fs.RowBytes()}, nil
}

// begin starts the reads of b's epoch under its plan.
func (fr *featureReader) begin(b *pipeline.Minibatch) error {
	fp := b.Features
	if fp == nil {
		return errors.New("the pipeline made no feature plan")
	}
	ep, err := fr.rows.Epoch(b.Epoch, fp.Plan)
	if err != nil {
		return err
	}
	fr.ep = ep
	fr.rec = featureRecord{PlanS: fp.Seconds, Direct: ep.Direct()}
	if fp.Order != nil {
		rep := fp.Reorder
		fr.rec.Reorder = &rep
	}
	return nil
}

// next reads minibatch b's rows (its blocks' last src, which must be the
// plan's node set for it) and its seeds' labels; they stay in fr.x and
// fr.y until the next call.
func (fr *featureReader) next(ctx context.Context, b *pipeline.Minibatch) error {
	nodes := b.Blocks.Nodes()
	need := int64(len(nodes)) * fr.rowBytes
	if int64(cap(fr.x)) < need {
		fr.x = make([]byte, need)
	}
	fr.x = fr.x[:need]
	// The pipeline hands minibatches out in order; were it ever not to,
	// waiting for the turn would wait for ever: refuse instead.
	if turn := fr.ep.Turn(); turn != b.Index {
		return fmt.Errorf("epoch %d: feature reader at minibatch %d, pipeline at %d", b.Epoch, turn, b.Index)
	}
	t0 := time.Now()
	if err := fr.ep.Read(ctx, b.Index, nodes, fr.x); err != nil {
		return fmt.Errorf("epoch %d, minibatch %d: features: %w", b.Epoch, b.Index, err)
	}
	fr.rec.ReadS += time.Since(t0).Seconds()
	var err error
	if fr.y, err = fr.rows.Labels(b.Blocks.Seeds, fr.y); err != nil {
		return fmt.Errorf("epoch %d, minibatch %d: %w", b.Epoch, b.Index, err)
	}
	fr.rec.Labels += int64(len(fr.y))
	return nil
}

// end ends the epoch's reads and returns its figures; nil when no epoch
// is under way.
func (fr *featureReader) end() *featureRecord {
	if fr.ep == nil {
		return nil
	}
	fr.ep.Close()
	fr.rec.Reads = fr.ep.Report()
	fr.ep = nil
	if fr.rec.ReadS > 0 {
		fr.rec.GBps = float64(fr.rec.Reads.RowsNeeded*fr.rec.Reads.RowBytes) / fr.rec.ReadS / 1e9
	}
	rec := fr.rec
	return &rec
}

// close ends the reads.
func (fr *featureReader) close() { fr.rows.Close() }
