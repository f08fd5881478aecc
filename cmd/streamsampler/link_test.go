package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/npy"
	"github.com/streamsampler/streamsampler/pipeline"
)

// linkKey renders a link minibatch's fields for comparison ("" for none).
func linkKey(l *epoch.LinkFields) string {
	if l == nil {
		return ""
	}
	return fmt.Sprintf(" link %v %v k%d %v %v %v %v %v %v %v", l.Mode, l.Amount, l.K, l.InputID, l.EdgeLabelIndex, l.EdgeLabelF32, l.EdgeLabelI64, l.SrcIndex, l.DstPosIndex, l.DstNegIndex)
}

// writeLinkEdges writes m stored edges of c and k other pairs as text
// lines `src dst`, and returns the file and the pairs.
func writeLinkEdges(t *testing.T, c *host.CSR, m, k int) (string, [][2]uint32) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	n := uint32(len(c.Indptr) - 1)
	var pairs [][2]uint32
	for range m {
		e := r.IntN(len(c.Indices))
		v := uint32(0)
		for c.Indptr[v+1] <= uint64(e) {
			v++
		}
		pairs = append(pairs, [2]uint32{c.Indices[e], v})
	}
	for range k {
		pairs = append(pairs, [2]uint32{r.Uint32N(n), r.Uint32N(n)})
	}
	var b strings.Builder
	b.WriteString("# src dst\n")
	for _, p := range pairs {
		fmt.Fprintf(&b, "%d %d\n", p[0], p[1])
	}
	path := filepath.Join(t.TempDir(), "edges.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, pairs
}

// TestLinkServeAgrees: `serve --train-edges` hands out the same link
// minibatches, byte for byte (blocks, edge ids, link fields), whether
// the epochs are sampled by one emulated device or three, on every rank
// of two, in each negative mode with each exclusion; and they are the
// pipeline's definition: the link assembly of an epoch host.Reference
// samples over the minibatches' seeds, the pairs' edge ids resolved.
func TestLinkServeAgrees(t *testing.T) {
	graph, csr := testGraph(t, 400, 4, 4096)
	edges, pairs := writeLinkEdges(t, csr, 150, 30)
	for _, mode := range []struct{ neg, amount, exclude, weight string }{
		{"binary", "1", "self", "uniform"},
		{"triplet", "2", "reverse_id", "degree"},
		{"none", "1", "none", "uniform"},
	} {
		for rank := range 2 {
			args := []string{"--graph", graph, "--train-edges", edges, "--fanouts", "3,2", "--batch-size", "16", "--seed", "4",
				"--rank", fmt.Sprint(rank), "--world-size", "2", "--semantics", "pyg",
				"--neg-sampling", mode.neg, "--neg-amount", mode.amount, "--exclude", mode.exclude, "--neg-weight", mode.weight, "-q"}
			one := serveBatches(t, append(args, "--devices", "1"), 2, 1)
			three := serveBatches(t, append(args, "--devices", "3"), 2, 2)
			if len(one) == 0 || !slices.Equal(one, three) {
				t.Fatalf("%v rank %d: 1 device %d minibatches, 3 devices %d, or they differ", mode, rank, len(one), len(three))
			}
			if !strings.Contains(one[0], " link "+mode.neg) {
				t.Fatalf("%v: a minibatch without link fields: %.200s", mode, one[0])
			}
			// The definition, epoch 1.
			neg, _ := epoch.ParseNegMode(mode.neg)
			excl, _ := epoch.ParseExclude(mode.exclude)
			es := &epoch.EdgeSet{}
			for _, p := range pairs {
				es.Src, es.Dst = append(es.Src, p[0]), append(es.Dst, p[1])
				es.EIDs, es.RevEIDs = append(es.EIDs, eidOf(csr, p[0], p[1])), append(es.RevEIDs, eidOf(csr, p[1], p[0]))
			}
			amount := map[string]float64{"1": 1, "2": 2}[mode.amount]
			link := &epoch.Link{Edges: es, Neg: neg, Amount: amount, NumNodes: 400, Exclude: excl}
			if mode.weight == "degree" {
				link.Indptr = csr.Indptr
			}
			cfg := pipeline.Config{Sampling: epoch.Sampling{Fanouts: []int{3, 2}, Seed: 4, Rank: rank, World: 2}, BatchSize: 16, Link: link}
			lbs, seeds := cfg.LinkMinibatches(1)
			ref, err := host.ReferenceEdgeIDs(csr, seeds, cfg.Fanouts, cfg.Key(1))
			if err != nil {
				t.Fatal(err)
			}
			perEpoch := len(one) / 2
			for i, lb := range lbs {
				b, err := epoch.NewAssembler(ref, nil).AssembleLink(lb, epoch.PyG)
				if err != nil {
					t.Fatal(err)
				}
				var want string
				if excl == epoch.ExcludeNone {
					b = stripEdgeIDs(b)
				}
				want = batchKey(1, i, b, nil, nil) + linkKey(&lb.Fields)
				if one[perEpoch+i] != want {
					t.Fatalf("%v rank %d: epoch 1 minibatch %d:\nserved %.300s\nwant   %.300s", mode, rank, i, one[perEpoch+i], want)
				}
			}
		}
	}
}

// eidOf is the stored id of pair (u, v) (u in v's row), or -1.
func eidOf(c *host.CSR, u, v uint32) int64 {
	row := c.Indices[c.Indptr[v]:c.Indptr[v+1]]
	if p := slices.Index(row, u); p >= 0 {
		return int64(c.Indptr[v]) + int64(p)
	}
	return epoch.NoEdge
}

// stripEdgeIDs drops the hops' edge ids (a server without --edge-ids).
func stripEdgeIDs(b *epoch.Blocks) *epoch.Blocks {
	for h := range b.Hops {
		b.Hops[h].EdgeIDs = nil
	}
	return b
}

// A training edge with a node past the graph is refused with the file,
// the line and the node; a triplet amount that is not whole is a usage
// error.
func TestLinkBadEdges(t *testing.T) {
	graph, _ := testGraph(t, 400, 4, 4096)
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("1 2\n# ok so far\n3 999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := cli(t, "serve", "--graph", graph, "--fanouts", "3", "--socket", filepath.Join(t.TempDir(), "s"), "--train-edges", bad)
	if code == 0 || !strings.Contains(stderr, "bad.txt:3: node 999 is out of range: nodes must be below the graph's 400 nodes") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	good := filepath.Join(t.TempDir(), "good.txt")
	if err := os.WriteFile(good, []byte("1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = cli(t, "serve", "--graph", graph, "--fanouts", "3", "--socket", filepath.Join(t.TempDir(), "s"), "--train-edges", good, "--neg-sampling", "triplet", "--neg-amount", "0.5")
	if code != 2 || !strings.Contains(stderr, "triplet negatives: amount 0.5, want a whole number") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// Training edges given as stored edge ids (--train-eids, .npy) serve the
// same minibatches as the same edges given as pairs (--train-edges, text),
// exclusion included: the ids' pairs and the pairs' ids are found by the
// two directions of one pass over the chunks (package edgeids). Labels
// from --train-edge-labels come with them.
func TestLinkEIDsAsPairs(t *testing.T) {
	graph, csr := testGraph(t, 300, 4, 4096)
	var eids []int64
	var b strings.Builder
	for e := 0; e < len(csr.Indices); e += 7 {
		v := uint32(0)
		for csr.Indptr[v+1] <= uint64(e) {
			v++
		}
		eids = append(eids, int64(e))
		fmt.Fprintf(&b, "%d %d\n", csr.Indices[e], v)
	}
	dir := t.TempDir()
	pairs := filepath.Join(dir, "pairs.txt")
	if err := os.WriteFile(pairs, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := filepath.Join(dir, "eids.npy")
	labels := filepath.Join(dir, "labels.npy")
	lab := make([]float32, len(eids))
	for i := range lab {
		lab[i] = float32(i % 2)
	}
	for path, write := range map[string]func(*os.File) error{
		ids:    func(f *os.File) error { return npy.WriteArray(f, eids) },
		labels: func(f *os.File) error { return npy.WriteArray(f, lab) },
	} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	common := []string{"--graph", graph, "--fanouts", "3,2", "--batch-size", "8", "--seed", "2", "--neg-sampling", "binary",
		"--exclude", "self", "--train-edge-labels", labels, "-q"}
	byPairs := serveBatches(t, append([]string{"--train-edges", pairs}, common...), 1, 1)
	byIDs := serveBatches(t, append([]string{"--train-eids", ids}, common...), 1, 1)
	if len(byPairs) == 0 || !slices.Equal(byIDs, byPairs) {
		t.Fatalf("%d minibatches by pairs, %d by ids, or they differ", len(byPairs), len(byIDs))
	}
	if !strings.Contains(byPairs[0], "e_id") || !strings.Contains(byPairs[0], " link binary") {
		t.Fatalf("a minibatch without edge ids or link fields: %.300s", byPairs[0])
	}
}

// The GPU engine's link epochs are the emulated SmartSSD's, byte for
// byte: blocks, edge ids, exclusion and link fields, with sampled and full
// (-1) layers. Here through the CPU stand-in of its library
// (gpu/testdata/fakelib.c: the C ABI over a plain sampler of DESIGN §3);
// on a CUDA machine, with STREAMSAMPLER_GPU_TEST=1 and
// STREAMSAMPLER_GPU_LIB naming the built library, through the real
// kernels.
func TestLinkServeGPUStandIn(t *testing.T) {
	lib := gpuLib(t)
	graph, csr := testGraph(t, 400, 4, 4096)
	edges, _ := writeLinkEdges(t, csr, 120, 20)
	for _, fanouts := range []string{"4,3", "-1,3"} {
		args := []string{"--graph", graph, "--train-edges", edges, "--fanouts", fanouts, "--batch-size", "16", "--seed", "6",
			"--neg-sampling", "triplet", "--neg-amount", "2", "--exclude", "reverse_id", "-q"}
		emu := serveBatches(t, args, 2, 1)
		gpu := serveBatches(t, append(args, "--backend", "gpu", "--gpu-lib", lib), 2, 1)
		if len(emu) == 0 || !slices.Equal(emu, gpu) {
			t.Fatalf("fanouts %s: emu %d minibatches, gpu (%s) %d, or they differ", fanouts, len(emu), lib, len(gpu))
		}
	}
}

// gpuLib is the GPU library the gpu backend's tests run: the real one
// where STREAMSAMPLER_GPU_TEST and STREAMSAMPLER_GPU_LIB name it, else its
// CPU stand-in (gpu/testdata/fakelib.c), built here (skipped without a C
// compiler).
func gpuLib(t *testing.T) string {
	t.Helper()
	if lib := os.Getenv("STREAMSAMPLER_GPU_LIB"); os.Getenv("STREAMSAMPLER_GPU_TEST") != "" && lib != "" {
		return lib
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the GPU library's CPU stand-in")
	}
	lib := filepath.Join(t.TempDir(), "libfake.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-I../../gpu", "-o", lib, "../../gpu/testdata/fakelib.c").CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in: %v\n%s", err, b)
	}
	return lib
}
