package featplan

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func isPermutation(order []int, n int) bool {
	s := slices.Clone(order)
	slices.Sort(s)
	for i, v := range s {
		if v != i {
			return false
		}
	}
	return len(s) == n
}

// plantedChain builds nb minibatches of size nodes, where minibatch i of the
// hidden order shares half its nodes with i+1 and none with i+2, and returns
// them shuffled.
func plantedChain(r *rand.Rand, nb, size int) ([][]uint32, uint32) {
	step := size / 2
	numNodes := uint32(step*(nb+1) + size)
	perm := r.Perm(int(numNodes)) // node labels scattered
	out := make([][]uint32, nb)
	for i := range out {
		for k := range size {
			out[i] = append(out[i], uint32(perm[i*step+k]))
		}
		r.Shuffle(size, func(a, b int) { out[i][a], out[i][b] = out[i][b], out[i][a] })
	}
	r.Shuffle(nb, func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out, numNodes
}

func TestMatchReorderPlanted(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	batches, numNodes := plantedChain(r, 200, 1000)
	order, rep, err := MatchReorder(batches, numNodes, 42)
	if err != nil {
		t.Fatal(err)
	}
	if !isPermutation(order, len(batches)) {
		t.Fatalf("order %v is not a permutation", order)
	}
	exact, err := SharedFraction(batches, order, numNodes)
	if err != nil {
		t.Fatal(err)
	}
	if exact != rep.SharedAfter {
		t.Fatalf("report after %v, exact %v", rep.SharedAfter, exact)
	}
	// The planted order shares 0.5; a shuffled one almost nothing.
	t.Logf("before %.4f after %.4f (planted 0.5)", rep.SharedBefore, rep.SharedAfter)
	// The bound: about the planted 0.5, and not below what the chain got
	// (it is an estimate: within the sketches' error).
	if rep.SharedBound < 0.45 || rep.SharedBound > 0.6 || rep.SharedBound < rep.SharedAfter-0.05 {
		t.Fatalf("bound %.4f, after %.4f, planted 0.5", rep.SharedBound, rep.SharedAfter)
	}
	if rep.SharedBefore > 0.05 || rep.SharedAfter < 0.45 {
		t.Fatalf("shared before %.4f after %.4f, want < 0.05 and >= 0.45 (90%% of the planted 0.5)", rep.SharedBefore, rep.SharedAfter)
	}
}

func TestMatchReorderDeterministicAndRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, zipf := range []float64{0, 1.3} {
		batches := randomBatches(r, 150, 400, 5000, zipf)
		a, repA, err := MatchReorder(batches, 5000, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, repB, err := MatchReorder(batches, 5000, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) || repA != repB {
			t.Fatalf("zipf %v: two runs with one seed differ", zipf)
		}
		if !isPermutation(a, len(batches)) {
			t.Fatalf("zipf %v: not a permutation", zipf)
		}
		if repA.SharedAfter < repA.SharedBefore {
			t.Fatalf("zipf %v: shared fraction fell from %v to %v", zipf, repA.SharedBefore, repA.SharedAfter)
		}
		t.Logf("zipf %v: before %.4f after %.4f kept %v", zipf, repA.SharedBefore, repA.SharedAfter, repA.Kept)
	}
}

func TestSharedFractionHandChecked(t *testing.T) {
	batches := [][]uint32{{1, 2, 3}, {3, 4}, {1, 2, 4, 5}}
	tests := []struct {
		order []int
		want  float64
	}{
		{[]int{0, 1, 2}, 2.0 / 6}, // {3} of 2, {4} of 4
		{[]int{0, 2, 1}, 3.0 / 6}, // {1,2} of 4, {4} of 2
		{[]int{2, 0, 1}, 3.0 / 5}, // {1,2} of 3, {3} of 2
	}
	for _, tc := range tests {
		got, err := SharedFraction(batches, tc.order, 6)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("order %v: %v, want %v", tc.order, got, tc.want)
		}
	}
	if _, err := SharedFraction(batches, []int{0, 0, 1}, 6); err == nil {
		t.Error("repeated minibatch accepted")
	}
	if _, err := SharedFraction(batches, []int{0, 1, 2}, 5); err == nil {
		t.Error("node 5 accepted with num_nodes 5")
	}
}

// TestSharedBoundAllPairs: the bound gathered along the greedy chain is the
// one from every pair's estimate (each pair is estimated once, when the
// first of the two to join the chain is its end).
func TestSharedBoundAllPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for trial := range 20 {
		const numNodes = 2000
		batches := randomBatches(r, 3+r.IntN(40), 300, numNodes, 1.2)
		const seed = 9
		_, rep, err := MatchReorder(batches, numNodes, seed)
		if err != nil {
			t.Fatal(err)
		}
		h := &maxHeap{}
		sk := make([][]uint64, len(batches))
		for b, nid := range batches {
			sk[b] = bottomK(h, nid, seed)
		}
		best := make([]float64, len(batches))
		for a := range batches {
			for b := range batches {
				if a != b {
					best[a] = max(best[a], estIntersection(sk[a], sk[b], len(batches[a]), len(batches[b])))
				}
			}
		}
		if want := sharedBound(best, batches); rep.SharedBound != want {
			t.Fatalf("trial %d: bound %v, from all pairs %v", trial, rep.SharedBound, want)
		}
	}
}
