package hls

import (
	"errors"
	"math"
	"regexp"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/rng"
)

// walkEngine is an implementation of the kernel's walk-step mode; edges
// may be nil. Engines without edges (RunWalk, ReferenceWalk) leave the
// edge slice alone.
type walkEngine struct {
	name  string
	fn    func(chunk, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error
	edges bool // fn writes edge indices
}

// walkContiguous names the cgo build's engine that runs the kernel as the
// FPGA does (kernel_cgo_test.go).
const walkContiguous = "sample_kernel(walk=a0+1, edges=1)"

// walkEngines must agree with directWalk; the cgo build adds the kernel's
// contiguous form (sample_kernel with argument 8: nodes and walk ids in one
// targets buffer, edge indices after the candidates).
var walkEngines = []walkEngine{
	{"RunWalkEdges/" + Engine, RunWalkEdges, true},
	{"ReferenceWalkEdges", ReferenceWalkEdges, true},
	{"RunWalk/" + Engine, withoutEdges(RunWalk), false},
	{"ReferenceWalk", withoutEdges(ReferenceWalk), false},
}

// withoutEdges adapts RunWalk or ReferenceWalk to walkEngine: it ignores
// the edge slice.
func withoutEdges(f func(chunk, nodes, walks []uint32, out []int32, k int, key uint64, attempt0 uint32) error) func(chunk, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error {
	return func(chunk, nodes, walks []uint32, out, _ []int32, k int, key uint64, attempt0 uint32) error {
		return f(chunk, nodes, walks, out, k, key, attempt0)
	}
}

// checkWalk runs every walk engine and compares it with directWalk.
func checkWalk(t *testing.T, start uint32, adj [][]uint32, chunk, nodes, walks []uint32, k int, key uint64, a0 uint32) {
	t.Helper()
	want, wantEdges := directWalk(start, adj, nodes, walks, k, key, a0)
	for _, e := range walkEngines {
		out := slices.Repeat([]int32{math.MinInt32}, len(want)) // catch unwritten slots
		edges := slices.Repeat([]int32{math.MinInt32}, len(want))
		if err := e.fn(chunk, nodes, walks, out, edges, k, key, a0); err != nil {
			t.Fatalf("%s k %d a0 %d: %v", e.name, k, a0, err)
		}
		if i := firstDiff(out, want); i >= 0 {
			r := i / k
			t.Fatalf("%s k %d a0 %d: walker %d (node %d, walk %d, degree %d) slot %d: got %v, want %v",
				e.name, k, a0, r, nodes[r], walks[r], len(adj[nodes[r]-start]), i%k, out[r*k:(r+1)*k], want[r*k:(r+1)*k])
		}
		if e.edges {
			if i := firstDiff(edges, wantEdges); i >= 0 {
				t.Fatalf("%s k %d a0 %d: edge index %d: got %d, want %d", e.name, k, a0, i, edges[i], wantEdges[i])
			}
		}
	}
}

// The walk vectors of DESIGN §3 through a chunk: nodes 5..9, node 7 with
// neighbors 1000..1999 (its first edge is chunk-local edge 1), node 8 with
// [3 9], node 9 with none; walk 7 takes candidates 987 and 410 at step 1,
// 634 at step 2.
func TestWalkDesignVectors(t *testing.T) {
	nb := make([]uint32, 1000)
	for i := range nb {
		nb[i] = uint32(1000 + i)
	}
	chunk := buildChunk(5, [][]uint32{nil, {1}, nb, {3, 9}, nil}, 5)
	k1, k2 := rng.WalkKey(42, 1), rng.WalkKey(42, 2)
	tests := []struct {
		name         string
		nodes, walks []uint32
		k            int
		key          uint64
		a0           uint32
		want, edges  []int32
	}{
		{"step1", []uint32{7}, []uint32{7}, 2, k1, 0, []int32{1987, 1410}, []int32{988, 411}},
		{"step1-a1", []uint32{7}, []uint32{7}, 1, k1, 1, []int32{1410}, []int32{411}},
		{"step2", []uint32{7}, []uint32{7}, 1, k2, 0, []int32{1634}, []int32{635}},
		{"no-neighbors", []uint32{9, 7}, []uint32{7, 7}, 2, k1, 0, []int32{-1, -1, 1987, 1410}, []int32{-1, -1, 988, 411}},
	}
	for _, e := range walkEngines {
		for _, tc := range tests {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				out, edges := make([]int32, len(tc.want)), make([]int32, len(tc.want))
				if err := e.fn(chunk, tc.nodes, tc.walks, out, edges, tc.k, tc.key, tc.a0); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(out, tc.want) || (e.edges && !slices.Equal(edges, tc.edges)) {
					t.Fatalf("got %v edges %v, want %v edges %v", out, edges, tc.want, tc.edges)
				}
			})
		}
	}
}

// Every k 1..MaxFanout on chunks with degrees 0, 1, small and large,
// walker counts off the 32 lanes, repeated nodes, and first attempts that
// make the draw counter 2a wrap.
func TestWalkEnginesAgree(t *testing.T) {
	g := &gen{s: 0x3a1c}
	const start = 4000
	for k := 1; k <= MaxFanout; k++ {
		adj := g.randomAdj(120, []int{0, 1, 2, k, 3*k + 1, 500})
		chunk := buildChunk(start, adj, g.intn(3))
		nodes := allNodes(start, len(adj))
		for range 30 {
			nodes = append(nodes, start+uint32(g.intn(len(adj))))
		}
		nodes = nodes[:len(nodes)-g.intn(32)]
		walks := make([]uint32, len(nodes))
		for i := range walks {
			walks[i] = uint32(g.next())
		}
		for _, a0 := range []uint32{0, uint32(g.intn(rng.MaxAttempts)), math.MaxUint32 - uint32(g.intn(k)), math.MaxUint32} {
			checkWalk(t, start, adj, chunk, nodes, walks, k, rng.WalkKey(uint64(k), 1+uint32(g.intn(100))), a0)
		}
	}
}

// A walk step's candidates are uniform over the node's adjacency: counted
// over many walkers, steps and attempts, through RunWalk.
func TestWalkCandidatesUniform(t *testing.T) {
	const d, walkers, k = 37, 3000, 4
	nb := make([]uint32, d)
	for i := range nb {
		nb[i] = uint32(i)
	}
	chunk := buildChunk(0, [][]uint32{nb}, 0)
	nodes, walks := make([]uint32, walkers), allNodes(0, walkers)
	out := make([]int32, walkers*k)
	counts := make([]int, d)
	for step := uint32(1); step <= 5; step++ {
		if err := RunWalk(chunk, nodes, walks, out, k, rng.WalkKey(11, step), 0); err != nil {
			t.Fatal(err)
		}
		for _, v := range out {
			counts[v]++
		}
	}
	expect := float64(5*walkers*k) / d
	chi := 0.0
	for _, c := range counts {
		chi += (float64(c) - expect) * (float64(c) - expect) / expect
	}
	// 99.9% quantile of chi-square with 36 degrees of freedom: 67.99.
	if chi > 67.99 {
		t.Fatalf("chi-square %.1f > 67.99 (df %d): counts %v", chi, d-1, counts)
	}
}

func TestWalkErrors(t *testing.T) {
	good := buildChunk(10, [][]uint32{{1, 2}, {3}, nil}, 0) // nodes 10..12
	bad := slices.Clone(good)
	bad[4] = 5 // node 11's end before its begin
	tests := []struct {
		name         string
		chunk        []uint32
		nodes, walks []uint32
		out, edges   int
		k            int
		want         error
		msg          string
	}{
		{"k0", good, []uint32{10}, []uint32{1}, 0, 0, 0, ErrBadFanout, "fanout 0"},
		{"k-big", good, []uint32{10}, []uint32{1}, MaxFanout + 1, MaxFanout + 1, MaxFanout + 1, ErrBadFanout, ""},
		{"out-short", good, []uint32{10, 11}, []uint32{1, 2}, 3, 4, 2, ErrBadOutput, `len\(out\) = 3`},
		{"edges-short", good, []uint32{10, 11}, []uint32{1, 2}, 4, 3, 2, ErrBadOutput, `len\(edges\) = 3`},
		{"walks-short", good, []uint32{10, 11}, []uint32{1}, 4, 4, 2, ErrBadOutput, `len\(walks\) = 1, want one walk id per node \(2\)`},
		{"walks-long", good, []uint32{10}, []uint32{1, 2}, 2, 2, 2, ErrBadOutput, "len.walks. = 2"},
		{"outside", good, []uint32{10, 42}, []uint32{1, 2}, 4, 4, 2, ErrTargetOutsideChunk, `target 42 \(row 1\).*\[10, 13\)`},
		{"below-start", good, []uint32{9}, []uint32{1}, 2, 2, 2, ErrTargetOutsideChunk, ""},
		{"no-header", []uint32{1, 0}, []uint32{0}, []uint32{1}, 2, 2, 2, ErrBadChunk, ""},
		{"descending", bad, []uint32{11}, []uint32{1}, 2, 2, 2, ErrBadChunk, "node 11"},
	}
	for _, e := range walkEngines {
		for _, tc := range tests {
			if tc.edges != tc.out && !e.edges {
				continue
			}
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				err := e.fn(tc.chunk, tc.nodes, tc.walks, make([]int32, tc.out), make([]int32, tc.edges), tc.k, 1, 0)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				if tc.msg != "" && !regexp.MustCompile(tc.msg).MatchString(err.Error()) {
					t.Fatalf("error %q does not say %q", err, tc.msg)
				}
			})
		}
	}
	// Without edge output the edge check does not apply; no walkers is
	// nothing to do, whatever the chunk.
	for _, f := range []func([]uint32, []uint32, []uint32, []int32, int, uint64, uint32) error{RunWalk, ReferenceWalk} {
		if err := f(good, []uint32{10, 11}, []uint32{1}, make([]int32, 4), 2, 1, 0); !errors.Is(err, ErrBadOutput) {
			t.Fatalf("walks short: %v", err)
		}
		if err := f(nil, nil, nil, nil, 3, 1, 0); err != nil {
			t.Fatalf("no walkers: %v", err)
		}
	}
}

func TestRunWalkDoesNotAllocate(t *testing.T) {
	g := &gen{s: 6}
	adj := g.randomAdj(500, []int{0, 3, 20, 100})
	chunk := buildChunk(0, adj, 0)
	nodes := allNodes(0, len(adj))
	out, edges := make([]int32, len(nodes)*3), make([]int32, len(nodes)*3)
	for _, e := range walkEngines {
		if e.name == walkContiguous {
			continue // the contiguous form copies
		}
		allocs := testing.AllocsPerRun(20, func() {
			if err := e.fn(chunk, nodes, nodes, out, edges, 3, 77, 2); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per call", e.name, allocs)
		}
	}
}

// FuzzRunWalk feeds arbitrary chunks, walkers and attempts to RunWalkEdges
// and ReferenceWalkEdges: the C++ kernel must never crash and must agree
// with the Go reference, error for error and slot for slot, and each edge
// index must point at the candidate's neighbor word.
func FuzzRunWalk(f *testing.F) {
	nb := make([]uint32, 1000)
	for i := range nb {
		nb[i] = uint32(1000 + i)
	}
	f.Add(wordsToBytes(buildChunk(5, [][]uint32{nil, {1}, nb, {3, 9}, nil}, 5)), wordsToBytes([]uint32{7, 9, 8, 7, 7, 3}), uint8(2), uint64(0x8592ec97a10acddc), uint32(0))
	f.Add(wordsToBytes(buildChunk(0, [][]uint32{{1, 2, 3}, {4}}, 0)), wordsToBytes([]uint32{0, 1, 5, 6}), uint8(3), uint64(1), uint32(math.MaxUint32))
	f.Add([]byte{1, 0, 0, 0}, []byte{0, 0, 0, 0}, uint8(1), uint64(0), uint32(1))
	f.Fuzz(func(t *testing.T, chunkBytes, walkerBytes []byte, k uint8, key uint64, a0 uint32) {
		chunk, w := bytesToWords(chunkBytes), bytesToWords(walkerBytes)
		// The first half of the words are nodes, the rest walk ids (one
		// more walk id than nodes when odd: a length error for both).
		nodes, walks := w[:len(w)/2], w[len(w)/2:]
		n := len(nodes) * int(k)
		if k == 0 || int(k) > MaxFanout {
			n = len(nodes)
		}
		got, want := make([]int32, n), make([]int32, n)
		gotE, wantE := make([]int32, n), make([]int32, n)
		errGot := RunWalkEdges(chunk, nodes, walks, got, gotE, int(k), key, a0)
		errWant := ReferenceWalkEdges(chunk, nodes, walks, want, wantE, int(k), key, a0)
		if (errGot == nil) != (errWant == nil) || (errGot != nil && errGot.Error() != errWant.Error()) {
			t.Fatalf("RunWalkEdges error %v, ReferenceWalkEdges error %v", errGot, errWant)
		}
		if errGot != nil {
			return
		}
		if !slices.Equal(got, want) || !slices.Equal(gotE, wantE) {
			t.Fatalf("RunWalkEdges %v %v, ReferenceWalkEdges %v %v", got, gotE, want, wantE)
		}
		plain := make([]int32, n)
		if err := RunWalk(chunk, nodes, walks, plain, int(k), key, a0); err != nil || !slices.Equal(plain, want) {
			t.Fatalf("RunWalk %v %v, want %v", plain, err, want)
		}
		if len(nodes) == 0 {
			return
		}
		first := 3 + int(chunk[0])
		for i, e := range gotE {
			if (e < 0 && (e != -1 || want[i] != -1)) || (e >= 0 && int32(chunk[first+int(e)]) != want[i]) {
				t.Fatalf("slot %d: candidate %d, edge index %d", i, want[i], e)
			}
		}
	})
}
