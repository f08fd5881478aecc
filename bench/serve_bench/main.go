// Command serve_bench measures minibatches per second delivered to a
// Python consumer over the serve socket against assembly inside Go, in
// the same run and from the same resident epoch.
//
// It builds (once, cached under --work) an R-MAT graph, samples epoch 0
// with the streaming sampler (emulated SmartSSD), then alternates:
//
//   - in-process: --procs goroutines assemble minibatches of the epoch
//     with the server's own assembly path (Server.Sample → pipeline.Store),
//     no socket; also reported for one goroutine;
//   - socket: bench/serve_bench.py pulls the same number of minibatches
//     with next_batch (pipelined, --depth in flight) and decodes them into
//     numpy arrays.
//
// and prints the medians and the ratio socket / in-process (target ≥ 0.70).
//
//	go run ./bench/serve_bench --scale 21 --edge-factor 30
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/hostbench"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/serve"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "serve_bench:", err)
		os.Exit(1)
	}
}

func run() error {
	scale := flag.Int("scale", 21, "R-MAT scale: 2^scale nodes")
	ef := flag.Int("edge-factor", 30, "R-MAT edges per node (before symmetrizing)")
	trainFrac := flag.Float64("train-frac", 0.08, "fraction of nodes that are training nodes (ogbn-products: 8%)")
	batch := flag.Int("batch-size", 1024, "seeds per minibatch")
	fanoutsFlag := flag.String("fanouts", "15,10,5", "fanouts, hop order")
	reps := flag.Int("reps", 5, "measured repetitions of each side")
	perRep := flag.Int("batches", 24, "minibatches per repetition")
	depth := flag.Int("depth", 4, "next_batch requests the Python consumer keeps in flight")
	procs := flag.Int("procs", runtime.GOMAXPROCS(0), "goroutines assembling in-process")
	work := flag.String("work", "out/bench/serve", "work directory (graph cache, socket)")
	python := flag.String("python", "/usr/bin/python3", "Python with numpy")
	flag.Parse()
	var fanouts []int
	for _, p := range strings.Split(*fanoutsFlag, ",") {
		k, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("--fanouts %q: %w", *fanoutsFlag, err)
		}
		fanouts = append(fanouts, k)
	}
	ctx := context.Background()
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	graph := filepath.Join(*work, fmt.Sprintf("rmat-s%d-e%d", *scale, *ef))
	if _, err := chunkfmt.ReadManifest(graph); err != nil {
		t0 := time.Now()
		edges := graph + ".bin32"
		o := ingest.RMATOptions{Scale: *scale, EdgeFactor: *ef, Seed: 1}
		if err := ingest.WriteRMATFile(ctx, edges, o, ingest.FormatBin32); err != nil {
			return err
		}
		if _, err := ingest.Build(ctx, []string{edges}, graph, ingest.BuildOptions{
			Format: ingest.FormatBin32, NumNodes: 1 << *scale, Symmetrize: true, Dedup: true, SelfLoops: "drop", Force: true,
		}); err != nil {
			return err
		}
		os.Remove(edges)
		fmt.Printf("built %s in %v\n", graph, time.Since(t0).Round(time.Second))
	}
	m, err := chunkfmt.ReadManifest(graph)
	if err != nil {
		return err
	}
	fmt.Printf("graph: %d nodes, %d edges (R-MAT scale %d, edge factor %d, symmetrized, deduplicated)\n",
		m.NumNodes, m.NumEdges, *scale, *ef)

	r := rand.New(rand.NewPCG(7, 7))
	nTrain := int(float64(m.NumNodes) * *trainFrac)
	perm := r.Perm(int(m.NumNodes))[:nTrain]
	train := make([]uint32, nTrain)
	for i, v := range perm {
		train[i] = uint32(v)
	}
	slices.Sort(train)

	be, err := host.Open(graph, host.Options{})
	if err != nil {
		return err
	}
	defer be.Close()
	srv, err := serve.New(serve.Config{Sampler: be, Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: fanouts, Seed: 3}, BatchSize: *batch, PrepareAt: 1}})
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	info := srv.Info()
	fmt.Printf("epoch 0 prepared in %v: %d training nodes, %d minibatches of %d, fanouts %v, frontiers %v, %d sampled edges\n",
		time.Since(t0).Round(time.Millisecond), nTrain, info.NumBatches, *batch, fanouts, info.FrontierSizes, info.SampledEdges)
	need := (*reps + 1) * *perRep
	if need > info.NumBatches {
		return fmt.Errorf("%d reps × %d minibatches need %d minibatches, the epoch has %d", *reps+1, *perRep, need, info.NumBatches)
	}
	batches := epoch.Batches(train, *batch, 3, 0)

	sock := filepath.Join(*work, "bench.sock")
	ln, err := serve.ListenUnix(sock)
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Shutdown(ctx)

	py := exec.Command(*python, "bench/serve_bench.py", "--socket", sock, "--control", "--depth", strconv.Itoa(*depth))
	py.Env = append(os.Environ(), "PYTHONPATH=python")
	py.Stderr = os.Stderr
	stdin, err := py.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := py.StdoutPipe()
	if err != nil {
		return err
	}
	if err := py.Start(); err != nil {
		return err
	}
	defer py.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	socketRep := func(k int) (float64, int64, error) {
		fmt.Fprintf(stdin, "run %d\n", k)
		if !lines.Scan() {
			return 0, 0, errors.New("python consumer stopped")
		}
		f := strings.Fields(lines.Text())
		if len(f) != 4 || f[0] != "ok" {
			return 0, 0, fmt.Errorf("python consumer said %q", lines.Text())
		}
		n, _ := strconv.Atoi(f[1])
		sec, _ := strconv.ParseFloat(f[2], 64)
		nb, _ := strconv.ParseInt(f[3], 10, 64)
		if n != k {
			return 0, 0, fmt.Errorf("python consumer got %d of %d minibatches", n, k)
		}
		return float64(n) / sec, nb / int64(n), nil
	}
	next := 0 // in-process reps use minibatches from the end of the epoch
	inproc := func(k, p int) (float64, error) {
		idx := batches[len(batches)-k-next : len(batches)-next]
		next = (next + k) % (len(batches) - need)
		var i atomic.Int64
		var wg sync.WaitGroup
		var firstErr error
		var mu sync.Mutex
		t0 := time.Now()
		for g := 0; g < p; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					j := int(i.Add(1)) - 1
					if j >= len(idx) {
						return
					}
					if _, err := srv.Sample(context.Background(), serve.CurrentEpoch, idx[j], serve.DefaultSemantics); err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(k) / time.Since(t0).Seconds(), firstErr
	}

	// Warm-up, then alternate.
	if _, _, err := socketRep(*perRep); err != nil {
		return err
	}
	if _, err := inproc(*perRep, *procs); err != nil {
		return err
	}
	var sock1, inP, in1 []float64
	var bytesPer int64
	for rep := 0; rep < *reps; rep++ {
		v, err := inproc(*perRep, *procs)
		if err != nil {
			return err
		}
		inP = append(inP, v)
		s, nb, err := socketRep(*perRep)
		if err != nil {
			return err
		}
		sock1, bytesPer = append(sock1, s), nb
		v, err = inproc(*perRep, 1)
		if err != nil {
			return err
		}
		in1 = append(in1, v)
	}
	fmt.Fprintln(stdin, "quit")
	med := hostbench.Median
	fmt.Printf("\nminibatches/s, median of %d reps × %d minibatches (GOMAXPROCS %d):\n", *reps, *perRep, runtime.GOMAXPROCS(0))
	fmt.Printf("  in-process assembly, %d goroutines : %8.1f  %v\n", *procs, med(inP), round(inP))
	fmt.Printf("  in-process assembly, 1 goroutine  : %8.1f  %v\n", med(in1), round(in1))
	fmt.Printf("  socket → Python (numpy), depth %d  : %8.1f  %v  (%.1f MB/minibatch, %.0f MB/s)\n",
		*depth, med(sock1), round(sock1), float64(bytesPer)/1e6, med(sock1)*float64(bytesPer)/1e6)
	// Each repetition ran the two sides back to back, under the same
	// machine load: the ratio is the median of the per-repetition ratios.
	var ratios, ratios1 []float64
	for i := range sock1 {
		ratios = append(ratios, sock1[i]/inP[i])
		ratios1 = append(ratios1, sock1[i]/in1[i])
	}
	ratio := med(ratios)
	verdict := "PASS"
	if ratio < 0.70 {
		verdict = "FAIL"
	}
	fmt.Printf("  socket / in-process(%d goroutines), median of per-rep ratios = %.2f %v (target ≥ 0.70: %s)\n",
		*procs, ratio, round2(ratios), verdict)
	fmt.Printf("  socket / in-process(1 goroutine), median of per-rep ratios  = %.2f %v\n", med(ratios1), round2(ratios1))
	// The exit status is the verdict, as for every benchmark here.
	if verdict != "PASS" {
		return fmt.Errorf("socket / in-process %.2f is below the target 0.70", ratio)
	}
	return nil
}

func round(a []float64) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return out
}

func round2(a []float64) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return out
}
