package gpu_test

import (
	"bufio"
	"context"
	"hash/fnv"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
)

// TestGPUOpenScale opens a large graph directory the way Open does
// (STREAMSAMPLER_GPU_SCALE_PATH=stream, the default: chunk by chunk from
// the mapping) or the way it did before (=copy: CSRFromGraph into the Go
// heap, then OpenCSR), optionally over UVA (STREAMSAMPLER_GPU_SCALE_UVA=1),
// and reports the open time, the Go heap and the process's peak and
// anonymous RSS, then samples one epoch (10% seeds, [15,10,5]) and logs a
// hash of its result. Run one process per path: the figures logged first
// are that path's alone (peak RSS is per process). It then opens the graph
// the other way, samples the same epoch and fails unless the two results
// are equal, layer by layer.
//
//	STREAMSAMPLER_GPU_TEST=1 STREAMSAMPLER_GPU_SCALE_GRAPH=dir gpu.test -test.run GPUOpenScale -test.v
func TestGPUOpenScale(t *testing.T) {
	needGPU(t)
	dir := os.Getenv("STREAMSAMPLER_GPU_SCALE_GRAPH")
	if dir == "" {
		t.Skip("set STREAMSAMPLER_GPU_SCALE_GRAPH to a graph directory")
	}
	path := os.Getenv("STREAMSAMPLER_GPU_SCALE_PATH")
	opts := gpu.Options{UVA: os.Getenv("STREAMSAMPLER_GPU_SCALE_UVA") == "1"}
	g, err := chunkfmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if path == "" {
		path = "stream"
	}
	other := map[string]string{"stream": "copy", "copy": "stream"}[path]
	if other == "" {
		t.Fatalf("STREAMSAMPLER_GPU_SCALE_PATH=%q: want stream or copy", path)
	}
	start := time.Now()
	b, err := openScale(g, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	open := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := g.Manifest
	t.Logf("open %s uva=%v: %d nodes, %d edges (%.2f GiB CSR) in %d chunks: %.2f s; Go heap: %.0f MiB in use after, %.0f MiB allocated; %s",
		path, b.UVA(), m.NumNodes, m.NumEdges, float64(8*(uint64(m.NumNodes)+1)+4*m.NumEdges)/(1<<30), len(m.Chunks),
		open.Seconds(), float64(ms.HeapInuse)/(1<<20), float64(ms.TotalAlloc)/(1<<20), procStatus("VmHWM", "VmRSS", "RssAnon", "RssFile"))

	seeds := pickSeeds(m.NumNodes, 0.1, 7)
	start = time.Now()
	res, err := b.SampleEpoch(context.Background(), seeds, []int{15, 10, 5}, epoch.Key{Seed: 1, Epoch: 0})
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	for _, l := range res.Layers {
		h.Write(bytesOf(l.Frontier))
		h.Write(bytesOf(l.Samples))
	}
	h.Write(bytesOf(res.Final))
	t.Logf("epoch %s: %d seeds, %d sampled edges, %d final nodes in %.2f s (GPU %.1f ms); result hash %016x; %s",
		path, len(seeds), res.NumSampledEdges(), len(res.Final), time.Since(start).Seconds(), b.Timings()[2], h.Sum64(),
		procStatus("VmHWM"))

	// The other path must give the same epoch.
	b.Close()
	b2, err := openScale(g, other, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	res2, err := b2.SampleEpoch(context.Background(), seeds, []int{15, 10, 5}, epoch.Key{Seed: 1, Epoch: 0})
	if err != nil {
		t.Fatal(err)
	}
	for l := range res.Layers {
		if !slices.Equal(res.Layers[l].Frontier, res2.Layers[l].Frontier) || !slices.Equal(res.Layers[l].Samples, res2.Layers[l].Samples) {
			t.Fatalf("layer %d: the %s and %s paths sampled different epochs", l, path, other)
		}
	}
	if !slices.Equal(res.Final, res2.Final) {
		t.Fatalf("final frontier: the %s and %s paths differ", path, other)
	}
	t.Logf("the %s path gives the same epoch", other)
}

// openScale opens g on the GPU by path: "stream" (Open, chunk by chunk
// from the mapping) or "copy" (CSRFromGraph into the Go heap, then
// OpenCSR).
func openScale(g *chunkfmt.Graph, path string, opts gpu.Options) (*gpu.Backend, error) {
	if path == "stream" {
		return gpu.Open("", 0, g, opts)
	}
	indptr, indices, err := gpu.CSRFromGraph(g)
	if err != nil {
		return nil, err
	}
	b, err := gpu.OpenCSR("", 0, indptr, indices, opts)
	runtime.KeepAlive(indices)
	return b, err
}

// bytesOf views a slice of 4-byte words as bytes.
func bytesOf[T uint32 | int32](a []T) []byte {
	if len(a) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 4*len(a))
}

// procStatus returns the named lines of /proc/self/status.
func procStatus(keys ...string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, k := range keys {
			if v, ok := strings.CutPrefix(sc.Text(), k+":"); ok {
				out = append(out, k+" "+strings.Join(strings.Fields(v), " "))
			}
		}
	}
	return strings.Join(out, ", ")
}
