package gpu_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/host"
)

// The tests below need a CUDA GPU and the built library: they run when
// STREAMSAMPLER_GPU_TEST=1 (the library is found as Open documents, e.g.
// via $STREAMSAMPLER_GPU_LIB). On the GPU machine:
//
//	STREAMSAMPLER_GPU_TEST=1 STREAMSAMPLER_GPU_LIB=gpu/build/libstreamsampler_gpu.so \
//	STREAMSAMPLER_GPU_EDGES=path/to/soc-Slashdot0902.txt.gz ./bin/gpu.test -test.v

func gpuTestEnabled() bool { return os.Getenv("STREAMSAMPLER_GPU_TEST") != "" }

func needGPU(t *testing.T) {
	t.Helper()
	if !gpuTestEnabled() {
		t.Skip("set STREAMSAMPLER_GPU_TEST=1 on a CUDA machine")
	}
}

// checkEpochs samples with both engines and compares with host.Reference.
func checkEpochs(t *testing.T, b *gpu.Backend, adj host.Adjacency, seeds []uint32, fan []int, key epoch.Key) *epoch.Result {
	t.Helper()
	want, err := host.Reference(adj, seeds, fan, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []gpu.Mode{gpu.Fused, gpu.BSP} {
		start := time.Now()
		got, err := b.SampleEpochMode(context.Background(), mode, seeds, fan, key)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		tm := b.Timings()
		if err := diffResults(got, want); err != nil {
			t.Errorf("%s fanouts %v key %+v: %v", mode, fan, key, err)
			continue
		}
		t.Logf("%-5s fanouts %v replace=%v: %d seeds → %d final, %d edges; identical to host.Reference; GPU %.2f ms (kernel %.2f), call %v",
			mode, fan, key.Replace, len(want.Layers[0].Frontier), len(want.Final), want.NumSampledEdges(), tm[2], tm[0], time.Since(start).Round(time.Microsecond))
	}
	return want
}

func TestGPUEpochRMAT(t *testing.T) {
	needGPU(t)
	const n = 1 << 17
	indptr, indices := rmat(n, 1_000_000, 11)
	csr := &host.CSR{Indptr: indptr, Indices: indices}
	seeds := pickSeeds(n, 0.08, 3)
	for _, uva := range []bool{false, true} {
		b, err := gpu.OpenCSR("", 0, indptr, indices, gpu.Options{UVA: uva})
		if err != nil {
			t.Fatal(err)
		}
		if b.UVA() != uva {
			t.Errorf("UVA() = %v, want %v", b.UVA(), uva)
		}
		t.Logf("device %s, uva=%v, R-MAT %d nodes %d edges", b.Device(), uva, n, len(indices))
		checkEpochs(t, b, csr, seeds, []int{10, 10, 10}, epoch.Key{Seed: 42, Epoch: 0})
		if !uva {
			checkEpochs(t, b, csr, seeds, []int{15, 10, 5}, epoch.Key{Seed: 7, Epoch: 3})
			checkEpochs(t, b, csr, seeds, []int{5, 5}, epoch.Key{Seed: 7, Epoch: 1, Replace: true})
			checkEpochs(t, b, csr, seeds[:100], []int{64, 33, 1, 2}, epoch.Key{Seed: 1, Epoch: 9})
		}
		b.Close()
	}
}

// TestGPUEpochRealGraph builds a graph directory from a real edge list
// (SNAP text, optionally gzipped) with chunkfmt, opens it with gpu.Open
// (CSR read from the chunks) and compares with host.Reference over the
// chunk files.
func TestGPUEpochRealGraph(t *testing.T) {
	needGPU(t)
	path := os.Getenv("STREAMSAMPLER_GPU_EDGES")
	if path == "" {
		t.Skip("set STREAMSAMPLER_GPU_EDGES to a SNAP edge list")
	}
	dir := filepath.Join(t.TempDir(), "graph")
	if err := writeGraphDir(path, dir, 1<<20); err != nil {
		t.Fatal(err)
	}
	g, err := chunkfmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	b, err := gpu.Open("", 0, g, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := g.Manifest.NumNodes
	t.Logf("%s: %d nodes, %d edges in %d chunks", filepath.Base(path), n, g.Manifest.NumEdges, len(g.Manifest.Chunks))
	adj := host.GraphAdjacency(g)
	seeds := pickSeeds(n, 0.08, 5)
	res := checkEpochs(t, b, adj, seeds, []int{10, 10, 10}, epoch.Key{Seed: 42, Epoch: 2})
	checkEpochs(t, b, adj, seeds, []int{15, 10, 5}, epoch.Key{Seed: 42, Epoch: 2, Replace: true})

	// Per-minibatch: blocks from the GPU equal assembly from the epoch.
	batches := epoch.Batches(seeds, 1024, 42, 2)
	for _, mode := range []gpu.Mode{gpu.Fused, gpu.BSP} {
		bm, err := gpu.Open("", 0, g, gpu.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for i, batch := range batches[:min(5, len(batches))] {
			got, err := bm.SampleBlocks(context.Background(), batch, []int{10, 10, 10}, res.Key)
			if err != nil {
				t.Fatal(err)
			}
			want, err := res.Assemble(batch, epoch.DGL)
			if err != nil {
				t.Fatal(err)
			}
			if err := diffBlocks(got, want); err != nil {
				t.Errorf("%s batch %d: %v", mode, i, err)
			}
		}
		bm.Close()
	}
}

// writeGraphDir reads "u v" lines (# comments), symmetrizes, deduplicates,
// drops self-loops and writes a chunked graph directory.
func writeGraphDir(edges, dir string, chunkSize int64) error {
	f, err := os.Open(edges)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(edges, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		r = zr
	}
	var adj [][]uint32
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		var u, v uint32
		if _, err := fmt.Sscan(s, &u, &v); err != nil {
			return fmt.Errorf("%s:%d: %v", edges, line, err)
		}
		for int(max(u, v)) >= len(adj) {
			adj = append(adj, nil)
		}
		if u != v {
			adj[u] = append(adj[u], v)
			adj[v] = append(adj[v], u)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	w, err := chunkfmt.NewWriter(dir, uint32(len(adj)), chunkSize, chunkfmt.Options{Symmetrize: true, Dedup: true, SelfLoops: chunkfmt.SelfLoopsDrop})
	if err != nil {
		return err
	}
	for _, a := range adj {
		slices.Sort(a)
		if err := w.Append(slices.Compact(a)); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// TestGPUEdgeIDs: with Options.EdgeIDs both engines' edge ids equal
// host.ReferenceEdgeIDs on an R-MAT multigraph (every neighbor one to
// three times, so an id cannot be recovered from the neighbor), with and
// without replacement, device and UVA memory; the samples are those of a
// backend without edge ids.
func TestGPUEdgeIDs(t *testing.T) {
	needGPU(t)
	const n = 1 << 16
	indptr, indices := rmat(n, 400_000, 13)
	mi, mx := multigraph(indptr, indices)
	csr := &host.CSR{Indptr: mi, Indices: mx}
	seeds := pickSeeds(n, 0.08, 5)
	for _, uva := range []bool{false, true} {
		b, err := gpu.OpenCSR("", 0, mi, mx, gpu.Options{UVA: uva, EdgeIDs: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			fan []int
			key epoch.Key
		}{
			{[]int{15, 10, 5}, epoch.Key{Seed: 3, Epoch: 1}},
			{[]int{40, 2}, epoch.Key{Seed: 4, Epoch: 2, Replace: true}},
		} {
			want, err := host.ReferenceEdgeIDs(csr, seeds, tc.fan, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []gpu.Mode{gpu.Fused, gpu.BSP} {
				got, err := b.SampleEpochMode(context.Background(), mode, seeds, tc.fan, tc.key)
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if err := diffResults(got, want); err != nil {
					t.Errorf("uva=%v %s fanouts %v key %+v: %v", uva, mode, tc.fan, tc.key, err)
				}
			}
		}
		b.Close()
	}
}
