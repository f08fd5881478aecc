package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/serve"
)

// serveFlags are streamsampler serve's flags.
type serveFlags struct {
	stream     streamFlags
	socket     string
	tcp        string
	maxRequest int
	maxInfl    string
	socketMode string
	tokenFile  string
	quiet      bool
	backend    backendFlags
	link       linkFlags
	hetero     heteroServeFlags

	// The bounds on what one client may make the server hold or do
	// (docs/PROTOCOL.md): serve.Config's StallTimeout, WalkTimeout and
	// MaxWalkLength, 0 meaning none for the timeouts.
	stallTimeout time.Duration
	walkTimeout  time.Duration
	maxWalkLen   int
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --graph DIR --train FILE --fanouts 15,10,5 --batch-size N --socket PATH",
		Short: "Serve minibatches to trainers over a Unix socket (or loopback TCP), preparing the next epoch in the background",
		Long: `serve owns a training run's epochs: it samples the first epoch, then answers
next_batch, sample, epoch_info and advance requests (docs/PROTOCOL.md) from
any number of clients, which share one cursor over the epoch's minibatches:
those run hands out for the same flags, in the same order. The next epoch
is prepared in the background once --prepare-at of the current one is
handed out. With --rank/--world-size (default: the RANK and WORLD_SIZE
variables torchrun sets) it serves one data-parallel rank's shard; every
rank serves the same number of minibatches. SIGINT or SIGTERM stops it
gracefully: no new connections, in-flight replies finish, the socket file
is removed.

The socket file is created with --socket-mode (0600: only this user may
connect; 0660 admits the file's group). --tcp listens on loopback only and
needs a token, read from --token-file or $STREAMSAMPLER_TOKEN (surrounding
whitespace removed); once a token is set, every connection, on the socket
too, must present it first (the Python Client sends $STREAMSAMPLER_TOKEN).
All requests and replies in flight share --max-inflight bytes (half of it
at most per connection); a client whose next request does not fit waits.
Shared-rows buffers and splits count against it too (a quarter each at
most); control requests (epoch_info, advance) have 1 MiB of their own.
While a request waits for the budget, a connection whose reply has not
been read for --stall-timeout is closed, giving its bytes back. A walks
request asks for at most --max-walk-length steps, runs for at most
--walk-timeout, takes turns on the sampler with other connections' walks
(epoch sampling goes first), and stops when its client disconnects.`,
		Example: `  streamsampler serve --graph out/email --train train.txt --fanouts 15,10,5 --batch-size 64 --socket /tmp/ss.sock
  STREAMSAMPLER_TOKEN=$(cat ~/.ss-token) streamsampler serve --graph g --train train.npy --fanouts 10,5 --rank 1 --world-size 2 --tcp 127.0.0.1:7071 -q`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, &f) },
	}
	f.stream.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.socket, "socket", "", "Unix socket path to listen on")
	fl.StringVar(&f.socketMode, "socket-mode", "0600", "permissions of the socket file, octal (0660: its group may connect too)")
	fl.StringVar(&f.tcp, "tcp", "", "also listen on this loopback TCP address, e.g. 127.0.0.1:7070 (needs a token)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the token clients must present (default: $"+tokenEnv+"); required with --tcp")
	fl.IntVar(&f.maxRequest, "max-request", serve.DefaultMaxRequest, "largest request frame accepted, in bytes")
	fl.StringVar(&f.maxInfl, "max-inflight", "", "budget for all requests and replies in flight, e.g. 512MiB (default: 256MiB, 4 × --max-request, or room for splits of every node of the graph, whichever is largest, the last at most the memory the server may use)")
	fl.DurationVar(&f.stallTimeout, "stall-timeout", serve.DefaultStallTimeout, "close a connection whose reply goes unread this long while other requests wait for the in-flight budget (0: never)")
	fl.DurationVar(&f.walkTimeout, "walk-timeout", serve.DefaultWalkTimeout, "stop a walks request that runs longer, answering it timed out (0: no bound)")
	fl.IntVar(&f.maxWalkLen, "max-walk-length", serve.DefaultMaxWalkLength, "longest walk (steps) a walks request may ask for")
	addQuietFlag(fl, &f.quiet, "log lines")
	f.backend.add(cmd)
	f.link.add(cmd)
	f.hetero.add(cmd)
	// --train or, for link prediction, --train-edges / --train-eids:
	// runServe checks that one is given.
	_ = fl.SetAnnotation("train", cobra.BashCompOneRequiredFlag, []string{"false"})
	return cmd
}

// noneIfZero maps a timeout flag's 0 ("none") to serve.Config's
// negative "none" (its 0 is the default).
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// sampleBytes is serve.Config.SampleBytes for be: the bytes its last
// epoch read, where it keeps statistics (host.StatsReporter; nil where it
// does not: the GPU engine).
func sampleBytes(be host.Backend) func() int64 {
	r, ok := be.(host.StatsReporter)
	if !ok {
		return nil
	}
	return func() int64 {
		if st := r.LastStats(); st != nil {
			return st.BytesRead()
		}
		return 0
	}
}

// tokenEnv holds the token when --token-file is not given.
const tokenEnv = "STREAMSAMPLER_TOKEN"

// serveToken reads the token: --token-file's content, else $tokenEnv's,
// with surrounding whitespace removed; nil when neither is set (an empty
// variable counts as unset).
func serveToken(file string) ([]byte, error) {
	var raw []byte
	from := "$" + tokenEnv
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		raw, from = b, "--token-file "+file
	} else if v := os.Getenv(tokenEnv); v != "" {
		raw = []byte(v)
	} else {
		return nil, nil
	}
	tok := bytes.TrimSpace(raw)
	switch {
	case len(tok) == 0:
		return nil, usagef("%s: the token is empty", from)
	case len(tok) > serve.MaxToken:
		return nil, usagef("%s: the token is %d bytes, at most %d", from, len(tok), serve.MaxToken)
	}
	return tok, nil
}

// parseSocketMode parses --socket-mode: octal permission bits that let
// the owner read and write.
func parseSocketMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, usagef("--socket-mode %q: want octal permissions such as 0600 or 0660", s)
	}
	if m&0o600 != 0o600 {
		return 0, usagef("--socket-mode %s: the owner needs read and write (0600) to connect", s)
	}
	return os.FileMode(m), nil
}

func runServe(cmd *cobra.Command, f *serveFlags) error {
	if f.socket == "" && f.tcp == "" {
		return usagef("--socket or --tcp is required")
	}
	if f.maxRequest < 1 {
		return usagef("--max-request %d: want a positive number of bytes", f.maxRequest)
	}
	var maxInflight int64
	if f.maxInfl != "" {
		n, err := ingest.ParseSize(f.maxInfl)
		if err != nil || n < 1 {
			return usagef("--max-inflight %q: want a positive size such as 512MiB", f.maxInfl)
		}
		maxInflight = n
	}
	switch {
	case f.stallTimeout < 0:
		return usagef("--stall-timeout %v: want a duration >= 0", f.stallTimeout)
	case f.walkTimeout < 0:
		return usagef("--walk-timeout %v: want a duration >= 0", f.walkTimeout)
	case f.maxWalkLen < 1:
		return usagef("--max-walk-length %d: want at least 1 step", f.maxWalkLen)
	}
	sockMode, err := parseSocketMode(f.socketMode)
	if err != nil {
		return err
	}
	token, err := serveToken(f.tokenFile)
	if err != nil {
		return err
	}
	sampling, err := f.stream.sampling()
	if err != nil {
		return err
	}
	if err := f.link.check(); err != nil {
		return err
	}
	if isHetero(f.stream.graph) {
		return runServeHetero(cmd, f, token, sockMode, sampling)
	}
	switch {
	case f.link.on() && f.stream.train != "":
		return usagef("--train and --train-edges/--train-eids: give training nodes or training edges, not both")
	case !f.link.on() && f.stream.train == "":
		return usagef("required flag \"train\" not set (or --train-edges for link prediction)")
	}
	m, err := chunkfmt.ReadManifest(f.stream.graph)
	if err != nil {
		return err
	}
	var cfg pipeline.Config
	if f.link.on() {
		link, err := f.link.link(cmd.Context(), f.stream.graph, m)
		if err != nil {
			return err
		}
		if link.Exclude != epoch.ExcludeNone {
			f.backend.EdgeIDs = true // exclusion is by edge id
		}
		cfg, err = f.stream.linkConfig(sampling, link, 0)
		if err != nil {
			return err
		}
	} else if cfg, err = f.stream.config(sampling, m, 0); err != nil {
		return err
	}
	chunkCache, chunkReport, err := f.backend.resolveChunkCache(m, f.stream.features.on)
	if err != nil {
		return err
	}
	if chunkReport != "" && !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "streamsampler serve: %s\n", chunkReport)
	}
	fs, planning, cacheReport, err := f.stream.features.planning(f.stream.graph, chunkCache)
	if err != nil {
		return err
	}
	if fs != nil {
		defer fs.Close()
		cfg.Features = planning
		if !f.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "streamsampler serve: %s\n", cacheReport)
		}
	}
	if f.tcp != "" && token == nil {
		return usagef("--tcp needs a token that clients present: --token-file FILE or $%s (any local user could connect otherwise)", tokenEnv)
	}
	if !f.quiet {
		cfg.Logf = func(format string, a ...any) {
			fmt.Fprintf(cmd.ErrOrStderr(), "streamsampler serve: "+format+"\n", a...)
		}
	}
	be, err := openBackend(f.stream.graph, f.backend)
	if err != nil {
		return err
	}
	defer be.Close()
	fresh := &lazyFresh{graph: f.stream.graph}
	defer fresh.Close()
	srv, err := serve.New(serve.Config{
		Config: cfg, Sampler: be, SampleBytes: sampleBytes(be), GraphBytes: host.GraphReadBytes(m), MaxRequest: f.maxRequest, MaxInflight: maxInflight,
		NumNodes: int64(m.NumNodes), MaxDegree: int64(m.MaxDegree), NumEdges: int64(m.NumEdges), EdgeIDs: f.backend.EdgeIDs, Token: token, Features: fs, Walk: backendWalker(be), Fresh: fresh, Graph: f.stream.graph,
		StallTimeout: noneIfZero(f.stallTimeout), WalkTimeout: noneIfZero(f.walkTimeout), MaxWalkLength: f.maxWalkLen,
	})
	if err != nil {
		return usageError{err}
	}
	// SIGTERM as well as the root's SIGINT: torchrun and service managers
	// stop children with SIGTERM.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = serve.Run(ctx, srv, serve.Addresses{Socket: f.socket, SocketMode: sockMode, TCP: f.tcp}, func(addrs []net.Addr, info serve.EpochInfo) {
		where := ""
		for _, a := range addrs {
			where += " " + a.Network() + ":" + a.String()
		}
		fmt.Fprintf(cmd.OutOrStdout(), "ready%s epoch=%d num_batches=%d rank=%d world_size=%d\n",
			where, info.Epoch, info.NumBatches, info.Rank, info.WorldSize)
	})
	if errors.Is(err, serve.ErrNotLoopback) {
		return usageError{err}
	}
	return err
}
