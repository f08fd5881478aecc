package radix

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestUint32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	below := func(bits int) func(int) uint32 {
		return func(int) uint32 { return uint32(r.Uint64() & (1<<bits - 1)) }
	}
	for _, c := range []struct {
		name string
		n    int
		key  func(i int) uint32
	}{
		{"empty", 0, below(32)},
		{"one", 1, below(32)},
		{"two", 2, below(32)},
		{"all-equal", 1000, func(int) uint32 { return 0xdeadbeef }},
		{"all-zero", 1000, func(int) uint32 { return 0 }},
		{"bits=1", 1000, below(1)},
		{"bits=8", 1000, below(8)},
		{"bits=9", 1000, below(9)},
		{"bits=22", 5000, below(22)},
		{"bits=24", 5000, below(24)},
		{"bits=25", 5000, below(25)},
		{"bits=32", 70000, below(32)},
		{"extremes", 3000, func(int) uint32 { return []uint32{0, 1, 1 << 31, ^uint32(0)}[r.IntN(4)] }},
		// Bytes shared by every key: passes that would move nothing.
		{"shared-high-bytes", 5000, func(int) uint32 { return 0xab_cd_00_00 | r.Uint32N(1<<16) }},
		{"shared-middle-bytes", 5000, func(int) uint32 { return r.Uint32()&0xff_00_00_ff | 0x00_77_77_00 }},
		{"descending", 5000, func(i int) uint32 { return uint32(5000 - i) }},
		{"sorted", 5000, func(i int) uint32 { return uint32(i) << 9 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := make([]uint32, c.n)
			for i := range a {
				a[i] = c.key(i)
			}
			want := slices.Clone(a)
			slices.Sort(want)
			tmp := make([]uint32, c.n+3) // longer than a is allowed
			got := Uint32(a, tmp)
			if !slices.Equal(got, want) {
				t.Fatalf("not sorted: got %v…, want %v…", got[:min(8, len(got))], want[:min(8, len(want))])
			}
			if len(got) > 0 && &got[0] != &a[0] && &got[0] != &tmp[0] {
				t.Fatal("the result is in neither buffer")
			}
		})
	}
}

func TestByHigh32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		n, bits int
		keys    uint32 // keys drawn from that many distinct values (0: any below 1<<bits)
	}{
		{0, 32, 0}, {1, 32, 0}, {2, 32, 0},
		{1000, 0, 0}, // all keys 0: nothing moves
		{1000, 32, 1},
		{1000, 5, 0}, {5000, 16, 0}, {5000, 21, 0}, {5000, 24, 0},
		{20000, 32, 0}, {20000, 32, 50}, // many equal keys: stability matters
	} {
		t.Run(fmt.Sprintf("n=%d,bits=%d,keys=%d", c.n, c.bits, c.keys), func(t *testing.T) {
			a := make([]uint64, c.n)
			for i := range a {
				k := uint32(r.Uint64() & (1<<c.bits - 1))
				if c.keys > 0 {
					k = r.Uint32N(c.keys) << (c.bits - 6) // high keys, to sort on every byte
				}
				a[i] = uint64(k)<<32 | uint64(r.Uint32()) // random payload: its order must be kept
			}
			want := slices.Clone(a)
			slices.SortStableFunc(want, func(x, y uint64) int { return cmp.Compare(x>>32, y>>32) })
			tmp := make([]uint64, c.n)
			got := ByHigh32(a, tmp)
			if !slices.Equal(got, want) {
				t.Fatal("not the stable sort by the high 32 bits")
			}
			if len(got) > 0 && &got[0] != &a[0] && &got[0] != &tmp[0] {
				t.Fatal("the result is in neither buffer")
			}
		})
	}
}

// BenchmarkUint32 sorts random keys of the shapes the callers see:
// adjacency lists of ingest (22-bit ids), a layer's samples in
// NextFrontier (20-bit and sparse 31-bit ids).
func BenchmarkUint32(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ n, bits int }{{128, 22}, {1000, 22}, {50000, 22}, {1 << 20, 20}, {1 << 20, 31}} {
		src := make([]uint32, c.n)
		for i := range src {
			src[i] = uint32(r.Uint64() & (1<<c.bits - 1))
		}
		a, tmp := make([]uint32, c.n), make([]uint32, c.n)
		b.Run(fmt.Sprintf("n=%d,bits=%d", c.n, c.bits), func(b *testing.B) {
			for b.Loop() {
				copy(a, src)
				Uint32(a, tmp)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.n), "ns/key")
		})
	}
}

// BenchmarkByHigh32 sorts (node, index) pairs as the epoch assembler does:
// 21-bit node ids, a minibatch's seeds and a hop's samples.
func BenchmarkByHigh32(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1024, 1 << 18} {
		src := make([]uint64, n)
		for i := range src {
			src[i] = uint64(r.Uint32N(1<<21))<<32 | uint64(i)
		}
		a, tmp := make([]uint64, n), make([]uint64, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				copy(a, src)
				ByHigh32(a, tmp)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
