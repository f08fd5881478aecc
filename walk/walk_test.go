package walk

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/internal/chisq"
	"github.com/streamsampler/streamsampler/internal/testgraph"
	"github.com/streamsampler/streamsampler/rng"
)

// csrOf is testgraph.FromAdjacency as a csrGraph.
func csrOf(adj [][]uint32) *csrGraph {
	indptr, indices := testgraph.FromAdjacency(adj)
	return &csrGraph{Indptr: indptr, Indices: indices}
}

// smallWalkGraph has repeated neighbors (0→2 twice, 2→1 twice, 5→6
// twice), a dangling node (4) and, for node2vec, transitions (u, v) whose
// candidates are of all three kinds (from 0 to 2: 0 returns, 1, 3 and 5
// are near, 6 is far).
func smallWalkGraph() *csrGraph {
	return csrOf([][]uint32{
		0: {1, 2, 2, 3, 5},
		1: {0, 2, 4},
		2: {0, 1, 1, 3, 5, 6},
		3: {0, 2, 5, 6},
		4: {},
		5: {0, 1, 2, 3, 4, 6, 6},
		6: {2, 3, 5},
	})
}

// randomRepeatsCSR is testgraph.RandomRepeatsCSR as a csrGraph.
func randomRepeatsCSR(n uint32, avgDeg int, seed uint64) *csrGraph {
	indptr, indices := testgraph.RandomRepeatsCSR(n, avgDeg, seed)
	return &csrGraph{Indptr: indptr, Indices: indices}
}

func TestModeNames(t *testing.T) {
	for _, m := range []Mode{DeepWalk, PPR, Node2Vec} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMode("DeepWalk"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseMode(DeepWalk): %v, want ErrInvalid", err)
	}
	if Mode(0) != DeepWalk || Mode(9).String() != "Mode(9)" {
		t.Error("zero value or unknown mode's name")
	}
}

// TestTaken: steps are counted up to each row's last node, and a row
// padded with -1 is a walk that ended early.
func TestTaken(t *testing.T) {
	c := Config{Length: 3, WalksPerNode: 1}
	out := []int32{
		1, 2, 3, 4, // 3 steps
		5, 6, -1, -1, // 1 step, ended
		7, -1, -1, -1, // no step, ended
		8, 8, 9, 8, // 3 steps (PPR's jumps back are steps)
	}
	if steps, ended := c.Taken(out); steps != 7 || ended != 2 {
		t.Fatalf("Taken = %d steps, %d ended; want 7, 2", steps, ended)
	}
	if steps, ended := c.Taken(nil); steps != 0 || ended != 0 {
		t.Fatalf("Taken(nil) = %d, %d", steps, ended)
	}
}

func TestConfigRejects(t *testing.T) {
	ok := Config{Length: 3, WalksPerNode: 2}
	g := smallWalkGraph()
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		starts []uint32
	}{
		{"length 0", func(c *Config) { c.Length = 0 }, nil},
		{"length 2^32", func(c *Config) { c.Length = 1 << 32 }, nil},
		{"walks per node 0", func(c *Config) { c.WalksPerNode = 0 }, nil},
		{"restart 1", func(c *Config) { c.Restart = 1 }, nil},
		{"restart negative", func(c *Config) { c.Restart = -0.1 }, nil},
		{"restart NaN", func(c *Config) { c.Restart = math.NaN() }, nil},
		{"p negative", func(c *Config) { c.P = -1 }, nil},
		{"q infinite", func(c *Config) { c.Q = math.Inf(1) }, nil},
		{"p denormal", func(c *Config) { c.P = 5e-324 }, nil},
		{"mode", func(c *Config) { c.Mode = 3 }, nil},
		{"start beyond graph", func(*Config) {}, []uint32{1, 7}},
		{"2^32 walks", func(c *Config) { c.WalksPerNode = 1 << 31 }, []uint32{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			starts := tc.starts
			if starts == nil {
				starts = []uint32{0}
				if err := c.Check(); !errors.Is(err, ErrInvalid) {
					t.Errorf("Check: %v, want ErrInvalid", err)
				}
			}
			if _, err := Reference(g, starts, c); !errors.Is(err, ErrInvalid) {
				t.Errorf("Reference: %v, want ErrInvalid", err)
			}
		})
	}
	if err := ok.Check(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if w, err := Reference(g, nil, ok); err != nil || len(w) != 0 {
		t.Fatalf("no starts: %v, %v", w, err)
	}
}

// walkModes are the configurations the property tests run, every mode and
// option.
var walkModes = []struct {
	name string
	cfg  Config
}{
	{"deepwalk", Config{Mode: DeepWalk, Seed: 1}},
	{"ppr", Config{Mode: PPR, Restart: 0.3, Seed: 2}},
	{"ppr-stop", Config{Mode: PPR, Restart: 0.3, StopAtRestart: true, Seed: 2}},
	{"ppr-0", Config{Mode: PPR, Seed: 2}},
	{"node2vec", Config{Mode: Node2Vec, P: 0.5, Q: 2, Seed: 3}},
	{"node2vec-default", Config{Mode: Node2Vec, Seed: 3}},
	{"node2vec-extreme", Config{Mode: Node2Vec, P: 100, Q: 0.01, Seed: 4}},
}

// TestReferenceEdges: every consecutive pair of a walk is an edge of
// the graph, or PPR's jump back to the start; -1 comes only after a node
// without neighbors or at PPR's first restart with StopAtRestart, and
// stays to the end of the row; row w starts at starts[w mod n].
func TestReferenceEdges(t *testing.T) {
	for _, gc := range []struct {
		name string
		g    *csrGraph
	}{{"small", smallWalkGraph()}, {"random", randomRepeatsCSR(2000, 5, 11)}} {
		starts := randomSeeds(gc.g.NumNodes(), 300, 5)
		for _, tc := range walkModes {
			t.Run(gc.name+"/"+tc.name, func(t *testing.T) {
				c := tc.cfg
				c.Length, c.WalksPerNode = 12, 3
				walks, err := Reference(gc.g, starts, c)
				if err != nil {
					t.Fatal(err)
				}
				checkWalkEdges(t, gc.g, starts, c, walks)
			})
		}
	}
}

// TestReferenceInto: writing into a caller's slice gives exactly
// Reference's rows, overwriting whatever was there, and an output of
// the wrong size is refused with ErrInvalid.
func TestReferenceInto(t *testing.T) {
	g := randomRepeatsCSR(500, 5, 3)
	starts := randomSeeds(g.NumNodes(), 100, 4)
	for _, tc := range walkModes {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Length, c.WalksPerNode, c.Seed = 9, 2, 17
			want, err := Reference(g, starts, c)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]int32, len(want))
			for i := range out {
				out[i] = 12345 // garbage the walker must overwrite
			}
			if err := ReferenceInto(g, starts, c, out); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, want) {
				t.Fatal("ReferenceInto differs from Reference")
			}
			for _, n := range []int{len(want) - 1, len(want) + 1, 0} {
				if err := ReferenceInto(g, starts, c, make([]int32, n)); !errors.Is(err, ErrInvalid) {
					t.Errorf("output of %d entries (want %d): %v, want ErrInvalid", n, len(want), err)
				}
			}
		})
	}
}

// checkWalkEdges checks the edge and padding properties of walks.
func checkWalkEdges(t *testing.T, g *csrGraph, starts []uint32, c Config, walks []int32) {
	t.Helper()
	n, row := len(starts), c.Length+1
	if len(walks) != NumWalks(n, c)*row {
		t.Fatalf("%d values, want %d walks of %d", len(walks), NumWalks(n, c), row)
	}
	thr := c.Thresholds()
	ended := 0
	for w := range NumWalks(n, c) {
		walk := walks[w*row : (w+1)*row]
		start := starts[w%n]
		if walk[0] != int32(start) {
			t.Fatalf("walk %d starts at %d, want starts[%d] = %d", w, walk[0], w%n, start)
		}
		for s := 1; s < row; s++ {
			prev, cur := walk[s-1], walk[s]
			if prev < 0 {
				if cur != -1 {
					t.Fatalf("walk %d: %d after the walk ended: %v", w, cur, walk)
				}
				continue
			}
			nb, _ := g.Neighbors(uint32(prev))
			restart := c.Mode == PPR && len(nb) > 0 && rng.Decide(rng.WalkKey(c.Seed, uint32(s)), uint32(w), 0, thr.Restart)
			switch {
			case cur == -1 && len(nb) == 0, cur == -1 && restart && c.StopAtRestart:
				ended++
			case cur == -1:
				t.Fatalf("walk %d ends at step %d at node %d of degree %d: %v", w, s, prev, len(nb), walk)
			case restart && !c.StopAtRestart:
				if cur != int32(start) {
					t.Fatalf("walk %d step %d restarts to %d, not its start %d", w, s, cur, start)
				}
			case !IsNeighbor(nb, uint32(cur)):
				t.Fatalf("walk %d step %d: %d → %d is not an edge", w, s, prev, cur)
			}
		}
	}
	if c.Mode == PPR && c.StopAtRestart && ended == 0 {
		t.Error("no walk ended: the test has no restarts to check")
	}
}

// TestReferenceStopIsPrefix: with StopAtRestart a PPR walk is the
// walk that jumps back, up to its first restart.
func TestReferenceStopIsPrefix(t *testing.T) {
	g := randomRepeatsCSR(1000, 4, 2)
	starts := randomSeeds(g.NumNodes(), 200, 9)
	c := Config{Mode: PPR, Restart: 0.2, Length: 10, WalksPerNode: 2, Seed: 77}
	jump, err := Reference(g, starts, c)
	if err != nil {
		t.Fatal(err)
	}
	c.StopAtRestart = true
	stop, err := Reference(g, starts, c)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for i := range stop {
		if stop[i] == -1 {
			if jump[i] != -1 {
				differ++
			}
			continue
		}
		if stop[i] != jump[i] {
			t.Fatalf("value %d (walk %d): stop-at-restart %d, jumping back %d", i, i/11, stop[i], jump[i])
		}
	}
	if differ == 0 {
		t.Fatal("stop-at-restart never ended a walk early")
	}
}

// TestReferenceDefinition spells out DESIGN §3's definition with
// rng's functions alone (not the walker's helpers) and compares every
// walk; it also checks determinism.
func TestReferenceDefinition(t *testing.T) {
	g := randomRepeatsCSR(1500, 6, 4)
	starts := randomSeeds(g.NumNodes(), 100, 8)
	for _, tc := range walkModes {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Length, c.WalksPerNode = 9, 4
			got, err := Reference(g, starts, c)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Reference(g, starts, c)
			if err != nil || !slices.Equal(got, again) {
				t.Fatalf("a second run differs (%v)", err)
			}
			row := c.Length + 1
			for w := range NumWalks(len(starts), c) {
				want := definitionWalk(g, starts[w%len(starts)], uint32(w), c)
				if have := got[w*row : (w+1)*row]; !slices.Equal(have, want) {
					t.Fatalf("walk %d: %v, definition gives %v", w, have, want)
				}
			}
		})
	}
}

// definitionWalk is DESIGN §3's walk w from start, written from the text.
func definitionWalk(g *csrGraph, start, w uint32, c Config) []int32 {
	p, q := c.P, c.Q
	if p == 0 {
		p = 1
	}
	if q == 0 {
		q = 1
	}
	m := max(1/p, 1, 1/q)
	walk := []int32{int32(start)}
	for t := uint32(1); t <= uint32(c.Length); t++ {
		v := walk[t-1]
		if v < 0 {
			walk = append(walk, -1)
			continue
		}
		nb, _ := g.Neighbors(uint32(v))
		d := uint32(len(nb))
		key := rng.WalkKey(c.Seed, t)
		var next int32
		switch {
		case d == 0:
			next = -1
		case c.Mode == PPR && rng.Decide(key, w, 0, rng.Threshold(c.Restart)):
			next = int32(start)
			if c.StopAtRestart {
				next = -1
			}
		case c.Mode == Node2Vec && t >= 2:
			u := uint32(walk[t-2])
			un, _ := g.Neighbors(u)
			for a := uint32(0); a < rng.MaxAttempts; a++ {
				x := nb[rng.Candidate(key, w, a, d)]
				weight := 1 / q
				if x == u {
					weight = 1 / p
				} else if slices.Contains(un, x) {
					weight = 1
				}
				next = int32(x)
				if rng.Decide(key, w, a, rng.Threshold(weight/m)) {
					break
				}
			}
		default:
			next = int32(nb[rng.Candidate(key, w, 0, d)])
		}
		walk = append(walk, next)
	}
	return walk
}

// TestWalkDesignVectors: DESIGN §3's walk vectors, through the walker:
// seed 42, walk 7 from a node with neighbors 100..1099 takes nb[987] at
// step 1 and nb[634] at step 2; its restart decision word 1636014556 is
// above threshold(0.15) and below threshold(0.5).
func TestWalkDesignVectors(t *testing.T) {
	adj := make([][]uint32, 1100)
	nb := make([]uint32, 1000)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	adj[0], adj[1087] = nb, nb
	g := csrOf(adj)
	// Walk 7 is r = 7 of the single start 0.
	for _, tc := range []struct {
		name string
		cfg  Config
		want []int32
	}{
		{"deepwalk", Config{}, []int32{0, 100 + 987, 100 + 634}},
		{"ppr 0.15", Config{Mode: PPR, Restart: 0.15}, []int32{0, 100 + 987}},
		{"ppr 0.5", Config{Mode: PPR, Restart: 0.5}, []int32{0, 0}},
		{"ppr 0.5 stop", Config{Mode: PPR, Restart: 0.5, StopAtRestart: true}, []int32{0, -1, -1}},
		{"node2vec step 1", Config{Mode: Node2Vec, P: 0.5, Q: 2}, []int32{0, 100 + 987}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Seed, c.Length, c.WalksPerNode = 42, 2, 8
			walks, err := Reference(g, []uint32{0}, c)
			if err != nil {
				t.Fatal(err)
			}
			if got := walks[7*3 : 7*3+len(tc.want)]; !slices.Equal(got, tc.want) {
				t.Fatalf("walk 7 = %v, want %v", walks[7*3:8*3], tc.want)
			}
		})
	}
	if th := (Config{Restart: 0.15}).Thresholds().Restart; th != 644245094 {
		t.Fatalf("threshold(0.15) = %d, want 644245094", th)
	}
}

// TestNode2VecSettle: an attempt settled without u's adjacency has the
// answer Node2VecAccepts gives either way; an unsettled one has two.
func TestNode2VecSettle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, pq := range [][2]float64{{1, 1}, {0.5, 2}, {4, 0.25}, {100, 0.01}} {
		thr := rng.Node2Vec(pq[0], pq[1])
		var settled, unsettled int
		for range 20000 {
			key, w, a := r.Uint64(), r.Uint32(), uint32(r.IntN(rng.MaxAttempts))
			x, u := uint32(r.IntN(4)), uint32(r.IntN(4))
			accept, ok := Node2VecSettle(thr, key, w, a, x, u)
			near := Node2VecAccepts(thr, key, w, a, x, u, true)
			far := Node2VecAccepts(thr, key, w, a, x, u, false)
			switch {
			case ok && (accept != near || accept != far):
				t.Fatalf("p,q %v: settled %v, but near %v far %v", pq, accept, near, far)
			case !ok && near == far:
				t.Fatalf("p,q %v: unsettled, but near and far agree (%v)", pq, near)
			case ok:
				settled++
			default:
				unsettled++
			}
		}
		if pq != [2]float64{1, 1} && unsettled == 0 {
			t.Errorf("p,q %v: no attempt needed u's adjacency", pq)
		}
		if settled == 0 {
			t.Errorf("p,q %v: no attempt was settled", pq)
		}
	}
}

// walkState is where a transition starts: the walk's start s, previous
// node u (-1 at step 1) and current node v.
type walkState struct{ s, u, v int32 }

// walkTransitions counts, per state, the next nodes (-1: ended) of all
// walks. The key of u is -1 unless the mode is node2vec, and s is -1
// unless it is PPR, so that states pool as far as the law allows.
func walkTransitions(walks []int32, row int, mode Mode) map[walkState]map[int32]int {
	out := map[walkState]map[int32]int{}
	for w := 0; w < len(walks); w += row {
		walk := walks[w : w+row]
		for t := 1; t < row && walk[t-1] >= 0; t++ {
			st := walkState{-1, -1, walk[t-1]}
			if mode == Node2Vec && t >= 2 {
				st.u = walk[t-2]
			}
			if mode == PPR {
				st.s = walk[0]
			}
			if out[st] == nil {
				out[st] = map[int32]int{}
			}
			out[st][walk[t]]++
		}
	}
	return out
}

// uniformLaw is P(x | v) = multiplicity of x in nb / d.
func uniformLaw(nb []uint32) map[int32]float64 {
	p := map[int32]float64{}
	for _, x := range nb {
		p[int32(x)] += 1 / float64(len(nb))
	}
	return p
}

// node2vecLaw is node2vec's P(x | u, v) over nb = N(v), from the integer
// thresholds: exact (the ideal law, capped false) or with the walker's cap
// of rng.MaxAttempts attempts, the last taken (capped true). Per attempt
// candidate x comes with probability q_x = mult/d and is accepted with
// A_x = T_x/2^32; with ρ = 1 − Σ q_x A_x, the ideal law is q_x A_x / (1−ρ)
// and the capped one q_x A_x (1−ρ^63)/(1−ρ) + ρ^63 q_x.
func node2vecLaw(thr rng.Node2VecThresholds, nb []uint32, u uint32, un []uint32, capped bool) map[int32]float64 {
	qx := uniformLaw(nb)
	acc := map[int32]float64{}
	rho := 1.0
	for x, q := range qx {
		acc[x] = float64(Node2VecKindThreshold(thr, uint32(x), u, IsNeighbor(un, uint32(x)))) / (1 << 32)
		rho -= q * acc[x]
	}
	tail := 0.0
	if capped {
		tail = math.Pow(rho, rng.MaxAttempts-1)
	}
	p := map[int32]float64{}
	for x, q := range qx {
		p[x] = q*acc[x]*(1-tail)/(1-rho) + tail*q
	}
	return p
}

// chiSquare adds observed counts against law (probabilities summing to
// 1) to a pooled statistic: it returns Σ (o−e)²/e over the law's cells
// and their degrees of freedom (cells − 1), and fails the test where a
// count falls outside the law's support or an expected count is under 5
// (the approximation's rule).
func chiSquare(t *testing.T, st walkState, counts map[int32]int, law map[int32]float64) (stat float64, df int) {
	t.Helper()
	total := 0
	for x, n := range counts {
		if law[x] == 0 {
			t.Fatalf("state %+v: %d transitions to %d, which has probability 0", st, n, x)
		}
		total += n
	}
	for x, p := range law {
		e := p * float64(total)
		if e < 5 {
			t.Fatalf("state %+v: expected count %.1f of %d under 5; walk more", st, e, x)
		}
		o := float64(counts[x])
		stat += (o - e) * (o - e) / e
	}
	return stat, len(law) - 1
}

// TestWalkTransitionsChiSquare: for each mode, the empirical transition
// frequencies from each state match the exact law (a chi-square test of
// all states pooled, at 99.9%, fixed seeds): deepwalk 1/d per position,
// PPR α to the start (or the end) and (1−α)/d per position, node2vec
// weight 1/p, 1, 1/q over the current node's positions, by kind.
func TestWalkTransitionsChiSquare(t *testing.T) {
	g := smallWalkGraph()
	starts := []uint32{0, 1, 2, 3, 4, 5, 6}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"deepwalk", Config{Mode: DeepWalk, Seed: 101}},
		{"ppr", Config{Mode: PPR, Restart: 0.15, Seed: 102}},
		{"ppr-stop", Config{Mode: PPR, Restart: 0.4, StopAtRestart: true, Seed: 103}},
		{"node2vec p=2 q=0.5", Config{Mode: Node2Vec, P: 2, Q: 0.5, Seed: 104}},
		{"node2vec p=0.5 q=2", Config{Mode: Node2Vec, P: 0.5, Q: 2, Seed: 105}},
		{"node2vec p=4 q=4", Config{Mode: Node2Vec, P: 4, Q: 4, Seed: 106}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Length, c.WalksPerNode = 3, 3000
			walks, err := Reference(g, starts, c)
			if err != nil {
				t.Fatal(err)
			}
			thr := c.Thresholds()
			alpha := float64(thr.Restart) / (1 << 32)
			var stat float64
			var df, states int
			for st, counts := range walkTransitions(walks, c.Length+1, c.Mode) {
				nb, _ := g.Neighbors(uint32(st.v))
				var law map[int32]float64
				switch {
				case len(nb) == 0:
					law = map[int32]float64{-1: 1}
				case c.Mode == PPR:
					law = map[int32]float64{}
					for x, p := range uniformLaw(nb) {
						law[x] = (1 - alpha) * p
					}
					to := st.s
					if c.StopAtRestart {
						to = -1
					}
					law[to] += alpha
				case c.Mode == Node2Vec && st.u >= 0:
					un, _ := g.Neighbors(uint32(st.u))
					law = node2vecLaw(thr.Node2Vec, nb, uint32(st.u), un, false)
					capped := node2vecLaw(thr.Node2Vec, nb, uint32(st.u), un, true)
					if tv := totalVariation(law, capped); tv > 1e-6 {
						t.Fatalf("state %+v: the attempt cap moves the law by %g: pick p, q where it is negligible", st, tv)
					}
				default:
					law = uniformLaw(nb)
				}
				if len(law) < 2 {
					continue // one outcome: nothing random to test
				}
				s, d := chiSquare(t, st, counts, law)
				stat += s
				df += d
				states++
			}
			if states < 5 {
				t.Fatalf("only %d states with a choice; the test graph is too small", states)
			}
			if lim := chisq.Quantile(df, chisq.Z999); stat > lim {
				t.Fatalf("chi-square %.1f over %d states (df %d) > %.1f", stat, states, df, lim)
			}
			t.Logf("chi-square %.1f, df %d, %d states", stat, df, states)
		})
	}
}

// totalVariation is ½ Σ |p − q| over both laws' cells.
func totalVariation(p, q map[int32]float64) float64 {
	tv := 0.0
	for x := range p {
		tv += math.Abs(p[x] - q[x])
	}
	for x := range q {
		if _, ok := p[x]; !ok {
			tv += q[x]
		}
	}
	return tv / 2
}

// TestNode2VecAttemptCap: with an extreme q (far candidates accepted 1%
// of the time) and a current node where the one candidate of the largest
// weight is rare (1 return among 101 neighbors), 64 attempts often all
// fail and the walker's law departs visibly from node2vec's; the
// empirical transitions follow the capped law exactly (chi-square), are
// rejected as node2vec's (the test can tell), and the total variation
// between the two stays below DESIGN's bound (1 − min T/2^32)^64.
func TestNode2VecAttemptCap(t *testing.T) {
	adj := make([][]uint32, 102)
	adj[0] = []uint32{1}
	for x := uint32(0); x < 102; x++ {
		if x != 1 {
			adj[1] = append(adj[1], x)
		}
	}
	g := csrOf(adj)
	c := Config{Mode: Node2Vec, P: 1, Q: 100, Length: 2, WalksPerNode: 20000, Seed: 7}
	walks, err := Reference(g, []uint32{0}, c)
	if err != nil {
		t.Fatal(err)
	}
	thr := c.Thresholds().Node2Vec
	st := walkState{-1, 0, 1}
	counts := walkTransitions(walks, 3, Node2Vec)[st]
	capped := node2vecLaw(thr, adj[1], 0, adj[0], true)
	ideal := node2vecLaw(thr, adj[1], 0, adj[0], false)

	stat, df := chiSquare(t, st, counts, capped)
	if lim := chisq.Quantile(df, chisq.Z999); stat > lim {
		t.Fatalf("against the capped law: chi-square %.1f > %.1f (df %d)", stat, lim, df)
	}
	stat, df = chiSquare(t, st, counts, ideal)
	if lim := chisq.Quantile(df, chisq.Z999); stat <= lim {
		t.Fatalf("against node2vec's law: chi-square %.1f <= %.1f (df %d): the test cannot see the cap", stat, lim, df)
	}
	minT := float64(min(thr.Return, thr.Near, thr.Far)) / (1 << 32)
	bound := math.Pow(1-minT, rng.MaxAttempts)
	tv := totalVariation(capped, ideal)
	emp := map[int32]float64{}
	for x, n := range counts {
		emp[x] = float64(n) / float64(c.WalksPerNode)
	}
	if tv > bound {
		t.Fatalf("cap's bias %.4f over DESIGN's bound %.4f", tv, bound)
	}
	// The empirical law is as far from node2vec's as the capped one, up
	// to sampling noise (a few hundredths with 101 cells and 20000 walks).
	if e := totalVariation(emp, ideal); math.Abs(e-tv) > 0.05 || e > bound {
		t.Fatalf("empirical distance to node2vec's law %.4f; capped law's %.4f, bound %.4f", e, tv, bound)
	}
	t.Logf("P(return) ideal %.3f capped %.3f observed %.3f; bias %.4f, bound %.4f", ideal[0], capped[0], emp[0], tv, bound)
}

// BenchmarkReference: the in-memory walker's rate (steps/s) on a
// random graph of 100k nodes, one walk of 80 steps per node, per mode.
func BenchmarkReference(b *testing.B) {
	g := randomCSR(100_000, 10, 1)
	starts := make([]uint32, g.NumNodes())
	for v := range starts {
		starts[v] = uint32(v)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"deepwalk", Config{Mode: DeepWalk}},
		{"ppr", Config{Mode: PPR, Restart: 0.15}},
		{"node2vec", Config{Mode: Node2Vec, P: 0.5, Q: 2}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := tc.cfg
			c.Length, c.WalksPerNode = 80, 1
			var steps int
			for b.Loop() {
				walks, err := Reference(g, starts, c)
				if err != nil {
					b.Fatal(err)
				}
				steps = 0
				for i, v := range walks {
					if i%(c.Length+1) != 0 && v >= 0 {
						steps++
					}
				}
			}
			b.ReportMetric(float64(steps)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
