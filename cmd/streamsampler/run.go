package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/runloop"
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
	onBatch  func(b *pipeline.Minibatch, x []byte, y []int32) // tests: runloop.Options.OnBatch
}

func newRunCmd() *cobra.Command { return newRunCmdWith(nil) }

// newRunCmdWith is newRunCmd whose run shows onBatch every minibatch it
// hands out, with its features (runloop.Options.OnBatch: tests compare
// them with the store's and with serve's).
func newRunCmdWith(onBatch func(b *pipeline.Minibatch, x []byte, y []int32)) *cobra.Command {
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
			return runLoop(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
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

// runLoop checks the flags, turns them into runloop.Options and prints
// each epoch's report as it ends.
func runLoop(ctx context.Context, w, ew io.Writer, o runOptions) error {
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
	chunkCache, chunkReport, err := o.backend.resolveChunkCache(m, o.stream.features.on)
	if err != nil {
		return err
	}
	if chunkReport != "" && !o.json {
		fmt.Fprintln(ew, chunkReport)
	}
	fs, planning, cacheReport, err := o.stream.features.planning(o.stream.graph, chunkCache)
	if err != nil {
		return err
	}
	if fs != nil {
		defer fs.Close()
		cfg.Features = planning
		if !o.json {
			fmt.Fprintln(ew, cacheReport)
		}
	}
	ro := runloop.Options{
		Config: cfg, NumNodes: m.NumNodes, Workers: o.workers, Features: fs,
		Open:    func() (host.Backend, error) { return openBackend(o.stream.graph, o.backend) },
		OnEpoch: func(r *runloop.EpochReport) { printRunEpoch(w, o.json, r) },
		OnBatch: o.onBatch,
	}
	if o.state != "" {
		if err := checkCompress(o.compress); err != nil {
			return err
		}
		ro.State = &runloop.State{Dir: o.state, Graph: o.stream.graph, Train: o.stream.train, Compress: o.compress, EdgeIDs: o.backend.EdgeIDs}
	}
	rep, err := runloop.Run(ctx, ro)
	if err != nil {
		return stateFlagError(statedir.State{Dir: o.state}, err)
	}
	if !o.json {
		fmt.Fprintf(w, "%d epochs in %v\n", o.epochs, rep.Wall.Round(time.Millisecond))
	}
	return nil
}

// printRunEpoch prints an epoch's report: a JSON line, or for a human
// its lines (epochstats.Report.Lines: the epoch's, then its features').
func printRunEpoch(w io.Writer, asJSON bool, r *runloop.EpochReport) {
	if asJSON {
		writeJSONLine(w, r)
		return
	}
	for _, l := range r.Lines() {
		fmt.Fprintln(w, l)
	}
}
