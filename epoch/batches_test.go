package epoch_test

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/chisq"
)

func seq(n int) []uint32 {
	a := make([]uint32, n)
	for i := range a {
		a[i] = uint32(i * 7)
	}
	return a
}

func TestShuffleIsPermutation(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 1000} {
		in := seq(n)
		orig := slices.Clone(in)
		got := epoch.Shuffle(in, 5, 9)
		if !slices.Equal(in, orig) {
			t.Fatalf("n=%d: input modified", n)
		}
		s := slices.Clone(got)
		slices.Sort(s)
		if !slices.Equal(s, orig) {
			t.Fatalf("n=%d: not a permutation", n)
		}
		if !slices.Equal(got, epoch.Shuffle(in, 5, 9)) {
			t.Fatalf("n=%d: not deterministic", n)
		}
		if n >= 10 && slices.Equal(got, epoch.Shuffle(in, 5, 10)) {
			t.Fatalf("n=%d: same order in two epochs", n)
		}
	}
}

// TestShuffleGolden pins the order, so that a change of the stream (which
// would change every user's minibatches) cannot pass unnoticed. The values
// are what testdata/shuffle_golden.py, an independent Python rendering of
// permKey and permute (mix64, below and Fisher–Yates over counters),
// prints for seed 42, epoch 3; where a python3 is found, the script is
// also run for more cases and compared with Shuffle.
func TestShuffleGolden(t *testing.T) {
	want := []uint32{6, 1, 5, 10, 0, 3, 9, 8, 11, 7, 2, 4}
	if got := epoch.Shuffle(ids(12), 42, 3); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("no python3 to run testdata/shuffle_golden.py: %v", err)
	}
	for _, c := range []struct {
		seed  uint64
		epoch uint32
		n     int
	}{{42, 3, 12}, {0, 0, 1}, {1, 0, 2}, {7, 99, 1000}, {1<<63 + 5, 1<<32 - 1, 333}} {
		out, err := exec.Command(py, "testdata/shuffle_golden.py", fmt.Sprint(c.seed), fmt.Sprint(c.epoch), fmt.Sprint(c.n)).Output()
		if err != nil {
			t.Fatalf("shuffle_golden.py %+v: %v", c, err)
		}
		var ref []uint32
		for _, f := range strings.Split(strings.TrimSpace(string(out)), ",") {
			v, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				t.Fatalf("shuffle_golden.py %+v printed %q", c, out)
			}
			ref = append(ref, uint32(v))
		}
		if got := epoch.Shuffle(ids(c.n), c.seed, c.epoch); !slices.Equal(got, ref) {
			t.Fatalf("%+v: Shuffle %v, the Python rendering %v", c, got[:min(len(got), 12)], ref[:min(len(ref), 12)])
		}
	}
}

func TestShuffleFirstPositionUniform(t *testing.T) {
	// Chi-square over the node that lands first, across many epochs (n-1
	// degrees of freedom, 99.9% bound), and over every (position, node) cell
	// for a tiny n.
	const n, epochs = 7, 70000
	in := seq(n)
	first := make([]float64, n)
	cells := make([][]float64, n)
	for i := range cells {
		cells[i] = make([]float64, n)
	}
	for e := uint32(0); e < epochs; e++ {
		s := epoch.Shuffle(in, 12345, e)
		first[s[0]/7]++
		for p, v := range s {
			cells[p][v/7]++
		}
	}
	exp := float64(epochs) / n
	if chi, lim := chisq.Statistic(first, exp), chisq.Quantile(n-1, chisq.Z999); chi > lim {
		t.Errorf("first position: chi-square %.1f > %.1f", chi, lim)
	}
	for p := range cells {
		if chi, lim := chisq.Statistic(cells[p], exp), chisq.Quantile(n-1, chisq.Z9995); chi > lim {
			t.Errorf("position %d: chi-square %.1f > %.1f", p, chi, lim)
		}
	}
}

func TestBatches(t *testing.T) {
	in := seq(10)
	for _, bs := range []int{1, 3, 4, 10, 11} {
		b := epoch.Batches(in, bs, 1, 2)
		if len(b) != epoch.NumBatches(10, bs) {
			t.Fatalf("bs=%d: %d batches, want %d", bs, len(b), epoch.NumBatches(10, bs))
		}
		var all []uint32
		for i, x := range b {
			if i < len(b)-1 && len(x) != bs || len(x) == 0 || len(x) > bs {
				t.Fatalf("bs=%d: batch %d has %d nodes", bs, i, len(x))
			}
			all = append(all, x...)
		}
		if !slices.Equal(all, epoch.Shuffle(in, 1, 2)) {
			t.Fatalf("bs=%d: batches are not the cut shuffle", bs)
		}
	}
	if len(epoch.Batches(nil, 4, 1, 1)) != 0 {
		t.Fatal("empty input gave batches")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("batch size 0 did not panic")
		}
	}()
	epoch.Batches(in, 0, 1, 1)
}

func TestShard(t *testing.T) {
	in := seq(1003)
	// Unsorted, with duplicates: Shard works on the sorted unique set.
	messy := append(slices.Clone(in), in[:50]...)
	slices.Reverse(messy)
	for _, world := range []int{1, 2, 3, 7, 16} {
		for e := uint32(0); e < 3; e++ {
			owner := map[uint32]int{}
			minSz, maxSz := math.MaxInt, 0
			for rank := 0; rank < world; rank++ {
				s, err := epoch.Shard(messy, rank, world, 99, e)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.IsSorted(s) {
					t.Fatalf("world %d rank %d: not sorted", world, rank)
				}
				again, _ := epoch.Shard(in, rank, world, 99, e)
				if !slices.Equal(s, again) {
					t.Fatalf("world %d rank %d: depends on input order or not deterministic", world, rank)
				}
				for _, v := range s {
					if o, dup := owner[v]; dup {
						t.Fatalf("node %d in shards %d and %d", v, o, rank)
					}
					owner[v] = rank
				}
				if epoch.ShardSize(len(in), rank, world) != len(s) {
					t.Fatalf("world %d rank %d: epoch.ShardSize %d, shard has %d", world, rank, epoch.ShardSize(len(in), rank, world), len(s))
				}
				minSz, maxSz = min(minSz, len(s)), max(maxSz, len(s))
			}
			if len(owner) != len(in) {
				t.Fatalf("world %d: shards cover %d of %d nodes", world, len(owner), len(in))
			}
			if maxSz-minSz > 1 {
				t.Fatalf("world %d: shard sizes %d..%d", world, minSz, maxSz)
			}
		}
		if world > 1 {
			a, _ := epoch.Shard(in, 0, world, 99, 0)
			b, _ := epoch.Shard(in, 0, world, 99, 1)
			c, _ := epoch.Shard(in, 0, world, 100, 0)
			if slices.Equal(a, b) || slices.Equal(a, c) {
				t.Fatalf("world %d: shard does not change with epoch or seed", world)
			}
		}
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 2}, {2, 2}, {0, -3}} {
		if _, err := epoch.Shard(in, bad[0], bad[1], 1, 1); !errors.Is(err, epoch.ErrShard) {
			t.Fatalf("rank %d world %d: got %v", bad[0], bad[1], err)
		}
	}
}

// ids is 0, 1, …, n-1.
func ids(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}
