package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// naiveBuild is the obvious in-memory reading of the build options, the
// reference Build is checked against.
func naiveBuild(pairs []uint32, n uint32, o BuildOptions) [][]uint32 {
	adj := make([][]uint32, n)
	for k := 0; k+1 < len(pairs); k += 2 {
		u, v := pairs[k], pairs[k+1]
		switch {
		case o.Symmetrize:
			adj[u] = append(adj[u], v)
			adj[v] = append(adj[v], u)
		case o.Reverse:
			adj[v] = append(adj[v], u)
		default:
			adj[u] = append(adj[u], v)
		}
	}
	for u := range adj {
		a := adj[u]
		slices.Sort(a)
		if o.SelfLoops == "drop" {
			a = slices.DeleteFunc(a, func(x uint32) bool { return x == uint32(u) })
		}
		if o.Dedup {
			a = slices.Compact(a)
		}
		adj[u] = a
	}
	return adj
}

// readGraph reads every adjacency back through chunkfmt, after Verify.
func readGraph(t testing.TB, dir string) [][]uint32 {
	t.Helper()
	if err := chunkfmt.Verify(dir); err != nil {
		t.Fatalf("verify: %v", err)
	}
	g, err := chunkfmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	adj := make([][]uint32, g.Manifest.NumNodes)
	for u := range adj {
		nb, err := g.Neighbors(uint32(u))
		if err != nil {
			t.Fatalf("node %d: %v", u, err)
		}
		adj[u] = slices.Clone(nb)
	}
	return adj
}

func sameAdj(t testing.TB, got, want [][]uint32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d nodes, want %d", len(got), len(want))
	}
	for u := range want {
		if !equalU32(got[u], want[u]) {
			t.Fatalf("node %d: got %v, want %v", u, got[u], want[u])
		}
	}
}

func edgeText(pairs []uint32) []byte {
	var b []byte
	for k := 0; k+1 < len(pairs); k += 2 {
		b = fmt.Appendf(b, "%d\t%d\n", pairs[k], pairs[k+1])
	}
	return b
}

// assertClean checks that dir holds exactly the names given: no output,
// no temporary directory or file left behind.
func assertClean(t testing.TB, dir string, names ...string) {
	t.Helper()
	got := dirNames(t, dir)
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}

func TestBuildProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	trials := 6
	if testing.Short() {
		trials = 2
	}
	for trial := range trials {
		n := uint32(1 + rng.IntN(300))
		m := rng.IntN(3000)
		pairs := randomPairs(rng, n, m, false)
		for _, sym := range []bool{false, true} {
			for _, rev := range []bool{false, true} {
				for _, dedup := range []bool{false, true} {
					for _, loops := range []string{"keep", "drop"} {
						o := BuildOptions{Symmetrize: sym, Reverse: rev, Dedup: dedup, SelfLoops: loops}
						name := fmt.Sprintf("t%d/sym=%v,rev=%v,dedup=%v,loops=%s", trial, sym, rev, dedup, loops)
						t.Run(name, func(t *testing.T) {
							want := naiveBuild(pairs, n, o)
							// Many tiny chunks: just big enough for the largest node.
							o.ChunkSize = chunkfmt.MinChunkSizeFor(maxDegree(want)) + int64(rng.IntN(3))*512
							in := t.TempDir()
							// Split the edges over two inputs of different formats.
							cut := 2 * rng.IntN(len(pairs)/2+1)
							f1 := writeFile(t, in, "a.txt", edgeText(pairs[:cut]))
							f2 := writeFile(t, in, "b.bin32", bin32(pairs[cut:]))
							if trial%2 == 1 {
								f1 = writeFile(t, in, "a.txt.zst", zst(t, edgeText(pairs[:cut])))
							}
							o.NumNodes = n
							out := filepath.Join(t.TempDir(), "g")
							sum, err := Build(context.Background(), []string{f1, f2}, out, o)
							if err != nil {
								t.Fatal(err)
							}
							got := readGraph(t, out)
							sameAdj(t, got, want)
							var entries uint64
							for _, a := range want {
								entries += uint64(len(a))
							}
							if sum.NumEdges != entries || sum.InputEdges != uint64(len(pairs)/2) || sum.NumNodes != n {
								t.Fatalf("summary %+v; want %d entries, %d input edges", sum, entries, len(pairs)/2)
							}
							raw := uint64(len(pairs) / 2)
							if sym {
								raw *= 2
							}
							if sum.DuplicatesDropped+sum.SelfLoopsDropped != raw-entries || (!dedup && sum.DuplicatesDropped != 0) || (loops == "keep" && sum.SelfLoopsDropped != 0) {
								t.Fatalf("dropped %d duplicates + %d self-loops; %d raw entries, %d stored", sum.DuplicatesDropped, sum.SelfLoopsDropped, raw, entries)
							}
							assertClean(t, filepath.Dir(out), "g")
						})
					}
				}
			}
		}
	}
}

func TestBuildAutoNumNodes(t *testing.T) {
	in := writeFile(t, t.TempDir(), "g.txt", []byte("5 1\n1 9\n"))
	out := filepath.Join(t.TempDir(), "g")
	sum, err := Build(context.Background(), []string{in}, out, BuildOptions{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.NumNodes != 10 {
		t.Fatalf("num nodes %d, want 10 (max id + 1)", sum.NumNodes)
	}
	sameAdj(t, readGraph(t, out), naiveBuild([]uint32{5, 1, 1, 9}, 10, BuildOptions{}))
}

func TestBuildEmpty(t *testing.T) {
	in := writeFile(t, t.TempDir(), "g.txt", []byte("# nothing\n"))
	dir := t.TempDir()
	out := filepath.Join(dir, "g")
	sum, err := Build(context.Background(), []string{in}, out, BuildOptions{NumNodes: 7})
	if err != nil {
		t.Fatal(err)
	}
	if sum.NumNodes != 7 || sum.NumEdges != 0 {
		t.Fatalf("%+v", sum)
	}
	sameAdj(t, readGraph(t, out), make([][]uint32, 7))
	out2 := filepath.Join(dir, "g2")
	if _, err := Build(context.Background(), []string{in}, out2, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "--num-nodes") {
		t.Fatalf("err = %v; want a hint to give --num-nodes", err)
	}
	assertClean(t, dir, "g")
}

func TestBuildStdin(t *testing.T) {
	f := writeFile(t, t.TempDir(), "in", gz(t, []byte("0 1\n1 2\n2 0\n")))
	r, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	dir := t.TempDir()
	out := filepath.Join(dir, "g")
	if _, err := Build(context.Background(), []string{"-"}, out, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	sameAdj(t, readGraph(t, out), [][]uint32{{1}, {2}, {0}})
	assertClean(t, dir, "g")
}

func TestBuildErrors(t *testing.T) {
	inDir := t.TempDir()
	good := writeFile(t, inDir, "good.txt", []byte("0 1\n1 2\n"))
	star := make([]uint32, 0, 400)
	for v := uint32(1); v <= 200; v++ {
		star = append(star, 0, v)
	}
	cases := []struct {
		name   string
		inputs []string
		o      BuildOptions
		want   string
		kind   error
	}{
		{"malformed", []string{good, writeFile(t, inDir, "bad.txt", []byte("0 1\n2 xyz\n"))}, BuildOptions{}, `bad.txt:2: found "xyz", expected two non-negative integer node ids`, ErrSyntax},
		{"negative", []string{writeFile(t, inDir, "neg.csv", []byte("id_1,id_2\n1,-2\n"))}, BuildOptions{}, `neg.csv:2: found "-2"`, ErrSyntax},
		{"num-nodes", []string{good}, BuildOptions{NumNodes: 2}, `good.txt:2: node id 2 is out of range: ids must be below --num-nodes 2`, ErrIDRange},
		{"truncated gz", []string{writeFile(t, inDir, "t.txt.gz", gz(t, randomEdgeText(50000))[:5000])}, BuildOptions{}, "t.txt.gz: truncated gzip stream", nil},
		{"truncated zst", []string{writeFile(t, inDir, "t.txt.zst", zst(t, randomEdgeText(50000))[:5000])}, BuildOptions{}, "t.txt.zst: truncated zstd stream", nil},
		{"missing", []string{good, filepath.Join(inDir, "missing.txt")}, BuildOptions{}, "missing.txt: no such file", nil},
		{"directory", []string{inDir}, BuildOptions{}, "is a directory", nil},
		{"node too large", []string{writeFile(t, inDir, "star.bin32", bin32(star))}, BuildOptions{ChunkSize: 512}, "node 0 has degree 200: does not fit in a chunk of 512 bytes; the smallest chunk size that fits is 1024 bytes", chunkfmt.ErrNodeTooLarge},
		{"chunk size", []string{good}, BuildOptions{ChunkSize: 1000}, "must be a positive multiple of 512", nil},
		{"self loops", []string{good}, BuildOptions{SelfLoops: "maybe"}, `self-loops "maybe"`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "g")
			_, err := Build(context.Background(), c.inputs, out, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %q", err, c.want)
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Fatalf("err %v does not wrap %v", err, c.kind)
			}
			assertClean(t, dir)
		})
	}
}

func TestBuildExistingOutput(t *testing.T) {
	in1 := writeFile(t, t.TempDir(), "a.txt", []byte("0 1\n"))
	in2 := writeFile(t, t.TempDir(), "b.txt", []byte("1 0\n2 2\n"))
	bad := writeFile(t, t.TempDir(), "c.txt", []byte("1 0\nx\n"))
	dir := t.TempDir()
	out := filepath.Join(dir, "g")
	ctx := context.Background()
	if _, err := Build(ctx, []string{in1}, out, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	first := readGraph(t, out)
	if _, err := Build(ctx, []string{in2}, out, BuildOptions{}); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v; want ErrExists naming --force", err)
	}
	// A failing forced build leaves the old graph as it was.
	if _, err := Build(ctx, []string{bad}, out, BuildOptions{Force: true}); err == nil {
		t.Fatal("bad input built")
	}
	sameAdj(t, readGraph(t, out), first)
	assertClean(t, dir, "g")
	if _, err := Build(ctx, []string{in2}, out, BuildOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	sameAdj(t, readGraph(t, out), [][]uint32{nil, {0}, {2}})
	assertClean(t, dir, "g")
	// --force does not delete a directory chunkify did not write.
	other := filepath.Join(dir, "mine")
	os.Mkdir(other, 0o755)
	writeFile(t, other, "notes.txt", []byte("keep me"))
	if _, err := Build(ctx, []string{in2}, other, BuildOptions{Force: true}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("err = %v; want a refusal naming notes.txt", err)
	}
	assertClean(t, other, "notes.txt")
}

func TestBuildCancelled(t *testing.T) {
	in := writeFile(t, t.TempDir(), "a.txt", randomEdgeText(10000))
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, []string{in}, filepath.Join(dir, "g"), BuildOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	assertClean(t, dir)
}

// TestBuildParallelPaths uses enough edges that the scatter is split over
// several workers and the sort over several windows (the small property
// graphs take the single-worker path), and checks the result against the
// naive builder for each direction option.
func TestBuildParallelPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n, m = 20000, 150000
	pairs := make([]uint32, 0, 2*m)
	for range m {
		// Skewed sources, so that ranges of equal entry counts differ in width.
		u := uint32(rng.IntN(n) * rng.IntN(n) / n)
		pairs = append(pairs, u, uint32(rng.IntN(n)))
	}
	in := writeFile(t, t.TempDir(), "g.bin32", bin32(pairs))
	for _, o := range []BuildOptions{
		{Dedup: true},
		{Reverse: true, SelfLoops: "drop"},
		{Symmetrize: true, Dedup: true, SelfLoops: "drop"},
	} {
		want := naiveBuild(pairs, n, o)
		o.NumNodes = n
		o.ChunkSize = 16 << 10
		out := filepath.Join(t.TempDir(), "g")
		if _, err := Build(context.Background(), []string{in}, out, o); err != nil {
			t.Fatal(err)
		}
		sameAdj(t, readGraph(t, out), want)
	}
}

// TestBuildWorkerCounts repeats the parallel-path check with worker counts
// other than the machine's (an odd count, and more workers than pass 2's
// split keeps counters for on its stack) and with the graph in one chunk,
// which the writer streams, as well as in many.
func TestBuildWorkerCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, m = 5000, 80000
	pairs := make([]uint32, 0, 2*m)
	for range m {
		u := uint32(rng.IntN(n) * rng.IntN(n) / n)
		pairs = append(pairs, u, uint32(rng.IntN(n)))
	}
	in := writeFile(t, t.TempDir(), "g.bin32", bin32(pairs))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{3, 70} {
		runtime.GOMAXPROCS(procs)
		for _, o := range []BuildOptions{
			{Dedup: true},
			{Symmetrize: true, Dedup: true, SelfLoops: "drop", ChunkSize: 16 << 10},
		} {
			want := naiveBuild(pairs, n, o)
			out := filepath.Join(t.TempDir(), "g")
			if _, err := Build(context.Background(), []string{in}, out, o); err != nil {
				t.Fatal(err)
			}
			sameAdj(t, readGraph(t, out), want)
		}
	}
}
