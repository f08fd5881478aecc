package chunkfmt

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestNewIndexErrors(t *testing.T) {
	cases := []struct {
		starts []uint32
		n      uint32
	}{
		{[]uint32{0}, 0},
		{nil, 5},
		{[]uint32{1, 3}, 5},
		{[]uint32{0, 3, 3}, 5},
		{[]uint32{0, 3, 2}, 5},
		{[]uint32{0, 5}, 5},
	}
	for _, tc := range cases {
		if _, err := NewIndex(tc.starts, tc.n); err == nil {
			t.Errorf("NewIndex(%v, %d) accepted", tc.starts, tc.n)
		}
	}
	if _, err := ParseIndex([]byte{0, 0, 0}, 1); err == nil {
		t.Error("ParseIndex accepted 3 bytes")
	}
}

func TestIndexChunkOfSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 200; iter++ {
		n := 1 + r.Uint32N(1000)
		starts := []uint32{0}
		for s := uint32(0); ; {
			s += 1 + r.Uint32N(1+n/uint32(1+r.IntN(20)))
			if s >= n {
				break
			}
			starts = append(starts, s)
		}
		ix, err := NewIndex(starts, n)
		if err != nil {
			t.Fatal(err)
		}
		linear := func(v uint32) int {
			if v >= n {
				return -1
			}
			c := -1
			for i, s := range starts {
				if s <= v {
					c = i
				}
			}
			return c
		}
		for v := uint32(0); v < n+3; v++ {
			if got, want := ix.ChunkOf(v), linear(v); got != want {
				t.Fatalf("ChunkOf(%d) = %d, want %d (starts %v)", v, got, want, starts)
			}
		}
		// A sorted frontier, with duplicates and ids beyond the graph.
		f := make([]uint32, r.IntN(300))
		for i := range f {
			f[i] = r.Uint32N(n + 5)
		}
		slices.Sort(f)
		parts := ix.ByChunk(f)
		if len(parts) != ix.NumChunks() {
			t.Fatalf("%d parts for %d chunks", len(parts), ix.NumChunks())
		}
		var joined []uint32
		for i, p := range parts {
			for _, v := range p {
				if v < ix.Start(i) || v >= ix.End(i) {
					t.Fatalf("node %d in part %d = [%d,%d)", v, i, ix.Start(i), ix.End(i))
				}
			}
			if cap(p) != len(p) {
				t.Fatalf("part %d has spare capacity", i)
			}
			if len(p) > 0 && &p[0] != &f[len(joined)] {
				t.Fatalf("part %d is not a sub-slice of the frontier", i)
			}
			joined = append(joined, p...)
		}
		var want []uint32
		for _, v := range f {
			if v < n {
				want = append(want, v)
			}
		}
		if !slices.Equal(joined, want) {
			t.Fatalf("parts joined %v, want %v", joined, want)
		}
		if again := ix.ByChunkInto(parts, f); &again[0] != &parts[0] {
			t.Fatal("ByChunkInto did not reuse dst")
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	const n = 100_000_000
	r := rand.New(rand.NewPCG(7, 8))
	var starts []uint32
	for s := uint32(0); s < n; s += 1 + r.Uint32N(200_000) { // ~1000 chunks
		starts = append(starts, s)
	}
	ix, err := NewIndex(starts, n)
	if err != nil {
		b.Fatal(err)
	}
	f := make([]uint32, 10_000_000)
	for i := range f {
		f[i] = uint32(i) * 10 // sorted, spread over the whole graph
	}
	dst := make([][]uint32, ix.NumChunks())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst = ix.ByChunkInto(dst, f)
	}
	split := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(split/float64(ix.NumChunks()), "ns/chunk")
	// The peer: bucketing each frontier node by ChunkOf, what a split
	// without the sortedness would cost (counting only, no copying).
	t0 := time.Now()
	counts := make([]int, ix.NumChunks())
	for _, v := range f {
		counts[ix.ChunkOf(v)]++
	}
	perNode := float64(time.Since(t0).Nanoseconds())
	b.ReportMetric(perNode/split, "speedup_vs_per_node")
}
