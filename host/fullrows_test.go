package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
)

// Full layers (fanout -1) streamed through the emulated devices equal the
// reference exactly, samples, row offsets and edge ids: alone and mixed
// with sampled layers, on a multigraph (repeated neighbors keep their own
// edge ids), over chunk sizes that put rows in many chunks, 1 and 3
// devices, launches small enough that rows span launches (MaxTargets 1
// and 3: a launch's result buffer then holds 64 or 192 neighbors; the
// graph has rows of up to a few hundred), the
// chunk cache and the SmartSSD path (VerifyReads: the lanes' own
// buffers), with and without replacement (which a full layer ignores).
func TestSamplerFullLayersEqualReference(t *testing.T) {
	g := withHubs(repeatedCSR(2500, 12, 9), 300, 7)
	seeds := randomSeeds(g.NumNodes(), 40, 4)
	small := writeMultigraph(t, g, 2048)
	one := writeMultigraph(t, g, 64<<20)
	for _, tc := range []struct {
		dir                 string
		devices, maxTargets int
		verify              bool
	}{
		{small, 1, 0, false},
		{small, 3, 1, false},
		{small, 1, 3, true},
		{small, 3, 0, true},
		{one, 3, 2, false},
		{one, 1, 0, false},
	} {
		for _, edgeIDs := range []bool{false, true} {
			name := fmt.Sprintf("%s-dev%d-mt%d-verify%v-eids%v", filepath.Base(filepath.Dir(tc.dir)), tc.devices, tc.maxTargets, tc.verify, edgeIDs)
			t.Run(name, func(t *testing.T) {
				s := openSampler(t, tc.dir, Options{Devices: tc.devices, MaxTargets: tc.maxTargets, VerifyReads: tc.verify, EdgeIDs: edgeIDs})
				for i, fan := range [][]int{{-1}, {-1, 3}, {4, -1}, {-1, -1}, {2, -1, 2}} {
					key := epoch.Key{Seed: 5, Epoch: uint32(i), Replace: i%2 == 1}
					var want *epoch.Result
					var err error
					if edgeIDs {
						want, err = ReferenceEdgeIDs(g, seeds, fan, key)
					} else {
						want, err = Reference(g, seeds, fan, key)
					}
					if err != nil {
						t.Fatal(err)
					}
					if err := want.Validate(); err != nil {
						t.Fatalf("fanouts %v: the reference is invalid: %v", fan, err)
					}
					got, st, err := s.SampleEpochStats(context.Background(), seeds, fan, key)
					if err != nil {
						t.Fatalf("fanouts %v: %v", fan, err)
					}
					requireEqualResults(t, got, want)
					if err := got.Validate(); err != nil {
						t.Fatal(err)
					}
					for l, ls := range st.Layers {
						ly := &got.Layers[l]
						if ls.SampledSlots != countValid(ly.Samples) || ls.ResultBytes != layerBytes(ly) || ls.ResultBytes <= 0 {
							t.Fatalf("fanouts %v layer %d: stats %+v for %d samples, %d bytes", fan, l, ls, len(ly.Samples), layerBytes(ly))
						}
						// With one target a launch (room for 64 neighbors),
						// a row longer than that spans launches.
						if long := longestRow(ly); tc.maxTargets == 1 && ly.Full() && long > 64 && ls.Launches <= ls.Targets {
							t.Fatalf("fanouts %v layer %d: %d launches for %d targets, a row of %d: no row spanned launches", fan, l, ls.Launches, ls.Targets, long)
						}
					}
				}
			})
		}
	}
}

// longestRow is the longest row of a layer.
func longestRow(ly *epoch.Layer) int {
	n := 0
	for i := range ly.Frontier {
		lo, hi := ly.Span(i)
		n = max(n, hi-lo)
	}
	return n
}

// countValid counts the non-negative samples (every sample of a full
// layer).
func countValid(samples []int32) int64 {
	var n int64
	for _, s := range samples {
		if s >= 0 {
			n++
		}
	}
	return n
}

// withHubs gives every every-th node of g a row of deg neighbors (node
// ids cycling from the node on, sorted), so that rows longer than a small
// launch's room are common.
func withHubs(g *CSR, deg int, every uint32) *CSR {
	n := g.NumNodes()
	c := &CSR{Indptr: make([]uint64, n+1)}
	for v := uint32(0); v < n; v++ {
		nb, _ := g.Neighbors(v)
		if v%every == 0 {
			row := make([]uint32, deg)
			for i := range row {
				row[i] = (v + uint32(i)) % n
			}
			slices.Sort(row)
			nb = row
		}
		c.Indices = append(c.Indices, nb...)
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c
}

// hubCSR is a graph of n nodes whose node hub has degree hubDeg (its
// neighbors every node, each about hubDeg/n times in a row: a sorted
// multigraph row), every other node a few neighbors, among them the hub.
func hubCSR(n uint32, hub uint32, hubDeg int) *CSR {
	c := &CSR{Indptr: make([]uint64, n+1)}
	for v := uint32(0); v < n; v++ {
		if v == hub {
			for i := range hubDeg {
				c.Indices = append(c.Indices, uint32(uint64(i)*uint64(n)/uint64(hubDeg)))
			}
		} else {
			c.Indices = append(c.Indices, min(hub, (v+1)%n), max(hub, (v+1)%n))
			if v%3 == 0 {
				c.Indices = append(c.Indices, (v+7)%n)
				slices.Sort(c.Indices[c.Indptr[v]:])
			}
		}
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c
}

// A hub of degree 10^6 in a small graph, sampled with fanout -1 through
// the emulated device and assembled: no buffer is sized by the hub. The
// launches hold a few hundred neighbors each (MaxTargets 4), so the hub's
// row streams through thousands of copy-all launches that each resume
// where the last stopped (the chunk is 8 MiB: a chunk holds a node's
// whole adjacency, 4 MB here); the
// epoch equals the reference (edge ids included), the hub's row is its
// whole adjacency in CSR order, and a minibatch of seeds next to the hub
// has every one of the hub's edges once, under both semantics.
func TestSamplerFullLayerHub(t *testing.T) {
	if testing.Short() {
		t.Skip("a million-neighbor hub")
	}
	const n, hub, deg = 3000, 1234, 1_000_000
	g := hubCSR(n, hub, deg)
	dir := writeMultigraph(t, g, 8<<20)
	seeds := []uint32{hub - 1, hub, 17}
	key := epoch.Key{Seed: 3, Epoch: 1}
	want, err := ReferenceEdgeIDs(g, seeds, []int{-1, 2}, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, devices := range []int{1, 3} {
		t.Run(fmt.Sprintf("dev%d", devices), func(t *testing.T) {
			s := openSampler(t, dir, Options{Devices: devices, MaxTargets: 4, EdgeIDs: true})
			start := time.Now()
			got, st, err := s.SampleEpochStats(context.Background(), seeds, []int{-1, 2}, key)
			if err != nil {
				t.Fatal(err)
			}
			requireEqualResults(t, got, want)
			ly := &got.Layers[0]
			row, ok := slices.BinarySearch(ly.Frontier, hub)
			if !ok {
				t.Fatal("hub not in frontier 0")
			}
			lo, hi := ly.Span(row)
			nb, _ := g.Neighbors(hub)
			if hi-lo != deg || !slices.Equal(ly.Samples[lo:hi], rngAll(nb)) {
				t.Fatalf("hub row: %d neighbors, want its %d in CSR order", hi-lo, deg)
			}
			// A launch has room for (4·64·2 + 4 + 2 − 2 − n)/2 neighbors
			// with edge ids, n its targets: at most 258.
			if ls, most := st.Layers[0], (4*hls.MaxFanout*2+4)/2; ls.Launches < (deg+most-1)/most {
				t.Fatalf("%d launches for a %d-neighbor row in launches of at most %d: the row did not stream", ls.Launches, deg, most)
			}
			if buf := s.BufferBytes(); buf > 64<<20 {
				t.Fatalf("buffers of %d bytes", buf)
			}
			for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
				b, err := got.Assemble([]uint32{hub - 1}, sem)
				if err != nil {
					t.Fatal(err)
				}
				// hop 1: hub-1's own row (it holds the hub); hop 2 expands the
				// hub (DGL: all of src; PyG: the new nodes, the hub among
				// them) with fanout 2, so the hub's edges are in hop 1's
				// reverse only: check hop 1 holds hub-1's whole row, once.
				requireFullHop(t, g, &b.Hops[0], 0, ly)
			}
			// A minibatch whose first hop expands the hub itself.
			for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
				b, err := got.Assemble([]uint32{hub}, sem)
				if err != nil {
					t.Fatal(err)
				}
				requireFullHop(t, g, &b.Hops[0], 0, ly)
				if len(b.Hops[0].EdgeSrc) != deg {
					t.Fatalf("%v: hub's hop has %d edges, want %d", sem, len(b.Hops[0].EdgeSrc), deg)
				}
			}
			t.Logf("hub of degree %d, %d devices: epoch in %v, %d launches, result %d bytes", deg, devices, time.Since(start), st.Layers[0].Launches, st.ResultBytes())
		})
	}
}

// rngAll is the definition of a full row: the adjacency as int32s.
func rngAll(nb []uint32) []int32 {
	out := make([]int32, len(nb))
	for i, v := range nb {
		out[i] = int32(v)
	}
	return out
}

// requireFullHop checks a hop of a full layer against the graph itself:
// each destination's edges, in order, are its whole adjacency (sources by
// global id), each edge id indptr[node]+p exactly once.
func requireFullHop(t *testing.T, g *CSR, hop *epoch.Hop, l int, ly *epoch.Layer) {
	t.Helper()
	if !ly.Full() {
		t.Fatalf("layer %d is not full", l)
	}
	e := 0
	for i, v := range hop.Dst {
		nb, _ := g.Neighbors(v)
		for p, u := range nb {
			if e >= len(hop.EdgeSrc) || int(hop.EdgeDst[e]) != i || hop.Src[hop.EdgeSrc[e]] != u {
				t.Fatalf("hop over layer %d: node %d's neighbor %d (position %d) is not edge %d", l, v, u, p, e)
			}
			if hop.EdgeIDs != nil && hop.EdgeIDs[e] != int64(g.Indptr[v])+int64(p) {
				t.Fatalf("hop over layer %d: node %d position %d: edge id %d, want %d", l, v, p, hop.EdgeIDs[e], int64(g.Indptr[v])+int64(p))
			}
			e++
		}
	}
	if e != len(hop.EdgeSrc) {
		t.Fatalf("hop over layer %d: %d edges, the destinations have %d", l, len(hop.EdgeSrc), e)
	}
}

// A device whose copy-all status says it made no progress, or stops in a
// row at a position its counts contradict, is an error naming the chunk
// and the node, never an endless relaunch.
func TestCheckProgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pr     hls.AllProgress
		counts []int32
		skip   uint32
		ok     bool
	}{
		{"done", hls.AllProgress{Stop: 2, Words: 5}, []int32{3, 2}, 0, true},
		{"stopped in row", hls.AllProgress{Stop: 1, Resume: 4, Words: 7}, []int32{3, 4}, 0, true},
		{"stopped in first row after skip", hls.AllProgress{Stop: 0, Resume: 9, Words: 4}, []int32{4, 0}, 5, true},
		{"stopped at a row's start", hls.AllProgress{Stop: 1, Resume: 0, Words: 3}, []int32{3, 0}, 0, true},
		{"no progress", hls.AllProgress{Stop: 0, Resume: 5, Words: 0}, []int32{0, 0}, 5, false},
		{"resume disagrees", hls.AllProgress{Stop: 1, Resume: 3, Words: 7}, []int32{3, 4}, 0, false},
		{"resume ignores skip", hls.AllProgress{Stop: 0, Resume: 4, Words: 4}, []int32{4, 0}, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkProgress(tc.pr, tc.counts, len(tc.counts), tc.skip)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, hls.ErrBadOutput)) {
				t.Fatalf("checkProgress(%+v, %v, skip %d) = %v, want ok %v", tc.pr, tc.counts, tc.skip, err, tc.ok)
			}
		})
	}
}

// Fanouts other than 1..64 and -1 are refused, naming the layer.
func TestFullFanoutValidation(t *testing.T) {
	g := randomCSR(50, 3, 1)
	for _, fan := range [][]int{{-2}, {0, -1}, {-1, 65}} {
		if _, err := Reference(g, []uint32{1}, fan, epoch.Key{}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("fanouts %v: %v, want ErrInvalid", fan, err)
		}
	}
	if _, err := Reference(g, []uint32{1}, []int{-1, 64}, epoch.Key{}); err != nil {
		t.Fatal(err)
	}
}

// SampleBlocks with a full hop takes every neighbor of each destination,
// as the epoch's assembly does.
func TestSampleBlocksFull(t *testing.T) {
	g := repeatedCSR(400, 5, 2)
	seeds := []uint32{3, 99, 250}
	key := epoch.Key{Seed: 1}
	for _, fan := range [][]int{{-1}, {-1, 2}, {3, -1}} {
		b, err := SampleBlocks(g, seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Reference(g, seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.Assemble(seeds, epoch.DGL)
		if err != nil {
			t.Fatal(err)
		}
		for h := range want.Hops {
			x, y := &b.Hops[h], &want.Hops[h]
			if !slices.Equal(x.Dst, y.Dst) || !slices.Equal(x.Src, y.Src) || !slices.Equal(x.EdgeSrc, y.EdgeSrc) || !slices.Equal(x.EdgeDst, y.EdgeDst) {
				t.Fatalf("fanouts %v hop %d: SampleBlocks differs from the assembled epoch", fan, h+1)
			}
		}
	}
}
