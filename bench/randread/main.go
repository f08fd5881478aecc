// Command randread measures the random-read sampler (issue 25, item 3)
// on a graph directory: the latency of sampling a few seeds by random
// reads (p50 and p99 over --requests requests, the page cache dropped
// before each where permitted), for each I/O engine and block size; the
// same seeds sampled by streaming (a fresh epoch of those seeds through
// the streaming sampler, the emulated SmartSSD, whose chunk cache holds
// the whole graph, so that each chunk is read once per request); the
// minibatches of both compared for equality; and the random-read rate of
// the read path alone (random 4 KiB blocks, --depth in flight) against
// fio's at the same queue depth (--fio-iops, measured by
// bench/randread.sh). It prints a table and PASS/FAIL lines against the
// issue's targets: random reads ≥ 10× lower p50 latency than streaming,
// and ≥ 0.8 of fio's random-read IOPS.
//
//	go run ./bench/randread --graph /tmp/randread-s24/g --fio-iops 61000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/randread"
)

type config struct {
	IO        string  `json:"io"`
	Kernel    bool    `json:"kernel"` // the SmartSSD path on the emulated device (randread.Options.Kernel)
	BlockSize int     `json:"block_size"`
	Direct    bool    `json:"direct"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	Mean      float64 `json:"mean_ms"`
	Reads     float64 `json:"reads_per_request"`
	Blocks    float64 `json:"blocks_per_request"`
	Bytes     float64 `json:"bytes_per_request"`
	ReadShare float64 `json:"read_share"` // of the wall, in reads
	ReadIOPS  float64 `json:"reads_per_s_while_reading"`
}

type report struct {
	Graph        string       `json:"graph"`
	NumNodes     uint32       `json:"num_nodes"`
	NumEdges     uint64       `json:"num_edges"`
	Chunks       int          `json:"chunks"`
	Seeds        int          `json:"seeds"`
	Fanouts      []int        `json:"fanouts"`
	Requests     int          `json:"requests"`
	Dropped      bool         `json:"page_cache_dropped"`
	OffsetsS     float64      `json:"offsets_load_s"`
	Configs      []config     `json:"configs"`
	StreamP50ms  float64      `json:"stream_p50_ms"`
	StreamP99ms  float64      `json:"stream_p99_ms"`
	StreamN      int          `json:"stream_requests"`
	Equal        bool         `json:"stream_equal"`
	RawIOPS      []rawIOPS    `json:"raw_iops"`
	FioIOPS      float64      `json:"fio_iops"`
	SpeedupP50   float64      `json:"speedup_p50"`
	FioRatio     float64      `json:"fio_ratio"`
	PassSpeedup  bool         `json:"pass_speedup"`
	PassFio      bool         `json:"pass_fio"`
	MeasuredWhen string       `json:"measured_utc"`
	Crossover    []crossPoint `json:"crossover,omitempty"`
}

// crossPoint is one frontier density of the crossover: one layer sampled
// by streaming the chunks and by random reads, the same key.
type crossPoint struct {
	Density    float64 `json:"density"`
	Nodes      int     `json:"nodes"`
	StreamMs   float64 `json:"stream_ms"`
	StreamRead int64   `json:"stream_bytes_read"`
	RandMs     float64 `json:"randread_ms"`
	RandReads  int64   `json:"randread_reads"`
	RandBytes  int64   `json:"randread_bytes_read"`
	Equal      bool    `json:"equal"`
}

type rawIOPS struct {
	IO    string  `json:"io"`
	Depth int     `json:"depth"`
	Reads int64   `json:"reads"`
	IOPS  float64 `json:"iops"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "randread bench:", err)
		os.Exit(1)
	}
}

func run() error {
	graph := flag.String("graph", "", "graph directory (required)")
	requests := flag.Int("requests", 50, "measured requests per configuration")
	nseeds := flag.Int("seeds", 64, "seeds per request")
	fanoutsFlag := flag.String("fanouts", "15,10,5", "fanouts, hop 1 first")
	seed := flag.Uint64("seed", 1, "sampling seed (and of the seed draws)")
	engines := flag.String("io", "aio,pread", "I/O engines to measure (aio, pread; +kernel: the SmartSSD path on the emulated device, e.g. aio+kernel)")
	blockSizes := flag.String("block-sizes", "4096,512", "block sizes to measure")
	depth := flag.Int("depth", randread.DefaultDepth, "reads in flight")
	streamN := flag.Int("stream-requests", 5, "requests sampled by streaming (each streams the graph)")
	iopsReads := flag.Int("iops-reads", 200000, "random 4 KiB reads of the read-rate measurement")
	fioIOPS := flag.Float64("fio-iops", 0, "fio's random 4 KiB read IOPS at the same depth on the same file (0: not judged)")
	drop := flag.Bool("drop", true, "drop the page cache before each measured request (root only)")
	jsonOut := flag.String("json", "", "also write the report as JSON here")
	latency := flag.Bool("latency", true, "measure the latency of requests (the issue's targets)")
	crossover := flag.String("crossover", "", "frontier densities (fractions of the nodes, e.g. 1e-5,1e-4,1e-3,1e-2,0.1,1) at which one layer is sampled by streaming and by random reads (issue 25, item 4's crossover); empty: none")
	crossFanout := flag.Int("crossover-fanout", 10, "the crossover layer's fanout")
	flag.Parse()
	if *graph == "" {
		return fmt.Errorf("--graph is required")
	}
	var fanouts []int
	for _, f := range strings.Split(*fanoutsFlag, ",") {
		k, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("--fanouts %q: %w", *fanoutsFlag, err)
		}
		fanouts = append(fanouts, k)
	}
	ctx := context.Background()
	m, err := chunkfmt.ReadManifest(*graph)
	if err != nil {
		return err
	}
	rep := &report{Graph: *graph, NumNodes: m.NumNodes, NumEdges: m.NumEdges, Chunks: len(m.Chunks), Seeds: *nseeds, Fanouts: fanouts,
		Requests: *requests, FioIOPS: *fioIOPS, MeasuredWhen: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	dropCache := func() {}
	if *drop {
		rep.Dropped = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0) == nil
		if rep.Dropped {
			dropCache = func() { _ = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0) }
		}
	}

	// The seeds of request i: distinct nodes with at least one neighbor
	// (an isolated seed reads nothing), the same for every configuration.
	t0 := time.Now()
	probe, err := randread.Open(ctx, *graph, randread.Options{})
	if err != nil {
		return err
	}
	rep.OffsetsS = time.Since(t0).Seconds()
	seedsOf := func(i int) []uint32 {
		r := rand.New(rand.NewPCG(*seed, uint64(i)))
		var out []uint32
		seen := map[uint32]bool{}
		for len(out) < *nseeds {
			v := uint32(r.Uint64N(uint64(m.NumNodes)))
			if !seen[v] && probe.Degree(v) > 0 {
				seen[v] = true
				out = append(out, v)
			}
		}
		return out
	}
	key := func(i int) epoch.Key { return epoch.Key{Seed: *seed, Epoch: uint32(i)} }
	defer probe.Close()

	if *latency {
		if err := measureLatency(ctx, rep, *graph, m, fanouts, seedsOf, key, dropCache, *engines, *blockSizes, *depth, *requests, *iopsReads, *streamN, *seed, *fioIOPS); err != nil {
			return err
		}
	}
	if *crossover != "" {
		if err := measureCrossover(ctx, rep, *graph, *crossover, *crossFanout, *seed, dropCache); err != nil {
			return err
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// percentile is the nearest-rank percentile p of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// measureLatency measures the requests' latency for each I/O engine and
// block size, the read path alone, and the same seeds by streaming.
func measureLatency(ctx context.Context, rep *report, graph string, m *chunkfmt.Manifest, fanouts []int, seedsOf func(int) []uint32,
	key func(int) epoch.Key, dropCache func(), engines, blockSizes string, depth, requests, iopsReads, streamN int, seed uint64, fioIOPS float64) error {
	var best *randread.Sampler
	var bestP50 float64
	for _, e := range strings.Split(engines, ",") {
		e, kernel := strings.CutSuffix(e, "+kernel")
		mode, err := randread.ParseIO(e)
		if err != nil {
			return err
		}
		for _, bsText := range strings.Split(blockSizes, ",") {
			bs, err := strconv.Atoi(bsText)
			if err != nil {
				return fmt.Errorf("--block-sizes: %w", err)
			}
			s, err := randread.Open(ctx, graph, randread.Options{BlockSize: bs, Depth: depth, IO: mode, Kernel: kernel})
			if err != nil {
				return err
			}
			c := config{IO: mode.String(), Kernel: kernel, BlockSize: bs, Direct: s.Direct()}
			// One request first, unmeasured: the first AIO context, the
			// first allocations.
			if _, _, err := s.Blocks(ctx, randread.Request{Seeds: seedsOf(-1), Fanouts: fanouts, Key: key(0)}, epoch.DGL); err != nil {
				return err
			}
			var lat []float64
			var wall, readT time.Duration
			var reads, blocks, bytes int64
			for i := range requests {
				seeds := seedsOf(i)
				dropCache()
				t := time.Now()
				_, st, err := s.Blocks(ctx, randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key(i)}, epoch.DGL)
				d := time.Since(t)
				if err != nil {
					return err
				}
				lat = append(lat, d.Seconds()*1e3)
				wall += d
				readT += st.ReadTime
				reads += st.Reads()
				blocks += st.Blocks()
				bytes += st.BytesRead()
			}
			n := float64(requests)
			c.P50ms, c.P99ms = percentile(lat, 50), percentile(lat, 99)
			c.Mean = wall.Seconds() * 1e3 / n
			c.Reads, c.Blocks, c.Bytes = float64(reads)/n, float64(blocks)/n, float64(bytes)/n
			c.ReadShare = readT.Seconds() / wall.Seconds()
			c.ReadIOPS = float64(reads) / readT.Seconds()
			rep.Configs = append(rep.Configs, c)
			name := c.IO
			if kernel {
				name += "+kernel"
			}
			fmt.Printf("random reads  io=%-5s block=%5d direct=%v: p50 %8.2f ms  p99 %8.2f ms  mean %8.2f ms; %7.0f reads (%7.0f blocks, %5.1f MiB) per request, %4.0f%% of the time in reads at %6.0f reads/s\n",
				name, c.BlockSize, c.Direct, c.P50ms, c.P99ms, c.Mean, c.Reads, c.Blocks, c.Bytes/(1<<20), 100*c.ReadShare, c.ReadIOPS)
			if best == nil || c.P50ms < bestP50 {
				if best != nil {
					best.Close()
				}
				best, bestP50 = s, c.P50ms
			} else {
				s.Close()
			}
		}
	}
	defer best.Close()

	// The read path alone: random 4 KiB blocks, Depth in flight.
	for _, e := range strings.Split(engines, ",") {
		if strings.HasSuffix(e, "+kernel") {
			continue // the same reads
		}
		mode, _ := randread.ParseIO(e)
		s, err := randread.Open(ctx, graph, randread.Options{BlockSize: 4096, Depth: depth, IO: mode, MaxRun: 4096})
		if err != nil {
			return err
		}
		r := rand.New(rand.NewPCG(seed, 99))
		blocks := make([]int64, iopsReads)
		for i := range blocks {
			blocks[i] = r.Int64N(s.NumBlocks())
		}
		dropCache()
		ls, err := s.ReadBlocks(ctx, blocks)
		s.Close()
		if err != nil {
			return err
		}
		ri := rawIOPS{IO: mode.String(), Depth: depth, Reads: ls.Reads, IOPS: float64(ls.Reads) / ls.ReadTime.Seconds()}
		rep.RawIOPS = append(rep.RawIOPS, ri)
		fmt.Printf("read path alone io=%-5s depth %d: %d random 4 KiB reads in %.2f s: %.0f reads/s\n", ri.IO, ri.Depth, ri.Reads, ls.ReadTime.Seconds(), ri.IOPS)
	}

	// The same seeds by streaming: a fresh epoch of them, each request
	// from a fresh sampler whose chunk cache holds the whole graph (each
	// chunk read once per request, from the disk).
	var slat []float64
	rep.Equal = true
	for i := range streamN {
		hs, err := host.Open(graph, host.Options{ChunkCache: host.GraphReadBytes(m)})
		if err != nil {
			return err
		}
		seeds := seedsOf(i)
		dropCache()
		t := time.Now()
		res, err := hs.SampleEpoch(ctx, seeds, fanouts, key(i))
		var b *epoch.Blocks
		if err == nil {
			b, err = res.Assemble(seeds, epoch.DGL)
		}
		d := time.Since(t)
		hs.Close()
		if err != nil {
			return err
		}
		slat = append(slat, d.Seconds()*1e3)
		rb, _, err := best.Blocks(ctx, randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key(i)}, epoch.DGL)
		if err != nil {
			return err
		}
		if err := epochtest.EqualBlocks(rb, b); err != nil {
			rep.Equal = false
			fmt.Printf("request %d: the random-read minibatch differs from the streamed one: %v\n", i, err)
		}
		fmt.Printf("streaming     request %d: %.1f ms\n", i, d.Seconds()*1e3)
	}
	rep.StreamN = len(slat)
	rep.StreamP50ms, rep.StreamP99ms = percentile(slat, 50), percentile(slat, 99)
	fmt.Printf("streaming: p50 %.1f ms p99 %.1f ms over %d requests; minibatches equal to the random-read ones: %v\n", rep.StreamP50ms, rep.StreamP99ms, rep.StreamN, rep.Equal)

	if rep.StreamN == 0 {
		fmt.Println("SKIP streaming comparison: --stream-requests 0")
	} else {
		rep.SpeedupP50 = rep.StreamP50ms / bestP50
		rep.PassSpeedup = rep.SpeedupP50 >= 10 && rep.Equal
		fmt.Printf("%s random-read p50 %.2f ms is %.1f× lower than streaming's %.1f ms (target ≥ 10×; samples equal: %v)\n",
			passFail(rep.PassSpeedup), bestP50, rep.SpeedupP50, rep.StreamP50ms, rep.Equal)
	}
	if fioIOPS > 0 {
		var bestIOPS float64
		for _, r := range rep.RawIOPS {
			bestIOPS = max(bestIOPS, r.IOPS)
		}
		rep.FioRatio = bestIOPS / fioIOPS
		rep.PassFio = rep.FioRatio >= 0.8
		fmt.Printf("%s random reads in flight: %.0f reads/s, %.2f of fio's %.0f IOPS (4 KiB, depth %d; target ≥ 0.8)\n",
			passFail(rep.PassFio), bestIOPS, rep.FioRatio, fioIOPS, depth)
	} else {
		fmt.Println("SKIP fio comparison: no --fio-iops")
	}
	return nil
}

// measureCrossover samples one layer of random frontiers of each density
// by streaming (the chunks holding frontier nodes, each read once: no
// chunk cache beyond streaming's two buffers) and by random reads, the
// page cache dropped before each, and checks that both give the same
// samples.
func measureCrossover(ctx context.Context, rep *report, graph, densities string, fanout int, seed uint64, dropCache func()) error {
	rs, err := randread.Open(ctx, graph, randread.Options{})
	if err != nil {
		return err
	}
	defer rs.Close()
	n := rs.NumNodes()
	fmt.Printf("crossover: one layer, fanout %d, random frontiers; streaming (emulated SmartSSD, no chunk cache) against random reads (aio, 4 KiB blocks)\n", fanout)
	fmt.Printf("%10s %10s %12s %12s %12s %10s %12s %8s\n", "density", "nodes", "stream ms", "stream MB", "randread ms", "reads", "randread MB", "equal")
	crossed := -1.0
	for i, text := range strings.Split(densities, ",") {
		d, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || d <= 0 || d > 1 {
			return fmt.Errorf("--crossover %q: density %q, want a number in (0, 1]", densities, text)
		}
		r := rand.New(rand.NewPCG(seed, 1000+uint64(i)))
		var frontier []uint32
		for v := range n {
			if r.Float64() < d {
				frontier = append(frontier, v)
			}
		}
		if len(frontier) == 0 {
			frontier = append(frontier, uint32(r.Uint64N(uint64(n))))
		}
		key := epoch.Key{Seed: seed, Epoch: 1000 + uint32(i)}
		fan := []int{fanout}
		hs, err := host.Open(graph, host.Options{})
		if err != nil {
			return err
		}
		dropCache()
		t := time.Now()
		sres, err := hs.SampleEpoch(ctx, frontier, fan, key)
		ts := time.Since(t)
		var sbytes int64
		if st := hs.LastStats(); st != nil {
			sbytes = st.BytesRead()
		}
		hs.Close()
		if err != nil {
			return err
		}
		dropCache()
		t = time.Now()
		rres, st, err := rs.Sample(ctx, randread.Request{Seeds: frontier, Fanouts: fan, Key: key})
		tr := time.Since(t)
		if err != nil {
			return err
		}
		p := crossPoint{Density: d, Nodes: len(frontier), StreamMs: ts.Seconds() * 1e3, StreamRead: sbytes, RandMs: tr.Seconds() * 1e3,
			RandReads: st.Reads(), RandBytes: st.BytesRead(), Equal: epochtest.EqualResult(rres, sres)}
		rep.Crossover = append(rep.Crossover, p)
		fmt.Printf("%10.0e %10d %12.1f %12.1f %12.1f %10d %12.1f %8v\n", d, p.Nodes, p.StreamMs, float64(p.StreamRead)/1e6, p.RandMs, p.RandReads, float64(p.RandBytes)/1e6, p.Equal)
		if crossed < 0 && p.RandMs > p.StreamMs {
			crossed = d
		}
	}
	if crossed > 0 {
		fmt.Printf("crossover: random reads are slower than streaming from density %.0e on\n", crossed)
	} else {
		fmt.Println("crossover: random reads were faster at every density measured")
	}
	return nil
}
