package rng

import (
	"math"
	"testing"

	"github.com/streamsampler/streamsampler/internal/chisq"
)

// The vectors of DESIGN §3, "Negatives" (seed 42, epoch 0, positive 7).
func TestNegativeVectors(t *testing.T) {
	key := NegKey(42, 0)
	if key != 0xb5b8dd75689522e7 {
		t.Fatalf("NegKey(42, 0) = %#x, want 0xb5b8dd75689522e7", key)
	}
	if r := Draw(key, 7, 0); r != 0x60b49957b48052c7 {
		t.Fatalf("Draw(negkey, 7, 0) = %#x, want 0x60b49957b48052c7", r)
	}
	n := Negatives{Key: key, NumNodes: 1000}
	want := [][2]uint32{{377, 810}, {485, 578}, {12, 413}}
	for tt, w := range want {
		if s, d := n.Src(7, uint32(tt)), n.Dst(7, uint32(tt)); s != w[0] || d != w[1] {
			t.Errorf("negative %d of positive 7: (%d, %d), want (%d, %d)", tt, s, d, w[0], w[1])
		}
	}
	deg := Negatives{Key: key, NumNodes: 4, Indptr: []uint64{0, 1, 1, 4, 10}}
	wantDeg := []uint32{3, 3, 3, 3, 3, 2}
	for tt, w := range wantDeg {
		if d := deg.Dst(7, uint32(tt)); d != w {
			t.Errorf("by degree: negative %d of positive 7: %d, want %d", tt, d, w)
		}
	}
	// The keys are disjoint from the sampling and walk keys' inputs.
	if NegKey(42, 0) == Key(42, 0, 0) || NegKey(42, 1) == WalkKey(42, 1) {
		t.Fatal("a negative key equals a sampling or walk key")
	}
}

// ByDegree is the inverse CDF of the degrees: every edge position e in
// [0, E) maps to the node whose row holds it, checked against a linear
// scan at the row boundaries; nodes without in-edges are never taken.
func TestByDegreeBoundaries(t *testing.T) {
	indptr := []uint64{0, 0, 3, 3, 4, 9, 9}
	E := indptr[len(indptr)-1]
	for e := uint64(0); e < E; e++ {
		want := -1
		for v := 0; v+1 < len(indptr); v++ {
			if indptr[v] <= e && e < indptr[v+1] {
				want = v
			}
		}
		// The smallest r with (r·E)>>64 == e is ceil(e·2^64/E).
		hi, lo := e, uint64(0)
		q, rem := divmod128(hi, lo, E)
		if rem != 0 {
			q++
		}
		if got := ByDegree(indptr, q); int(got) != want {
			t.Errorf("edge position %d: node %d, want %d", e, got, want)
		}
	}
	if got := ByDegree(indptr, math.MaxUint64); got != 4 {
		t.Errorf("r = 2^64-1: node %d, want 4 (the last with in-edges)", got)
	}
}

func divmod128(hi, lo, d uint64) (q, r uint64) {
	// hi < d here, so the quotient fits 64 bits.
	var x, y = hi, lo
	for i := 0; i < 64; i++ {
		carry := x >> 63
		x = x<<1 | y>>63
		y <<= 1
		q <<= 1
		if carry != 0 || x >= d {
			x -= d
			q |= 1
		}
	}
	return q, x
}

// Destinations are uniform over the nodes, and by degree proportional to
// in-degree (chi-square at p = chisq.Z9995); sources are uniform in both.
func TestNegativeDistributions(t *testing.T) {
	const n = 50
	indptr := make([]uint64, n+1)
	for v := 0; v < n; v++ {
		indptr[v+1] = indptr[v] + uint64(v%7) // degrees 0..6, zero-degree nodes included
	}
	for _, tc := range []struct {
		name string
		neg  Negatives
	}{
		{"uniform", Negatives{Key: NegKey(3, 1), NumNodes: n}},
		{"degree", Negatives{Key: NegKey(3, 1), NumNodes: n, Indptr: indptr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const draws = 200000
			src := make([]float64, n)
			dst := make([]float64, n)
			for i := uint32(0); i < draws/4; i++ {
				for tt := uint32(0); tt < 4; tt++ {
					src[tc.neg.Src(i, tt)]++
					dst[tc.neg.Dst(i, tt)]++
				}
			}
			if s := chisq.Statistic(src, draws/n); s > chisq.Quantile(n-1, chisq.Z9995) {
				t.Errorf("sources: chi-square %.1f over %d cells", s, n)
			}
			if tc.neg.Indptr == nil {
				if s := chisq.Statistic(dst, draws/n); s > chisq.Quantile(n-1, chisq.Z9995) {
					t.Errorf("destinations: chi-square %.1f over %d cells", s, n)
				}
				return
			}
			E := float64(indptr[n])
			stat, df := 0.0, -1
			for v := 0; v < n; v++ {
				exp := draws * float64(indptr[v+1]-indptr[v]) / E
				if exp == 0 {
					if dst[v] != 0 {
						t.Fatalf("node %d without in-edges drawn %v times", v, dst[v])
					}
					continue
				}
				stat += (dst[v] - exp) * (dst[v] - exp) / exp
				df++
			}
			if stat > chisq.Quantile(df, chisq.Z9995) {
				t.Errorf("destinations by degree: chi-square %.1f over %d cells", stat, df+1)
			}
		})
	}
}

// Negatives are not filtered against the graph: on a small dense graph
// the share of binary negatives that are true edges is its expectation,
// distinct edges / N² (within 5 standard deviations of the binomial).
func TestNegativeCollisionRate(t *testing.T) {
	const n = 20
	edge := make(map[[2]uint32]bool)
	for u := uint32(0); u < n; u++ {
		for v := uint32(0); v < n; v++ {
			if Mix64(uint64(u)*n+uint64(v))%3 == 0 { // about a third of all pairs
				edge[[2]uint32{u, v}] = true
			}
		}
	}
	p := float64(len(edge)) / (n * n)
	neg := Negatives{Key: NegKey(9, 4), NumNodes: n}
	const draws = 100000
	hits := 0
	for i := uint32(0); i < draws; i++ {
		if edge[[2]uint32{neg.Src(i, 0), neg.Dst(i, 0)}] {
			hits++
		}
	}
	sd := math.Sqrt(draws * p * (1 - p))
	if d := math.Abs(float64(hits) - draws*p); d > 5*sd {
		t.Fatalf("%d of %d negatives are edges, expected %.0f ± %.0f", hits, draws, draws*p, sd)
	}
}
