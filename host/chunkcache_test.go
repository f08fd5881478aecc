package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/walk"
)

// fakeSlot is the fake chunks' read size.
const fakeSlot = 4096

// fakeCached is a stream through a chunk cache of capacity entries over
// fake lanes: a read writes the chunk's id into the entry (which the
// lanes' runEntry samples from) after delay, and fails for the chunks
// failing names while that entry is true. reads counts the reads of each
// chunk.
type fakeCached struct {
	stream
	mu      sync.Mutex
	reads   map[int]int
	failing map[int]bool
	delay   time.Duration
}

func newFakeCached(g *CSR, sp rangeSplit, lanes, mt, capacity int) *fakeCached {
	f := &fakeCached{reads: map[int]int{}, failing: map[int]bool{}}
	f.stream = stream{
		lanes: fakeLanes(g, sp, lanes, mt),
		cache: newChunkCache(int64(capacity)*fakeSlot, fakeSlot, capacity, sp.NumChunks()),
		read: func(c int, buf []byte) (int64, error) {
			f.mu.Lock()
			fail := f.failing[c]
			f.reads[c]++
			f.mu.Unlock()
			time.Sleep(f.delay)
			binary.LittleEndian.PutUint32(buf, 0xdead) // a read under way
			if fail {
				return 0, fmt.Errorf("injected read failure of chunk %d", c)
			}
			binary.LittleEndian.PutUint32(buf, uint32(c))
			return fakeSlot, nil
		},
	}
	return f
}

// takeReads returns the reads per chunk since the last call.
func (f *fakeCached) takeReads() map[int]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reads
	f.reads = map[int]int{}
	return r
}

// servedPass is what the serpentine order and Belady's rule predict for a
// pass over all n chunks with p entries when the previous pass (prev, in
// its order) left its last p chunks cached: the chunks this pass reads,
// and its order.
func servedPass(n, p int, pass int, cached []int) (reads []int, order []int) {
	for c := range n {
		order = append(order, c)
	}
	if pass%2 == 1 {
		slices.Reverse(order)
	}
	for _, c := range order {
		if !slices.Contains(cached, c) {
			reads = append(reads, c)
		}
	}
	return reads, order
}

// lastN is the last p of order (all of it if shorter).
func lastN(order []int, p int) []int { return slices.Clone(order[max(0, len(order)-p):]) }

// TestCachedPassesReadThePredictedChunks: epochs whose every layer wants
// every chunk, streamed through a cache of p entries over 1 to 3 lanes
// with slow reads (so that reads wait for entries in use), read exactly
// the chunks the model predicts — all of them in the first pass, then
// the n−p that the previous pass did not leave cached — and sample what
// the reference does.
func TestCachedPassesReadThePredictedChunks(t *testing.T) {
	const n = 8
	g := randomCSR(4000, 6, 5)
	sp := evenSplit(4000, n)
	seeds := make([]uint32, 0, n)
	for c := range n { // a seed in every chunk: every layer wants every chunk
		seeds = append(seeds, sp.starts[c]+7)
	}
	fan := []int{4, 3, 2}
	for _, tc := range []struct{ lanes, p int }{
		{1, 2}, {1, 3}, {1, 7}, {1, 8}, {1, 11}, {2, 4}, {3, 6}, {3, 8}, {2, 5},
	} {
		t.Run(fmt.Sprintf("lanes%d-entries%d", tc.lanes, tc.p), func(t *testing.T) {
			f := newFakeCached(g, sp, tc.lanes, 5, tc.p)
			f.delay = 200 * time.Microsecond
			var cached []int
			pass := 0
			for ep := range uint32(3) {
				key := epoch.Key{Seed: 9, Epoch: ep}
				want, err := Reference(g, seeds, fan, key)
				if err != nil {
					t.Fatal(err)
				}
				var st Stats
				got, err := sampleEpoch(context.Background(), f.stream, sp, seeds, fan, key, &st, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				requireEqualResults(t, got, want)
				reads := f.takeReads()
				wantReads := map[int]int{}
				for l := range fan {
					r, order := servedPass(n, tc.p, pass, cached)
					for _, c := range r {
						wantReads[c]++
					}
					if ls := st.Layers[l]; ls.ChunksRead != len(r) || ls.ChunksReused != n-len(r) || ls.BytesRead != int64(len(r))*fakeSlot {
						t.Fatalf("epoch %d layer %d: %d read, %d reused, %d bytes; want %d read (%v)", ep, l, ls.ChunksRead, ls.ChunksReused, ls.BytesRead, len(r), r)
					}
					cached = lastN(order, tc.p)
					pass++
				}
				if !mapsEqual(reads, wantReads) {
					t.Fatalf("epoch %d: reads per chunk %v, want %v", ep, reads, wantReads)
				}
			}
			if a := f.cache.allocated(); a > int64(tc.p)*fakeSlot {
				t.Fatalf("%d bytes allocated, over %d entries of %d", a, tc.p, fakeSlot)
			}
		})
	}
}

func mapsEqual(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCachedPassesWithSkippedChunks: frontiers that want some chunks
// only (few seeds, many chunks, launches split small), over several
// lanes and capacities, sample what the reference does, within their
// entries.
func TestCachedPassesWithSkippedChunks(t *testing.T) {
	g := randomCSR(5000, 3, 8)
	for _, tc := range []struct{ lanes, chunks, mt, p int }{
		{1, 60, 3, 2}, {2, 60, 1, 9}, {3, 200, 7, 6}, {4, 30, 1000, 30}, {2, 17, 2, 40},
	} {
		t.Run(fmt.Sprintf("lanes%d-chunks%d-mt%d-entries%d", tc.lanes, tc.chunks, tc.mt, tc.p), func(t *testing.T) {
			sp := evenSplit(5000, tc.chunks)
			f := newFakeCached(g, sp, tc.lanes, tc.mt, tc.p)
			for ep := range uint32(3) {
				key := epoch.Key{Seed: 2, Epoch: ep}
				seeds := randomSeeds(5000, 30, uint64(ep))
				want, err := Reference(g, seeds, []int{3, 2}, key)
				if err != nil {
					t.Fatal(err)
				}
				var st Stats
				got, err := sampleEpoch(context.Background(), f.stream, sp, seeds, []int{3, 2}, key, &st, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				requireEqualResults(t, got, want)
				for _, ls := range st.Layers {
					if ls.ChunksRead+ls.ChunksReused+ls.ChunksSkipped != tc.chunks {
						t.Fatalf("layer %d: %+v", ls.Layer, ls)
					}
				}
			}
			if f.cache.resident() > tc.p || len(f.cache.entries) > tc.p {
				t.Fatalf("%d entries, %d resident, capacity %d", len(f.cache.entries), f.cache.resident(), tc.p)
			}
		})
	}
}

// TestCachedReadFailureLeavesNoEntry: a read that fails midway (the
// entry's bytes half written) fails the pass naming the chunk, leaves no
// entry claiming the chunk, and the next pass reads it again and samples
// what the reference does; every entry that claims a chunk holds that
// chunk's bytes.
func TestCachedReadFailureLeavesNoEntry(t *testing.T) {
	const n = 8
	g := randomCSR(4000, 6, 5)
	sp := evenSplit(4000, n)
	seeds := randomSeeds(4000, 400, 1)
	for _, lanes := range []int{1, 3} {
		t.Run(fmt.Sprintf("lanes%d", lanes), func(t *testing.T) {
			f := newFakeCached(g, sp, lanes, 50, 2*lanes+1)
			f.failing[5] = true
			_, err := sampleEpoch(context.Background(), f.stream, sp, seeds, []int{3}, epoch.Key{}, &Stats{}, nil, nil)
			if err == nil || !errorContains(err, "chunk 5") || !errorContains(err, "injected read failure") {
				t.Fatalf("err = %v", err)
			}
			requireHonestEntries(t, f.cache)
			if f.cache.holding(5) != nil {
				t.Fatal("an entry claims chunk 5, whose read failed")
			}
			f.failing[5] = false
			f.takeReads()
			key := epoch.Key{Epoch: 1}
			want, err := Reference(g, seeds, []int{3, 3}, key)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sampleEpoch(context.Background(), f.stream, sp, seeds, []int{3, 3}, key, &Stats{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			requireEqualResults(t, got, want)
			if f.takeReads()[5] < 1 {
				t.Fatal("chunk 5 was not read again")
			}
			requireHonestEntries(t, f.cache)
		})
	}
}

func errorContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// requireHonestEntries fails if an entry claims a chunk its memory does
// not hold (the fake read writes the id last).
func requireHonestEntries(t *testing.T, c *chunkCache) {
	t.Helper()
	for _, e := range c.entries {
		if e.chunk >= 0 && int(binary.LittleEndian.Uint32(e.mem)) != e.chunk {
			t.Fatalf("entry %d claims chunk %d and holds %#x", e.id, e.chunk, binary.LittleEndian.Uint32(e.mem))
		}
	}
}

// TestCachedCancel: cancelling a cached pass while reads wait for busy
// entries ends it promptly with every goroutine gone.
func TestCachedCancel(t *testing.T) {
	g := randomCSR(4000, 5, 1)
	sp := evenSplit(4000, 100)
	f := newFakeCached(g, sp, 3, 50, 6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs atomic.Int64
	for _, l := range f.lanes {
		fl := l.(*fakeLane)
		fl.delay = 100 * time.Microsecond
		fl.onRun = func(int) {
			if runs.Add(1) == 20 {
				cancel()
			}
		}
	}
	before := runtime.NumGoroutine()
	_, err := sampleEpoch(ctx, f.stream, sp, randomSeeds(4000, 3000, 2), []int{5, 5}, epoch.Key{}, &Stats{}, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	requireNoLeak(t, before)
	requireHonestEntries(t, f.cache)
}

// TestCacheCapacity: a budget buys budget / slot entries, never fewer
// than two per lane nor more than the chunks (or that floor).
func TestCacheCapacity(t *testing.T) {
	const slot = 1 << 20
	for _, tc := range []struct {
		budget       int64
		lanes, n     int
		wantCapacity int
	}{
		{0, 1, 9, 2},
		{0, 3, 9, 6},
		{slot - 1, 1, 9, 2},
		{3*slot + slot/2, 1, 9, 3},
		{9 * slot, 1, 9, 9},
		{100 * slot, 1, 9, 9},
		{100 * slot, 4, 3, 8},
		{5 * slot, 2, 9, 5},
	} {
		if got := cacheCapacity(tc.budget, slot, tc.lanes, tc.n); got != tc.wantCapacity {
			t.Errorf("cacheCapacity(%d, %d, lanes %d, %d chunks) = %d, want %d", tc.budget, slot, tc.lanes, tc.n, got, tc.wantCapacity)
		}
	}
}

// TestAutoChunkCache: every chunk when they fit half of what is
// available, else that half; nothing without a figure.
func TestAutoChunkCache(t *testing.T) {
	m := &chunkfmt.Manifest{Chunks: []chunkfmt.ChunkInfo{{BytesUsed: 1000}, {BytesUsed: 5000}, {BytesUsed: 8192}}}
	for _, tc := range []struct{ avail, want int64 }{
		{0, 0}, {-1, 0}, {1 << 30, 3 * 8192}, {3 * 8192, 3 * 8192 / 2}, {2 * 3 * 8192, 3 * 8192},
	} {
		if got := AutoChunkCache(m, tc.avail); got != tc.want {
			t.Errorf("AutoChunkCache(available %d) = %d, want %d", tc.avail, got, tc.want)
		}
	}
}

// TestChunkCacheBytesPerEpoch: the emulated Sampler over a graph of 8
// chunks, with the cache at 0 (two entries per device), two chunks, a
// quarter of the graph and all of it, on 1 and 3 devices, over two epochs
// whose every layer wants every chunk: each epoch reads exactly the bytes
// the model predicts (the first pass every chunk, each later one the
// chunks the previous pass did not leave cached), the cache stays within
// its budget, and every configuration samples the same epochs, byte for
// byte, as the reference.
func TestChunkCacheBytesPerEpoch(t *testing.T) {
	g := randomCSR(4000, 6, 31)
	dir := writeGraph(t, g, 16<<10)
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	if len(m.Chunks) != n {
		t.Fatalf("%d chunks, want %d", len(m.Chunks), n)
	}
	slot := slotBytes(m)
	seeds := randomSeeds(g.NumNodes(), 100, 4)
	for _, c := range m.Chunks { // a seed in every chunk: every layer wants every chunk
		seeds = append(seeds, c.Start)
	}
	fan := []int{5, 4, 3}
	var graph int64
	for c := range m.Chunks {
		graph += min(roundUpTo(m.Chunks[c].BytesUsed, ioAlign), m.ChunkStoredSize(c))
	}
	var first [2]*epoch.Result
	for _, devices := range []int{1, 3} {
		for _, tc := range []struct {
			name   string
			budget int64
		}{
			{"0", 0}, {"2chunks", 2 * slot}, {"quarter", graph / 4}, {"all", n * slot}, {"more", 1 << 30},
		} {
			t.Run(fmt.Sprintf("devices%d-%s", devices, tc.name), func(t *testing.T) {
				s := openSampler(t, dir, Options{Devices: devices, ChunkCache: tc.budget})
				p := cacheCapacity(tc.budget, slot, devices, n)
				var cached []int
				pass := 0
				for ep := range uint32(2) {
					key := epoch.Key{Seed: 3, Epoch: ep}
					got, st, err := s.SampleEpochStats(context.Background(), seeds, fan, key)
					if err != nil {
						t.Fatal(err)
					}
					if first[ep] == nil {
						want, err := Reference(g, seeds, fan, key)
						if err != nil {
							t.Fatal(err)
						}
						requireEqualResults(t, got, want)
						first[ep] = got
					}
					requireEqualResults(t, got, first[ep])
					var want int64
					for range fan {
						reads, order := servedPass(n, p, pass, cached)
						for _, c := range reads {
							want += s.readSize(c)
						}
						cached = lastN(order, p)
						pass++
					}
					if st.BytesRead() != want {
						t.Fatalf("epoch %d: %d bytes read (%.2f graphs), want %d; layers %+v", ep, st.BytesRead(), float64(st.BytesRead())/float64(graph), want, st.Layers)
					}
					if st.GraphBytes != graph {
						t.Fatalf("GraphBytes %d, want %d", st.GraphBytes, graph)
					}
					c := st.Cache
					if c == nil || c.Slots != p || c.SlotBytes != slot || c.Budget != tc.budget {
						t.Fatalf("cache stats %+v, want %d slots of %d", c, p, slot)
					}
					if limit := max(tc.budget, int64(2*devices)*slot); c.Allocated > limit || c.Allocated > int64(p)*slot || c.Resident > p {
						t.Fatalf("cache holds %d bytes, %d chunks: over its budget %d (%d slots)", c.Allocated, c.Resident, limit, p)
					}
				}
				var lanes int64
				for _, l := range s.lanes {
					lanes += l.bytes()
				}
				if s.BufferBytes() != lanes+s.cache.allocated() {
					t.Fatalf("BufferBytes %d, want the lanes' %d and the cache's %d", s.BufferBytes(), lanes, s.cache.allocated())
				}
			})
		}
	}
}

// TestChunkCacheChecksumFailure: a chunk whose bytes fail their CRC-32C
// fails the epoch and is left in no entry; once repaired, the next epoch
// reads it again and samples what the reference does.
func TestChunkCacheChecksumFailure(t *testing.T) {
	g := randomCSR(4000, 6, 31)
	dir := writeGraph(t, g, 16<<10)
	s := openSampler(t, dir, Options{ChunkCache: 1 << 30})
	m := s.Manifest()
	const bad = 5
	path := filepath.Join(dir, chunkfmt.ChunksFile)
	pos := chunkPos(m, bad, int64(m.Chunks[bad].BytesUsed/4)-1)
	w := readWordAt(t, path, pos)
	writeWordAt(t, path, pos, w^1)
	seeds := randomSeeds(g.NumNodes(), 500, 2)
	_, err := s.SampleEpoch(context.Background(), seeds, []int{4, 4}, epoch.Key{})
	if !errors.Is(err, chunkfmt.ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if e := s.cache.holding(bad); e != nil {
		t.Fatalf("entry %d holds chunk %d, whose read failed its check", e.id, bad)
	}
	writeWordAt(t, path, pos, w)
	key := epoch.Key{Epoch: 1}
	want, err := Reference(g, seeds, []int{4, 4}, key)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := s.SampleEpochStats(context.Background(), seeds, []int{4, 4}, key)
	if err != nil {
		t.Fatal(err)
	}
	requireEqualResults(t, got, want)
	if s.cache.holding(bad) == nil || st.BytesRead() == 0 {
		t.Fatalf("chunk %d not read again: %+v", bad, st.Layers)
	}
}

// TestChunkCacheWalks: walks streamed with the graph in the chunk cache
// equal the reference's, read every chunk at most once whatever the
// passes (node2vec's membership passes search the cached chunks too),
// and a second walk set reads nothing.
func TestChunkCacheWalks(t *testing.T) {
	g := randomRepeatsCSR(1500, 6, 21)
	dir := writeMultigraph(t, g, 4096)
	var starts []uint32
	for v := uint32(0); v < 1500; v += 3 {
		starts = append(starts, v)
	}
	for _, devices := range []int{1, 3} {
		s := openSampler(t, dir, Options{Devices: devices, ChunkCache: 1 << 30})
		graph := s.graphBytes()
		for i, c := range []walk.Config{
			{Mode: walk.Node2Vec, Length: 8, WalksPerNode: 2, Seed: 4, P: 0.5, Q: 2},
			{Mode: walk.DeepWalk, Length: 8, WalksPerNode: 2, Seed: 1},
		} {
			want, err := walk.Reference(g, starts, c)
			if err != nil {
				t.Fatal(err)
			}
			got, st, err := streamWalks(s, starts, c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("devices %d, %v: walks differ from the reference", devices, c)
			}
			membership := 0
			for _, p := range st.Passes {
				if p.Membership {
					membership++
				}
			}
			if c.Mode == walk.Node2Vec && membership == 0 {
				t.Fatal("no membership pass: the test tests nothing of them")
			}
			if i == 0 && st.BytesRead > graph || i > 0 && st.BytesRead != 0 {
				t.Fatalf("devices %d, walk set %d: %d bytes read in %d passes (%d membership), graph %d", devices, i, st.BytesRead, len(st.Passes), membership, graph)
			}
		}
	}
}
