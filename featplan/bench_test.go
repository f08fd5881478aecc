package featplan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// benchTrace is a skewed epoch: nb minibatches of size distinct nodes out of
// numNodes, drawn with a Zipf law (as neighbourhood sampling favours
// high-degree nodes), ids scattered over the id space.
func benchTrace(nb, size int, numNodes uint32) [][]uint32 {
	r := rand.New(rand.NewPCG(21, 22))
	z := rand.NewZipf(r, 1.05, 8, uint64(numNodes-1))
	perm := r.Perm(int(numNodes))
	mark := make([]int32, numNodes)
	out := make([][]uint32, nb)
	for b := range out {
		out[b] = make([]uint32, 0, size)
		for len(out[b]) < size {
			v := uint32(perm[z.Uint64()])
			if mark[v] != int32(b+1) {
				mark[v] = int32(b + 1)
				out[b] = append(out[b], v)
			}
		}
	}
	return out
}

// BenchmarkPlan: ns per access of NewPlan and of the LRU baseline on the
// same trace, with both miss ratios (misses/accesses).
func BenchmarkPlan(b *testing.B) {
	const numNodes = 2_000_000
	batches := benchTrace(200, 20_000, numNodes)
	accesses := float64(200 * 20_000)
	for _, frac := range []float64{0.01, 0.1} {
		cache := int(frac * numNodes)
		b.Run(fmt.Sprintf("MIN/cache%.0f%%", frac*100), func(b *testing.B) {
			var misses int64
			for b.Loop() {
				p, err := NewPlan(batches, numNodes, cache)
				if err != nil {
					b.Fatal(err)
				}
				misses = p.TotalMisses()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/accesses, "ns/access")
			b.ReportMetric(float64(misses)/accesses, "miss-ratio")
		})
		b.Run(fmt.Sprintf("LRU/cache%.0f%%", frac*100), func(b *testing.B) {
			var misses int64
			for b.Loop() {
				m, err := LRUMisses(batches, numNodes, cache)
				if err != nil {
					b.Fatal(err)
				}
				misses = m
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/accesses, "ns/access")
			b.ReportMetric(float64(misses)/accesses, "miss-ratio")
		})
	}
}

// BenchmarkMatchReorder: 1000 minibatches of 50k nodes (5·10^7 accesses)
// out of 10^7 nodes.
func BenchmarkMatchReorder(b *testing.B) {
	const numNodes = 10_000_000
	batches := benchTrace(1000, 50_000, numNodes)
	for b.Loop() {
		_, rep, err := MatchReorder(batches, numNodes, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rep.SharedBefore, "shared-before")
		b.ReportMetric(rep.SharedAfter, "shared-after")
	}
}

// BenchmarkReadSize measures what MaxGap trades: random aligned O_DIRECT
// reads of growing size from a 256 MiB file. The request cost is the time of
// a 4 KiB read; the byte cost the slope between sizes; reading a hole is
// cheaper than a new request while hole·(byte cost) < request cost.
func BenchmarkReadSize(b *testing.B) {
	const fileBytes = 256 << 20
	path := filepath.Join(b.TempDir(), "features.bin")
	if err := os.WriteFile(path, make([]byte, fileBytes), 0o644); err != nil {
		b.Fatal(err)
	}
	f, direct, err := OpenDirect(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if !direct {
		b.Skip("no O_DIRECT on this file system")
	}
	for _, depth := range []int{1, DefaultDepth} {
		for _, size := range []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20} {
			bufs := make([][]byte, depth)
			for i := range bufs {
				bufs[i] = alignedBuffer(size)
			}
			b.Run(fmt.Sprintf("depth%d/%dKiB", depth, size>>10), func(b *testing.B) {
				// Each iteration is depth random reads in flight at once.
				var wg sync.WaitGroup
				for b.Loop() {
					for w := range depth {
						wg.Add(1)
						go func() {
							defer wg.Done()
							r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
							off := r.Int64N((fileBytes-size)/Align) * Align
							if _, err := f.ReadAt(bufs[w], off); err != nil {
								b.Error(err)
							}
						}()
					}
					wg.Wait()
				}
				b.SetBytes(size * int64(depth))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth)/1e3, "µs/read")
			})
		}
	}
}
