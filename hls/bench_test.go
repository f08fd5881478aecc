package hls

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/rng"
)

// benchChunkWords is 64 MiB of chunk: larger than the last-level cache, so
// that neighbor reads go to DRAM as they do on a real 512 MiB chunk.
const benchChunkWords = 64 << 20 / 4

var benchData = sync.OnceValues(func() ([]uint32, []uint32) {
	// Power-law degrees (Pareto, shape 1.5, mean about 20, capped at
	// 200k): most nodes are small, a few hubs hold a large share of the
	// edges, as in R-MAT or web graphs. Nodes are added while they fit.
	g := &gen{s: 0xbe4c}
	var degs []int
	words := 3
	for {
		u := (float64(g.next()>>11) + 0.5) / (1 << 53)
		d := int(10 * (math.Pow(u, -1/1.5) - 1))
		d = min(d, 200_000)
		if words+1+d > benchChunkWords {
			break
		}
		degs = append(degs, d)
		words += 1 + d
	}
	const start = 5_000_000
	chunk := make([]uint32, benchChunkWords)
	chunk[0], chunk[1] = uint32(len(degs)), start
	off := uint32(3 + len(degs))
	for i, d := range degs {
		chunk[2+i] = off
		v := uint32(g.intn(1 << 20))
		for j := 0; j < d; j++ {
			chunk[off+uint32(j)] = v
			v += 1 + uint32(g.intn(128))
		}
		off += uint32(d)
	}
	chunk[2+len(degs)] = off
	// 10% of the nodes as targets, sorted (as the host's frontier split
	// hands them over).
	var targets []uint32
	for i := range degs {
		if g.intn(10) == 0 {
			targets = append(targets, start+uint32(i))
		}
	}
	return chunk, targets
})

// floorImpl is the floor BenchmarkKernel measures: gather_floor.c with
// cgo (floor_cgo_test.go), gatherFloor without.
var (
	floorImpl = gatherFloor
	floorName = "go"
)

// gatherFloor is the memory traffic the kernel cannot avoid, with no
// sampling logic: per target its two offsets, then min(d, k) reads of its
// adjacency, each at a position that depends on the offsets (random for a
// hub, picked by a cheap LCG and a multiply-shift), and the output row
// written. The kernel's throughput divided by this is how close it runs
// to the memory system.
func gatherFloor(chunk, targets []uint32, out []int32, k int, seed uint64) {
	start := chunk[1]
	x := seed
	for r, t := range targets {
		idx := t - start
		b, e := chunk[2+idx], chunk[3+idx]
		d := e - b
		row := out[r*k : r*k+k]
		if int(d) <= k {
			for i := range row {
				if i < int(d) {
					row[i] = int32(chunk[b+uint32(i)])
				} else {
					row[i] = -1
				}
			}
			continue
		}
		for i := range row {
			x = x*6364136223846793005 + 1442695040888963407
			row[i] = int32(chunk[b+uint32((x>>32)*uint64(d)>>32)])
		}
	}
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func medianF(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}

// BenchmarkKernel reports the kernel's sampled slots per second on one
// core, the gather floor's (in C with cgo: the fastest code doing the same
// memory traffic), measured in the same iterations, and their ratio
// (target: ratio ≥ 0.5).
func BenchmarkKernel(b *testing.B) {
	chunk, targets := benchData()
	n := chunk[0]
	maxDeg := uint32(0)
	for i := uint32(0); i < n; i++ {
		maxDeg = max(maxDeg, chunk[3+i]-chunk[2+i])
	}
	b.Logf("chunk: %d MiB, %d nodes, %d edges, max degree %d; %d targets",
		len(chunk)*4>>20, n, chunk[2+n]-chunk[2], maxDeg, len(targets))
	type engine struct {
		name string
		fn   func([]uint32, []uint32, []int32, int, uint64, bool) error
	}
	list := []engine{{"go-reference", Reference}}
	if Engine != "go-reference" {
		list = append([]engine{{Engine, Run}}, list...)
	}
	for _, e := range list {
		for _, tc := range []struct {
			k       int
			replace bool
		}{{15, false}, {10, false}, {15, true}} {
			b.Run(fmt.Sprintf("engine=%s/k=%d/replace=%v", e.name, tc.k, tc.replace), func(b *testing.B) {
				out := make([]int32, len(targets)*tc.k)
				var kt, ft []time.Duration
				for i := 0; b.Loop(); i++ {
					t0 := time.Now()
					if err := e.fn(chunk, targets, out, tc.k, rng.Key(1, uint32(i), 0), tc.replace); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					b.StopTimer()
					floorImpl(chunk, targets, out, tc.k, uint64(i))
					ft = append(ft, time.Since(t1))
					kt = append(kt, t1.Sub(t0))
					b.StartTimer()
				}
				// Medians over the iterations, and the median of the
				// per-iteration ratios: kernel and floor run back to back,
				// so a ratio is taken under the same machine load.
				slots := float64(len(targets) * tc.k)
				ratios := make([]float64, len(kt))
				for i := range kt {
					ratios[i] = ft[i].Seconds() / kt[i].Seconds()
				}
				b.ReportMetric(slots/median(kt).Seconds(), "slots/s")
				b.ReportMetric(slots/median(ft).Seconds(), "floor-slots/s")
				b.ReportMetric(medianF(ratios), "ratio")
			})
		}
	}
}

// rmatWalkData is an R-MAT graph (Graph500's parameters, scale 20, edge
// factor 16: 2^20 nodes, 2^24 edges, about 68 MiB of chunk) as one chunk
// of out-adjacencies, and 2^18 walkers: each at the source of a uniformly
// drawn edge (so at a node with probability proportional to its degree, a
// walk's stationary law), in walk order, with walk ids 0.. .
var rmatWalkData = sync.OnceValues(func() ([]uint32, []uint32) {
	const scale, edgeFactor = 20, 16
	var buf bytes.Buffer
	if err := ingest.GenerateRMAT(context.Background(), &buf, ingest.RMATOptions{Scale: scale, EdgeFactor: edgeFactor, Seed: 1}, ingest.FormatBin32); err != nil {
		panic(err)
	}
	pairs := bytesToWords(buf.Bytes())
	const n = 1 << scale
	m := len(pairs) / 2
	chunk := make([]uint32, 3+n+m)
	chunk[0], chunk[1] = n, 0
	for e := range m {
		chunk[3+pairs[2*e]]++ // count, shifted by one: chunk[2+u+1]
	}
	off := uint32(3 + n)
	for u := range n + 1 {
		d := chunk[2+u]
		chunk[2+u] = off
		off += d
	}
	fill := slices.Clone(chunk[2 : 2+n])
	for e := range m {
		u := pairs[2*e]
		chunk[fill[u]] = pairs[2*e+1]
		fill[u]++
	}
	g := &gen{s: 0xa1c}
	walkers := make([]uint32, 1<<18)
	for i := range walkers {
		walkers[i] = pairs[2*g.intn(m)]
	}
	return chunk, walkers
})

// BenchmarkWalkStep reports the kernel's walk-step candidates per second
// (k = 1, the deepwalk and PPR step) against sampling's slots per second
// at fanout 1, without and with replacement, for the same nodes of an
// R-MAT chunk, measured in the same iterations (the order alternating),
// and their ratios to the walk step's. Medians over the iterations.
func BenchmarkWalkStep(b *testing.B) {
	chunk, nodes := rmatWalkData()
	walks := allNodes(0, len(nodes))
	b.Logf("chunk: %d MiB, %d nodes, %d edges; %d walkers", len(chunk)*4>>20, chunk[0], len(chunk)-3-int(chunk[0]), len(nodes))
	for _, k := range []int{1, 4} {
		b.Run(fmt.Sprintf("engine=%s/k=%d", Engine, k), func(b *testing.B) {
			out := make([]int32, len(nodes)*k)
			var wt, st, rt []time.Duration
			timed := func(f func() error) time.Duration {
				t0 := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			for i := 0; b.Loop(); i++ {
				walk := func() error { return RunWalk(chunk, nodes, walks, out, k, rng.WalkKey(1, uint32(i+1)), 0) }
				sample := func() error { return Run(chunk, nodes, out, k, rng.Key(1, uint32(i), 0), false) }
				replace := func() error { return Run(chunk, nodes, out, k, rng.Key(1, uint32(i), 1), true) }
				if i%2 == 0 {
					wt = append(wt, timed(walk))
					b.StopTimer()
					st, rt = append(st, timed(sample)), append(rt, timed(replace))
				} else {
					b.StopTimer()
					st, rt = append(st, timed(sample)), append(rt, timed(replace))
					b.StartTimer()
					wt = append(wt, timed(walk))
					b.StopTimer()
				}
				b.StartTimer()
			}
			slots := float64(len(nodes) * k)
			ratioS, ratioR := make([]float64, len(wt)), make([]float64, len(wt))
			for i := range wt {
				ratioS[i] = st[i].Seconds() / wt[i].Seconds()
				ratioR[i] = rt[i].Seconds() / wt[i].Seconds()
			}
			b.ReportMetric(slots/median(wt).Seconds(), "walk-cand/s")
			b.ReportMetric(slots/median(st).Seconds(), "sample-slots/s")
			b.ReportMetric(slots/median(rt).Seconds(), "replace-slots/s")
			b.ReportMetric(medianF(ratioS), "walk/sample")
			b.ReportMetric(medianF(ratioR), "walk/replace")
		})
	}
}
