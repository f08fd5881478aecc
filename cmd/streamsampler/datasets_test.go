package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/rng"
	"github.com/streamsampler/streamsampler/runloop"
)

// The shared datasets: the edge lists a user would chunkify, each built as
// a user would (undirected graphs stored once per pair get --symmetrize).
// ingest's TestSharedDatasets checks the plain (unsymmetrized) builds of
// the same files against an independent parse; this test adds chunkfmt's
// verify, the symmetrized builds, and the sampler's commands end to end.
var sharedGraphs = []struct {
	name, file string
	symmetrize bool
	big        bool // skipped with -short
}{
	{"email-Eu-core", "email-Eu-core/email-Eu-core.txt.gz", false, false},
	{"ego-Facebook", "ego-Facebook/facebook_combined.txt.gz", true, false},
	{"wiki-Vote", "wiki-Vote/Wiki-Vote.txt", false, false},
	{"p2p-Gnutella31", "p2p-Gnutella31/p2p-Gnutella31.txt", false, false},
	{"musae-facebook", "musae-facebook/facebook_edges.csv", true, false},
	{"soc-Slashdot0902", "soc-Slashdot0902/soc-Slashdot0902.txt.gz", false, true},
}

// Sampling parameters of the end-to-end runs: modest, so that the largest
// graph (soc-Slashdot0902, 948K edges) stays within seconds under -race.
const (
	dsChunkSize = 64 << 10
	dsFanouts   = "10,5"
	dsSeed      = 7
	dsEvery     = 10 // every 10th node with a neighbor trains
	dsBatch     = 512
	dsSeeds     = 64 // seeds in the sampled minibatch
)

var dsFanoutList = []int{10, 5}

// datasetsRoot returns the shared datasets directory ($STREAMSAMPLER_DATASETS,
// else shared/ beside the repository, as CI lays it out) or skips.
func datasetsRoot(t *testing.T) string {
	t.Helper()
	root := os.Getenv("STREAMSAMPLER_DATASETS")
	if root == "" {
		root = filepath.Join("..", "..", "..", "shared", "datasets")
	}
	if _, err := os.Stat(root); err != nil {
		t.Skipf("shared datasets not found (CI puts shared/ beside the clone; or set $STREAMSAMPLER_DATASETS): %v", err)
	}
	return root
}

func TestSharedDatasetsEndToEnd(t *testing.T) {
	root := datasetsRoot(t)
	for _, g := range sharedGraphs {
		t.Run(g.name, func(t *testing.T) {
			if g.big && testing.Short() {
				t.Skip("-short skips the large graphs")
			}
			path := filepath.Join(root, g.file)
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("dataset directory present but %s missing: %v", g.file, err)
			}
			dir := filepath.Join(t.TempDir(), "graph")
			sum, err := ingest.Build(context.Background(), []string{path}, dir, ingest.BuildOptions{
				Symmetrize: g.symmetrize, Dedup: true, ChunkSize: dsChunkSize, CreatedBy: "datasets_test",
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := chunkfmt.Verify(dir); err != nil {
				t.Fatalf("verify: %v", err)
			}
			gr, err := chunkfmt.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer gr.Close()
			compareWithParse(t, gr, path, g.symmetrize)
			train := everyKthWithNeighbors(t, gr, dsEvery)
			t.Logf("%s: %d nodes, %d edges, %d chunks, %d training nodes", g.name, sum.NumNodes, sum.NumEdges, sum.NumChunks, len(train))
			checkSamplerCLI(t, gr, dir, train)
		})
	}
}

// TestPlanetoidEndToEnd loads Cora and CiteSeer with the Python loader
// (python/streamsampler/datasets.py: the standard split, each undirected
// edge once), builds the graph as the loader's CLI does (chunkify build
// --symmetrize --num-nodes N) and runs the sampler's commands on its
// training ids.
func TestPlanetoidEndToEnd(t *testing.T) {
	root := datasetsRoot(t)
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import numpy, scipy").CombinedOutput(); err != nil {
		t.Skipf("%s lacks numpy or scipy (the Planetoid pickles need both): %v %s", py, err, bytes.TrimSpace(out))
	}
	// The loader's own CLI runs a chunkify binary, which a test cannot
	// assume is built; prepare(build_graph=False) writes everything else
	// and the graph is built here with the same options.
	const script = `
import sys
from streamsampler import datasets as d
ds = d.load(sys.argv[1], sys.argv[2])
d.prepare(ds, sys.argv[3], build_graph=False)
`
	for _, name := range []string{"cora", "citeseer"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name)
			cmd := exec.Command(py, "-c", script, name, root, out)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join("..", "..", "python"))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("loader: %v\n%s", err, b)
			}
			var meta struct {
				NumNodes        uint32 `json:"num_nodes"`
				UndirectedEdges uint64 `json:"undirected_edges"`
				Train           int    `json:"train"`
			}
			b, err := os.ReadFile(filepath.Join(out, "meta.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(out, "graph")
			edges := filepath.Join(out, "edges.txt")
			if _, err := ingest.Build(context.Background(), []string{edges}, dir, ingest.BuildOptions{
				Symmetrize: true, Dedup: true, NumNodes: meta.NumNodes, ChunkSize: 16 << 10,
			}); err != nil {
				t.Fatal(err)
			}
			if err := chunkfmt.Verify(dir); err != nil {
				t.Fatalf("verify: %v", err)
			}
			gr, err := chunkfmt.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer gr.Close()
			if gr.Manifest.NumNodes != meta.NumNodes || gr.Manifest.NumEdges != 2*meta.UndirectedEdges {
				t.Fatalf("graph %d nodes / %d edges, loader says %d / 2×%d", gr.Manifest.NumNodes, gr.Manifest.NumEdges, meta.NumNodes, meta.UndirectedEdges)
			}
			compareWithParse(t, gr, edges, true)
			train := readIDs(t, filepath.Join(out, "train.txt"))
			if len(train) != meta.Train {
				t.Fatalf("train.txt has %d ids, meta.json says %d", len(train), meta.Train)
			}
			t.Logf("%s: %d nodes, %d edges, %d training nodes", name, gr.Manifest.NumNodes, gr.Manifest.NumEdges, len(train))
			checkSamplerCLI(t, gr, dir, train)
		})
	}
}

// checkSamplerCLI prepares two epochs into a state directory, advances
// through both, samples a minibatch of each in JSON and checks it against
// the graph and the RNG contract, then runs two epochs with run.
func checkSamplerCLI(t *testing.T, gr *chunkfmt.Graph, dir string, train []uint32) {
	t.Helper()
	tf := writeTrain(t, train)
	state := filepath.Join(t.TempDir(), "state")
	for e := range 2 {
		out, errs, code := cli(t, "prepare", "--state", state, "--graph", dir, "--train", tf,
			"--fanouts", dsFanouts, "--seed", strconv.Itoa(dsSeed), "--json")
		if code != 0 {
			t.Fatalf("prepare epoch %d: exit %d: %s", e, code, errs)
		}
		var st struct {
			Epoch        int   `json:"epoch"`
			Seeds        int   `json:"seeds"`
			SampledEdges int64 `json:"sampled_edges"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("prepare --json: %v: %q", err, out)
		}
		if st.Epoch != e || st.Seeds != len(train) || st.SampledEdges <= 0 {
			t.Fatalf("prepare epoch %d: %+v", e, st)
		}
	}
	// A spread of training nodes, not in sorted order.
	step := max(1, len(train)/dsSeeds)
	var seeds []uint32
	for i := len(train) - 1; i >= 0 && len(seeds) < dsSeeds; i -= step {
		seeds = append(seeds, train[i])
	}
	seedArg := make([]string, len(seeds))
	for i, s := range seeds {
		seedArg[i] = itoa(s)
	}
	for e := range uint32(2) {
		if out, errs, code := cli(t, "advance", "--state", state); code != 0 || !strings.Contains(out, fmt.Sprintf("current epoch %d", e)) {
			t.Fatalf("advance to %d: exit %d: %s%s", e, code, out, errs)
		}
		js, errs, code := cli(t, "sample", "--state", state, "--seeds", strings.Join(seedArg, ","))
		if code != 0 {
			t.Fatalf("sample epoch %d: exit %d: %s", e, code, errs)
		}
		checkBlocks(t, gr, js, e, seeds)
	}
	out, errs, code := cli(t, "run", "--graph", dir, "--train", tf, "--fanouts", dsFanouts,
		"--batch-size", strconv.Itoa(dsBatch), "--epochs", "2", "--seed", strconv.Itoa(dsSeed), "--json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("run printed %d lines:\n%s", len(lines), out)
	}
	for i, l := range lines {
		var r runloop.EpochReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if int(r.Epoch) != i || r.Seeds != len(train) || r.Batches != (len(train)+dsBatch-1)/dsBatch || r.Edges <= 0 {
			t.Fatalf("run epoch %d: %+v", i, r)
		}
	}
}

// checkBlocks checks a minibatch's JSON: hop 1's dst is the seeds, hop
// h+1's dst is hop h's src, src starts with dst and is unique, and each
// destination's edges are exactly its sample under the RNG contract
// (rng.Sample of its adjacency read from the graph, in slot order), so
// every edge exists in the graph.
func checkBlocks(t *testing.T, gr *chunkfmt.Graph, js string, ep uint32, seeds []uint32) {
	t.Helper()
	var b struct {
		Epoch uint32 `json:"epoch"`
		Hops  []struct {
			Dst     []uint32 `json:"dst"`
			Src     []uint32 `json:"src"`
			EdgeSrc []int    `json:"edge_src"`
			EdgeDst []int    `json:"edge_dst"`
		} `json:"hops"`
	}
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		t.Fatalf("sample JSON: %v", err)
	}
	if b.Epoch != ep || len(b.Hops) != len(dsFanoutList) {
		t.Fatalf("epoch %d with %d hops, want %d with %d", b.Epoch, len(b.Hops), ep, len(dsFanoutList))
	}
	if !slices.Equal(b.Hops[0].Dst, seeds) {
		t.Fatalf("hop 1 dst %v, want the seeds %v", b.Hops[0].Dst, seeds)
	}
	slot := make([]int32, 0, 16)
	for h, hop := range b.Hops {
		if h > 0 && !slices.Equal(hop.Dst, b.Hops[h-1].Src) {
			t.Fatalf("hop %d dst is not hop %d src", h+1, h)
		}
		if len(hop.Src) < len(hop.Dst) || !slices.Equal(hop.Src[:len(hop.Dst)], hop.Dst) {
			t.Fatalf("hop %d: src does not start with dst", h+1)
		}
		seen := make(map[uint32]bool, len(hop.Src))
		for _, v := range hop.Src {
			if seen[v] {
				t.Fatalf("hop %d: node %d twice in src", h+1, v)
			}
			seen[v] = true
		}
		if len(hop.EdgeSrc) != len(hop.EdgeDst) {
			t.Fatalf("hop %d: %d edge_src, %d edge_dst", h+1, len(hop.EdgeSrc), len(hop.EdgeDst))
		}
		key := rng.Key(dsSeed, ep, h)
		e := 0
		for di, d := range hop.Dst {
			nb, err := gr.Neighbors(d)
			if err != nil {
				t.Fatal(err)
			}
			slot = slices.Grow(slot[:0], dsFanoutList[h])[:dsFanoutList[h]]
			rng.Sample(slot, nb, d, key, false)
			for _, s := range slot {
				if s < 0 {
					continue
				}
				if e >= len(hop.EdgeSrc) || hop.EdgeDst[e] != di {
					t.Fatalf("hop %d: node %d: edge %d missing (want %d→%d)", h+1, d, e, s, d)
				}
				if i := hop.EdgeSrc[e]; i < 0 || i >= len(hop.Src) || hop.Src[i] != uint32(s) {
					t.Fatalf("hop %d: node %d: edge %d has source index %d, want node %d", h+1, d, e, i, s)
				}
				if _, ok := slices.BinarySearch(nb, uint32(s)); !ok {
					t.Fatalf("hop %d: edge %d→%d is not in the graph", h+1, s, d)
				}
				e++
			}
		}
		if e != len(hop.EdgeSrc) {
			t.Fatalf("hop %d: %d edges, want %d", h+1, len(hop.EdgeSrc), e)
		}
	}
}

// everyKthWithNeighbors returns every k-th node (in id order) whose
// adjacency is not empty.
func everyKthWithNeighbors(t *testing.T, gr *chunkfmt.Graph, k int) []uint32 {
	t.Helper()
	var ids []uint32
	i := 0
	for v := range gr.Manifest.NumNodes {
		d, err := gr.Degree(v)
		if err != nil {
			t.Fatal(err)
		}
		if d > 0 {
			if i%k == 0 {
				ids = append(ids, v)
			}
			i++
		}
	}
	if len(ids) == 0 {
		t.Fatal("no node has a neighbor")
	}
	return ids
}

// compareWithParse reads the edge list at path with a parser of its own
// (gzip, one line at a time: comments, an optional non-numeric header,
// separators space, tab or comma, CRLF) and checks that every node's
// adjacency in gr is the sorted unique set of its targets (and sources,
// when symmetrize).
func compareWithParse(t *testing.T, gr *chunkfmt.Graph, path string, symmetrize bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	n := gr.Manifest.NumNodes
	want := make([][]uint32, n)
	add := func(u, v uint64, line int) {
		if u >= uint64(n) || v >= uint64(n) {
			t.Fatalf("%s:%d: edge %d %d outside the graph's %d nodes", path, line, u, v, n)
		}
		want[u] = append(want[u], uint32(v))
		if symmetrize {
			want[v] = append(want[v], uint32(u))
		}
	}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := bytes.TrimSpace(sc.Bytes())
		if len(s) == 0 || s[0] == '#' || s[0] == '%' {
			continue
		}
		fs := bytes.FieldsFunc(s, func(c rune) bool { return c == ' ' || c == '\t' || c == ',' })
		if len(fs) != 2 {
			t.Fatalf("%s:%d: %q: want two fields", path, line, s)
		}
		u, err1 := strconv.ParseUint(string(fs[0]), 10, 32)
		v, err2 := strconv.ParseUint(string(fs[1]), 10, 32)
		if err1 != nil || err2 != nil {
			if line == 1 {
				continue // a header such as id_1,id_2
			}
			t.Fatalf("%s:%d: %q: not two node ids", path, line, s)
		}
		add(u, v, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var edges uint64
	for u := range n {
		w := want[u]
		slices.Sort(w)
		w = slices.Compact(w)
		edges += uint64(len(w))
		got, err := gr.Neighbors(u)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, w) {
			t.Fatalf("node %d: %d neighbors read back, %d parsed from %s", u, len(got), len(w), path)
		}
	}
	if gr.Manifest.NumEdges != edges {
		t.Fatalf("manifest says %d edges, parse %d", gr.Manifest.NumEdges, edges)
	}
}

// readIDs reads node ids one per line.
func readIDs(t *testing.T, path string) []uint32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for _, l := range strings.Fields(string(b)) {
		v, err := strconv.ParseUint(l, 10, 32)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		ids = append(ids, uint32(v))
	}
	return ids
}
