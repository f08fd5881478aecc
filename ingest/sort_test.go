package ingest

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortAdj(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var tmp []uint32
	for _, n := range []int{0, 1, 2, 100, radixMin - 1, radixMin, 5000, 70000} {
		for _, bits := range []int{1, 11, 12, 22, 31} {
			a := make([]uint32, n)
			for i := range a {
				a[i] = uint32(r.Uint64() & (1<<bits - 1))
			}
			if n > 10 && bits > 20 {
				// Shared high bits: exercises the skipped passes.
				for i := range a[:n/2] {
					a[i] &= 0xff
				}
			}
			want := slices.Clone(a)
			slices.Sort(want)
			tmp = sortAdj(a, tmp)
			if !slices.Equal(a, want) {
				t.Fatalf("n=%d bits=%d: not sorted", n, bits)
			}
		}
	}
}

func BenchmarkSortAdj(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	src := make([]uint32, 50000)
	for i := range src {
		src[i] = uint32(r.IntN(1 << 22))
	}
	a := make([]uint32, len(src))
	var tmp []uint32
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(a, src)
			tmp = sortAdj(a, tmp)
		}
	})
	b.Run("pdqsort", func(b *testing.B) {
		for b.Loop() {
			copy(a, src)
			slices.Sort(a)
		}
	})
}
