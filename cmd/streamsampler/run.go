package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
)

type runOptions struct {
	graph, train, fanouts, state, compress string
	batchSize, epochs, rank, world         int
	seed                                   uint64
	prepareAt                              float64
	replace, json                          bool
	backend                                backendFlags
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --graph DIR --train FILE --fanouts 15,10,5 --batch-size B --epochs E",
		Short: "Run the whole loop: sample epochs in the background while minibatches are assembled",
		Long: `run drives the training loop without a trainer: it samples epoch 0, then hands
out its minibatches (assembling each one's blocks) and, once --prepare-at of
them are out, samples epoch e+1 in the background; it prints per-epoch
statistics (human, or JSON lines with --json).`,
		Example: `  streamsampler run --graph out/email --train train.txt --fanouts 15,10,5 --batch-size 64 --epochs 2
  streamsampler run --graph g --train train.npy --fanouts 10,5 --devices 2 --prepare-at 0.5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLoop(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.graph, "graph", "", "graph directory (from chunkify)")
	f.StringVar(&o.train, "train", "", "training node ids (text, OGB csv/csv.gz or .npy)")
	addFanoutsFlag(f, &o.fanouts)
	f.IntVar(&o.batchSize, "batch-size", 1024, "seeds per minibatch")
	f.IntVar(&o.epochs, "epochs", 2, "epochs to run")
	addSeedFlag(f, &o.seed)
	f.Float64Var(&o.prepareAt, "prepare-at", epoch.DefaultPrepareAt, "fraction of an epoch's minibatches after which the next epoch is prepared")
	f.BoolVar(&o.replace, "replace", false, "sample with replacement")
	f.IntVar(&o.rank, "rank", 0, "this rank (data-parallel training)")
	f.IntVar(&o.world, "world-size", 1, "number of ranks")
	f.StringVar(&o.state, "state", "", "also persist each epoch in this state directory")
	f.StringVar(&o.compress, "compress", "", `with --state: compress the epoch's arrays ("" or zstd)`)
	f.BoolVar(&o.json, "json", false, "print JSON lines")
	o.backend.add(cmd)
	cmd.MarkFlagRequired("graph")
	cmd.MarkFlagRequired("train")
	cmd.MarkFlagRequired("fanouts")
	return cmd
}

// epochRecord accumulates one epoch's statistics in run.
type epochRecord struct {
	Epoch      uint32      `json:"epoch"`
	Batches    int         `json:"batches"`
	Seeds      int         `json:"seeds"`
	Edges      int64       `json:"edges"`
	AssembleS  float64     `json:"assemble_s"` // time inside Next (assembly plus any wait for the epoch)
	MsPerBatch float64     `json:"ms_per_batch"`
	EdgesPerS  float64     `json:"edges_per_s"`
	SampleS    float64     `json:"sample_s"` // wall time of sampling this epoch
	BytesRead  int64       `json:"bytes_read"`
	ReadGBps   float64     `json:"read_gbps"`
	Overlapped bool        `json:"overlapped"` // sampled in the background during the previous epoch
	Stats      *host.Stats `json:"stats,omitempty"`
	wallStart  time.Time
}

func runLoop(ctx context.Context, w io.Writer, o runOptions) error {
	fan, err := parseFanouts(o.fanouts)
	if err != nil {
		return err
	}
	if o.epochs < 1 {
		return usagef("--epochs %d: want at least 1", o.epochs)
	}
	m, err := chunkfmt.ReadManifest(o.graph)
	if err != nil {
		return err
	}
	train, err := ingest.ReadNodeIDs(o.train, m.NumNodes)
	if err != nil {
		return fmt.Errorf("training nodes: %w", err)
	}
	be, err := openBackend(o.graph, o.backend)
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
	var opts []epoch.StoreOption
	opts = append(opts, epoch.WithNumNodes(m.NumNodes))
	if o.state != "" {
		st := epoch.State{Dir: o.state}
		if err := st.Init(); err != nil {
			return err
		}
		opts = append(opts, epoch.WithState(st, epoch.WriteOptions{Compress: o.compress, Overwrite: true}))
	}
	loop, err := epoch.NewLoop(epoch.LoopConfig{
		Train: train, BatchSize: o.batchSize, Fanouts: fan, Seed: o.seed, Replace: o.replace,
		Rank: o.rank, World: o.world, Epochs: o.epochs, PrepareAt: o.prepareAt, Sample: sampleFn,
	}, epoch.NewStore(opts...))
	if err != nil {
		return usageError{err}
	}
	defer loop.Close()

	var cur *epochRecord
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
	for {
		t0 := time.Now()
		b, err := loop.Next(ctx)
		el := time.Since(t0).Seconds()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if cur == nil || b.Epoch != cur.Epoch {
			flush()
			cur = &epochRecord{Epoch: b.Epoch, wallStart: time.Now()}
		}
		cur.Batches++
		cur.Seeds += len(b.Blocks.Seeds)
		cur.Edges += int64(b.Blocks.NumEdges())
		cur.AssembleS += el
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
}
