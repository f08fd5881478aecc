package gpu_test

import (
	"context"
	"errors"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/host"
)

// fullFanouts are the layer mixes the full-layer tests run: a full layer
// alone, first, last, between sampled layers, and twice.
var fullFanouts = [][]int{{-1}, {-1, 10}, {10, -1}, {5, -1, 3}, {-1, -1}}

// hubGraph is an R-MAT graph plus one hub, node 0, whose in-neighbors are
// every other node (a row far longer than any fixed fanout), with
// duplicate edges kept (multigraph), so that full rows repeat neighbors.
func hubGraph(n uint32, edges int) ([]uint64, []uint32) {
	mi, mx := multigraph(rmat(n, edges, 5))
	indptr := make([]uint64, 1, n+1)
	indices := make([]uint32, 0, uint64(len(mx))+uint64(n))
	for v := uint32(0); v < n; v++ {
		if v == 0 {
			for u := uint32(1); u < n; u++ {
				indices = append(indices, u)
			}
		} else {
			indices = append(indices, mx[mi[v]:mi[v+1]]...)
		}
		indptr = append(indptr, uint64(len(indices)))
	}
	return indptr, indices
}

// checkFull compares epochs with full layers (fanout -1) of b with
// host.Reference (host.ReferenceEdgeIDs where b keeps edge ids), in both
// engines: the fused engine hands such an epoch to the BSP engine.
func checkFull(t *testing.T, b *gpu.Backend, csr *host.CSR, seeds []uint32, edgeIDs bool) {
	t.Helper()
	for _, fan := range fullFanouts {
		for _, key := range []epoch.Key{{Seed: 9, Epoch: 2}, {Seed: 3, Epoch: 1, Replace: true}} {
			want, err := host.Reference(csr, seeds, fan, key)
			if edgeIDs {
				want, err = host.ReferenceEdgeIDs(csr, seeds, fan, key)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []gpu.Mode{gpu.Fused, gpu.BSP} {
				got, err := b.SampleEpochMode(context.Background(), mode, seeds, fan, key)
				if err != nil {
					t.Fatalf("%s fanouts %v: %v", mode, fan, err)
				}
				if err := diffResults(got, want); err != nil {
					t.Errorf("%s fanouts %v key %+v edge ids %v: %v", mode, fan, key, edgeIDs, err)
				}
				if err := got.Validate(); err != nil {
					t.Errorf("%s fanouts %v: %v", mode, fan, err)
				}
			}
		}
	}
}

// Full layers through the library's ABI (ssg_layer_sizes,
// ssg_fetch_offsets) with the CPU stand-in: the Go side sizes, slices and
// checks variable-length rows exactly as host.Reference lays them out,
// edge ids included, with a hub whose row is every other node.
func TestFullLayersWithCPUStandIn(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	const n = 3000
	indptr, indices := hubGraph(n, 20000)
	csr := &host.CSR{Indptr: indptr, Indices: indices}
	seeds := append(pickSeeds(n, 0.02, 4), 0)
	for _, ids := range []bool{false, true} {
		b, err := gpu.OpenCSR(path, 0, indptr, indices, gpu.Options{EdgeIDs: ids})
		if err != nil {
			t.Fatal(err)
		}
		checkFull(t, b, csr, seeds, ids)
		b.Close()
	}
}

// A fanout outside 1..64 that is not -1 is refused before the library is
// reached, naming the layer; -1 is not.
func TestFanoutRange(t *testing.T) {
	needCgo(t)
	b, err := gpu.OpenCSR(buildFake(t, "libfake.so"), 0, []uint64{0, 1, 2}, []uint32{1, 0}, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, fan := range [][]int{{0}, {-2}, {65}, {10, -3}} {
		if _, err := b.SampleEpoch(context.Background(), []uint32{1}, fan, epoch.Key{}); !errors.Is(err, gpu.ErrInvalid) {
			t.Errorf("fanouts %v: %v, want ErrInvalid", fan, err)
		}
	}
	if _, err := b.SampleEpoch(context.Background(), []uint32{1}, []int{-1, 64}, epoch.Key{}); err != nil {
		t.Errorf("fanouts [-1 64]: %v", err)
	}
}

// TestGPUFullLayers is TestFullLayersWithCPUStandIn on a CUDA device, in
// device memory and over UVA, with a hub of degree 10^6: its row is
// copied by the whole grid, never into a buffer of a fixed fanout.
func TestGPUFullLayers(t *testing.T) {
	needGPU(t)
	const n = 1 << 20
	indptr, indices := hubGraph(n, 4_000_000)
	csr := &host.CSR{Indptr: indptr, Indices: indices}
	seeds := append(pickSeeds(n, 0.002, 6), 0)
	for _, o := range []gpu.Options{{}, {EdgeIDs: true}, {UVA: true}} {
		b, err := gpu.OpenCSR("", 0, indptr, indices, o)
		if err != nil {
			t.Fatal(err)
		}
		checkFull(t, b, csr, seeds, o.EdgeIDs)
		res, err := b.SampleEpoch(context.Background(), seeds, []int{-1}, epoch.Key{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("options %+v: one full layer of %d nodes → %d neighbors; GPU %v ms", o, len(res.Layers[0].Frontier), len(res.Layers[0].Samples), b.Timings())
		b.Close()
	}
}
