package host

import (
	"context"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// BenchmarkSampleEpoch streams a 3-layer epoch over an emulated device and
// reports sampled slots/s; compare with BenchmarkReference (the same epoch
// in memory, no device, no I/O) run alongside.
func BenchmarkSampleEpoch(b *testing.B) {
	g := randomCSR(200000, 10, 1)
	dir := writeGraph(b, g, 1<<20)
	seeds := randomSeeds(200000, 20000, 1)
	fan := []int{15, 10, 5}
	for _, devices := range []int{1, 2} {
		b.Run(map[int]string{1: "devices=1", 2: "devices=2"}[devices], func(b *testing.B) {
			s := openSampler(b, dir, Options{Devices: devices})
			var slots int64
			for i := 0; b.Loop(); i++ {
				_, st, err := s.SampleEpochStats(context.Background(), seeds, fan, epoch.Key{Seed: 1, Epoch: uint32(i)})
				if err != nil {
					b.Fatal(err)
				}
				slots += st.SampledSlots()
			}
			b.ReportMetric(float64(slots)/b.Elapsed().Seconds(), "slots/s")
		})
	}
	b.Run("reference", func(b *testing.B) {
		var slots int64
		for i := 0; b.Loop(); i++ {
			r, err := Reference(g, seeds, fan, epoch.Key{Seed: 1, Epoch: uint32(i)})
			if err != nil {
				b.Fatal(err)
			}
			slots += r.NumSampledEdges()
		}
		b.ReportMetric(float64(slots)/b.Elapsed().Seconds(), "slots/s")
	})
}
