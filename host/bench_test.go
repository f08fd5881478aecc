package host

import (
	"context"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
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

// BenchmarkChunkCheck measures what checking chunk reads costs an epoch:
// the same 3-layer epoch over one emulated device with the CRC-32C check
// of every chunk read (the default, "crc"), with --verify-reads' host
// re-read ("reread"; the emulated device then streams as a SmartSSD does,
// through its own two buffers, without the chunk cache), and without any
// check ("off", the streaming floor the check is measured against). Run the variants interleaved
// (docs/PERFORMANCE.md) and compare medians of ns/op.
func BenchmarkChunkCheck(b *testing.B) {
	g := randomCSR(200000, 10, 1)
	dir := writeGraph(b, g, 1<<20)
	seeds := randomSeeds(200000, 20000, 1)
	fan := []int{15, 10, 5}
	for _, v := range []struct {
		name string
		opts Options
	}{
		{"crc", Options{}},
		{"reread", Options{VerifyReads: true}},
		{"off", Options{skipChecksum: true}},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := openSampler(b, dir, v.opts)
			var bytes int64
			for i := 0; b.Loop(); i++ {
				_, st, err := s.SampleEpochStats(context.Background(), seeds, fan, epoch.Key{Seed: 1, Epoch: uint32(i)})
				if err != nil {
					b.Fatal(err)
				}
				bytes += st.BytesRead()
			}
			b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkEdgeIDs measures what Options.EdgeIDs costs the streamed epoch
// of BenchmarkSampleEpoch (one emulated device): "off" is the default,
// "on" has the kernel write chunk-local edge indices after the samples and
// the host turn them into Layer.EdgeIDs. Run interleaved and compare
// medians of ns/op (and B/op: 8 bytes per sample slot more).
func BenchmarkEdgeIDs(b *testing.B) {
	g := randomCSR(200000, 10, 1)
	dir := writeGraph(b, g, 1<<20)
	seeds := randomSeeds(200000, 20000, 1)
	fan := []int{15, 10, 5}
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			s := openSampler(b, dir, Options{EdgeIDs: on})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.SampleEpoch(context.Background(), seeds, fan, epoch.Key{Seed: 1, Epoch: uint32(i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChunkCache measures the chunk cache on BenchmarkSampleEpoch's
// epoch (a graph of about 9 chunks of 1 MiB, one emulated device) with
// Options.ChunkCache at 0 (the two buffers a device streams through), a
// quarter of the graph and all of it, and reports the chunk bytes read
// per epoch in graphs (read/graph: at 0 about a layer's reads less the
// chunks left in memory by the layer before, with all of it 0 once every
// chunk was read). The epochs after the first find what the previous left
// cached, as consecutive epochs of a run do. Run interleaved
// (-count 5) and compare medians of ns/op.
func BenchmarkChunkCache(b *testing.B) {
	g := randomCSR(200000, 10, 1)
	dir := writeGraph(b, g, 1<<20)
	seeds := randomSeeds(200000, 20000, 1)
	fan := []int{15, 10, 5}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		b.Fatal(err)
	}
	graph := GraphReadBytes(m)
	for _, v := range []struct {
		name   string
		budget int64
	}{
		{"0", 0},
		{"quarter", graph / 4},
		{"all", int64(len(m.Chunks)) * slotBytes(m)},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := openSampler(b, dir, Options{ChunkCache: v.budget})
			var bytes int64
			var epochs int
			for i := 0; b.Loop(); i++ {
				_, st, err := s.SampleEpochStats(context.Background(), seeds, fan, epoch.Key{Seed: 1, Epoch: uint32(i)})
				if err != nil {
					b.Fatal(err)
				}
				bytes += st.BytesRead()
				epochs++
			}
			b.ReportMetric(float64(bytes)/float64(epochs)/float64(graph), "read/graph")
		})
	}
}

// BenchmarkFullLayer streams one full layer (fanout -1) of every node of a
// 200 k-node graph through an emulated device: the copy-all launches and
// the joining of the rows into a CSR layer, against the same layer with
// fanout 10 (sampled) and the in-memory reference. It reports neighbors
// (samples) per second and the Result's bytes.
func BenchmarkFullLayer(b *testing.B) {
	g := randomCSR(200000, 10, 1)
	dir := writeGraph(b, g, 1<<20)
	seeds := make([]uint32, g.NumNodes())
	for i := range seeds {
		seeds[i] = uint32(i)
	}
	for _, v := range []struct {
		name string
		fan  []int
	}{{"full", []int{-1}}, {"fanout10", []int{10}}} {
		b.Run(v.name, func(b *testing.B) {
			s := openSampler(b, dir, Options{})
			var n, bytes int64
			for i := 0; b.Loop(); i++ {
				r, st, err := s.SampleEpochStats(context.Background(), seeds, v.fan, epoch.Key{Seed: 1, Epoch: uint32(i)})
				if err != nil {
					b.Fatal(err)
				}
				n += st.SampledSlots()
				bytes = r.Bytes()
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(bytes), "result-bytes")
		})
	}
	b.Run("reference-full", func(b *testing.B) {
		var n int64
		for i := 0; b.Loop(); i++ {
			r, err := Reference(g, seeds, []int{-1}, epoch.Key{Seed: 1, Epoch: uint32(i)})
			if err != nil {
				b.Fatal(err)
			}
			n += r.NumSampledEdges()
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
	})
}
