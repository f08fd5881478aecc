package epoch_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// UnionFrontier is the set union of the frontier and every part's valid
// samples, sorted, by either path (one bitmap where the ids are dense,
// NextFrontier part by part where they are sparse), with no part, one or
// several; the frontier given is left as it was.
func TestUnionFrontier(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 0))
	for trial := 0; trial < 400; trial++ {
		span := 1 + r.Uint32N(5000)
		if trial%2 == 0 {
			span = 1 + r.Uint32N(60)
		}
		want := map[uint32]bool{}
		var front []uint32
		for v := uint32(0); v < span; v++ {
			if r.IntN(4) == 0 {
				front = append(front, v)
				want[v] = true
			}
		}
		before := slices.Clone(front)
		parts := make([][]int32, r.IntN(4))
		for i := range parts {
			parts[i] = make([]int32, r.IntN(40))
			for j := range parts[i] {
				parts[i][j] = -1
				if r.IntN(4) != 0 {
					parts[i][j] = int32(r.Uint32N(span))
					want[uint32(parts[i][j])] = true
				}
			}
		}
		got := epoch.UnionFrontier(front, parts, span)
		if len(got) != len(want) || !slices.IsSorted(got) {
			t.Fatalf("trial %d: %d ids (sorted %v), want %d", trial, len(got), slices.IsSorted(got), len(want))
		}
		for i, v := range got {
			if !want[v] || (i > 0 && got[i-1] == v) {
				t.Fatalf("trial %d: %d not in the union or repeated", trial, v)
			}
		}
		if !slices.Equal(front, before) {
			t.Fatalf("trial %d: the frontier given was changed", trial)
		}
	}
}
