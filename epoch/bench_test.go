package epoch

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/rng"
)

// syntheticResult builds an epoch over numNodes nodes without a graph:
// each frontier node's row holds fanout uniform node ids, with a
// degree-like share of -1 padding (about 1 row in 8 short). Frontiers are
// built with NextFrontier, so the Result is valid.
func syntheticResult(numNodes uint32, train int, fanouts []int, seed uint64) *Result {
	r := rand.New(rand.NewPCG(seed, 1))
	f := make([]uint32, train)
	for i := range f {
		f[i] = r.Uint32N(numNodes)
	}
	slices.Sort(f)
	f = slices.Compact(f)
	key := Key{Seed: seed}
	res := &Result{Key: key}
	for l, k := range fanouts {
		s := make([]int32, len(f)*k)
		lk := key.Layer(l)
		for i, v := range f {
			row := s[i*k : (i+1)*k]
			d := k
			if rng.Draw(lk, v, 1<<31)%8 == 0 {
				d = int(rng.Below(rng.Draw(lk, v, 1<<31+1), uint32(k)))
			}
			for t := range row {
				if t < d {
					row[t] = int32(rng.Below(rng.Draw(lk, v, uint32(t)), numNodes))
				} else {
					row[t] = -1
				}
			}
		}
		res.Layers = append(res.Layers, Layer{Frontier: f, Fanout: k, Samples: s})
		f = NextFrontier(f, s)
	}
	res.Final = f
	return res
}

var (
	benchOnce sync.Once
	benchRes  *Result
)

// benchResult is the shared ~1M-node Result: 2^20 nodes, 100k training
// nodes, fanouts [15 10 5].
func benchResult() *Result {
	benchOnce.Do(func() { benchRes = syntheticResult(1<<20, 100_000, []int{15, 10, 5}, 42) })
	return benchRes
}

// BenchmarkNextFrontier compares the methods NextFrontier chooses among,
// and the naive sort-and-compact as the peer, on the shapes of the
// benchmark epoch's layers (dense: ids up to 2^20) and a sparse one (ids up
// to 2^31).
func BenchmarkNextFrontier(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct {
		name   string
		nf, ns int
		span   uint32
	}{
		{"layer0-dense", 100_000, 1_500_000, 1 << 20},
		{"layer1-dense", 800_000, 8_000_000, 1 << 20},
		{"sparse", 100_000, 1_500_000, 1 << 31},
	} {
		f, s := randomNextInput(r, c.nf, c.ns, c.span)
		n, mx := countValid(s)
		mx = max(mx, f[len(f)-1])
		for _, m := range []struct {
			name string
			fn   func() []uint32
		}{
			{"auto", func() []uint32 { return NextFrontier(f, s) }},
			{"bitmap", func() []uint32 { return nextBitmap(f, s, mx) }},
			{"radix", func() []uint32 { return nextRadix(f, s, n) }},
			{"pdqsort", func() []uint32 { return nextSort(f, s, n) }},
			{"naive", func() []uint32 { return naiveNext(f, s) }},
		} {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					m.fn()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s)), "ns/sample")
			})
		}
	}
}

// BenchmarkWriteRead measures persistence of the benchmark epoch (about
// 60 MB of arrays), fsyncs included, in MB of raw arrays per second.
func BenchmarkWriteRead(b *testing.B) {
	res := benchResult()
	for _, comp := range []string{"", "zstd"} {
		name := comp
		if name == "" {
			name = "raw"
		}
		dir := b.TempDir()
		seq := 0 // the function runs several times (b.N = 1, then more)
		b.Run("write/"+name, func(b *testing.B) {
			b.SetBytes(res.Bytes())
			for i := 0; i < b.N; i++ {
				seq++
				if err := Write(filepath.Join(dir, fmt.Sprint("e", seq)), res, WriteOptions{Compress: comp}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(filepath.Join(dir, fmt.Sprint("e", seq)))
				b.StartTimer()
			}
		})
		path := filepath.Join(dir, "read")
		if err := Write(path, res, WriteOptions{Compress: comp}); err != nil {
			b.Fatal(err)
		}
		b.Run("read/"+name, func(b *testing.B) {
			b.SetBytes(res.Bytes())
			for i := 0; i < b.N; i++ {
				if _, err := Read(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBlocksJSON measures the hand-written encoder that the server's
// JSON path uses, in bytes of JSON per second.
func BenchmarkBlocksJSON(b *testing.B) {
	res := benchResult()
	blk, err := res.Sample(Batches(res.Layers[0].Frontier, 1024, 1, 0)[0])
	if err != nil {
		b.Fatal(err)
	}
	buf := blk.AppendJSON(nil)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		buf = blk.AppendJSON(buf[:0])
	}
}
