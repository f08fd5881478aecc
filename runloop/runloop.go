// Package runloop runs a training loop without a trainer (streamsampler
// run): it samples epochs through a pipeline.Pipeline into its two-epoch
// store, persisting each one in a state directory when asked (through the
// one statedir.Txn, as prepare does), hands out every minibatch in order
// while the next epoch is sampled in the background, delivers each
// minibatch's feature rows and labels through featrows, and reports each
// epoch's figures as it ends. Its minibatches are those serve hands out
// for the same pipeline.Config, in the same order.
package runloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochstats"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/statedir"
)

// Options configure Run.
type Options struct {
	// Config is the minibatch stream, its training nodes read, Epochs > 0
	// (a run ends). With Features it carries the feature planning.
	Config pipeline.Config
	// NumNodes is the graph's node count (the store's dense row index).
	NumNodes uint32
	// Open opens the sampler. Run calls it once the state directory is
	// taken, so that a directory another command holds is refused before
	// a device is, and closes it when done.
	Open func() (host.Backend, error)
	// Workers goroutines assemble minibatches; they are handed out in
	// order whatever the number (pipeline.Pipeline.RunOrdered).
	Workers int
	// Features, if not nil, is the graph's feature store: each
	// minibatch's feature rows and labels are read from it through
	// featrows under its epoch's plan. It goes with Config.Features, and
	// stays the caller's to close.
	Features *featstore.Store
	// State, if not nil, is a state directory each epoch is also
	// committed to.
	State *State
	// OnEpoch, if not nil, sees each epoch's report as the epoch ends
	// (run prints it then, not at the end of the run).
	OnEpoch func(*EpochReport)
	// OnBatch, if not nil, sees each minibatch as it is handed out, with,
	// with Features, its feature rows (n_id order) and its seeds' labels
	// (nil without; valid only during the call). Tests compare them with
	// the store's and with serve's.
	OnBatch func(b *pipeline.Minibatch, x []byte, y []int32)
}

// State is a state directory that a run also commits its epochs to, and
// the fields of the configuration it records that Options.Config does not
// hold. A run gives every field: the directory's recorded configuration
// must agree with them all (statedir.State.Reconcile), as a prepare's
// would, and an orphan epoch is never adopted.
type State struct {
	Dir      string
	Graph    string // the graph directory
	Train    string // the file Options.Config's training nodes were read from
	Compress string // "" or "zstd"
	EdgeIDs  bool   // the sampler samples edge ids
}

// EpochReport is one epoch's figures (run's JSON lines): the figures
// every command that delivers epochs reports (epochstats.Report: their
// rates and their rendering are there), with the streaming sampler's
// statistics of the epoch.
type EpochReport struct {
	epochstats.Report
	Stats *host.Stats `json:"stats,omitempty"`
}

// Report is what a run did.
type Report struct {
	Epochs []*EpochReport
	// Wall is the time from the first epoch's sampling, done, to the last
	// minibatch handed out.
	Wall time.Duration
}

// Run runs o.Config.Epochs epochs and returns their reports. Errors about
// the configuration wrap epoch.ErrConfig; a state directory's conflicting
// or missing fields are statedir's *ConflictError and *MissingError, for
// a command to name its flags in.
func Run(ctx context.Context, o Options) (rep *Report, err error) {
	switch {
	case o.Config.Epochs < 1:
		return nil, fmt.Errorf("%w: %d epochs, want at least 1", epoch.ErrConfig, o.Config.Epochs)
	case o.Workers < 1:
		return nil, fmt.Errorf("%w: %d workers, want at least 1", epoch.ErrConfig, o.Workers)
	case o.Open == nil:
		return nil, fmt.Errorf("%w: no sampler", epoch.ErrConfig)
	case (o.Features != nil) != (o.Config.Features != nil):
		return nil, fmt.Errorf("%w: a feature store and the epochs' feature planning go together", epoch.ErrConfig)
	}
	var tx *statedir.Txn
	if o.State != nil {
		if tx, err = begin(o.State, o.Config); err != nil {
			return nil, err
		}
		// Held for the whole run: its epochs are committed as it goes.
		defer func() { err = errors.Join(err, tx.Close()) }()
	}
	be, err := o.Open()
	if err != nil {
		return nil, err
	}
	defer be.Close()

	var mu sync.Mutex
	sampled := map[uint32]*EpochReport{}
	sampleFn := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		t0 := time.Now()
		res, err := be.SampleEpoch(ctx, seeds, fanouts, key)
		if err != nil {
			return nil, err
		}
		r := &EpochReport{Report: epochstats.Report{Epoch: key.Epoch, SampleS: time.Since(t0).Seconds(), ResultBytes: res.Bytes()}, Stats: lastStats(be)}
		if r.Stats != nil {
			r.BytesRead, r.BytesKnown, r.GraphBytes = r.Stats.BytesRead(), true, r.Stats.GraphBytes
		}
		mu.Lock()
		sampled[key.Epoch] = r
		mu.Unlock()
		return res, nil
	}
	opts := []pipeline.StoreOption{pipeline.WithNumNodes(o.NumNodes)}
	if tx != nil {
		opts = append(opts, pipeline.WithTxn(tx))
	}
	pipe, err := pipeline.NewPipeline(o.Config, sampleFn, pipeline.NewStore(opts...))
	if err != nil {
		return nil, err
	}
	defer pipe.Close()
	if err := pipe.Start(ctx); err != nil {
		return nil, err
	}

	rep = &Report{}
	var cur *EpochReport
	var fr *featureReader
	if o.Features != nil {
		if fr, err = newFeatureReader(o.Features); err != nil {
			return nil, err
		}
		defer fr.close()
	}
	// t0 is when the consumer last asked for a minibatch; curStart, when
	// it first asked for one of the epoch under way; assembly, the
	// epoch's minibatches' assembly intervals (on every worker).
	var t0, curStart time.Time
	var assembly epochstats.Spans
	// end completes the epoch under way with its sampling figures (its
	// sample function's record) and reports it.
	end := func() {
		if cur == nil {
			return
		}
		if fr != nil {
			cur.Features = fr.end()
		}
		mu.Lock()
		if s := sampled[cur.Epoch]; s != nil {
			cur.SampleS, cur.BytesRead, cur.BytesKnown, cur.GraphBytes, cur.Stats = s.SampleS, s.BytesRead, s.BytesKnown, s.GraphBytes, s.Stats
			cur.ResultBytes = s.ResultBytes
			cur.Overlapped = cur.Epoch > o.Config.FirstEpoch
		}
		mu.Unlock()
		cur.WallS = t0.Sub(curStart).Seconds() // t0: when its last minibatch was handed over
		cur.AssembleS = assembly.Seconds()
		assembly = epochstats.Spans{}
		cur.Finish()
		rep.Epochs = append(rep.Epochs, cur)
		if o.OnEpoch != nil {
			o.OnEpoch(cur)
		}
	}
	start := time.Now()
	t0, curStart = start, start
	err = pipe.RunOrdered(ctx, o.Workers, func(b *pipeline.Minibatch) error {
		if cur == nil || b.Epoch != cur.Epoch {
			end()
			cur, curStart = &EpochReport{Report: epochstats.Report{Epoch: b.Epoch}}, t0
			if fr != nil {
				if err := fr.begin(b); err != nil {
					return fmt.Errorf("epoch %d: %w", b.Epoch, err)
				}
			}
		}
		var x []byte
		var y []int32
		if fr != nil {
			if err := fr.next(ctx, b); err != nil {
				return err
			}
			x, y = fr.x, fr.y
		}
		if o.OnBatch != nil {
			o.OnBatch(b, x, y)
		}
		cur.Batches++
		cur.Seeds += len(b.Blocks.Seeds)
		cur.Edges += int64(b.Blocks.NumEdges())
		assembly.Add(b.AssembleStart, b.AssembleEnd)
		t0 = time.Now()
		return nil
	})
	if err != nil {
		return nil, err
	}
	end()
	rep.Wall = time.Since(start)
	return rep, nil
}

// begin takes the state directory s for a run of cfg: every field is
// given, so they must all agree with what it records (as a prepare's
// would), and the run's epochs are committed through the transaction.
func begin(s *State, cfg pipeline.Config) (*statedir.Txn, error) {
	given := statedir.Config{Graph: s.Graph, Train: s.Train, Fanouts: cfg.Fanouts, Seed: cfg.Seed,
		Replace: cfg.Replace, Rank: cfg.Rank, WorldSize: cfg.World, Compress: s.Compress, EdgeIDs: s.EdgeIDs}
	p, err := statedir.State{Dir: s.Dir}.PlanWrite(given, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	return p.Begin(cfg.Train, nil)
}

// lastStats returns the statistics of be's last epoch, nil where the
// sampler keeps none (the GPU engine).
func lastStats(be host.Backend) *host.Stats {
	if s, ok := be.(host.StatsReporter); ok {
		return s.LastStats()
	}
	return nil
}
