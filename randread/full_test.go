package randread_test

import (
	"context"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/testgraph"
	"github.com/streamsampler/streamsampler/randread"
)

// TestFullEqualsReferenceAndStreamed: layers of fanout −1 (every
// neighbor, DESIGN §3 "Full neighborhoods"), alone and mixed with
// sampled layers, read by random reads (host gather and the SmartSSD
// path's gather kernel; blocks of 512 bytes to 64 KiB, runs of one block
// and more), equal host.ReferenceEdgeIDs' and the streaming sampler's
// epochs bit for bit: CSR-shaped layers with the same row offsets,
// neighbors and edge ids, with and without edge ids and replacement.
func TestFullEqualsReferenceAndStreamed(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(2500, 10, 11)
	g := &host.CSR{Indptr: indptr, Indices: indices}
	dir := writeGraph(t, g, 1<<14, true)
	for _, edgeIDs := range []bool{true, false} {
		hs, err := host.Open(dir, host.Options{EdgeIDs: edgeIDs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hs.Close() })
		for _, o := range []randread.Options{
			{BlockSize: 4096},
			{BlockSize: 512, IO: randread.Pread, MaxRun: 512},
			{BlockSize: 1 << 16},
			{BlockSize: 4096, Kernel: true},
			{BlockSize: 512, Kernel: true, MaxRun: 1024},
		} {
			s := open(t, dir, o)
			for trial, fanouts := range [][]int{{-1}, {-1, 10}, {10, -1}, {3, -1, 2}, {-1, -1}} {
				key := epoch.Key{Seed: 9, Epoch: uint32(trial), Replace: trial == 1}
				seeds := testgraph.RandomSeeds(g.NumNodes(), 5+7*trial, uint64(trial))
				want, err := host.Reference(g, seeds, fanouts, key)
				if edgeIDs {
					want, err = host.ReferenceEdgeIDs(g, seeds, fanouts, key)
				}
				if err != nil {
					t.Fatal(err)
				}
				got, st, err := s.Sample(context.Background(), randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: edgeIDs})
				if err != nil {
					t.Fatalf("options %+v fanouts %v: %v", o, fanouts, err)
				}
				if err := diffResult(got, want); err != nil {
					t.Fatalf("options %+v fanouts %v edge ids %v: against the reference: %v", o, fanouts, edgeIDs, err)
				}
				streamed, err := hs.SampleEpoch(context.Background(), seeds, fanouts, key)
				if err != nil {
					t.Fatal(err)
				}
				if err := diffResult(got, streamed); err != nil {
					t.Fatalf("options %+v fanouts %v edge ids %v: against streaming: %v", o, fanouts, edgeIDs, err)
				}
				if err := got.Validate(); err != nil {
					t.Fatal(err)
				}
				for l, k := range fanouts {
					if ly := got.Layers[l]; k == epoch.AllNeighbors && st.Layers[l].Slots != int64(len(ly.Samples)) {
						t.Fatalf("layer %d: %d slots gathered, %d neighbors", l, st.Layers[l].Slots, len(ly.Samples))
					}
				}
			}
		}
	}
}

// TestFullHub: a full layer over a hub of 10⁶ neighbors (4 MB of
// adjacency) reads the blocks its row spans, in runs of at most MaxRun
// bytes, and returns every neighbor in CSR order with edge ids
// indptr[hub]..indptr[hub]+d−1, on the host gather and on the gather
// kernel.
func TestFullHub(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 MB hub")
	}
	const hubDeg = 1_000_000
	adj := make([][]uint32, hubDeg+2)
	hub := make([]uint32, hubDeg)
	for i := range hub {
		hub[i] = uint32(2 + i)
	}
	adj[1] = hub
	adj[5] = []uint32{1, 7}
	indptr, indices := testgraph.FromAdjacency(adj)
	g := &host.CSR{Indptr: indptr, Indices: indices}
	dir := writeGraph(t, g, 16<<20, false)
	for _, o := range []randread.Options{{BlockSize: 4096, MaxRun: 64 << 10}, {BlockSize: 4096, Kernel: true}} {
		s := open(t, dir, o)
		key := epoch.Key{Seed: 4}
		got, st, err := s.Sample(context.Background(), randread.Request{Seeds: []uint32{1, 5}, Fanouts: []int{-1}, Key: key, EdgeIDs: true})
		if err != nil {
			t.Fatal(err)
		}
		want, err := host.ReferenceEdgeIDs(g, []uint32{1, 5}, []int{-1}, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := diffResult(got, want); err != nil {
			t.Fatal(err)
		}
		ly := got.Layers[0]
		if ly.Offsets[1] != hubDeg || ly.EdgeIDs[0] != int64(indptr[1]) || ly.EdgeIDs[hubDeg-1] != int64(indptr[1])+hubDeg-1 {
			t.Fatalf("hub row: offsets %v, edge ids %d..%d", ly.Offsets, ly.EdgeIDs[0], ly.EdgeIDs[hubDeg-1])
		}
		ls := st.Layers[0]
		rowBlocks := int64(4*hubDeg)/4096 + 1
		minReads := int64(4*hubDeg) / int64(s.Options().MaxRun)
		if ls.Blocks < rowBlocks || ls.Blocks > rowBlocks+2 || ls.Reads < minReads || ls.Reads > ls.Blocks {
			t.Fatalf("%d blocks (the row spans %d), %d reads (MaxRun %d: at least %d)", ls.Blocks, rowBlocks, ls.Reads, s.Options().MaxRun, minReads)
		}
	}
}
