package host

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// openWithProbe opens a Sampler with O_DIRECT, so that Open probes by
// reading chunk 0, and records every chunk read reported through OnChunk.
// On a filesystem that refuses O_DIRECT (tmpfs) there is no probe to
// observe, and the test says so.
func openWithProbe(t *testing.T, dir string, opts Options) (*Sampler, func() map[int]int64) {
	t.Helper()
	var mu sync.Mutex
	seen := map[int]int64{}
	opts.OnChunk = func(_, c int, n int64) { mu.Lock(); seen[c] += n; mu.Unlock() }
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.direct {
		t.Skipf("%s refuses O_DIRECT (%v): no open probe to observe", dir, s.notes)
	}
	return s, func() map[int]int64 {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = map[int]int64{}
		return out
	}
}

// TestBytesReadCountsTheOpenProbe: the statistics count every byte read
// from edges.chunks, the probe read of chunk 0 at Open included. With one
// chunk, epoch 0 reads it once (at Open) and reports that read; later
// layers and epochs reuse it and read nothing.
func TestBytesReadCountsTheOpenProbe(t *testing.T) {
	g := randomCSR(300, 4, 11)
	dir := writeGraph(t, g, 1<<20)
	s, seen := openWithProbe(t, dir, Options{})
	if n := len(s.Manifest().Chunks); n != 1 {
		t.Fatalf("%d chunks, want 1", n)
	}
	chunk0 := s.readSize(0)
	seeds := randomSeeds(300, 40, 2)
	_, st, err := s.SampleEpochStats(context.Background(), seeds, []int{3, 3}, epoch.Key{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l0, l1 := st.Layers[0], st.Layers[1]
	if l0.ChunksRead != 1 || l0.ChunksReused != 0 || l0.BytesRead != chunk0 || l1.ChunksRead != 0 || l1.ChunksReused != 1 || l1.BytesRead != 0 {
		t.Fatalf("epoch 0: layer 0 %+v; layer 1 %+v; want chunk 0's %d bytes read once, by layer 0", l0, l1, chunk0)
	}
	if st.BytesRead() != chunk0 || seen()[0] != chunk0 {
		t.Fatalf("epoch 0: %d bytes read, want %d", st.BytesRead(), chunk0)
	}
	_, st, err = s.SampleEpochStats(context.Background(), seeds, []int{3, 3}, epoch.Key{Seed: 1, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if st.BytesRead() != 0 || st.Layers[0].ChunksReused != 1 || len(seen()) != 0 {
		t.Fatalf("epoch 1 read again: %+v", st.Layers)
	}
}

// TestBytesReadEqualsChunksRead: layer 0 of the first epoch reports
// exactly the read sizes of the chunks holding its targets — chunk 0's
// read at Open counted as its read — or, when chunk 0 holds no target,
// the probe's bytes with the read that replaced chunk 0 in its buffer.
// The statistics agree with OnChunk in every epoch.
func TestBytesReadEqualsChunksRead(t *testing.T) {
	g := randomCSR(3000, 6, 12)
	dir := writeGraph(t, g, 4096)
	for _, tc := range []struct {
		name  string
		seeds []uint32
	}{
		{"probe-used", append(randomSeeds(3000, 200, 3), 0)},
		{"probe-replaced", []uint32{2999}}, // the last chunk only
	} {
		for _, verify := range []bool{false, true} { // the chunk cache; the SmartSSD's path
			t.Run(fmt.Sprintf("%s-verify%v", tc.name, verify), func(t *testing.T) {
				s, seen := openWithProbe(t, dir, Options{Devices: 1, VerifyReads: verify})
				if (s.cache == nil) != verify {
					t.Fatalf("VerifyReads %v, chunk cache %v", verify, s.cache != nil)
				}
				probe := s.readSize(0)
				var want int64
				targeted := 0
				for c, part := range s.index.ByChunk(sortedUnique(tc.seeds)) {
					if len(part) > 0 {
						want += s.readSize(c)
						targeted++
					}
				}
				usesChunk0 := len(s.index.ByChunk(sortedUnique(tc.seeds))[0]) > 0
				if !usesChunk0 {
					want += probe
				}
				for ep := uint32(0); ep < 2; ep++ {
					_, st, err := s.SampleEpochStats(context.Background(), tc.seeds, []int{4, 4}, epoch.Key{Seed: 5, Epoch: ep})
					if err != nil {
						t.Fatal(err)
					}
					var hooked int64
					for _, n := range seen() {
						hooked += n
					}
					if st.BytesRead() != hooked {
						t.Fatalf("epoch %d: statistics %d bytes, OnChunk %d", ep, st.BytesRead(), hooked)
					}
					if ep > 0 {
						continue
					}
					if l := st.Layers[0]; l.ChunksRead != targeted || l.ChunksReused != 0 || l.BytesRead != want {
						t.Fatalf("layer 0: %+v; want %d chunks read, %d bytes (probe %d, chunk 0 a target: %v)", l, targeted, want, probe, usesChunk0)
					}
				}
			})
		}
	}
}
