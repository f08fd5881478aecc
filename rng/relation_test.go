package rng

import (
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/internal/chisq"
)

// TestRelationVectors pins DESIGN §3 "Relations" (the values were checked
// against an independent Python rendering of the formulas).
func TestRelationVectors(t *testing.T) {
	nb := make([]uint32, 100)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	tests := []struct {
		name        string
		seed        uint64
		epoch       uint32
		layer       int
		rel         uint32
		key         uint64
		floyd, repl []int32 // Sample(nb = 100..199, node 7, k = 5)
	}{
		{"rel0 is the homogeneous key", 42, 0, 0, 0, 0xa759ea27d4727622, []int32{170, 193, 151, 156, 181}, []int32{173, 196, 152, 157, 181}},
		{"rel1", 42, 0, 0, 1, 0x8d0ef46bf0467e44, []int32{180, 166, 184, 123, 111}, []int32{183, 168, 186, 124, 111}},
		{"rel2", 42, 0, 0, 2, 0x5bcac5fc9d9a02d0, nil, nil},
		{"rel2 epoch3 layer1", 42, 3, 1, 2, 0xe9d21b8c3551b673, []int32{122, 192, 183, 111, 199}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := RelationKey(tc.seed, tc.epoch, tc.layer, tc.rel)
			if k != tc.key {
				t.Fatalf("RelationKey = %#x, want %#x", k, tc.key)
			}
			out := make([]int32, 5)
			if tc.floyd != nil {
				Sample(out, nb, 7, k, false)
				if !slices.Equal(out, tc.floyd) {
					t.Errorf("Sample without replacement = %v, want %v", out, tc.floyd)
				}
			}
			if tc.repl != nil {
				Sample(out, nb, 7, k, true)
				if !slices.Equal(out, tc.repl) {
					t.Errorf("Sample with replacement = %v, want %v", out, tc.repl)
				}
			}
		})
	}
	if got := RelationTerm(1); got != 0x2a571e4c24340866 {
		t.Errorf("RelationTerm(1) = %#x, want 0x2a571e4c24340866", got)
	}
	if k := RelationKey(42, 0, 0, 1); Draw(k, 7, 0) != 0xd5a3dcffd5dfbd22 || Below(Draw(k, 7, 0), 1000) != 834 {
		t.Errorf("draw under relation 1's key = %#x (below 1000: %d), want 0xd5a3dcffd5dfbd22 (834)", Draw(k, 7, 0), Below(Draw(k, 7, 0), 1000))
	}
}

// TestRelationKeysDistinct: over a grid of (epoch, layer, rel), no two
// relation keys coincide and none is a walk key. (Mix64(0) = 0, so the
// homogeneous key of epoch 0, layer 0 is Mix64(seed) itself; a relation
// r >= 1 never gives that key.)
func TestRelationKeysDistinct(t *testing.T) {
	const seed = 7
	seen := map[uint64]string{}
	for step := uint32(1); step < 64; step++ {
		seen[WalkKey(seed, step)] = "walk"
	}
	for e := uint32(0); e < 8; e++ {
		for l := 0; l < LayerKeys; l++ {
			for r := uint32(0); r < 16; r++ {
				k := RelationKey(seed, e, l, r)
				if prev, ok := seen[k]; ok {
					t.Fatalf("RelationKey(%d, %d, %d, %d) = %#x repeats %s", seed, e, l, r, k, prev)
				}
				if r > 0 && k == Mix64(seed) {
					t.Fatalf("RelationKey(%d, %d, %d, %d) is Mix64(seed): the relation term cancelled", seed, e, l, r)
				}
				seen[k] = "relation"
			}
		}
	}
}

// TestRelationsIndependent: the same node's fanout-1 sample in relation
// 0 and in relation r (same seed, epoch, layer) are independent and
// uniform: chi-square over the d×d joint table of the two positions
// (d²-1 degrees of freedom, 99.9% bound), over many nodes and relations.
func TestRelationsIndependent(t *testing.T) {
	const d, trials = 8, 64000
	counts := make([]float64, d*d)
	out := make([]int32, 1)
	for n := uint32(0); n < trials; n++ {
		r := 1 + n%13
		Positions(out, d, n, RelationKey(3, 1, 2, 0), false)
		a := out[0]
		Positions(out, d, n, RelationKey(3, 1, 2, r), false)
		counts[int(a)*d+int(out[0])]++
	}
	if chi, lim := chisq.Statistic(counts, float64(trials)/(d*d)), chisq.Quantile(d*d-1, chisq.Z999); chi > lim {
		t.Errorf("chi-square %.1f > %.1f (99.9%%): relation samples are not independent and uniform", chi, lim)
	}
}
