package serve

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// BenchmarkSocketVsInProcess serves minibatches (batch 1024, fanouts
// [15,10,5]) of a 200k-node random graph to a Go client over a Unix
// socket, pipelining 4 requests, and alternately assembles the same
// number in-process (one goroutine, the same four minibatches each round)
// from the same epoch; it reports both rates and
// socket/inproc, the median of per-round ratios (the Python consumer's
// figures are bench/serve_bench's).
func BenchmarkSocketVsInProcess(b *testing.B) {
	g := randomCSR(200_000, 20, 42)
	train := trainNodes(200_000, 4)
	s, err := New(Config{Sampler: refBackend{g}, Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{15, 10, 5}}, BatchSize: 1024, PrepareAt: 1}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	path := b.TempDir() + "/b.sock"
	ln, err := ListenUnix(path)
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	nc, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	batches := epoch.Batches(train, 1024, 0, 0)
	const perRound = 4
	var sockRates, inRates, ratios []float64
	pulled := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pulled+perRound > len(batches) {
			// Start the next epoch (outside the timings).
			b.StopTimer()
			if _, err := s.Advance(context.Background(), CurrentEpoch); err != nil {
				b.Fatal(err)
			}
			pulled = 0
			b.StartTimer()
		}
		t0 := time.Now()
		for j := 0; j < perRound; j++ {
			if _, err := s.Sample(context.Background(), CurrentEpoch, batches[j], DefaultSemantics); err != nil {
				b.Fatal(err)
			}
		}
		in := perRound / time.Since(t0).Seconds()
		t0 = time.Now()
		var req []byte
		for j := 0; j < perRound; j++ {
			req = AppendFrame(req, OpNextBatch, 0, uint32(j), AppendEpochRequest(nil, CurrentEpoch))
		}
		if _, err := nc.Write(req); err != nil {
			b.Fatal(err)
		}
		var buf []byte
		for j := 0; j < perRound; j++ {
			var f Frame
			if f, buf, err = ReadFrame(nc, MaxReply, buf); err != nil || f.Status != StatusOK {
				b.Fatalf("reply %+v: %v", f, err)
			}
			if _, _, err := DecodeBlocks(f.Payload); err != nil {
				b.Fatal(err)
			}
		}
		pulled += perRound
		sock := perRound / time.Since(t0).Seconds()
		sockRates, inRates, ratios = append(sockRates, sock), append(inRates, in), append(ratios, sock/in)
	}
	b.ReportMetric(median(inRates), "inproc-batches/s")
	b.ReportMetric(median(sockRates), "socket-batches/s")
	b.ReportMetric(median(ratios), "socket/inproc")
}

func median(a []float64) float64 {
	c := slices.Clone(a)
	slices.Sort(c)
	return c[len(c)/2]
}

// refBackend is host.Reference as an EpochSampler.
type refBackend struct{ g *host.CSR }

func (r refBackend) SampleEpoch(_ context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	return host.Reference(r.g, seeds, fanouts, key)
}

// BenchmarkEncodeBlocks measures laying out a reply (no copy of the
// arrays) against MarshalBlocks, which copies them into one slice.
func BenchmarkEncodeBlocks(b *testing.B) {
	g := randomCSR(50_000, 20, 3)
	train := trainNodes(50_000, 2)
	res, err := host.Reference(g, train, []int{15, 10, 5}, epoch.Key{})
	if err != nil {
		b.Fatal(err)
	}
	blk, err := res.Assemble(train[:1024], epoch.DGL)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("vector", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			EncodeBlocks(OpNextBatch, 1, blk, 0)
		}
	})
	b.Run("copy", func(b *testing.B) {
		n := 0
		for i := 0; i < b.N; i++ {
			n += len(MarshalBlocks(OpNextBatch, 1, blk, 0))
		}
		b.SetBytes(int64(n / b.N))
	})
}
