package epoch_test

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/epochdir"
)

// rmatLikeResult builds an epoch shaped like ogbn-products on an R-MAT
// graph (docs/PERFORMANCE.md, "## serve": scale 21, edge factor 30,
// symmetrized, ids scrambled) without generating the graph: a node's
// degree is R-MAT's expectation for its id (Poisson around it) and every
// sample is an R-MAT endpoint (each of the scale bits set with probability
// c+d = b+d = 0.24), the degree-biased distribution of a random edge's
// end. Training nodes are a seeded 8%, fanouts as given. At scale 21,
// [15,10,5], the frontiers (167 772 → 383 194 → 599 894 → 705 290) are
// within 10% of the real graph's (167 772 → 374 331 → 560 399 → 644 900),
// and a minibatch of 1024 has 244 k edges against the real epoch's 245 k.
func rmatLikeResult(scale uint, fanouts []int, seed uint64) *epoch.Result {
	return rmatShapedResult(rmatShape{scale: scale, edgeFactor: 30, trainPerMille: 80}, fanouts, seed)
}

// rmatShape is the graph and training set rmatShapedResult imitates: an
// R-MAT graph of 2^scale nodes and edgeFactor·2^scale edges, symmetrized
// (mean degree 2·edgeFactor), with trainPerMille‰ of its nodes training
// nodes.
type rmatShape struct {
	scale         uint
	edgeFactor    int
	trainPerMille int
}

// rmatShapedResult is rmatLikeResult for any rmatShape.
func rmatShapedResult(shape rmatShape, fanouts []int, seed uint64) *epoch.Result {
	scale := shape.scale
	n := uint32(1) << scale
	mask := n - 1
	const mulA, mulB = 0x9E3779B1, 0x85EBCA77 // odd: bijections mod 2^scale
	perm := func(x uint32) uint32 {
		x = (x * mulA) & mask
		x ^= x >> 7
		return (x * mulB) & mask
	}
	invA, invB := inverseOdd(mulA), inverseOdd(mulB)
	unperm := func(y uint32) uint32 {
		y = (y * invB) & mask
		y ^= y>>7 ^ y>>14 ^ y>>21 ^ y>>28
		return (y * invA) & mask
	}
	r := rand.New(rand.NewPCG(seed, 2))
	endpoint := func() uint32 {
		var code uint32
		for b := uint(0); b < scale; b += 8 {
			w := r.Uint64()
			for j := uint(0); j < 8 && b+j < scale; j++ {
				if uint8(w>>(8*j)) < 61 { // 61/256 ≈ 0.24
					code |= 1 << (b + j)
				}
			}
		}
		return perm(code)
	}
	avgDegree := float64(2 * shape.edgeFactor)
	degree := func(v uint32) int {
		ones := bits.OnesCount32(unperm(v))
		mean := avgDegree * math.Pow(2*0.24, float64(ones)) * math.Pow(2*0.76, float64(int(scale)-ones))
		if mean > 64 {
			return 64 // above every fanout
		}
		// Poisson by inversion (Knuth); mean <= 64.
		l, k, p := math.Exp(-mean), 0, 1.0
		for {
			p *= r.Float64()
			if p <= l {
				return k
			}
			k++
		}
	}
	train := epochtest.RandomSeeds(rand.New(rand.NewPCG(seed, 3)), int(n), int(n)*shape.trainPerMille/1000)
	slices.Sort(train)
	res := &epoch.Result{Key: epoch.Key{Seed: seed}}
	f := train
	for _, k := range fanouts {
		s := make([]int32, len(f)*k)
		for i, v := range f {
			d := min(degree(v), k)
			row := s[i*k : (i+1)*k]
			for t := range row {
				if t < d {
					row[t] = int32(endpoint())
				} else {
					row[t] = -1
				}
			}
		}
		res.Layers = append(res.Layers, epoch.Layer{Frontier: f, Fanout: k, Samples: s})
		f = epoch.NextFrontier(f, s)
	}
	res.Final = f
	return res
}

// inverseOdd returns the multiplicative inverse of odd a modulo 2^32.
func inverseOdd(a uint32) uint32 {
	x := a // Newton: each step doubles the correct low bits
	for range 5 {
		x *= 2 - a*x
	}
	return x
}

var (
	rmatOnce sync.Once
	rmatRes  *epoch.Result
)

// rmatBenchResult is the shared products-like Result: scale 21, [15,10,5].
func rmatBenchResult() *epoch.Result {
	rmatOnce.Do(func() { rmatRes = rmatLikeResult(21, []int{15, 10, 5}, 42) })
	return rmatRes
}

// BenchmarkSample assembles minibatches of 1024 seeds with each way of
// finding a node's row (binary search, the Index, the map index) on
// two epochs: "rmat2M", products-like (R-MAT skew, 2^21 nodes; the issue's
// workload), and "uniform1M" (uniform samples over 2^20 nodes: every hop
// reaches mostly new nodes, 6× the edges per minibatch). With
// EPOCH_BENCH_RESULT=dir it also runs on an epoch written by Write
// ("file"). The goroutine is locked to its thread and the thread's CPU time
// is reported beside the wall time: edges/cpu-s is the per-core rate of
// the target (≥ 30 M), steady on a shared machine.
func BenchmarkSample(b *testing.B) {
	type epochCase struct {
		name string
		res  func() (*epoch.Result, error)
	}
	cases := []epochCase{
		{"rmat2M", func() (*epoch.Result, error) { return rmatBenchResult(), nil }},
		{"uniform1M", func() (*epoch.Result, error) { return benchResult(), nil }},
	}
	if dir := os.Getenv("EPOCH_BENCH_RESULT"); dir != "" {
		cases = append(cases, epochCase{"file", func() (*epoch.Result, error) { return epochdir.Read(dir) }})
	}
	for _, ec := range cases {
		b.Run(ec.name, func(b *testing.B) {
			res, err := ec.res()
			if err != nil {
				b.Fatal(err)
			}
			batches := epoch.Batches(res.Layers[0].Frontier, 1024, 1, 0)
			dense, err := res.Index(0)
			if err != nil {
				b.Fatal(err)
			}
			// "dense" is the Index: rank sets since issue 24, the name
			// kept for the commands docs/PERFORMANCE.md records.
			for _, c := range []struct {
				name string
				ix   *epoch.Index
			}{{"search", nil}, {"dense", dense}, {"map", res.MapIndex()}} {
				// PyG semantics from the same epoch: fewer rows gathered
				// per hop (only the nodes the previous hop reached first).
				b.Run(c.name+"/pyg", func(b *testing.B) { benchAssembler(b, epoch.NewAssembler(res, c.ix), batches, epoch.PyG) })
				b.Run(c.name, func(b *testing.B) { benchAssembler(b, epoch.NewAssembler(res, c.ix), batches, epoch.DGL) })
			}
		})
	}
}

func benchAssembler(b *testing.B, a *epoch.Assembler, batches [][]uint32, sem epoch.Semantics) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	edges := 0
	b.ResetTimer()
	c0 := threadCPU()
	for i := 0; i < b.N; i++ {
		blk, err := a.Assemble(batches[i%len(batches)], sem)
		if err != nil {
			b.Fatal(err)
		}
		edges += blk.NumEdges()
	}
	cpu := threadCPU() - c0
	sec := b.Elapsed().Seconds()
	b.ReportMetric(sec*1e3/float64(b.N), "ms/batch")
	b.ReportMetric(float64(edges)/sec, "edges/s")
	b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/batch")
	b.ReportMetric(float64(edges)/cpu, "edges/cpu-s")
	b.ReportMetric(float64(edges)/float64(b.N), "edges/batch")
	if n := a.IndexBytes(); n > 0 {
		b.ReportMetric(float64(n)/(1<<20), "index-MiB")
	}
}

// storeIndexBudget is pipeline.DefaultIndexBudget (pipeline imports
// epoch, not the other way).
const storeIndexBudget = 512 << 20

// storeIndex returns the index a pipeline.Store with the default budget
// gives res's assemblers (pipeline.Store.install): an index where it fits
// the budget, with the relabel table over every node id where that fits
// too.
func storeIndex(tb testing.TB, res *epoch.Result) *epoch.Index {
	n := res.DenseIndexBytes(0)
	if n > storeIndexBudget {
		return nil
	}
	var opts []epoch.IndexOption
	if n+epoch.RelabelTableBytes(res.NumNodes()) > storeIndexBudget {
		opts = append(opts, epoch.WithoutRelabelTable())
	}
	ix, err := res.Index(0, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return ix
}

var (
	scaleMu  sync.Mutex
	scaleRes = map[uint]*epoch.Result{}
)

// scaleResult is the papers100M-shaped epoch of issue 24 on a synthetic
// R-MAT graph of 2^scale nodes (edge factor 16, symmetrized), 1.1% of
// nodes training nodes, fanouts [20,15,10]; built once per scale.
func scaleResult(scale uint) *epoch.Result {
	scaleMu.Lock()
	defer scaleMu.Unlock()
	if r := scaleRes[scale]; r != nil {
		return r
	}
	r := rmatShapedResult(rmatShape{scale: scale, edgeFactor: 16, trainPerMille: 11}, []int{20, 15, 10}, 7)
	scaleRes[scale] = r
	return r
}

// BenchmarkAssembleScale measures what issue 24 targets: assembly's cost
// per assembled edge as the id space grows, at two R-MAT-like epochs in
// the same run (EPOCH_BENCH_SCALES, default "22,25": 4.2 M and 33.5 M
// nodes; papers100M's shape, scaleResult), DGL semantics, minibatches of
// 1024 in the epoch's order, with each way of assembling (assembleVariants;
// "store" is what the pipeline does by default). EPOCH_BENCH_WORKERS
// (default 1) goroutines assemble side by side, each with an Assembler of
// its own, as the pipeline's workers do: they share the caches. It reports
// ns per edge over the wall and in thread CPU time (summed over the
// workers), and logs each scale's ratio to the first one.
func BenchmarkAssembleScale(b *testing.B) {
	scales := []uint{22, 25}
	if s := os.Getenv("EPOCH_BENCH_SCALES"); s != "" {
		scales = scales[:0]
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v < 10 || v > 30 {
				b.Fatalf("EPOCH_BENCH_SCALES: bad scale %q", f)
			}
			scales = append(scales, uint(v))
		}
	}
	workers := 1
	if s := os.Getenv("EPOCH_BENCH_WORKERS"); s != "" {
		var err error
		if workers, err = strconv.Atoi(s); err != nil || workers < 1 {
			b.Fatalf("EPOCH_BENCH_WORKERS: bad count %q", s)
		}
	}
	perEdge := map[string]float64{}
	var names []string
	for _, scale := range scales {
		res := scaleResult(scale)
		batches := epoch.Batches(res.Layers[0].Frontier, 1024, 1, 0)
		for _, v := range assembleVariants(b, res) {
			name := fmt.Sprintf("s%d/%s", scale, v.name)
			asms := make([]*epoch.Assembler, workers)
			for w := range asms {
				asms[w] = epoch.NewAssembler(res, v.ix)
			}
			b.Run(name, func(b *testing.B) {
				var edges atomic.Int64
				var cpuNs atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w, a := range asms {
					wg.Add(1)
					go func() {
						defer wg.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						c0 := threadCPU()
						for i := w; i < b.N; i += workers {
							blk, err := a.Assemble(batches[i%len(batches)], epoch.DGL)
							if err != nil {
								b.Error(err)
								return
							}
							edges.Add(int64(blk.NumEdges()))
						}
						cpuNs.Add(int64((threadCPU() - c0) * 1e9))
					}()
				}
				wg.Wait()
				n := float64(edges.Load())
				ns := float64(b.Elapsed().Nanoseconds()) / n
				cpu := float64(cpuNs.Load()) / 1e9
				b.ReportMetric(ns, "ns/edge")
				b.ReportMetric(cpu*1e9/n, "cpu-ns/edge")
				b.ReportMetric(n/float64(b.N), "edges/batch")
				if _, ok := perEdge[name]; !ok {
					names = append(names, name)
				}
				perEdge[name] = ns
			})
		}
	}
	for _, n := range names {
		variant := n[strings.IndexByte(n, '/')+1:]
		base := fmt.Sprintf("s%d/%s", scales[0], variant)
		if perEdge[base] > 0 {
			b.Logf("%s: %.1f ns/edge, %.2f× %s", n, perEdge[n], perEdge[n]/perEdge[base], base)
		}
	}
}

type assembleVariant struct {
	name string
	ix   *epoch.Index
}

// assembleVariants returns the assemblers BenchmarkAssembleScale compares
// on res: "store", what a pipeline.Store with the default budget gives it;
// "table" and "batch", the index with and without the relabel table over
// every node id; "search", no index.
func assembleVariants(tb testing.TB, res *epoch.Result) []assembleVariant {
	table, err := res.Index(0)
	if err != nil {
		tb.Fatal(err)
	}
	batch, err := res.Index(0, epoch.WithoutRelabelTable())
	if err != nil {
		tb.Fatal(err)
	}
	return []assembleVariant{
		{"store", storeIndex(tb, res)},
		{"table", table},
		{"batch", batch},
		{"search", nil},
	}
}
