package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/batchfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/statedir"
)

// emailGraph chunkifies the bundled email-Eu-core graph (1005 nodes) with
// chunks small enough to give several of them.
func emailGraph(t testing.TB) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "email-Eu-core.txt.gz")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("bundled graph missing: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "email")
	if _, err := ingest.Build(context.Background(), []string{src}, dir, ingest.BuildOptions{Dedup: true, ChunkSize: 8192}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrepareAdvanceSampleRoundTrip is the CLI round trip on a real graph:
// the blocks printed by sample are exactly those of the in-memory
// reference for the same epoch and shard.
func TestPrepareAdvanceSampleRoundTrip(t *testing.T) {
	graph := emailGraph(t)
	var ids []uint32
	for v := uint32(0); v < 1005; v += 3 {
		ids = append(ids, v)
	}
	train := writeTrain(t, ids)
	state := filepath.Join(t.TempDir(), "state")
	if _, e, code := cli(t, "prepare", "--graph", graph, "--train", train, "--fanouts", "10,5", "--seed", "7", "--state", state, "--devices", "2"); code != 0 {
		t.Fatalf("prepare: %d %s", code, e)
	}
	// A second prepare needs only the state directory.
	if out, e, code := cli(t, "prepare", "--state", state, "--compress", "zstd"); code == 0 || !strings.Contains(e, "conflicts") {
		t.Fatalf("conflicting --compress accepted: %d %s %s", code, out, e)
	}
	if _, e, code := cli(t, "prepare", "--state", state, "--json"); code != 0 {
		t.Fatalf("prepare 2: %d %s", code, e)
	}
	if _, e, code := cli(t, "prepare", "--state", state, "--epoch", "1"); code == 0 || !strings.Contains(e, "already prepared") {
		t.Fatalf("re-prepare of epoch 1: %d %s", code, e)
	}
	for want := 0; want < 2; want++ {
		out, e, code := cli(t, "advance", "--state", state)
		if code != 0 || !strings.Contains(out, "current epoch "+itoa(uint32(want))) {
			t.Fatalf("advance: %d %q %s", code, out, e)
		}
		g, err := host.LoadCSR(graph)
		if err != nil {
			t.Fatal(err)
		}
		seeds := []uint32{ids[5], ids[0], ids[100]}
		ref, err := host.Reference(g, ids, []int{10, 5}, epoch.Key{Seed: 7, Epoch: uint32(want)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := ref.Assemble(seeds, epoch.DGL)
		if err != nil {
			t.Fatal(err)
		}
		var exp strings.Builder
		batchfmt.WriteJSON(&exp, b, nil)
		out, e, code = cli(t, "sample", "--state", state, "--seeds", "15,0,300")
		if code != 0 {
			t.Fatalf("sample: %d %s", code, e)
		}
		if out != exp.String() {
			t.Fatalf("epoch %d: sample printed\n%.300s\nreference gives\n%.300s", want, out, exp.String())
		}
		if !strings.HasPrefix(out, `{"epoch":`+itoa(uint32(want))+`,"seeds":[15,0,300],"hops":[{"dst":[15,0,300],"src":[15,0,300,`) {
			t.Fatalf("unexpected shape: %.200s", out)
		}
	}
	if _, e, code := cli(t, "advance", "--state", state); code == 0 || !strings.Contains(e, "not prepared") {
		t.Fatalf("advance past the last prepared epoch: %d %s", code, e)
	}
}

// TestEmptyTrainingSet: prepare, run and serve refuse an empty training
// file alike, as a usage error naming the file, and leave nothing behind.
func TestEmptyTrainingSet(t *testing.T) {
	graph, _ := testGraph(t, 200, 3, 4096)
	empty := writeTrain(t, nil)
	for _, args := range [][]string{
		{"prepare", "--state", filepath.Join(t.TempDir(), "s"), "--fanouts", "3"},
		{"run", "--fanouts", "3"},
		{"serve", "--fanouts", "3", "--socket", filepath.Join(t.TempDir(), "s.sock")},
	} {
		args = append(args, "--graph", graph, "--train", empty)
		_, e, code := cli(t, args...)
		if code != 2 || !strings.Contains(e, empty) || !strings.Contains(e, "no node ids") {
			t.Errorf("%s with an empty training file: exit %d, stderr %q; want exit 2 naming the file", args[0], code, e)
		}
		if args[0] == "prepare" {
			if _, err := os.Stat(args[2]); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("prepare left %s behind", args[2])
			}
		}
	}
}

func TestPrepareErrors(t *testing.T) {
	graph, _ := testGraph(t, 2000, 5, 4096)
	other, _ := testGraph(t, 3000, 5, 4096)
	train := writeTrain(t, []uint32{1, 2, 3, 50, 1999})
	state := filepath.Join(t.TempDir(), "s")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no-graph-first", []string{"--train", train, "--fanouts", "3"}, 2, "--graph is required"},
		{"bad-fanouts", []string{"--graph", graph, "--train", train, "--fanouts", "3,x"}, 2, "not a positive integer"},
		{"fanout-too-big", []string{"--graph", graph, "--train", train, "--fanouts", "65"}, 2, "above the maximum fanout 64"},
		{"bad-train", []string{"--graph", graph, "--train", writeTrain(t, []uint32{1, 2000}), "--fanouts", "3"}, 1, "2000"},
		{"bad-backend", []string{"--graph", graph, "--train", train, "--fanouts", "3", "--backend", "tpu"}, 2, "tpu"},
		{"gpu-unavailable", []string{"--graph", graph, "--train", train, "--fanouts", "3", "--backend", "gpu"}, 1, "gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := filepath.Join(t.TempDir(), "s")
			_, e, code := cli(t, append([]string{"prepare", "--state", s}, tc.args...)...)
			if code != tc.code || !strings.Contains(e, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q", code, tc.code, e, tc.msg)
			}
			if _, err := os.Stat(s); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a failed first prepare left the state directory behind (%v)", err)
			}
		})
	}
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", train, "--fanouts", "4,3"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", other); code != 2 || !strings.Contains(e, "conflicts") {
		t.Fatalf("other graph: %d %s", code, e)
	}
	// The same path rebuilt with other content: fingerprint mismatch.
	os.RemoveAll(graph)
	if err := os.Rename(other, graph); err != nil {
		t.Fatal(err)
	}
	if _, e, code := cli(t, "prepare", "--state", state); code != 1 || !strings.Contains(e, "another graph") {
		t.Fatalf("rebuilt graph: %d %s", code, e)
	}
}

// TestPrepareCancelled: a cancelled prepare leaves no epoch directory.
func TestPrepareCancelled(t *testing.T) {
	graph, _ := testGraph(t, 5000, 6, 1024)
	train := writeTrain(t, []uint32{1, 2, 3, 4000})
	state := filepath.Join(t.TempDir(), "s")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	root := newRootCmd()
	root.SetArgs([]string{"prepare", "--state", state, "--graph", graph, "--train", train, "--fanouts", "5,5"})
	var sink strings.Builder
	root.SetOut(&sink)
	root.SetErr(&sink)
	if err := root.ExecuteContext(ctx); err == nil {
		t.Fatal("cancelled prepare succeeded")
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Fatalf("cancelled prepare left %s", ents[0].Name())
	}
}

// TestPrepareShards: ranks of one world prepare disjoint shards of the
// training nodes that together cover them, and each shard's epoch equals
// the reference over that shard.
func TestPrepareShards(t *testing.T) {
	graph, g := testGraph(t, 3000, 5, 4096)
	var train []uint32
	for v := uint32(0); v < 3000; v += 3 {
		train = append(train, v)
	}
	tf := writeTrain(t, train)
	seen := map[uint32]int{}
	for rank := 0; rank < 3; rank++ {
		state := filepath.Join(t.TempDir(), "s")
		if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", tf, "--fanouts", "4,2",
			"--seed", "5", "--rank", itoa(uint32(rank)), "--world-size", "3", "--epoch", "2"); code != 0 {
			t.Fatal(e)
		}
		res, err := epochdir.Read(filepath.Join(state, "epoch-2"))
		if err != nil {
			t.Fatal(err)
		}
		shard := res.Layers[0].Frontier
		if n := len(shard); n < 333 || n > 334 {
			t.Fatalf("rank %d: shard of %d nodes", rank, n)
		}
		for _, v := range shard {
			seen[v]++
		}
		want, err := host.Reference(g, shard, []int{4, 2}, epoch.Key{Seed: 5, Epoch: 2})
		if err != nil {
			t.Fatal(err)
		}
		for l := range want.Layers {
			if !slices.Equal(res.Layers[l].Samples, want.Layers[l].Samples) || !slices.Equal(res.Layers[l].Frontier, want.Layers[l].Frontier) {
				t.Fatalf("rank %d layer %d differs from the reference", rank, l)
			}
		}
	}
	if len(seen) != len(train) {
		t.Fatalf("shards cover %d of %d training nodes", len(seen), len(train))
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("node %d in %d shards", v, n)
		}
	}
}

// --edge-ids is recorded in the state directory: every epoch prepared there
// carries the reference's edge ids, also when a later prepare leaves the
// flag out; a prepare asking otherwise is refused, as for any recorded
// field, and a directory prepared without them refuses --edge-ids.
func TestPrepareEdgeIDs(t *testing.T) {
	graph, g := testGraph(t, 3000, 5, 4096)
	var train []uint32
	for v := uint32(0); v < 3000; v += 5 {
		train = append(train, v)
	}
	tf := writeTrain(t, train)
	state := filepath.Join(t.TempDir(), "s")
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", tf, "--fanouts", "4,2",
		"--seed", "5", "--edge-ids"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := cli(t, "prepare", "--state", state); code != 0 {
		t.Fatal(e)
	}
	for ep := uint32(0); ep < 2; ep++ {
		res, err := epochdir.Read(statedir.State{Dir: state}.EpochDir(ep))
		if err != nil {
			t.Fatal(err)
		}
		want, err := host.ReferenceEdgeIDs(g, res.Layers[0].Frontier, []int{4, 2}, epoch.Key{Seed: 5, Epoch: ep})
		if err != nil {
			t.Fatal(err)
		}
		for l := range want.Layers {
			if res.Layers[l].EdgeIDs == nil || !slices.Equal(res.Layers[l].EdgeIDs, want.Layers[l].EdgeIDs) ||
				!slices.Equal(res.Layers[l].Samples, want.Layers[l].Samples) {
				t.Fatalf("epoch %d layer %d: edge ids or samples differ from the reference", ep, l)
			}
		}
	}
	if _, e, code := cli(t, "prepare", "--state", state, "--edge-ids=false"); code == 0 || !strings.Contains(e, "--edge-ids false conflicts with true") {
		t.Fatalf("--edge-ids=false on a directory with edge ids: %d %s", code, e)
	}
	plain := filepath.Join(t.TempDir(), "p")
	if _, e, code := cli(t, "prepare", "--state", plain, "--graph", graph, "--train", tf, "--fanouts", "4,2"); code != 0 {
		t.Fatal(e)
	}
	res, err := epochdir.Read(statedir.State{Dir: plain}.EpochDir(0))
	if err != nil || res.Layers[0].EdgeIDs != nil {
		t.Fatalf("epoch prepared without --edge-ids: edge ids %v, %v", res.Layers[0].EdgeIDs != nil, err)
	}
	if _, e, code := cli(t, "prepare", "--state", plain, "--edge-ids"); code == 0 || !strings.Contains(e, "--edge-ids true conflicts with false") {
		t.Fatalf("--edge-ids on a directory without: %d %s", code, e)
	}
}
