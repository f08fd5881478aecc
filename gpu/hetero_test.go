package gpu_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
)

// typedCSR is a relation's in-edge store over rows max(src, dst) nodes:
// each of the dst type's first dst rows takes edges neighbors below src
// (an R-MAT graph's rows, its ids folded below src), the rows beyond dst
// empty, as heterogeneous directories store relations.
func typedCSR(src, dst uint32, edges int, seed uint64) *host.CSR {
	n := max(src, dst)
	indptr, indices := rmat(n, edges, seed)
	c := &host.CSR{Indptr: make([]uint64, 1, n+1)}
	for v := uint32(0); v < n; v++ {
		if v < dst {
			row := make([]uint32, 0, indptr[v+1]-indptr[v])
			for _, u := range indices[indptr[v]:indptr[v+1]] {
				row = append(row, u%src)
			}
			slices.Sort(row)
			c.Indices = append(c.Indices, row...)
		}
		c.Indptr = append(c.Indptr, uint64(len(c.Indices)))
	}
	return c
}

// checkHetero samples a heterogeneous epoch (two node types, three
// relations, a self relation among them) with one GPU Backend per
// relation, opened from lib, and compares with heterosample.Reference:
// each relation's layers through the keyed ABI (ssg_sample_keyed) under
// its relation key, full layers and edge ids included.
func checkHetero(t *testing.T, lib string, o gpu.Options) {
	t.Helper()
	schema := &heteroepoch.Schema{
		NodeTypes: []heteroepoch.NodeType{{Name: "author", Count: 3000}, {Name: "paper", Count: 2000}},
		Relations: []heteroepoch.Relation{{Src: "author", Name: "writes", Dst: "paper"},
			{Src: "paper", Name: "cites", Dst: "paper"}, {Src: "paper", Name: "rev_writes", Dst: "author"}},
	}
	csrs := []*host.CSR{typedCSR(3000, 2000, 20000, 1), typedCSR(2000, 2000, 16000, 2), typedCSR(2000, 3000, 20000, 3)}
	var rels []heterosample.LayerSampler
	var graphs []host.Adjacency
	for r, c := range csrs {
		b, err := gpu.OpenCSR(lib, 0, c.Indptr, c.Indices, o)
		if err != nil {
			t.Fatalf("relation %d: %v", r, err)
		}
		t.Cleanup(func() { b.Close() })
		rels, graphs = append(rels, b), append(graphs, c)
	}
	seeds := []heteroepoch.Seeds{{Type: "paper", Nodes: pickSeeds(2000, 0.05, 7)}}
	for _, fan := range []map[string][]int{
		{"author___writes___paper": {5, 3}, "paper___cites___paper": {10, 2}, "paper___rev_writes___author": {4, 4}},
		{"author___writes___paper": {-1, 3}, "paper___cites___paper": {10, -1}, "paper___rev_writes___author": {0, 2}},
	} {
		fanouts, err := schema.FanoutsFromMap(fan, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []epoch.Key{{Seed: 5, Epoch: 1}, {Seed: 6, Epoch: 2, Replace: true}} {
			got, err := heterosample.Sample(context.Background(), schema, rels, seeds, fanouts, key)
			if err != nil {
				t.Fatal(err)
			}
			want, err := heterosample.Reference(schema, graphs, seeds, fanouts, key, o.EdgeIDs)
			if err != nil {
				t.Fatal(err)
			}
			if err := diffHetero(got, want); err != nil {
				t.Errorf("fanouts %v key %+v options %+v: %v", fan, key, o, err)
			}
		}
	}
}

// diffHetero compares two heterogeneous results layer by layer and
// relation by relation (diffResults on each relation's layer).
func diffHetero(got, want *heteroepoch.Result) error {
	if got.Key != want.Key || len(got.Layers) != len(want.Layers) {
		return fmt.Errorf("key %+v, %d layers; want %+v, %d", got.Key, len(got.Layers), want.Key, len(want.Layers))
	}
	for l := range want.Layers {
		for r := range want.Layers[l] {
			g := &epoch.Result{Key: got.Key, Layers: []epoch.Layer{got.Layers[l][r]}}
			w := &epoch.Result{Key: want.Key, Layers: []epoch.Layer{want.Layers[l][r]}}
			if err := diffResults(g, w); err != nil {
				return fmt.Errorf("layer %d relation %d: %w", l, r, err)
			}
		}
	}
	for l := range want.Frontiers {
		for t := range want.Frontiers[l] {
			if !slices.Equal(got.Frontiers[l][t], want.Frontiers[l][t]) {
				return fmt.Errorf("layer %d: node type %d's frontier differs", l, t)
			}
		}
	}
	return nil
}

// Heterogeneous epochs on GPU Backends (one per relation, layers under the
// relations' keys) equal heterosample.Reference, through the CPU
// stand-in of the library here.
func TestHeteroWithCPUStandIn(t *testing.T) {
	needCgo(t)
	lib := buildFake(t, "libfake.so")
	checkHetero(t, lib, gpu.Options{})
	checkHetero(t, lib, gpu.Options{EdgeIDs: true, Mode: gpu.BSP})
}

// TestGPUHetero is TestHeteroWithCPUStandIn on a CUDA device, both
// engines, with edge ids.
func TestGPUHetero(t *testing.T) {
	needGPU(t)
	checkHetero(t, "", gpu.Options{})
	checkHetero(t, "", gpu.Options{Mode: gpu.BSP, EdgeIDs: true})
}
