package rng

import (
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/internal/chisq"
)

// The vectors of DESIGN §3 (seed 42, epoch 0, layer 0, node 7).
func TestDesignVectors(t *testing.T) {
	key := Key(42, 0, 0)
	if key != 0xa759ea27d4727622 {
		t.Fatalf("Key(42,0,0) = %#x, want 0xa759ea27d4727622", key)
	}
	r := Draw(key, 7, 0)
	if r != 0xbd18765c7790b1e1 {
		t.Fatalf("Draw(key,7,0) = %#x, want 0xbd18765c7790b1e1", r)
	}
	if got := Below(r, 1000); got != 738 {
		t.Fatalf("Below = %d, want 738", got)
	}
	nb := make([]uint32, 100)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	tests := []struct {
		name    string
		nb      []uint32
		k       int
		replace bool
		want    []int32
		pos     []int32 // Positions: the positions in nb that want takes
	}{
		{"floyd", nb, 5, false, []int32{170, 193, 151, 156, 181}, []int32{70, 93, 51, 56, 81}},
		{"replace", nb, 5, true, []int32{173, 196, 152, 157, 181}, []int32{73, 96, 52, 57, 81}},
		{"short", []uint32{3, 9}, 4, false, []int32{3, 9, -1, -1}, []int32{0, 1, -1, -1}},
		{"empty-replace", nil, 3, true, []int32{-1, -1, -1}, []int32{-1, -1, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]int32, tc.k)
			Sample(out, tc.nb, 7, key, tc.replace)
			if !slices.Equal(out, tc.want) {
				t.Fatalf("Sample: got %v, want %v", out, tc.want)
			}
			pos := make([]int32, tc.k)
			Positions(pos, len(tc.nb), 7, key, tc.replace)
			if !slices.Equal(pos, tc.pos) {
				t.Fatalf("Positions: got %v, want %v", pos, tc.pos)
			}
		})
	}
}

// Sample's slot t is nb[Positions' slot t] (-1 where Positions has -1),
// on adjacencies with repeated neighbors too, where the neighbor does not
// tell which position was taken; without replacement the positions are
// distinct.
func TestSampleIsNeighborsAtPositions(t *testing.T) {
	for _, replace := range []bool{false, true} {
		for d := 0; d <= 70; d += 3 {
			nb := make([]uint32, d)
			for i := range nb {
				nb[i] = uint32(i / 3) // every neighbor three times
			}
			for _, k := range []int{1, 2, 5, 16, 64} {
				for node := uint32(0); node < 50; node++ {
					key := Key(9, node%4, int(node%3))
					got, pos := make([]int32, k), make([]int32, k)
					Sample(got, nb, node, key, replace)
					Positions(pos, d, node, key, replace)
					seen := map[int32]bool{}
					for s, p := range pos {
						want := int32(-1)
						if p >= 0 {
							if int(p) >= d || (!replace && seen[p]) {
								t.Fatalf("replace %v d %d k %d node %d: bad position %d in %v", replace, d, k, node, p, pos)
							}
							seen[p] = true
							want = int32(nb[p])
						}
						if got[s] != want {
							t.Fatalf("replace %v d %d k %d node %d slot %d: Sample %d, nb[%d] = %d", replace, d, k, node, s, got[s], p, want)
						}
					}
					filled, wantFilled := 0, min(d, k)
					for _, p := range pos {
						if p >= 0 {
							filled++
						}
					}
					if replace && d > 0 {
						wantFilled = k
					}
					if filled != wantFilled || (!replace && len(seen) != filled) {
						t.Fatalf("replace %v d %d k %d node %d: %d filled slots (%d distinct), want %d: %v", replace, d, k, node, filled, len(seen), wantFilled, pos)
					}
				}
			}
		}
	}
}

func TestSampleWithoutReplacementIsDistinct(t *testing.T) {
	nb := make([]uint32, 40)
	for i := range nb {
		nb[i] = uint32(i * 3)
	}
	for node := uint32(0); node < 2000; node++ {
		for _, k := range []int{1, 2, 10, 39} {
			out := make([]int32, k)
			Sample(out, nb, node, Key(1, 2, 3), false)
			seen := map[int32]bool{}
			for _, v := range out {
				if v < 0 || v%3 != 0 || v >= 120 || seen[v] {
					t.Fatalf("node %d k %d: bad or repeated sample %d in %v", node, k, v, out)
				}
				seen[v] = true
			}
		}
	}
}

// Floyd's algorithm gives every k-subset equal probability, so each
// neighbor is included with probability k/d. Chi-square over the
// inclusion counts of d neighbors across many nodes (d-1 degrees of
// freedom); the bound is the 99.9% quantile via Wilson–Hilferty.
func TestSampleInclusionUniform(t *testing.T) {
	for _, replace := range []bool{false, true} {
		const d, k, trials = 50, 7, 40000
		nb := make([]uint32, d)
		for i := range nb {
			nb[i] = uint32(i)
		}
		counts := make([]float64, d)
		out := make([]int32, k)
		for n := uint32(0); n < trials; n++ {
			Sample(out, nb, n, Key(uint64(n%17), n%5, int(n%3)), replace)
			for _, v := range out {
				counts[v]++
			}
		}
		expected := float64(trials*k) / d
		if chi, lim := chisq.Statistic(counts, expected), chisq.Quantile(d-1, chisq.Z999); chi > lim {
			t.Errorf("replace=%v: chi-square %.1f > %.1f (99.9%%)", replace, chi, lim)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	nb := make([]uint32, 1000)
	out := make([]int32, 15)
	key := Key(1, 0, 0)
	for i := 0; b.Loop(); i++ {
		Sample(out, nb, uint32(i), key, false)
	}
}

// TestLayerKeys shows the bound LayerKeys states: every layer below it has
// its own key, and the next one repeats layer 0's.
func TestLayerKeys(t *testing.T) {
	seen := map[uint64]int{}
	for l := range LayerKeys {
		k := Key(42, 3, l)
		if prev, dup := seen[k]; dup {
			t.Fatalf("layers %d and %d share key %#x", prev, l, k)
		}
		seen[k] = l
	}
	if Key(42, 3, LayerKeys) != Key(42, 3, 0) {
		t.Fatal("layer LayerKeys has its own key: the 8-bit packing LayerKeys describes changed")
	}
}

// The full-neighborhood vectors of DESIGN §3 (fanout -1): every neighbor
// in CSR order, appended; it is the d <= k case of Sample without the
// padding, whatever k, with or without replacement.
func TestAppendAllVectors(t *testing.T) {
	if got := AppendAll(nil, []uint32{3, 9}); !slices.Equal(got, []int32{3, 9}) {
		t.Fatalf("AppendAll([3 9]) = %v", got)
	}
	nb := make([]uint32, 100)
	want := make([]int32, 100)
	for i := range nb {
		nb[i], want[i] = uint32(100+i), int32(100+i)
	}
	if got := AppendAll([]int32{-7}, nb); !slices.Equal(got, append([]int32{-7}, want...)) {
		t.Fatalf("AppendAll appended %v", got)
	}
	if got := AppendAll([]int32{}, nil); len(got) != 0 {
		t.Fatalf("AppendAll of no neighbors = %v", got)
	}
	// Sample with k = d without replacement is the same row.
	key := Key(42, 0, 0)
	row := make([]int32, len(nb))
	Sample(row, nb, 7, key, false)
	if !slices.Equal(row, want) || AllNeighbors != -1 {
		t.Fatalf("Sample(k = d) = %v, AppendAll %v", row, want)
	}
}
