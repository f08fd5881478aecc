package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// writeGraph packs g into a graph directory with the given chunk size.
func writeGraph(t testing.TB, g *CSR, chunkSize int64) string {
	return writeGraphDedup(t, g, chunkSize, true)
}

// writeMultigraph packs g without deduplication (repeated neighbors kept).
func writeMultigraph(t testing.TB, g *CSR, chunkSize int64) string {
	return writeGraphDedup(t, g, chunkSize, false)
}

func writeGraphDedup(t testing.TB, g *CSR, chunkSize int64, dedup bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "graph")
	w, err := chunkfmt.NewWriter(dir, g.NumNodes(), chunkSize, chunkfmt.Options{Dedup: dedup, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < g.NumNodes(); v++ {
		nb, _ := g.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openSampler(t testing.TB, dir string, opts Options) *Sampler {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSamplerEqualsReference is the core property: the streamed epoch is
// identical to the in-memory reference, whatever the chunking, number of
// devices, buffer sizes, replacement mode, epoch or seed.
func TestSamplerEqualsReference(t *testing.T) {
	g := randomCSR(6000, 6, 21)
	small := writeGraph(t, g, 512)  // hundreds of chunks
	mid := writeGraph(t, g, 16<<10) // a few dozen
	one := writeGraph(t, g, 64<<20) // a single chunk
	for _, tc := range []struct {
		dir        string
		devices    int
		maxTargets int
		replace    bool
	}{
		{small, 1, 0, false},
		{small, 2, 3, true},
		{small, 4, 1, false},
		{mid, 3, 0, true},
		{mid, 1, 17, false},
		{one, 2, 50, false},
		{one, 1, 0, true},
	} {
		name := fmt.Sprintf("%s-dev%d-mt%d-replace%v", filepath.Base(filepath.Dir(tc.dir)), tc.devices, tc.maxTargets, tc.replace)
		t.Run(name, func(t *testing.T) {
			s := openSampler(t, tc.dir, Options{Devices: tc.devices, MaxTargets: tc.maxTargets})
			if tc.maxTargets > 0 && s.MaxTargets() != tc.maxTargets {
				t.Fatalf("MaxTargets = %d", s.MaxTargets())
			}
			for ep := uint32(0); ep < 2; ep++ {
				key := epoch.Key{Seed: uint64(7 + tc.devices), Epoch: ep, Replace: tc.replace}
				seeds := randomSeeds(g.NumNodes(), 500, uint64(ep))
				fan := []int{15, 10, 5}
				want, err := Reference(g, seeds, fan, key)
				if err != nil {
					t.Fatal(err)
				}
				got, st, err := s.SampleEpochStats(context.Background(), seeds, fan, key)
				if err != nil {
					t.Fatal(err)
				}
				requireEqualResults(t, got, want)
				if err := got.Validate(); err != nil {
					t.Fatal(err)
				}
				chunks := len(s.Manifest().Chunks)
				for _, ls := range st.Layers {
					if ls.ChunksRead+ls.ChunksReused+ls.ChunksSkipped != chunks || ls.ChunksRead+ls.ChunksReused == 0 {
						t.Fatalf("layer %d stats: %+v (%d chunks)", ls.Layer, ls, chunks)
					}
				}
				if s.LastStats() != st {
					t.Fatal("LastStats is not the last epoch's")
				}
			}
		})
	}
}

// TestSamplerSkipsChunks checks that only chunks holding frontier nodes are
// read: a single seed with one layer reads exactly one chunk.
func TestSamplerSkipsChunks(t *testing.T) {
	g := randomCSR(3000, 4, 2)
	dir := writeGraph(t, g, 512)
	s := openSampler(t, dir, Options{})
	_, st, err := s.SampleEpochStats(context.Background(), []uint32{1234}, []int{3}, epoch.Key{})
	if err != nil {
		t.Fatal(err)
	}
	if l := st.Layers[0]; l.ChunksRead != 1 || l.ChunksSkipped != len(s.Manifest().Chunks)-1 || l.BytesRead > 4096 {
		t.Fatalf("one seed: %+v", l)
	}
	// The same chunk again: still in a buffer, not read again.
	_, st, err = s.SampleEpochStats(context.Background(), []uint32{1234}, []int{3}, epoch.Key{Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if l := st.Layers[0]; l.ChunksRead != 0 || l.ChunksReused != 1 || l.BytesRead != 0 {
		t.Fatalf("one seed again: %+v", l)
	}
}

// TestSamplerEdgesExist checks every sampled edge against the graph as
// stored (not the CSR it was built from).
func TestSamplerEdgesExist(t *testing.T) {
	g := randomCSR(4000, 8, 5)
	dir := writeGraph(t, g, 1024)
	var hooked atomic.Int64
	s := openSampler(t, dir, Options{Devices: 2, OnChunk: func(_, _ int, n int64) { hooked.Add(n) }})
	res, st, err := s.SampleEpochStats(context.Background(), randomSeeds(4000, 300, 3), []int{10, 10}, epoch.Key{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if hooked.Load() != st.BytesRead() {
		t.Fatalf("OnChunk saw %d bytes, stats %d", hooked.Load(), st.BytesRead())
	}
	b, err := res.Assemble(res.Layers[0].Frontier[:50], epoch.DGL)
	if err != nil {
		t.Fatal(err)
	}
	for h, hop := range b.Hops {
		for e := range hop.EdgeSrc {
			u, v := hop.Src[hop.EdgeSrc[e]], hop.Dst[hop.EdgeDst[e]]
			nb, _ := g.Neighbors(v)
			if _, ok := slices.BinarySearch(nb, u); !ok {
				t.Fatalf("hop %d: edge %d→%d is not in the graph", h, u, v)
			}
		}
	}
}

func TestSamplerRejects(t *testing.T) {
	g := randomCSR(500, 4, 1)
	dir := writeGraph(t, g, 4096)
	s := openSampler(t, dir, Options{MaxFanout: 8})
	for _, tc := range []struct {
		seeds   []uint32
		fanouts []int
	}{
		{[]uint32{500}, []int{3}},
		{[]uint32{1}, []int{9}},
		{[]uint32{1}, []int{0}},
	} {
		if _, err := s.SampleEpoch(context.Background(), tc.seeds, tc.fanouts, epoch.Key{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v %v: err = %v, want ErrInvalid", tc.seeds, tc.fanouts, err)
		}
	}
	if _, err := Open(dir, Options{Backend: "tpu"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("backend tpu: %v", err)
	}
	if _, err := Open(t.TempDir(), Options{}); err == nil {
		t.Error("opened a directory without a manifest")
	}
	// A truncated edges.chunks is refused at Open.
	if err := os.Truncate(filepath.Join(dir, chunkfmt.ChunksFile), 512); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Error("opened a truncated graph")
	}
}

// TestSamplerCancel cancels mid-epoch: the call returns the context's error
// promptly, leaves no goroutine behind, and the sampler is still usable.
func TestSamplerCancel(t *testing.T) {
	g := randomCSR(20000, 8, 9)
	dir := writeGraph(t, g, 512)
	s := openSampler(t, dir, Options{Devices: 3, MaxTargets: 2})
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.SampleEpoch(ctx, randomSeeds(20000, 5000, 1), []int{10, 10, 10}, epoch.Key{})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	requireNoLeak(t, before)
	// Still usable afterwards, and still correct.
	seeds := randomSeeds(20000, 50, 2)
	want, _ := Reference(g, seeds, []int{4}, epoch.Key{Seed: 1})
	got, err := s.SampleEpoch(context.Background(), seeds, []int{4}, epoch.Key{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	requireEqualResults(t, got, want)
}

func TestSamplerClose(t *testing.T) {
	g := randomCSR(100, 3, 1)
	s, err := Open(writeGraph(t, g, 4096), Options{Devices: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.BufferBytes() <= 0 {
		t.Fatal("no buffers")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SampleEpoch(context.Background(), []uint32{1}, []int{2}, epoch.Key{}); err == nil {
		t.Fatal("sampled after Close")
	}
}

// TestReferenceOverGraphDir checks the reference over the memory-mapped
// graph directory against the CSR it was built from.
func TestReferenceOverGraphDir(t *testing.T) {
	g := randomCSR(3000, 6, 8)
	gd, err := chunkfmt.Open(writeGraph(t, g, 2048))
	if err != nil {
		t.Fatal(err)
	}
	defer gd.Close()
	seeds := randomSeeds(3000, 200, 1)
	key := epoch.Key{Seed: 4, Epoch: 1}
	want, err := Reference(g, seeds, []int{6, 4}, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Reference(GraphAdjacency(gd), seeds, []int{6, 4}, key)
	if err != nil {
		t.Fatal(err)
	}
	requireEqualResults(t, got, want)
}

// TestSamplerBufferedFallback: when the filesystem refuses O_DIRECT (as
// tmpfs did before Linux 6.6), the sampler reads buffered, says so in the
// statistics, and is still exact; Options.Buffered asks for it directly.
func TestSamplerBufferedFallback(t *testing.T) {
	g := randomCSR(2000, 5, 4)
	dir := writeGraph(t, g, 4096)
	seeds := randomSeeds(2000, 100, 1)
	want, _ := Reference(g, seeds, []int{5, 5}, epoch.Key{Seed: 2})

	restore := failpoint.Enable(func(name string) error {
		if name == FailpointOpenDirect {
			return errors.New("invalid argument")
		}
		return nil
	})
	s, err := Open(dir, Options{})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, st, err := s.SampleEpochStats(context.Background(), seeds, []int{5, 5}, epoch.Key{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st.DirectIO || len(st.Notes) == 0 || !strings.Contains(st.Notes[0], "buffered") {
		t.Fatalf("fallback not reported: direct %v, notes %v", st.DirectIO, st.Notes)
	}
	requireEqualResults(t, got, want)

	b := openSampler(t, dir, Options{Buffered: true})
	got, st, err = b.SampleEpochStats(context.Background(), seeds, []int{5, 5}, epoch.Key{Seed: 2})
	if err != nil || st.DirectIO || len(st.Notes) != 0 {
		t.Fatalf("Buffered: %v, direct %v, notes %v", err, st.DirectIO, st.Notes)
	}
	requireEqualResults(t, got, want)
}

// repeatedCSR is randomCSR with every adjacency's neighbors repeated
// (each id up to three times, still sorted): a multigraph, where an edge
// id cannot be recovered from the neighbor id.
func repeatedCSR(n uint32, avgDeg int, seed uint64) *CSR {
	g := randomCSR(n, avgDeg, seed)
	c := &CSR{Indptr: make([]uint64, n+1)}
	for v := uint32(0); v < n; v++ {
		nb, _ := g.Neighbors(v)
		for i, u := range nb {
			for range 1 + (int(v)+i)%3 {
				c.Indices = append(c.Indices, u)
			}
		}
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c
}

// With Options.EdgeIDs the streamed epoch carries the reference's edge
// ids (indptr[node] + the position chosen, from the graph's own CSR, not
// from the kernel's chunk-local index): on a multigraph, with and without
// replacement, over chunk sizes that put nodes in later chunks, several
// devices and launches. Its samples are those of the sampler without edge
// ids, which carries none.
func TestSamplerEdgeIDs(t *testing.T) {
	g := repeatedCSR(3000, 8, 5)
	seeds := randomSeeds(g.NumNodes(), 400, 3)
	fan := []int{12, 6, 3}
	for _, tc := range []struct {
		chunkSize           int64
		devices, maxTargets int
	}{
		{1024, 1, 0}, {4 << 10, 2, 7}, {64 << 20, 1, 0},
	} {
		dir := writeMultigraph(t, g, tc.chunkSize)
		plain := openSampler(t, dir, Options{Devices: tc.devices, MaxTargets: tc.maxTargets})
		withIDs := openSampler(t, dir, Options{Devices: tc.devices, MaxTargets: tc.maxTargets, EdgeIDs: true})
		if n := len(plain.Manifest().Chunks); tc.chunkSize == 1024 && n < 10 {
			t.Fatalf("chunk size %d: %d chunks, want many", tc.chunkSize, n)
		}
		for _, replace := range []bool{false, true} {
			t.Run(fmt.Sprintf("chunk%d-dev%d-mt%d-replace%v", tc.chunkSize, tc.devices, tc.maxTargets, replace), func(t *testing.T) {
				key := epoch.Key{Seed: 11, Epoch: 2, Replace: replace}
				want, err := ReferenceEdgeIDs(g, seeds, fan, key)
				if err != nil {
					t.Fatal(err)
				}
				if err := want.Validate(); err != nil {
					t.Fatal(err)
				}
				got, err := withIDs.SampleEpoch(context.Background(), seeds, fan, key)
				if err != nil {
					t.Fatal(err)
				}
				requireEqualResults(t, got, want)
				off, err := plain.SampleEpoch(context.Background(), seeds, fan, key)
				if err != nil {
					t.Fatal(err)
				}
				for l := range off.Layers {
					if off.Layers[l].EdgeIDs != nil {
						t.Fatalf("layer %d: edge ids without Options.EdgeIDs", l)
					}
					off.Layers[l].EdgeIDs = got.Layers[l].EdgeIDs // compare the rest
				}
				requireEqualResults(t, off, got)
				// A repeated neighbor sampled twice in a row keeps two ids.
				if !hasRepeatedPick(got) {
					t.Fatal("no row took two copies of one neighbor: the test does not exercise multigraph edge ids")
				}
			})
		}
	}
}

// hasRepeatedPick reports whether some row sampled one neighbor at two
// different edge ids.
func hasRepeatedPick(r *epoch.Result) bool {
	for _, ly := range r.Layers {
		for i := 0; i+1 < len(ly.Samples); i++ {
			for j := i + 1; j < (i/ly.Fanout+1)*ly.Fanout; j++ {
				if ly.Samples[i] >= 0 && ly.Samples[i] == ly.Samples[j] && ly.EdgeIDs[i] != ly.EdgeIDs[j] {
					return true
				}
			}
		}
	}
	return false
}
