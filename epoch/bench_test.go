package epoch_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
)

var (
	benchOnce sync.Once
	benchRes  *epoch.Result
)

// benchResult is the shared ~1M-node Result: 2^20 nodes, 100k training
// nodes, fanouts [15 10 5].
func benchResult() *epoch.Result {
	benchOnce.Do(func() { benchRes = epochtest.Synthetic(1<<20, 100_000, []int{15, 10, 5}, 42) })
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
		n, mx := epoch.CountValid(s)
		mx = max(mx, f[len(f)-1])
		for _, m := range []struct {
			name string
			fn   func() []uint32
		}{
			{"auto", func() []uint32 { return epoch.NextFrontier(f, s) }},
			{"bitmap", func() []uint32 { return epoch.NextBitmap(f, s, mx) }},
			{"radix", func() []uint32 { return epoch.NextRadix(f, s, n) }},
			{"pdqsort", func() []uint32 { return epoch.NextSort(f, s, n) }},
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

// BenchmarkBlocksJSON measures the hand-written encoder that the server's
// JSON path uses, in bytes of JSON per second.
func BenchmarkBlocksJSON(b *testing.B) {
	res := benchResult()
	blk, err := res.Assemble(epoch.Batches(res.Layers[0].Frontier, 1024, 1, 0)[0], epoch.DGL)
	if err != nil {
		b.Fatal(err)
	}
	buf := blk.AppendJSON(nil)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		buf = blk.AppendJSON(buf[:0])
	}
}
