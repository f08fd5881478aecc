package randread_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/testgraph"
	"github.com/streamsampler/streamsampler/randread"
)

var benchGraph = sync.OnceValues(func() (*host.CSR, error) {
	indptr, indices := testgraph.RandomCSR(1<<18, 16, 42)
	return &host.CSR{Indptr: indptr, Indices: indices}, nil
})

// BenchmarkBlocks: one minibatch of 64 seeds, [15,10,5], sampled by random
// reads of a 2^18-node graph (about 17 MB, in the page cache after the
// first iteration unless O_DIRECT: the figure is the CPU's and the
// syscalls' share; bench/randread.sh measures the disk), for each I/O
// engine and block size. reads/op is the read requests per minibatch.
func BenchmarkBlocks(b *testing.B) {
	g, _ := benchGraph()
	dir := writeGraph(b, g, 1<<22, true)
	for _, io := range []randread.IO{randread.AIO, randread.Pread} {
		for _, bs := range []int{512, 4096} {
			b.Run(fmt.Sprintf("io=%v/block=%d", io, bs), func(b *testing.B) {
				s := open(b, dir, randread.Options{IO: io, BlockSize: bs})
				var reads int64
				i := 0
				for b.Loop() {
					seeds := testgraph.RandomSeeds(g.NumNodes(), 64, uint64(i))
					i++
					req := randread.Request{Seeds: distinct(seeds), Fanouts: []int{15, 10, 5}, Key: epoch.Key{Seed: 1, Epoch: uint32(i)}}
					_, st, err := s.Blocks(context.Background(), req, epoch.DGL)
					if err != nil {
						b.Fatal(err)
					}
					reads += st.Reads()
				}
				b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			})
		}
	}
}

// distinct drops repeated seeds, keeping the first of each.
func distinct(seeds []uint32) []uint32 {
	seen := map[uint32]bool{}
	out := seeds[:0]
	for _, v := range seeds {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
