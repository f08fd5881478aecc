package hls

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/streamsampler/streamsampler/internal/chisq"
	"github.com/streamsampler/streamsampler/rng"
)

// engines are the implementations that must agree; Run is the C++ kernel
// when built with cgo.
var engines = []struct {
	name string
	fn   func([]uint32, []uint32, []int32, int, uint64, bool) error
}{
	{"Run/" + Engine, Run},
	{"Reference", Reference},
}

// edgeEngine is an implementation of the kernel with edge indices.
type edgeEngine struct {
	name string
	fn   func(chunk, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error
}

// edgeEngines must agree with engines on the samples and with
// directEdges on the edge indices; the cgo build adds the kernel's
// contiguous form (edges after the samples in one buffer).
var edgeEngines = []edgeEngine{
	{"RunEdges/" + Engine, RunEdges},
	{"ReferenceEdges", ReferenceEdges},
}

func TestMaxFanoutMatchesHeader(t *testing.T) {
	src, err := os.ReadFile("sample_kernel.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define MAX_FANOUT (\d+)\s*$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("sample_kernel.h: no #define MAX_FANOUT")
	}
	if v, _ := strconv.Atoi(string(m[1])); v != MaxFanout {
		t.Fatalf("sample_kernel.h MAX_FANOUT = %d, hls.MaxFanout = %d", v, MaxFanout)
	}
}

// The vectors of DESIGN §3 through a chunk: nodes 5..9, node 7 with
// neighbors 100..199, node 8 with [3 9].
func TestDesignVectors(t *testing.T) {
	nb := make([]uint32, 100)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	chunk := buildChunk(5, [][]uint32{nil, {1}, nb, {3, 9}, nil}, 7)
	key := rng.Key(42, 0, 0)
	tests := []struct {
		name    string
		targets []uint32
		k       int
		replace bool
		want    []int32
		edges   []int32 // chunk-local: node 7's first edge is 1, node 8's 101
	}{
		{"floyd", []uint32{7}, 5, false, []int32{170, 193, 151, 156, 181}, []int32{71, 94, 52, 57, 82}},
		{"replace", []uint32{7}, 5, true, []int32{173, 196, 152, 157, 181}, []int32{74, 97, 53, 58, 82}},
		{"short", []uint32{8}, 4, false, []int32{3, 9, -1, -1}, []int32{101, 102, -1, -1}},
		{"rows", []uint32{8, 7, 5}, 5, false, []int32{3, 9, -1, -1, -1, 170, 193, 151, 156, 181, -1, -1, -1, -1, -1},
			[]int32{101, 102, -1, -1, -1, 71, 94, 52, 57, 82, -1, -1, -1, -1, -1}},
		{"empty-replace", []uint32{9}, 3, true, []int32{-1, -1, -1}, []int32{-1, -1, -1}},
	}
	for _, e := range engines {
		for _, tc := range tests {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				out := make([]int32, len(tc.targets)*tc.k)
				if err := e.fn(chunk, tc.targets, out, tc.k, key, tc.replace); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(out, tc.want) {
					t.Fatalf("got %v, want %v", out, tc.want)
				}
			})
		}
	}
	for _, e := range edgeEngines {
		for _, tc := range tests {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				out, edges := make([]int32, len(tc.want)), make([]int32, len(tc.want))
				if err := e.fn(chunk, tc.targets, out, edges, tc.k, key, tc.replace); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(out, tc.want) || !slices.Equal(edges, tc.edges) {
					t.Fatalf("got %v edges %v, want %v edges %v", out, edges, tc.want, tc.edges)
				}
			})
		}
	}
}

// checkAll runs every engine and compares each with rng.Sample applied row
// by row.
func checkAll(t *testing.T, start uint32, adj [][]uint32, chunk, targets []uint32, fanout int, key uint64, replace bool) {
	t.Helper()
	want := directSample(start, adj, targets, fanout, key, replace)
	out := make([]int32, len(want))
	for _, e := range engines {
		for i := range out {
			out[i] = math.MinInt32 // catch unwritten slots
		}
		if err := e.fn(chunk, targets, out, fanout, key, replace); err != nil {
			t.Fatalf("%s fanout %d replace %v: %v", e.name, fanout, replace, err)
		}
		if i := firstDiff(out, want); i >= 0 {
			r := i / fanout
			t.Fatalf("%s fanout %d replace %v: row %d (node %d, degree %d) slot %d: got %v, want %v",
				e.name, fanout, replace, r, targets[r], len(adj[targets[r]-start]), i%fanout,
				out[r*fanout:(r+1)*fanout], want[r*fanout:(r+1)*fanout])
		}
	}
	wantEdges := directEdges(start, adj, targets, fanout, key, replace)
	edges := make([]int32, len(want))
	for _, e := range edgeEngines {
		for i := range out {
			out[i], edges[i] = math.MinInt32, math.MinInt32
		}
		if err := e.fn(chunk, targets, out, edges, fanout, key, replace); err != nil {
			t.Fatalf("%s fanout %d replace %v: %v", e.name, fanout, replace, err)
		}
		if i := firstDiff(out, want); i >= 0 {
			t.Fatalf("%s fanout %d replace %v: sample %d: got %d, want %d", e.name, fanout, replace, i, out[i], want[i])
		}
		if i := firstDiff(edges, wantEdges); i >= 0 {
			r := i / fanout
			t.Fatalf("%s fanout %d replace %v: row %d (node %d, degree %d) slot %d: edges %v, want %v",
				e.name, fanout, replace, r, targets[r], len(adj[targets[r]-start]), i%fanout,
				edges[r*fanout:(r+1)*fanout], wantEdges[r*fanout:(r+1)*fanout])
		}
	}
}

func firstDiff(a, b []int32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// Every fanout 1..MaxFanout, both modes, on a chunk whose degrees sit on
// and around every boundary (0, k-1, k, k+1) plus larger ones; target
// counts that are not a multiple of the 32 lanes, repeated and unsorted
// targets.
func TestEnginesAgreeAllFanouts(t *testing.T) {
	g := &gen{s: 1}
	const start = 1000
	for k := 1; k <= MaxFanout; k++ {
		degrees := []int{0, 1, max(k-1, 0), k, k + 1, k + 2, 2 * k, 3*k + 7, 200}
		adj := g.randomAdj(150, degrees)
		chunk := buildChunk(start, adj, g.intn(5))
		targets := allNodes(start, len(adj))
		// Unsorted, repeated and a non-multiple of 32 in count.
		for i := 0; i < 40; i++ {
			targets = append(targets, start+uint32(g.intn(len(adj))))
		}
		for _, replace := range []bool{false, true} {
			key := rng.Key(uint64(k), 3, k%7)
			checkAll(t, start, adj, chunk, targets[:len(targets)-g.intn(32)], k, key, replace)
		}
	}
}

func TestHub(t *testing.T) {
	d := 1_000_000
	if testing.Short() {
		d = 100_000
	}
	g := &gen{s: 2}
	const start = 1 << 30
	adj := [][]uint32{g.sortedNeighbors(3), g.sortedNeighbors(d), nil, g.sortedNeighbors(MaxFanout + 1)}
	chunk := buildChunk(start, adj, 0)
	targets := []uint32{start + 1, start, start + 1, start + 3, start + 2, start + 1}
	for _, k := range []int{1, 2, 10, 15, 25, 63, MaxFanout} {
		for _, replace := range []bool{false, true} {
			for e := uint32(0); e < 3; e++ {
				checkAll(t, start, adj, chunk, targets, k, rng.Key(7, e, 1), replace)
			}
		}
	}
}

// Many random chunks and keys, including high node ids and chunks with no
// padding after the last neighbor.
func TestEnginesAgreeRandom(t *testing.T) {
	g := &gen{s: 3}
	iters := 200
	if testing.Short() {
		iters = 40
	}
	for it := 0; it < iters; it++ {
		start := uint32(g.intn(1 << 31))
		n := 1 + g.intn(300)
		if uint64(start)+uint64(n) > 1<<31 {
			start = 1<<31 - uint32(n)
		}
		degrees := []int{0, g.intn(8), g.intn(30), g.intn(100), g.intn(1000)}
		adj := g.randomAdj(n, degrees)
		chunk := buildChunk(start, adj, g.intn(2)*g.intn(100))
		targets := make([]uint32, g.intn(200))
		for i := range targets {
			targets[i] = start + uint32(g.intn(n))
		}
		slices.Sort(targets)
		k := 1 + g.intn(MaxFanout)
		checkAll(t, start, adj, chunk, targets, k, g.next(), g.intn(2) == 1)
	}
}

func TestNoDuplicatesWithoutReplacement(t *testing.T) {
	g := &gen{s: 4}
	const start = 0
	adj := g.randomAdj(2000, []int{5, 16, 17, 30, 64, 65, 100, 1000})
	chunk := buildChunk(start, adj, 0)
	targets := allNodes(start, len(adj))
	for _, k := range []int{1, 15, 16, 29, MaxFanout} {
		out := make([]int32, len(targets)*k)
		if err := Run(chunk, targets, out, k, rng.Key(9, 1, 2), false); err != nil {
			t.Fatal(err)
		}
		for r, node := range targets {
			row := out[r*k : (r+1)*k]
			nb := adj[node-start]
			seen := map[int32]bool{}
			valid := 0
			for _, v := range row {
				if v == -1 {
					continue
				}
				valid++
				if seen[v] {
					t.Fatalf("k %d node %d: %d twice in %v", k, node, v, row)
				}
				if _, ok := slices.BinarySearch(nb, uint32(v)); !ok {
					t.Fatalf("k %d node %d: %d is not a neighbor", k, node, v)
				}
				seen[v] = true
			}
			if valid != min(k, len(nb)) {
				t.Fatalf("k %d node %d degree %d: %d valid slots, want %d", k, node, len(nb), valid, min(k, len(nb)))
			}
		}
	}
}

// Without replacement every neighbor is included with probability k/d;
// with replacement every slot is uniform. Counted over many nodes (each
// node's draws are independent) and keys, through the kernel, with
// degrees that straddle the lane and fanout boundaries.
func TestKernelInclusionUniform(t *testing.T) {
	const nodes = 4000
	keys := 10
	if testing.Short() {
		keys = 4
	}
	for _, tc := range []struct{ d, k int }{{50, 7}, {17, 16}, {1000, 64}, {3, 1}} {
		for _, replace := range []bool{false, true} {
			t.Run(fmt.Sprintf("d%d/k%d/replace=%v", tc.d, tc.k, replace), func(t *testing.T) {
				nb := make([]uint32, tc.d)
				for i := range nb {
					nb[i] = uint32(i)
				}
				adj := make([][]uint32, nodes)
				for i := range adj {
					adj[i] = nb
				}
				const start = 12345
				chunk := buildChunk(start, adj, 0)
				targets := allNodes(start, nodes)
				out := make([]int32, nodes*tc.k)
				counts := make([]float64, tc.d)
				for s := 0; s < keys; s++ {
					if err := Run(chunk, targets, out, tc.k, rng.Key(uint64(s), 0, 0), replace); err != nil {
						t.Fatal(err)
					}
					for _, v := range out {
						counts[v]++
					}
				}
				expect := float64(keys*nodes*tc.k) / float64(tc.d)
				chi := chisq.Statistic(counts, expect)
				// Without replacement the indicators of one node are
				// negatively correlated, which shrinks the variance by
				// (1-k/d); chi-square with the plain bound stays
				// conservative.
				if bound := chisq.Quantile(tc.d-1, chisq.Z999); chi > bound {
					t.Fatalf("chi-square %.1f > %.1f (99.9%%, df %d)", chi, bound, tc.d-1)
				}
			})
		}
	}
}

func TestErrors(t *testing.T) {
	good := buildChunk(10, [][]uint32{{1, 2}, {3}, nil}, 0) // nodes 10..12
	corrupt := func(i int, v uint32) []uint32 {
		c := slices.Clone(good)
		c[i] = v
		return c
	}
	tests := []struct {
		name    string
		chunk   []uint32
		targets []uint32
		out     int
		fanout  int
		want    error
	}{
		{"fanout0", good, []uint32{10}, 0, 0, ErrBadFanout},
		{"fanout-neg", good, []uint32{10}, 1, -1, ErrBadFanout},
		{"fanout-big", good, []uint32{10}, MaxFanout + 1, MaxFanout + 1, ErrBadFanout},
		{"out-short", good, []uint32{10, 11}, 3, 2, ErrBadOutput},
		{"out-long", good, []uint32{10}, 3, 2, ErrBadOutput},
		{"below-start", good, []uint32{10, 9}, 4, 2, ErrTargetOutsideChunk},
		{"past-end", good, []uint32{13}, 2, 2, ErrTargetOutsideChunk},
		{"huge", good, []uint32{math.MaxUint32}, 2, 2, ErrTargetOutsideChunk},
		{"no-header", []uint32{1, 0}, []uint32{0}, 2, 2, ErrBadChunk},
		{"nil-chunk", nil, []uint32{0}, 2, 2, ErrBadChunk},
		{"n-nodes-too-big", corrupt(0, 100), []uint32{10}, 2, 2, ErrBadChunk},
		{"offset-past-end", corrupt(3, 99), []uint32{10}, 2, 2, ErrBadChunk},
		{"offset-into-header", corrupt(2, 1), []uint32{10}, 2, 2, ErrBadChunk},
		{"offsets-descending", corrupt(4, 5), []uint32{11}, 2, 2, ErrBadChunk},
	}
	for _, e := range engines {
		for _, tc := range tests {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				out := make([]int32, max(tc.out, 0))
				err := e.fn(tc.chunk, tc.targets, out, tc.fanout, 1, false)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			})
		}
	}
	for _, e := range edgeEngines {
		for _, n := range []int{0, 3, 5} {
			err := e.fn(good, []uint32{10, 11}, make([]int32, 4), make([]int32, n), 2, 1, false)
			if !errors.Is(err, ErrBadOutput) {
				t.Fatalf("%s with %d edge slots for 4 samples: got %v, want ErrBadOutput", e.name, n, err)
			}
		}
	}
	// The detail names the node.
	err := Run(good, []uint32{10, 42}, make([]int32, 4), 2, 1, false)
	if err == nil || !regexp.MustCompile(`target 42 \(row 1\).*\[10, 13\)`).MatchString(err.Error()) {
		t.Fatalf("error %q does not name target, row and range", err)
	}
	err = Run(corrupt(4, 5), []uint32{11}, make([]int32, 2), 2, 1, false)
	if err == nil || !regexp.MustCompile(`node 11`).MatchString(err.Error()) {
		t.Fatalf("error %q does not name the node", err)
	}
	// No targets: nothing to check in the chunk, nothing to do.
	for _, e := range engines {
		if err := e.fn(nil, nil, nil, 3, 1, false); err != nil {
			t.Fatalf("%s with no targets: %v", e.name, err)
		}
	}
}

func TestRunDoesNotAllocate(t *testing.T) {
	g := &gen{s: 5}
	adj := g.randomAdj(500, []int{0, 3, 20, 100})
	chunk := buildChunk(0, adj, 0)
	targets := allNodes(0, len(adj))
	out := make([]int32, len(targets)*15)
	for _, e := range engines {
		allocs := testing.AllocsPerRun(20, func() {
			if err := e.fn(chunk, targets, out, 15, 77, false); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per call", e.name, allocs)
		}
	}
	edges := make([]int32, len(out))
	for _, e := range edgeEngines[:2] { // the contiguous form copies
		allocs := testing.AllocsPerRun(20, func() {
			if err := e.fn(chunk, targets, out, edges, 15, 77, false); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per call", e.name, allocs)
		}
	}
}
