package gpu_test

import (
	"context"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
)

// BenchmarkGPU times whole Go calls (GPU sampling, device→host copy and,
// for minibatches, host relabelling) on an R-MAT graph; it needs the GPU
// like the tests (STREAMSAMPLER_GPU_TEST=1). The raw engines, the torch
// baseline and the gather limit are in bench/gpu_bench.py.
func BenchmarkGPU(b *testing.B) {
	if testing.Short() {
		b.Skip("short")
	}
	needGPUB(b)
	const n = 1 << 20
	indptr, indices := rmat(n, 8_000_000, 21)
	seeds := pickSeeds(n, 0.08, 4)
	ctx := context.Background()
	for _, mode := range []gpu.Mode{gpu.Fused, gpu.BSP} {
		be, err := gpu.OpenCSR("", 0, indptr, indices, gpu.Options{Mode: mode})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(mode.String()+"/epoch-[10,10,10]", func(b *testing.B) {
			var edges int64
			for i := 0; i < b.N; i++ {
				r, err := be.SampleEpoch(ctx, seeds, []int{10, 10, 10}, epoch.Key{Seed: 1, Epoch: uint32(i)})
				if err != nil {
					b.Fatal(err)
				}
				edges += r.NumSampledEdges()
			}
			b.ReportMetric(float64(edges)/b.Elapsed().Seconds()/1e9, "Gedges/s")
		})
		batches := epoch.Batches(seeds, 1024, 1, 0)
		b.Run(mode.String()+"/blocks-1024-[15,10,5]", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := be.SampleBlocks(ctx, batches[i%len(batches)], []int{15, 10, 5}, epoch.Key{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
		be.Close()
	}
}

func needGPUB(b *testing.B) {
	b.Helper()
	if !gpuTestEnabled() {
		b.Skip("set STREAMSAMPLER_GPU_TEST=1 on a CUDA machine")
	}
}
