package runloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamsampler/streamsampler/epochstats"
	"github.com/streamsampler/streamsampler/featrows"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
)

// featureReader delivers a run's minibatches' feature rows and labels
// (featrows), epoch after epoch, and keeps each epoch's figures.
type featureReader struct {
	rows     *featrows.Executor
	rowBytes int64
	ep       *featrows.Epoch
	rec      epochstats.Features
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
	fr.rec = epochstats.Features{PlanS: fp.Seconds, Direct: ep.Direct()}
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
func (fr *featureReader) end() *epochstats.Features {
	if fr.ep == nil {
		return nil
	}
	fr.ep.Close()
	fr.rec.Reads = fr.ep.Report()
	fr.ep = nil
	rec := fr.rec
	return &rec
}

// close ends the reads.
func (fr *featureReader) close() { fr.rows.Close() }
