package featplan

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// randomBatches draws nb minibatches of up to maxLen distinct nodes below
// numNodes; zipf skews the choice toward low ids (s > 1) when set.
func randomBatches(r *rand.Rand, nb, maxLen int, numNodes uint32, zipf float64) [][]uint32 {
	var z *rand.Zipf
	if zipf > 1 {
		z = rand.NewZipf(r, zipf, 1, uint64(numNodes-1))
	}
	out := make([][]uint32, nb)
	seen := make(map[uint32]bool)
	for b := range out {
		n := 1 + r.IntN(maxLen)
		if n > int(numNodes) {
			n = int(numNodes)
		}
		clear(seen)
		for len(out[b]) < n {
			var v uint32
			if z != nil {
				v = uint32(z.Uint64())
			} else {
				v = r.Uint32N(numNodes)
			}
			if !seen[v] {
				seen[v] = true
				out[b] = append(out[b], v)
			}
		}
	}
	return out
}

// replay checks a plan by simulating its cache independently: every hit
// finds its row in the slot named, no row in the cache is read again, slots
// stay within capacity and each is written once per minibatch, every row is
// either hit or read. It returns the rows read.
func replay(t *testing.T, p *Plan, batches [][]uint32) int64 {
	t.Helper()
	cache := make([]int64, p.CacheRows) // node+1, 0 free
	where := map[uint32]int{}
	var reads int64
	// A preloaded plan's rows are read into slots 0.. before minibatch 0.
	for s, v := range p.Preload() {
		if s >= p.CacheRows {
			t.Fatalf("preload of %d rows into a cache of %d", len(p.Preload()), p.CacheRows)
		}
		cache[s] = int64(v) + 1
		where[v] = s
		reads++
	}
	for b, nid := range batches {
		bp := p.Batch(b)
		if bp.Len() != len(nid) {
			t.Fatalf("minibatch %d: plan has %d rows, n_id %d", b, bp.Len(), len(nid))
		}
		var batchMisses int
		written := map[int]bool{}
		for i, v := range nid {
			if s, ok := bp.Hit(i); ok {
				if s >= p.CacheRows || cache[s] != int64(v)+1 {
					t.Fatalf("minibatch %d row %d: hit in slot %d which holds %d, want node %d", b, i, s, cache[s]-1, v)
				}
				continue
			}
			batchMisses++
			reads++
			if _, in := where[v]; in {
				t.Fatalf("minibatch %d: node %d read from disk although cached", b, v)
			}
		}
		if batchMisses != p.Misses(b) {
			t.Fatalf("minibatch %d: %d misses, plan says %d", b, batchMisses, p.Misses(b))
		}
		for i, v := range nid {
			s, ok := bp.Keep(i)
			if !ok {
				continue
			}
			if s < 0 || s >= p.CacheRows || written[s] {
				t.Fatalf("minibatch %d row %d: keep in slot %d (capacity %d, written twice %v)", b, i, s, p.CacheRows, written[s])
			}
			written[s] = true
			if old := cache[s]; old != 0 {
				delete(where, uint32(old-1))
			}
			cache[s] = int64(v) + 1
			where[v] = s
		}
	}
	return reads
}

// optimum is the fewest rows any cache of c rows reads (exhaustive search
// over every cache content after every minibatch; nodes < 16).
func optimum(batches [][]uint32, c int) int64 {
	best := map[uint32]int64{0: 0}
	for _, nid := range batches {
		var m uint32
		for _, v := range nid {
			m |= 1 << v
		}
		nextBest := map[uint32]int64{}
		for s, cost := range best {
			cost += int64(bits.OnesCount32(m &^ s))
			cand := s | m
			for t := cand; ; t = (t - 1) & cand {
				if bits.OnesCount32(t) <= c {
					if old, ok := nextBest[t]; !ok || cost < old {
						nextBest[t] = cost
					}
				}
				if t == 0 {
					break
				}
			}
		}
		best = nextBest
	}
	min := int64(-1)
	for _, cost := range best {
		if min < 0 || cost < min {
			min = cost
		}
	}
	return min
}

func TestPlanOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		numNodes := uint32(2 + r.IntN(7))
		batches := randomBatches(r, 1+r.IntN(7), 1+r.IntN(int(numNodes)), numNodes, 0)
		c := r.IntN(int(numNodes) + 1)
		p, err := NewPlan(batches, numNodes, c)
		if err != nil {
			t.Fatal(err)
		}
		got := replay(t, p, batches)
		if got != p.TotalMisses() {
			t.Fatalf("trial %d: replay reads %d, plan says %d", trial, got, p.TotalMisses())
		}
		if want := optimum(batches, c); got != want {
			t.Fatalf("trial %d: plan reads %d rows, optimum %d (cache %d, batches %v)", trial, got, want, c, batches)
		}
		lru, err := LRUMisses(batches, numNodes, c)
		if err != nil {
			t.Fatal(err)
		}
		if lru < got {
			t.Fatalf("trial %d: LRU reads %d < MIN %d", trial, lru, got)
		}
	}
}

// TestPreloadedPlan: where the epoch's distinct rows fit the cache, the
// plan reads each once before minibatch 0 (sorted: the preload) and every
// access is a hit — as many reads as the optimum; otherwise it is NewPlan's
// plan, access for access.
func TestPreloadedPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	preloaded := 0
	for trial := range 2000 {
		numNodes := uint32(2 + r.IntN(7))
		batches := randomBatches(r, 1+r.IntN(7), 1+r.IntN(int(numNodes)), numNodes, 0)
		c := r.IntN(int(numNodes) + 1)
		p, err := NewPreloadedPlan(batches, numNodes, c)
		if err != nil {
			t.Fatal(err)
		}
		min, err := NewPlan(batches, numNodes, c)
		if err != nil {
			t.Fatal(err)
		}
		got := replay(t, p, batches)
		if got != p.TotalMisses() || got != optimum(batches, c) {
			t.Fatalf("trial %d: replay reads %d, plan says %d, optimum %d", trial, got, p.TotalMisses(), optimum(batches, c))
		}
		if p.Distinct > int64(c) {
			if p.Preload() != nil || !slices.Equal(p.act, min.act) {
				t.Fatalf("trial %d: rows do not fit, yet the plan differs from NewPlan's", trial)
			}
			continue
		}
		preloaded++
		if int64(len(p.Preload())) != p.Distinct || !slices.IsSorted(p.Preload()) {
			t.Fatalf("trial %d: preload %v of %d distinct rows", trial, p.Preload(), p.Distinct)
		}
		for b := range batches {
			bp := p.Batch(b)
			for i := range bp.NID {
				if _, hit := bp.Hit(i); !hit {
					t.Fatalf("trial %d: minibatch %d row %d is not a hit", trial, b, i)
				}
			}
		}
	}
	if preloaded < 200 {
		t.Fatalf("only %d trials preloaded", preloaded)
	}
}

func TestPlanHandChecked(t *testing.T) {
	// cache 2: minibatch 0 reads 1,2,3 and keeps 1,2 (3 is used last: not
	// cached). Minibatch 1 hits 1,2 and reads 4; 1 is never used again, so 4
	// takes its place.
	batches := [][]uint32{{1, 2, 3}, {1, 2, 4}, {2, 4}, {3}}
	p, err := NewPlan(batches, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Reads: batch0 3 rows; batch1: 4 (1,2 hit); batch2: none (2 and 4
	// cached: 1 is never used again and makes room for 4); batch3: 3.
	want := []int{3, 1, 0, 1}
	for b, w := range want {
		if p.Misses(b) != w {
			t.Errorf("minibatch %d: %d misses, want %d", b, p.Misses(b), w)
		}
	}
	if p.Distinct != 4 || p.Accesses() != 9 {
		t.Errorf("distinct %d accesses %d, want 4 and 9", p.Distinct, p.Accesses())
	}
	if _, ok := p.Batch(0).Keep(2); ok {
		t.Error("node 3 kept after minibatch 0, want bypassed (its next use is the furthest)")
	}
	replay(t, p, batches)
}

func TestPlanOversizedBatch(t *testing.T) {
	// One minibatch of 6 rows with a cache of 2: all 6 read, only the 2
	// needed soonest are kept.
	batches := [][]uint32{{0, 1, 2, 3, 4, 5}, {5, 4}, {3}}
	p, err := NewPlan(batches, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Misses(0) != 6 || p.Misses(1) != 0 || p.Misses(2) != 1 {
		t.Fatalf("misses %d %d %d, want 6 0 1", p.Misses(0), p.Misses(1), p.Misses(2))
	}
	replay(t, p, batches)
}

func TestPlanBadInput(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]uint32
		cache   int
	}{
		{"node outside", [][]uint32{{0, 9}}, 1},
		{"duplicate", [][]uint32{{1, 2, 1}}, 1},
		{"negative cache", [][]uint32{{1}}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewPlan(tc.batches, 5, tc.cache); !errors.Is(err, ErrInput) {
				t.Fatalf("err %v, want ErrInput", err)
			}
		})
	}
}

// TestPlanBeatsLRU: on larger random and skewed traces MIN never reads more
// than LRU, and replays cleanly.
func TestPlanBeatsLRU(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, zipf := range []float64{0, 1.1, 1.5} {
		for _, c := range []int{0, 1, 50, 400, 5000} {
			batches := randomBatches(r, 60, 300, 3000, zipf)
			p, err := NewPlan(batches, 3000, c)
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, batches)
			lru, err := LRUMisses(batches, 3000, c)
			if err != nil {
				t.Fatal(err)
			}
			if got > lru {
				t.Errorf("zipf %v cache %d: MIN reads %d > LRU %d", zipf, c, got, lru)
			}
			if c >= 3000 && got != p.Distinct {
				t.Errorf("zipf %v cache %d: reads %d, want the %d distinct rows", zipf, c, got, p.Distinct)
			}
			t.Logf("zipf %v cache %d: accesses %d MIN %d LRU %d", zipf, c, p.Accesses(), got, lru)
		}
	}
}

func TestLRUHandChecked(t *testing.T) {
	// cache 2: {1,2} read; {3} evicts 1; {1} evicts 2; {2} evicts 3.
	got, err := LRUMisses([][]uint32{{1, 2}, {3}, {1}, {2}}, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got != 5 {
		t.Fatalf("LRU misses %d, want 5", got)
	}
	p, err := NewPlan([][]uint32{{1, 2}, {3}, {1}, {2}}, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalMisses() != 3 {
		t.Fatalf("MIN misses %d, want 3", p.TotalMisses())
	}
}

// TestPlanSpilled: a plan kept in a spill file is the heap plan, access for
// access, MIN and preloaded alike.
func TestPlanSpilled(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	dir := t.TempDir()
	for trial := range 50 {
		numNodes := uint32(50 + r.IntN(500))
		batches := randomBatches(r, 1+r.IntN(30), 1+r.IntN(60), numNodes, 1.2)
		c := r.IntN(int(numNodes) + 1)
		for _, newPlan := range []func([][]uint32, uint32, int, ...PlanOption) (*Plan, error){NewPlan, NewPreloadedPlan} {
			heap, err := newPlan(batches, numNodes, c)
			if err != nil {
				t.Fatal(err)
			}
			spilled, err := newPlan(batches, numNodes, c, SpillTo(dir))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(heap.act, spilled.act) || !slices.Equal(heap.preload, spilled.preload) || heap.TotalMisses() != spilled.TotalMisses() {
				t.Fatalf("trial %d: the spilled plan differs", trial)
			}
		}
	}
	if _, err := NewPlan([][]uint32{{1}}, 4, 1, SpillTo(filepath.Join(dir, "missing"))); err == nil {
		t.Fatal("a spill directory that does not exist was accepted")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("%d spill files left in the directory (they are unlinked at once)", len(ents))
	}
}
