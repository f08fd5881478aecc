package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/walk"
)

// csrGraph is a walk.Graph over a CSR in memory: the walk tests need the
// reference walker only, not host (nor its devices).
type csrGraph struct {
	indptr  []uint64
	indices []uint32
}

func (c csrGraph) NumNodes() uint32 { return uint32(len(c.indptr) - 1) }

func (c csrGraph) Neighbors(v uint32) ([]uint32, error) {
	if uint64(v)+1 >= uint64(len(c.indptr)) {
		return nil, fmt.Errorf("node %d: not below the graph's %d nodes", v, c.NumNodes())
	}
	return c.indices[c.indptr[v]:c.indptr[v+1]], nil
}

// walkGraph is an R-MAT multigraph (every neighbor one to three times)
// in which every 31st node has lost its adjacency: walks reach nodes
// without neighbors and end there, and repeated neighbors weigh
// candidates and node2vec's neighbor tests.
func walkGraph(n uint32, edges int, seed uint64) (indptr []uint64, indices []uint32) {
	mi, mx := multigraph(rmat(n, edges, seed))
	indptr = []uint64{0}
	for v := range n {
		if v%31 != 3 {
			indices = append(indices, mx[mi[v]:mi[v+1]]...)
		}
		indptr = append(indptr, uint64(len(indices)))
	}
	return indptr, indices
}

// walkConfigs are the walk sets every backend is compared on: each mode,
// PPR jumping back and stopping, node2vec with p and q on both sides of 1.
func walkConfigs(length, perNode int) []walk.Config {
	return []walk.Config{
		{Mode: walk.DeepWalk, Length: length, WalksPerNode: perNode, Seed: 1},
		{Mode: walk.PPR, Length: length, WalksPerNode: perNode, Seed: 2, Restart: 0.3},
		{Mode: walk.PPR, Length: length, WalksPerNode: perNode, Seed: 3, Restart: 0.15, StopAtRestart: true},
		{Mode: walk.Node2Vec, Length: length, WalksPerNode: perNode, Seed: 4, P: 0.5, Q: 2},
		{Mode: walk.Node2Vec, Length: length, WalksPerNode: perNode, Seed: 5, P: 4, Q: 0.25},
		{Mode: walk.Node2Vec, Length: length, WalksPerNode: perNode, Seed: 6},
	}
}

// walkStarts are some nodes, repeated ones, and dangling ones.
func walkStarts(n uint32, frac float64, seed uint64) []uint32 {
	s := pickSeeds(n, frac, seed)
	return append(s, s[0], s[1], 3, 10, n-1)
}

// diffWalks describes the first difference between two walk sets of rows
// of length+1 nodes, or returns nil.
func diffWalks(got, want []int32, length int) error {
	if i := firstDiff(got, want); i >= 0 {
		row := length + 1
		w := i / row
		return fmt.Errorf("walk %d step %d: %v, want %v (want row %v)", w, i%row, at(got, i), at(want, i),
			want[w*row:min(len(want), (w+1)*row)])
	}
	return nil
}

// checkWalks compares b.Walks, and b.WalksInto over an output that held
// something else, with walk.Reference for every config.
func checkWalks(t *testing.T, b *gpu.Backend, g walk.Graph, starts []uint32, configs []walk.Config, what string) {
	t.Helper()
	for _, c := range configs {
		want, err := walk.Reference(g, starts, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Walks(context.Background(), starts, c)
		if err != nil {
			t.Fatalf("%s %+v: %v", what, c, err)
		}
		if err := diffWalks(got, want, c.Length); err != nil {
			t.Errorf("%s %+v: %v", what, c, err)
			continue
		}
		into := make([]int32, len(want))
		for i := range into {
			into[i] = 12345
		}
		var w walk.Walker = b
		st, err := w.WalksInto(context.Background(), starts, c, into)
		if err != nil {
			t.Fatalf("%s %+v: WalksInto: %v", what, c, err)
		}
		if err := diffWalks(into, want, c.Length); err != nil {
			t.Errorf("%s %+v: WalksInto: %v", what, c, err)
			continue
		}
		if st == nil || st.Engine != gpu.EngineGPU || st.Devices != 1 || len(st.Passes) != 0 || st.Wall <= 0 {
			t.Errorf("%s %+v: WalksInto's statistics %+v", what, c, st)
		}
		ended := 0
		for w := range len(want) / (c.Length + 1) {
			if want[(w+1)*(c.Length+1)-1] < 0 {
				ended++
			}
		}
		tm := b.Timings()
		t.Logf("%s %s walks: %d of %d steps, %d ended early; identical to walk.Reference; kernels %.2f ms, call %.2f ms",
			what, c.Mode, len(want)/(c.Length+1), c.Length, ended, tm[0], tm[2])
	}
}

// TestWalksWithCPUStandIn runs Backend.Walks over the CPU stand-in
// library, whose ssg_walk follows DESIGN §3 as walk.Reference does:
// the Go side's request (mode, thresholds from the host, starts, the
// output's shape and capacity) and error mapping, against the reference
// for every mode, on a multigraph with dangling nodes.
func TestWalksWithCPUStandIn(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	const n = 1500
	indptr, indices := walkGraph(n, 9000, 21)
	b, err := gpu.OpenCSR(path, 0, indptr, indices, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g := csrGraph{indptr, indices}
	starts := walkStarts(n, 0.1, 4)
	checkWalks(t, b, g, starts, walkConfigs(12, 3), "stand-in")
	checkWalks(t, b, g, starts[len(starts)-8:], walkConfigs(1, 1), "stand-in one step")

	ctx := context.Background()
	if got, err := b.Walks(ctx, nil, walkConfigs(5, 2)[0]); err != nil || len(got) != 0 {
		t.Errorf("no starts: %d words, %v", len(got), err)
	}
	for _, tc := range []struct {
		starts []uint32
		c      walk.Config
		want   string
	}{
		{starts, walk.Config{Length: 0, WalksPerNode: 1}, "walk length 0"},
		{starts, walk.Config{Length: 3, WalksPerNode: 0}, "0 walks per node"},
		{starts, walk.Config{Mode: walk.PPR, Length: 3, WalksPerNode: 1, Restart: 1}, "restart probability 1"},
		{starts, walk.Config{Mode: walk.Node2Vec, Length: 3, WalksPerNode: 1, P: -1}, "node2vec p"},
		{[]uint32{1, n}, walk.Config{Length: 3, WalksPerNode: 1}, "start 1500 (position 1)"},
	} {
		_, err := b.Walks(ctx, tc.starts, tc.c)
		if !errors.Is(err, gpu.ErrInvalid) || !errors.Is(err, walk.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrInvalid naming %q", tc.c, err, tc.want)
		}
	}
	// WalksInto refuses an output of the wrong size as a bad request,
	// writing nothing.
	c3 := walk.Config{Length: 3, WalksPerNode: 1}
	for _, n := range []int{c3.OutputLen(len(starts)) - 1, c3.OutputLen(len(starts)) + 1, 0} {
		out := make([]int32, n)
		for i := range out {
			out[i] = 77
		}
		_, err := b.WalksInto(ctx, starts, c3, out)
		if !errors.Is(err, gpu.ErrInvalid) || !errors.Is(err, walk.ErrInvalid) || !strings.Contains(err.Error(), "output of") {
			t.Errorf("WalksInto, output of %d entries: %v, want ErrInvalid", n, err)
		}
		if slices.ContainsFunc(out, func(x int32) bool { return x != 77 }) {
			t.Errorf("WalksInto, output of %d entries: written although refused", n)
		}
	}
	_, err = b.Walks(ctx, starts, walk.Config{Length: 3, WalksPerNode: 1, Seed: 0xdead})
	if !errors.Is(err, gpu.ErrCUDA) || !strings.Contains(err.Error(), "cudaErrorLaunchFailure") {
		t.Errorf("launch failure: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Walks(cctx, starts, walkConfigs(3, 1)[0]); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}

	// The library refuses an output array one word short, writing nothing.
	out := make([]int32, 2*5)
	for i := range out {
		out[i] = 77
	}
	err = b.RawWalk([]uint32{0, 1}, 4, out[:len(out)-1])
	if !errors.Is(err, gpu.ErrInvalid) || !strings.Contains(err.Error(), "out array too small") ||
		slices.ContainsFunc(out, func(x int32) bool { return x != 77 }) {
		t.Errorf("undersized walk output: %v, out %v", err, out)
	}
	if err := b.RawWalk([]uint32{0, 1}, 4, out); err != nil || out[0] != 0 || out[5] != 1 {
		t.Errorf("exact walk output: %v, out %v", err, out)
	}

	b.Close()
	if _, err := b.Walks(ctx, starts, walkConfigs(3, 1)[0]); !errors.Is(err, gpu.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestGPUWalks compares the CUDA walk kernel with walk.Reference for
// every mode, on an R-MAT multigraph with dangling nodes, with the graph
// in device memory and in pinned host memory (UVA).
func TestGPUWalks(t *testing.T) {
	needGPU(t)
	const n = 1 << 16
	indptr, indices := walkGraph(n, 400_000, 17)
	g := csrGraph{indptr, indices}
	starts := walkStarts(n, 0.2, 6)
	for _, uva := range []bool{false, true} {
		b, err := gpu.OpenCSR("", 0, indptr, indices, gpu.Options{UVA: uva})
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%s uva=%v", b.Device(), uva)
		checkWalks(t, b, g, starts, walkConfigs(40, 4), what)
		checkWalks(t, b, g, starts[len(starts)-8:], walkConfigs(1, 1), what+" one step")
		b.Close()
	}
}
