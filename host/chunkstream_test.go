package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/rng"
)

// rangeSplit partitions node ids into chunks [starts[i], starts[i+1]).
type rangeSplit struct {
	starts []uint32
	n      uint32
}

func (r rangeSplit) NumChunks() int   { return len(r.starts) }
func (r rangeSplit) NumNodes() uint32 { return r.n }
func (r rangeSplit) ByChunk(f []uint32) [][]uint32 {
	out := make([][]uint32, len(r.starts))
	for i := range r.starts {
		end := r.n
		if i+1 < len(r.starts) {
			end = r.starts[i+1]
		}
		lo := sort.Search(len(f), func(j int) bool { return f[j] >= r.starts[i] })
		hi := sort.Search(len(f), func(j int) bool { return f[j] >= end })
		out[i] = f[lo:hi]
	}
	return out
}

// fakeLane samples from an in-memory CSR, checking that the pipeline
// only asks for targets inside the chunk it loaded into the slot.
type fakeLane struct {
	id     int
	g      *CSR
	split  rangeSplit
	mt     int
	slots  [2]int
	failAt int           // chunk whose run fails (-1: none)
	delay  time.Duration // per run
	onRun  func(chunk int)
	loads  atomic.Int64
	opened [2]int64 // bytes "read at open" into each slot, not yet counted
}

func (f *fakeLane) name() string          { return fmt.Sprintf("fake device %d", f.id) }
func (f *fakeLane) maxTargets() int       { return f.mt }
func (f *fakeLane) resident(slot int) int { return f.slots[slot] }
func (f *fakeLane) takeOpenRead(slot int) int64 {
	n := f.opened[slot]
	f.opened[slot] = 0
	return n
}
func (f *fakeLane) load(slot, c int) (int64, error) {
	f.slots[slot] = c
	f.loads.Add(1)
	return 4096, nil
}
func (f *fakeLane) run(slot int, la launch) (time.Duration, time.Duration, error) {
	return f.runChunk(f.slots[slot], la)
}

// runEntry runs over the chunk whose id fakeRead wrote into the entry's
// memory: what the memory holds, not what the cache's books say.
func (f *fakeLane) runEntry(e *cacheEntry, la launch) (time.Duration, time.Duration, error) {
	return f.runChunk(int(binary.LittleEndian.Uint32(e.mem)), la)
}

func (f *fakeLane) runChunk(c int, la launch) (time.Duration, time.Duration, error) {
	targets, out, edges, k, key, replace := la.Targets, la.Out, la.Edges, la.Fanout, la.Key, la.Replace
	if f.onRun != nil {
		f.onRun(c)
	}
	if c == f.failAt {
		return 0, 0, errors.New("injected kernel failure")
	}
	if len(targets) > f.mt || len(out) != len(targets)*k {
		return 0, 0, fmt.Errorf("bad launch: %d targets (max %d), out %d", len(targets), f.mt, len(out))
	}
	time.Sleep(f.delay)
	for i, v := range targets {
		if f.split.ByChunk([]uint32{v})[c] == nil || len(f.split.ByChunk([]uint32{v})[c]) == 0 {
			return 0, 0, fmt.Errorf("target %d not in chunk %d", v, c)
		}
		nb, _ := f.g.Neighbors(v)
		if la.Walks != nil {
			for t := range k {
				out[i*k+t] = -1
				if len(nb) > 0 {
					out[i*k+t] = int32(nb[rng.Candidate(key, la.Walks[i], la.Attempt0+uint32(t), uint32(len(nb)))])
				}
			}
			continue
		}
		rng.Sample(out[i*k:(i+1)*k], nb, v, key, replace)
		if edges != nil {
			// Chunk-local: v's first edge less the chunk's first.
			row := edges[i*k : (i+1)*k]
			rng.Positions(row, len(nb), v, key, replace)
			local := int32(f.g.Indptr[v] - f.g.Indptr[f.split.starts[c]])
			for s, p := range row {
				if p >= 0 {
					row[s] = local + p
				}
			}
		}
	}
	return time.Microsecond, time.Microsecond, nil
}

func fakeLanes(g *CSR, sp rangeSplit, n, mt int) []lane {
	ls := make([]lane, n)
	for i := range ls {
		ls[i] = &fakeLane{id: i, g: g, split: sp, mt: mt, failAt: -1, slots: [2]int{-1, -1}}
	}
	return ls
}

func evenSplit(n uint32, chunks int) rangeSplit {
	sp := rangeSplit{n: n}
	for i := 0; i < chunks; i++ {
		sp.starts = append(sp.starts, uint32(uint64(n)*uint64(i)/uint64(chunks)))
	}
	return sp
}

// TestPipelineMatchesReference runs the scheduler over fake devices: any
// number of lanes, launches split by a tiny maxTargets, hundreds of chunks.
func TestPipelineMatchesReference(t *testing.T) {
	g := randomCSR(5000, 6, 3)
	seeds := randomSeeds(5000, 400, 9)
	for _, tc := range []struct{ lanes, chunks, mt int }{
		{1, 1, 1 << 20}, {1, 300, 3}, {2, 50, 1}, {4, 300, 7}, {3, 17, 1000},
	} {
		t.Run(fmt.Sprintf("lanes%d-chunks%d-mt%d", tc.lanes, tc.chunks, tc.mt), func(t *testing.T) {
			key := epoch.Key{Seed: 3, Epoch: uint32(tc.chunks)}
			want, err := Reference(g, seeds, []int{9, 5, 3}, key)
			if err != nil {
				t.Fatal(err)
			}
			var st Stats
			got, err := sampleEpoch(context.Background(), stream{lanes: fakeLanes(g, evenSplit(5000, tc.chunks), tc.lanes, tc.mt)}, evenSplit(5000, tc.chunks), seeds, []int{9, 5, 3}, key, &st, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			requireEqualResults(t, got, want)
			// With edge ids: the same samples, and the oracle's ids from
			// chunk-local indices plus each chunk's first edge.
			wantE, err := ReferenceEdgeIDs(g, seeds, []int{9, 5, 3}, key)
			if err != nil {
				t.Fatal(err)
			}
			sp := evenSplit(5000, tc.chunks)
			base := make([]int64, tc.chunks+1)
			for c := range sp.starts {
				base[c] = int64(g.Indptr[sp.starts[c]])
			}
			base[tc.chunks] = int64(len(g.Indices))
			gotE, err := sampleEpoch(context.Background(), stream{lanes: fakeLanes(g, sp, tc.lanes, tc.mt)}, sp, seeds, []int{9, 5, 3}, key, &Stats{}, nil, base)
			if err != nil {
				t.Fatal(err)
			}
			requireEqualResults(t, gotE, wantE)
			for _, ls := range st.Layers {
				if ls.ChunksRead+ls.ChunksReused+ls.ChunksSkipped != tc.chunks {
					t.Fatalf("layer %d: read %d + reused %d + skipped %d != %d chunks", ls.Layer, ls.ChunksRead, ls.ChunksReused, ls.ChunksSkipped, tc.chunks)
				}
				if ls.Layer > 0 && ls.ChunksSkipped == 0 && ls.ChunksReused == 0 {
					t.Fatalf("layer %d: no chunk left in a buffer by layer %d was reused", ls.Layer, ls.Layer-1)
				}
				if minLaunch := (ls.Targets + tc.mt - 1) / tc.mt; ls.Launches < minLaunch || ls.Launches < ls.ChunksRead+ls.ChunksReused {
					t.Fatalf("layer %d: %d launches for %d targets at most %d per launch", ls.Layer, ls.Launches, ls.Targets, tc.mt)
				}
			}
		})
	}
}

// requireEqualResults fails unless got and want are identical epochs.
func requireEqualResults(t *testing.T, got, want *epoch.Result) {
	t.Helper()
	if got.Key != want.Key || len(got.Layers) != len(want.Layers) {
		t.Fatalf("key/layers differ: %v/%d vs %v/%d", got.Key, len(got.Layers), want.Key, len(want.Layers))
	}
	for l := range want.Layers {
		g, w := got.Layers[l], want.Layers[l]
		if g.Fanout != w.Fanout || !slices.Equal(g.Frontier, w.Frontier) {
			t.Fatalf("layer %d: frontier differs (%d vs %d nodes)", l, len(g.Frontier), len(w.Frontier))
		}
		if w.Full() {
			// A full layer's rows: the same offsets, then the same
			// neighbors and edge ids (row and position named).
			if !slices.Equal(g.Offsets, w.Offsets) {
				for i := range min(len(g.Offsets), len(w.Offsets)) {
					if g.Offsets[i] != w.Offsets[i] {
						t.Fatalf("layer %d (every neighbor): row offsets differ at %d (row of node %d): %d vs %d", l, i, w.Frontier[max(i-1, 0)], g.Offsets[i], w.Offsets[i])
					}
				}
				t.Fatalf("layer %d (every neighbor): %d row offsets, want %d", l, len(g.Offsets), len(w.Offsets))
			}
			if len(g.Samples) != len(w.Samples) || len(g.EdgeIDs) != len(w.EdgeIDs) {
				t.Fatalf("layer %d (every neighbor): %d samples / %d edge ids, want %d / %d", l, len(g.Samples), len(g.EdgeIDs), len(w.Samples), len(w.EdgeIDs))
			}
			for i := range w.Frontier {
				lo, hi := w.Span(i)
				if !slices.Equal(g.Samples[lo:hi], w.Samples[lo:hi]) {
					t.Fatalf("layer %d (every neighbor): row %d (node %d) differs: %v vs %v", l, i, w.Frontier[i], g.Samples[lo:hi], w.Samples[lo:hi])
				}
				if (g.EdgeIDs == nil) != (w.EdgeIDs == nil) || (w.EdgeIDs != nil && !slices.Equal(g.EdgeIDs[lo:hi], w.EdgeIDs[lo:hi])) {
					t.Fatalf("layer %d (every neighbor): row %d (node %d) edge ids differ: %v vs %v", l, i, w.Frontier[i], g.EdgeIDs, w.EdgeIDs)
				}
			}
			continue
		}
		if g.Offsets != nil {
			t.Fatalf("layer %d: fanout %d with row offsets", l, g.Fanout)
		}
		if i := firstDiff(g.Samples, w.Samples); i >= 0 {
			t.Fatalf("layer %d: samples differ at row %d (node %d): %v vs %v", l, i/w.Fanout, w.Frontier[i/w.Fanout],
				g.Samples[i/w.Fanout*w.Fanout:][:w.Fanout], w.Samples[i/w.Fanout*w.Fanout:][:w.Fanout])
		}
		if (g.EdgeIDs == nil) != (w.EdgeIDs == nil) {
			t.Fatalf("layer %d: edge ids present %v, want %v", l, g.EdgeIDs != nil, w.EdgeIDs != nil)
		}
		if !slices.Equal(g.EdgeIDs, w.EdgeIDs) {
			for i := range min(len(g.EdgeIDs), len(w.EdgeIDs)) {
				if g.EdgeIDs[i] != w.EdgeIDs[i] {
					t.Fatalf("layer %d: edge ids differ at row %d (node %d) slot %d: %d vs %d", l, i/w.Fanout, w.Frontier[i/w.Fanout], i%w.Fanout, g.EdgeIDs[i], w.EdgeIDs[i])
				}
			}
			t.Fatalf("layer %d: %d edge ids, want %d", l, len(g.EdgeIDs), len(w.EdgeIDs))
		}
	}
	if !slices.Equal(got.Final, want.Final) {
		t.Fatal("final frontier differs")
	}
}

func firstDiff(a, b []int32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func TestPipelineDeviceErrorNamesDeviceAndChunk(t *testing.T) {
	g := randomCSR(2000, 5, 1)
	sp := evenSplit(2000, 40)
	lanes := fakeLanes(g, sp, 2, 5)
	for _, l := range lanes {
		l.(*fakeLane).failAt = 13
	}
	before := runtime.NumGoroutine()
	_, err := sampleEpoch(context.Background(), stream{lanes: lanes}, sp, randomSeeds(2000, 1500, 1), []int{4}, epoch.Key{}, &Stats{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "chunk 13") || !strings.Contains(err.Error(), "fake device") || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("err = %v", err)
	}
	requireNoLeak(t, before)
}

func TestPipelineCancel(t *testing.T) {
	g := randomCSR(4000, 5, 1)
	sp := evenSplit(4000, 200)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs atomic.Int64
	lanes := fakeLanes(g, sp, 3, 50)
	for _, l := range lanes {
		fl := l.(*fakeLane)
		fl.delay = 100 * time.Microsecond
		fl.onRun = func(int) {
			if runs.Add(1) == 20 {
				cancel()
			}
		}
	}
	before := runtime.NumGoroutine()
	_, err := sampleEpoch(ctx, stream{lanes: lanes}, sp, randomSeeds(4000, 3000, 2), []int{5, 5}, epoch.Key{}, &Stats{}, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := runs.Load(); n > 20+2*3 {
		t.Fatalf("%d runs after cancelling at 20: not cancelled at chunk granularity", n)
	}
	requireNoLeak(t, before)
}

// requireNoLeak waits briefly for goroutines to wind down, then fails if
// more are alive than before.
func requireNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// globalEdges adds the chunk's first edge and refuses an index outside the
// chunk's edges or one that disagrees with its sample about the slot being
// empty, naming node and slot.
func TestGlobalEdges(t *testing.T) {
	targets := []uint32{40, 41}
	samples := []int32{7, -1, 8, 9}
	dst := make([]int64, 4)
	if err := globalEdges(dst, []int32{0, -1, 4, 5}, samples, targets, 2, 3, 100, 6); err != nil {
		t.Fatal(err)
	}
	if want := []int64{100, -1, 104, 105}; !slices.Equal(dst, want) {
		t.Fatalf("got %v, want %v", dst, want)
	}
	for _, tc := range []struct {
		local []int32
		want  string
	}{
		{[]int32{0, -1, 4, 6}, "node 41, slot 1: edge index 6"},
		{[]int32{0, 2, 4, 5}, "node 40, slot 1: edge index 2 for sample -1"},
		{[]int32{-1, -1, 4, 5}, "node 40, slot 0: edge index -1 for sample 7"},
		{[]int32{0, -1, -2, 5}, "node 41, slot 0: edge index -2"},
	} {
		err := globalEdges(dst, tc.local, samples, targets, 2, 3, 100, 6)
		if !errors.Is(err, ErrBadEdge) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want ErrBadEdge naming %q", tc.local, err, tc.want)
		}
	}
}
