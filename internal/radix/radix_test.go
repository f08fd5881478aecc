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
	for _, c := range []struct {
		name string
		n    int
		bits int
		gen  func(bits int) uint32
	}{
		{"empty", 0, 32, nil},
		{"one", 1, 32, nil},
		{"two", 2, 32, nil},
		{"all-equal", 1000, 32, func(int) uint32 { return 0xdeadbeef }},
		{"all-zero", 1000, 0, func(int) uint32 { return 0 }},
		{"bits=1", 1000, 1, nil},
		{"bits=8", 1000, 8, nil},
		{"bits=9", 1000, 9, nil},
		{"bits=22", 5000, 22, nil},
		{"bits=24", 5000, 24, nil},
		{"bits=25", 5000, 25, nil},
		{"bits=32", 70000, 32, nil},
		{"bits=32-extremes", 3000, 32, func(int) uint32 { return []uint32{0, 1, 1 << 31, ^uint32(0)}[r.IntN(4)] }},
		// Shared high bytes: the counting shows passes that move nothing.
		{"shared-high-bytes", 5000, 32, func(int) uint32 { return 0xab_cd_00_00 | r.Uint32N(1<<16) }},
		{"shared-middle-byte", 5000, 32, func(int) uint32 { return r.Uint32()&0xff_00_00_ff | 0x00_77_77_00 }},
		{"reversed", 5000, 16, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := make([]uint32, c.n)
			for i := range a {
				switch {
				case c.name == "reversed":
					a[i] = uint32(c.n - i)
				case c.gen != nil:
					a[i] = c.gen(c.bits)
				default:
					a[i] = uint32(r.Uint64() & (1<<c.bits - 1))
				}
			}
			want := slices.Clone(a)
			slices.Sort(want)
			tmp := make([]uint32, c.n+3) // longer than a is allowed
			got := Uint32(a, tmp, c.bits)
			if !slices.Equal(got, want) {
				t.Fatalf("not sorted: got %v…, want %v…", got[:min(8, len(got))], want[:min(8, len(want))])
			}
			if len(got) > 0 && &got[0] != &a[0] && &got[0] != &tmp[0] {
				t.Fatal("the result is in neither buffer")
			}
		})
	}
}

// TestUint32BitsBound checks that bits bounds the work: only the low bits,
// rounded up to whole bytes, are sorted on, stably.
func TestUint32BitsBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, bits := range []int{0, 4, 8, 12, 16, 20, 24, 28, 32} {
		a := make([]uint32, 3000)
		for i := range a {
			a[i] = r.Uint32()
		}
		mask := uint32(1<<((bits+7)/8*8) - 1)
		want := slices.Clone(a)
		slices.SortStableFunc(want, func(x, y uint32) int { return cmp.Compare(x&mask, y&mask) })
		if got := Uint32(slices.Clone(a), make([]uint32, len(a)), bits); !slices.Equal(got, want) {
			t.Fatalf("bits=%d: not the stable sort by the low bits", bits)
		}
	}
}

func TestByHigh32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		n, bits int
		keys    uint32 // distinct keys drawn from [0, keys) (0: any below 1<<bits)
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
				a[i] = uint64(k)<<32 | uint64(r.Uint32()) // random payload: order must be kept
			}
			want := slices.Clone(a)
			slices.SortStableFunc(want, func(x, y uint64) int { return cmp.Compare(x>>32, y>>32) })
			got := ByHigh32(a, make([]uint64, c.n), c.bits)
			if !slices.Equal(got, want) {
				t.Fatal("not the stable sort by the high 32 bits")
			}
		})
	}
}

// BenchmarkUint32 sorts random keys of the shapes the callers see: an
// adjacency list of ingest (22-bit ids), a frontier layer's samples
// (20-bit ids) and sparse 31-bit ids.
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
				Uint32(a, tmp, c.bits)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.n), "ns/key")
		})
	}
}

// BenchmarkByHigh32 sorts (node, index) pairs as the epoch assembler does:
// 21-bit node ids, index payload.
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
				ByHigh32(a, tmp, 21)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
