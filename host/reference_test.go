package host

import (
	"errors"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
)

// TestReferenceInvariants checks every property DESIGN §4 states, for
// several keys, fanouts and both replacement modes.
func TestReferenceInvariants(t *testing.T) {
	g := randomCSR(3000, 6, 1)
	for _, tc := range []struct {
		name    string
		fanouts []int
		key     epoch.Key
	}{
		{"floyd-3", []int{15, 10, 5}, epoch.Key{Seed: 1, Epoch: 0}},
		{"floyd-2", []int{4, 4}, epoch.Key{Seed: 99, Epoch: 3}},
		{"replace", []int{10, 10, 10}, epoch.Key{Seed: 5, Epoch: 1, Replace: true}},
		{"wide", []int{hls.MaxFanout}, epoch.Key{Seed: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seeds := randomSeeds(g.NumNodes(), 200, 3)
			res, err := Reference(g, seeds, tc.fanouts, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Key != tc.key || len(res.Layers) != len(tc.fanouts) {
				t.Fatalf("key %v layers %d", res.Key, len(res.Layers))
			}
			want0 := slices.Clone(seeds)
			slices.Sort(want0)
			want0 = slices.Compact(want0)
			if !slices.Equal(res.Layers[0].Frontier, want0) {
				t.Fatal("frontier_0 is not the sorted unique seeds")
			}
			for l, layer := range res.Layers {
				k := tc.fanouts[l]
				if layer.Fanout != k || len(layer.Samples) != len(layer.Frontier)*k {
					t.Fatalf("layer %d: fanout %d samples %d frontier %d", l, layer.Fanout, len(layer.Samples), len(layer.Frontier))
				}
				// A row is a sample of the node's neighbors as DESIGN §3
				// states it (the draws themselves are pinned by rng's test
				// vectors and chi-square tests, not re-derived here):
				// min(k, degree) valid entries (k with replacement), -1
				// after them, each a neighbor, and without replacement no
				// neighbor taken more often than it occurs.
				for i, v := range layer.Frontier {
					nb, _ := g.Neighbors(v)
					got := layer.Samples[i*k : (i+1)*k]
					want := min(k, len(nb))
					if tc.key.Replace && len(nb) > 0 {
						want = k
					}
					left := map[int32]int{}
					for _, u := range nb {
						left[int32(u)]++
					}
					for t2, s := range got {
						if (t2 < want) != (s >= 0) {
							t.Fatalf("layer %d node %d (degree %d): row %v, want %d valid entries first", l, v, len(nb), got, want)
						}
						if s < 0 {
							continue
						}
						if left[s] == 0 && (!tc.key.Replace || !slices.Contains(nb, uint32(s))) {
							t.Fatalf("layer %d node %d: sample %d is not a neighbor left to take (row %v)", l, v, s, got)
						}
						if !tc.key.Replace {
							left[s]--
						}
					}
				}
				next := res.Final
				if l+1 < len(res.Layers) {
					next = res.Layers[l+1].Frontier
				}
				if !slices.IsSorted(next) || len(slices.Compact(slices.Clone(next))) != len(next) {
					t.Fatalf("frontier_%d not sorted unique", l+1)
				}
				// next == frontier ∪ valid samples, both ways.
				for _, v := range layer.Frontier {
					if _, ok := slices.BinarySearch(next, v); !ok {
						t.Fatalf("frontier_%d lost destination %d", l+1, v)
					}
				}
				in := map[uint32]bool{}
				for _, v := range layer.Frontier {
					in[v] = true
				}
				for _, s := range layer.Samples {
					if s >= 0 {
						in[uint32(s)] = true
						if _, ok := slices.BinarySearch(next, uint32(s)); !ok {
							t.Fatalf("frontier_%d lost sample %d", l+1, s)
						}
					}
				}
				if len(in) != len(next) {
					t.Fatalf("frontier_%d has %d nodes, union has %d", l+1, len(next), len(in))
				}
			}
			if len(res.Final) <= len(res.Layers[len(res.Layers)-1].Frontier) && g.NumNodes() > 0 && len(seeds) > 0 {
				// With 200 seeds over a graph of average degree 6 the
				// frontier must grow; a non-growing one means samples were lost.
				t.Fatalf("final frontier did not grow: %d", len(res.Final))
			}
		})
	}
}

// TestReferenceMatchesNextFrontier ties the plain set-based frontier to the
// epoch package's NextFrontier, which the streaming path uses.
func TestReferenceMatchesNextFrontier(t *testing.T) {
	g := randomCSR(2000, 5, 11)
	res, err := Reference(g, randomSeeds(2000, 300, 4), []int{8, 6, 4}, epoch.Key{Seed: 7, Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for l, layer := range res.Layers {
		want := res.Final
		if l+1 < len(res.Layers) {
			want = res.Layers[l+1].Frontier
		}
		if got := epoch.NextFrontier(layer.Frontier, layer.Samples); !slices.Equal(got, want) {
			t.Fatalf("layer %d: epoch.NextFrontier differs from the reference (%d vs %d nodes)", l, len(got), len(want))
		}
	}
}

func TestReferenceEpochsDiffer(t *testing.T) {
	g := randomCSR(1000, 20, 2)
	seeds := randomSeeds(1000, 100, 1)
	a, _ := Reference(g, seeds, []int{5}, epoch.Key{Seed: 1, Epoch: 0})
	b, _ := Reference(g, seeds, []int{5}, epoch.Key{Seed: 1, Epoch: 1})
	c, _ := Reference(g, seeds, []int{5}, epoch.Key{Seed: 1, Epoch: 0})
	if slices.Equal(a.Layers[0].Samples, b.Layers[0].Samples) {
		t.Fatal("epochs 0 and 1 drew identical samples")
	}
	if !slices.Equal(a.Layers[0].Samples, c.Layers[0].Samples) {
		t.Fatal("the same key drew different samples")
	}
}

func TestReferenceRejects(t *testing.T) {
	g := randomCSR(100, 3, 1)
	tooMany := make([]int, epoch.MaxLayers+1)
	for i := range tooMany {
		tooMany[i] = 1
	}
	for _, tc := range []struct {
		name    string
		seeds   []uint32
		fanouts []int
	}{
		{"seed-out-of-range", []uint32{1, 100}, []int{3}},
		{"zero-fanout", []uint32{1}, []int{3, 0}},
		{"fanout-too-big", []uint32{1}, []int{hls.MaxFanout + 1}},
		{"no-layers", []uint32{1}, nil},
		{"too-many-layers", []uint32{1}, tooMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Reference(g, tc.seeds, tc.fanouts, epoch.Key{})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}
