package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/statedir"
)

type runOptions struct {
	stream   streamFlags
	state    string
	compress string
	epochs   int
	json     bool
	backend  backendFlags
	workers  int
	onBatch  batchSeen // tests: sees every minibatch handed out
}

// batchSeen sees a minibatch as run hands it out: its blocks and, with
// --features, its feature rows (n_id order) and its seeds' labels (nil
// without --features; valid only during the call).
type batchSeen func(b *pipeline.Minibatch, x []byte, y []int32)

func newRunCmd() *cobra.Command { return newRunCmdWith(nil) }

// newRunCmdWith is newRunCmd whose run shows onBatch every minibatch it
// hands out, with its features (tests compare them with the store's and
// with serve's).
func newRunCmdWith(onBatch batchSeen) *cobra.Command {
	o := runOptions{onBatch: onBatch}
	cmd := &cobra.Command{
		Use:   "run --graph DIR --train FILE --fanouts 15,10,5 --batch-size B --epochs E",
		Short: "Run the whole loop: sample epochs in the background while minibatches are assembled",
		Long: `run drives the training loop without a trainer: it samples the first epoch,
then hands out its minibatches (assembling each one's blocks) and, once
--prepare-at of them are out, samples the next epoch in the background; it
prints per-epoch statistics (human, or JSON lines with --json). Its
minibatches are those serve hands out for the same flags, in the same order.
With --state it also persists each epoch there, as prepare does.`,
		Example: `  streamsampler run --graph out/email --train train.txt --fanouts 15,10,5 --batch-size 64 --epochs 2
  streamsampler run --graph g --train train.npy --fanouts 10,5 --devices 2 --prepare-at 0.5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLoop(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	o.stream.add(cmd)
	f := cmd.Flags()
	f.IntVar(&o.epochs, "epochs", 2, "epochs to run")
	f.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "goroutines assembling minibatches (handed out in order whatever the number)")
	f.StringVar(&o.state, "state", "", "also persist each epoch in this state directory")
	f.StringVar(&o.compress, "compress", "", `with --state: compress the epoch's arrays ("" or zstd)`)
	f.BoolVar(&o.json, "json", false, "print JSON lines")
	o.backend.add(cmd)
	return cmd
}

// epochRecord accumulates one epoch's statistics in run.
type epochRecord struct {
	Epoch      uint32         `json:"epoch"`
	Batches    int            `json:"batches"`
	Seeds      int            `json:"seeds"`
	Edges      int64          `json:"edges"`
	AssembleS  float64        `json:"assemble_s"` // time inside Next (assembly plus any wait for the epoch)
	MsPerBatch float64        `json:"ms_per_batch"`
	EdgesPerS  float64        `json:"edges_per_s"`
	SampleS    float64        `json:"sample_s"` // wall time of sampling this epoch
	BytesRead  int64          `json:"bytes_read"`
	ReadGBps   float64        `json:"read_gbps"`
	Overlapped bool           `json:"overlapped"` // sampled in the background during the previous epoch
	Stats      *host.Stats    `json:"stats,omitempty"`
	Features   *featureRecord `json:"features,omitempty"`
	wallStart  time.Time
}

func runLoop(ctx context.Context, w io.Writer, o runOptions) (err error) {
	if o.epochs < 1 {
		return usagef("--epochs %d: want at least 1", o.epochs)
	}
	if o.workers < 1 {
		return usagef("--workers %d: want at least 1", o.workers)
	}
	sampling, err := o.stream.sampling()
	if err != nil {
		return err
	}
	m, err := chunkfmt.ReadManifest(o.stream.graph)
	if err != nil {
		return err
	}
	cfg, err := o.stream.config(sampling, m, o.epochs)
	if err != nil {
		return err
	}
	fs, planning, err := o.stream.features.planning(o.stream.graph)
	if err != nil {
		return err
	}
	if fs != nil {
		defer fs.Close()
		cfg.Features = planning
	}
	var tx *statedir.Txn
	if o.state != "" {
		// run gives every field: it must agree with what the directory
		// records, as a prepare would, and never adopts an orphan epoch.
		st := statedir.State{Dir: o.state}
		c, err := st.Open()
		if err != nil {
			return err
		}
		if err := c.RefuseOrphans(st.Dir); err != nil {
			return err
		}
		given := statedir.Config{Graph: o.stream.graph, Train: o.stream.train, Fanouts: cfg.Fanouts, Seed: cfg.Seed,
			Replace: cfg.Replace, Rank: cfg.Rank, WorldSize: cfg.World, Compress: o.compress, EdgeIDs: o.backend.EdgeIDs}
		stCfg, fresh, _, err := stateConfigFor(st, c, given, func(string) bool { return true })
		if err != nil {
			return err
		}
		if err := bindTrainSet(&stCfg, fresh, cfg.Train); err != nil {
			return err
		}
		// Held for the whole run: its epochs are committed as it goes.
		if tx, err = statedir.Begin(st, c, stCfg, fresh, nil); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, tx.Close()) }()
	}
	be, err := openBackend(o.stream.graph, o.backend)
	if err != nil {
		return err
	}
	defer be.Close()

	var mu sync.Mutex
	sampled := map[uint32]*epochRecord{}
	sampleFn := func(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
		t0 := time.Now()
		res, err := be.SampleEpoch(ctx, seeds, fanouts, key)
		if err != nil {
			return nil, err
		}
		r := &epochRecord{Epoch: key.Epoch, SampleS: time.Since(t0).Seconds(), Stats: backendStats(be)}
		if r.Stats != nil {
			r.BytesRead = r.Stats.BytesRead()
			r.ReadGBps = float64(r.BytesRead) / r.SampleS / 1e9
		}
		mu.Lock()
		sampled[key.Epoch] = r
		mu.Unlock()
		return res, nil
	}
	opts := []pipeline.StoreOption{pipeline.WithNumNodes(m.NumNodes)}
	if tx != nil {
		opts = append(opts, pipeline.WithTxn(tx))
	}
	pipe, err := pipeline.NewPipeline(cfg, sampleFn, pipeline.NewStore(opts...))
	if err != nil {
		return usageError{err}
	}
	defer pipe.Close()
	if err := pipe.Start(ctx); err != nil {
		return err
	}

	var cur *epochRecord
	var fr *featureReader
	if fs != nil {
		if fr, err = newFeatureReader(fs); err != nil {
			return err
		}
		defer fr.close()
	}
	flush := func() {
		if cur == nil {
			return
		}
		mu.Lock()
		if s := sampled[cur.Epoch]; s != nil {
			cur.SampleS, cur.BytesRead, cur.ReadGBps, cur.Stats = s.SampleS, s.BytesRead, s.ReadGBps, s.Stats
			cur.Overlapped = cur.Epoch > 0
		}
		mu.Unlock()
		if cur.Batches > 0 {
			cur.MsPerBatch = cur.AssembleS * 1e3 / float64(cur.Batches)
		}
		if cur.AssembleS > 0 {
			cur.EdgesPerS = float64(cur.Edges) / cur.AssembleS
		}
		printRunEpoch(w, o.json, cur)
	}
	start := time.Now()
	// The time between minibatches, as a consumer sees it: assembly (on
	// every core) plus any wait for the epoch's preparation.
	t0 := time.Now()
	err = pipe.RunOrdered(ctx, o.workers, func(b *pipeline.Minibatch) error {
		el := time.Since(t0).Seconds()
		if cur == nil || b.Epoch != cur.Epoch {
			if fr != nil && cur != nil {
				cur.Features = fr.end()
			}
			flush()
			cur = &epochRecord{Epoch: b.Epoch, wallStart: time.Now()}
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
		if o.onBatch != nil {
			o.onBatch(b, x, y)
		}
		cur.Batches++
		cur.Seeds += len(b.Blocks.Seeds)
		cur.Edges += int64(b.Blocks.NumEdges())
		cur.AssembleS += el
		t0 = time.Now()
		return nil
	})
	if err != nil {
		return err
	}
	if fr != nil && cur != nil {
		cur.Features = fr.end()
	}
	flush()
	if !o.json {
		fmt.Fprintf(w, "%d epochs in %v\n", o.epochs, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

func printRunEpoch(w io.Writer, asJSON bool, r *epochRecord) {
	if asJSON {
		writeJSONLine(w, r)
		return
	}
	how := "before its first minibatch"
	if r.Overlapped {
		how = "in the background during the previous epoch"
	}
	fmt.Fprintf(w, "epoch %d: %d minibatches (%d seeds, %d edges), %.3f ms/batch, %.3g edges/s assembled; sampled in %.3f s %s, %d bytes read at %.2f GB/s\n",
		r.Epoch, r.Batches, r.Seeds, r.Edges, r.MsPerBatch, r.EdgesPerS, r.SampleS, how, r.BytesRead, r.ReadGBps)
	if f := r.Features; f != nil {
		rd := f.Reads
		shared := ""
		if f.Reorder != nil {
			shared = fmt.Sprintf("; match-reorder: consecutive minibatches share %.1f%% of nodes (was %.1f%%; any order, estimated: at most %.1f%%)", 100*f.Reorder.SharedAfter, 100*f.Reorder.SharedBefore, 100*f.Reorder.SharedBound)
		}
		preload := ""
		if rd.PreloadRows > 0 {
			preload = fmt.Sprintf(" (all %d distinct rows preloaded in one sweep)", rd.PreloadRows)
		}
		fmt.Fprintf(w, "  features: %d rows needed, %d from the cache (%.1f%%)%s, %d read on demand; %d reads of %d bytes in all (read amplification %.2f; %.3f× the optimum's %d; compulsory %d bytes), %.2f GB/s delivered, planned in %.3f s%s\n",
			rd.RowsNeeded, rd.RowsFromCache, 100*float64(rd.RowsFromCache)/max(1, float64(rd.RowsNeeded)), preload, rd.RowsFromDisk, rd.Reads, rd.BytesRead, rd.ReadAmplification, rd.VsOptimum, rd.OptimumBytes, rd.CompulsoryBytes, f.GBps, f.PlanS, shared)
	}
}
