package rng

import (
	"math"
	"testing"
)

// TestWalkVectors pins DESIGN §3's walk test vectors.
func TestWalkVectors(t *testing.T) {
	k := WalkKey(42, 1)
	if k != 0x8592ec97a10acddc {
		t.Fatalf("WalkKey(42, 1) = %#x", k)
	}
	if d := Draw(k, 7, 0); d != 0xfcbda3ddfca68128 {
		t.Fatalf("Draw(key, 7, 0) = %#x", d)
	}
	if c := Candidate(k, 7, 0, 1000); c != 987 {
		t.Fatalf("Candidate(key, 7, 0, 1000) = %d", c)
	}
	if c := Candidate(k, 7, 1, 1000); c != 410 {
		t.Fatalf("Candidate(key, 7, 1, 1000) = %d", c)
	}
	if d := Draw(k, 7, 1) >> 32; d != 1636014556 {
		t.Fatalf("decision word %d", d)
	}
	if th := Threshold(0.15); th != 644245094 || Decide(k, 7, 0, th) {
		t.Fatalf("Threshold(0.15) = %d, Decide %v", th, Decide(k, 7, 0, th))
	}
	if !Decide(k, 7, 0, Threshold(0.5)) {
		t.Fatal("Decide(key, 7, 0, 1/2) is false; its word 1636014556 is below 2^31")
	}
	if c := Candidate(WalkKey(42, 2), 7, 0, 1000); c != 634 {
		t.Fatalf("step 2's candidate %d", c)
	}
	if got := Node2Vec(0.5, 2); got != (Node2VecThresholds{Return: 1 << 32, Near: 1 << 31, Far: 1 << 30}) {
		t.Fatalf("Node2Vec(0.5, 2) = %+v", got)
	}
}

// TestWalkKeysAreNotSamplingKeys: a walk key never equals a sampling key
// of the same seed (disjoint Mix64 inputs).
func TestWalkKeysAreNotSamplingKeys(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, math.MaxUint64} {
		seen := map[uint64]bool{}
		for e := uint32(0); e < 64; e++ {
			for l := 0; l < 4; l++ {
				seen[Key(seed, e, l)] = true
			}
		}
		for s := uint32(0); s < 256; s++ {
			if seen[WalkKey(seed, s)] {
				t.Fatalf("seed %d: walk key of step %d is a sampling key", seed, s)
			}
		}
	}
}

func TestThreshold(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want uint64
	}{{-1, 0}, {0, 0}, {math.NaN(), 0}, {0.5, 1 << 31}, {1, 1 << 32}, {2, 1 << 32}, {0x1p-32, 1}} {
		if got := Threshold(c.p); got != c.want {
			t.Errorf("Threshold(%v) = %d, want %d", c.p, got, c.want)
		}
	}
	// Threshold 2^32 is always true, 0 never.
	for w := uint32(0); w < 1000; w++ {
		if !Decide(5, w, 3, 1<<32) || Decide(5, w, 3, 0) {
			t.Fatal("Decide at the ends of the range")
		}
	}
}
