package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/serve"
)

// serveFlags are streamsampler serve's flags.
type serveFlags struct {
	Graph      string
	Train      string
	Fanouts    string
	BatchSize  int
	Seed       uint64
	Replace    bool
	Socket     string
	TCP        string
	PrepareAt  float64
	Rank       int
	World      int
	FirstEpoch uint32
	MaxRequest int
	Quiet      bool
	backend    backendFlags
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --graph DIR --train FILE --fanouts 15,10,5 --batch-size N --socket PATH",
		Short: "Serve minibatches to trainers over a Unix socket (or loopback TCP), preparing the next epoch in the background",
		Long: `serve owns a training run's epochs: it samples the first epoch, then answers
next_batch, sample, epoch_info and advance requests (docs/PROTOCOL.md) from
any number of clients, which share one cursor over the epoch's minibatches.
The next epoch is prepared in the background once --prepare-at of the
current one is handed out. With --rank/--world-size (default: the RANK and
WORLD_SIZE variables torchrun sets) it serves one data-parallel rank's shard;
every rank serves the same number of minibatches. SIGINT or SIGTERM stops it
gracefully: no new connections, in-flight replies finish, the socket file
is removed.`,
		Example: `  streamsampler serve --graph out/email --train train.txt --fanouts 15,10,5 --batch-size 64 --socket /tmp/ss.sock
  streamsampler serve --graph g --train train.npy --fanouts 10,5 --rank 1 --world-size 2 --tcp 127.0.0.1:7071 -q`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Graph, "graph", "", "graph directory (made by chunkify)")
	fl.StringVar(&f.Train, "train", "", "training node ids (text, one per line, or .npy)")
	addFanoutsFlag(fl, &f.Fanouts)
	fl.IntVar(&f.BatchSize, "batch-size", 1024, "seeds per minibatch")
	addSeedFlag(fl, &f.Seed)
	fl.BoolVar(&f.Replace, "replace", false, "sample with replacement")
	fl.StringVar(&f.Socket, "socket", "", "Unix socket path to listen on")
	fl.StringVar(&f.TCP, "tcp", "", "also listen on this loopback TCP address, e.g. 127.0.0.1:7070")
	fl.Float64Var(&f.PrepareAt, "prepare-at", serve.DefaultPrepareAt, "fraction of an epoch's minibatches handed out when the next epoch's preparation starts")
	fl.IntVar(&f.Rank, "rank", -1, "data-parallel rank (default $RANK, else 0)")
	fl.IntVar(&f.World, "world-size", -1, "data-parallel world size (default $WORLD_SIZE, else 1)")
	fl.Uint32Var(&f.FirstEpoch, "epoch", 0, "first epoch to serve")
	fl.IntVar(&f.MaxRequest, "max-request", serve.DefaultMaxRequest, "largest request frame accepted, in bytes")
	addQuietFlag(fl, &f.Quiet, "log lines")
	f.backend.add(cmd)
	return cmd
}

// envInt reads a non-negative integer from the environment.
func envInt(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, usagef("$%s=%q is not a non-negative integer", name, v)
	}
	return n, nil
}

func runServe(cmd *cobra.Command, f *serveFlags) error {
	switch {
	case f.Graph == "":
		return usagef("--graph is required")
	case f.Train == "":
		return usagef("--train is required")
	case f.Socket == "" && f.TCP == "":
		return usagef("--socket or --tcp is required")
	case f.BatchSize < 1:
		return usagef("--batch-size %d: want >= 1", f.BatchSize)
	case math.IsNaN(f.PrepareAt) || f.PrepareAt < 0 || f.PrepareAt > 1:
		return usagef("--prepare-at %g: want a fraction in [0,1]", f.PrepareAt)
	}
	fanouts, err := parseFanouts(f.Fanouts)
	if err != nil {
		return err
	}
	rank, world := f.Rank, f.World
	if rank < 0 {
		if rank, err = envInt("RANK", 0); err != nil {
			return err
		}
	}
	if world < 0 {
		if world, err = envInt("WORLD_SIZE", 1); err != nil {
			return err
		}
	}
	if world < 1 || rank >= world {
		return usagef("rank %d of world size %d: want 0 <= rank < world size", rank, world)
	}
	m, err := chunkfmt.ReadManifest(f.Graph)
	if err != nil {
		return err
	}
	train, err := ingest.ReadNodeIDs(f.Train, m.NumNodes)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(cmd.ErrOrStderr(), "streamsampler serve: "+format+"\n", a...)
	}
	if f.Quiet {
		logf = nil
	}
	be, err := openBackend(f.Graph, f.backend)
	if err != nil {
		return err
	}
	defer be.Close()
	srv, err := serve.New(serve.Config{
		Sampler: be, Train: train, Fanouts: fanouts, BatchSize: f.BatchSize,
		Seed: f.Seed, Replace: f.Replace, Rank: rank, World: world,
		PrepareAt: f.PrepareAt, FirstEpoch: f.FirstEpoch, MaxRequest: f.MaxRequest, Logf: logf,
	})
	if err != nil {
		return usageError{err}
	}
	// SIGTERM as well as the root's SIGINT: torchrun and service managers
	// stop children with SIGTERM.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	// Listen before sampling the first epoch, so that a bad address fails
	// fast; clients' connections wait in the backlog meanwhile.
	if f.Socket != "" {
		ln, err := serve.ListenUnix(f.Socket)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	if f.TCP != "" {
		ln, err := serve.ListenTCP(f.TCP)
		if err != nil {
			closeAll()
			if errors.Is(err, serve.ErrNotLoopback) {
				return usageError{err}
			}
			return err
		}
		lns = append(lns, ln)
	}
	if err := srv.Start(ctx); err != nil {
		closeAll()
		return err
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ln) }()
	}
	info := srv.Info()
	addrs := ""
	for _, ln := range lns {
		addrs += " " + ln.Addr().Network() + ":" + ln.Addr().String()
	}
	fmt.Fprintf(cmd.OutOrStdout(), "ready%s epoch=%d num_batches=%d rank=%d world_size=%d\n",
		addrs, info.Epoch, info.NumBatches, rank, world)
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && serveErr == nil {
		serveErr = fmt.Errorf("shutdown: %w", err)
	}
	if errors.Is(serveErr, serve.ErrServerClosed) {
		serveErr = nil
	}
	if f.Socket != "" {
		// The listener removed its socket; a crash-left file would be
		// replaced by ListenUnix next time anyway.
		if fi, err := os.Lstat(f.Socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(f.Socket)
		}
	}
	return serveErr
}
