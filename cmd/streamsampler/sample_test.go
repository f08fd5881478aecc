package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
)

// preparedState makes a state directory with epoch 0 current.
func preparedState(t *testing.T) (state string, train []uint32) {
	t.Helper()
	state, _, train = preparedStateOf(t, 3000)
	return state, train
}

// preparedStateOf prepares a state directory (epoch 0 current, training
// nodes every 7th) from a random graph of n nodes and returns it, the
// graph and the training nodes.
func preparedStateOf(t *testing.T, n uint32) (state, graph string, train []uint32) {
	t.Helper()
	graph, _ = testGraph(t, n, 6, 4096)
	for v := uint32(0); v < n; v += 7 {
		train = append(train, v)
	}
	state = filepath.Join(t.TempDir(), "s")
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", writeTrain(t, train), "--fanouts", "5,3"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := cli(t, "advance", "--state", state); code != 0 {
		t.Fatal(e)
	}
	return state, graph, train
}

func TestSampleErrors(t *testing.T) {
	state, _ := preparedState(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"not-training-node", []string{"--seeds", "7,8"}, 1, "not a training node"},
		{"duplicate", []string{"--seeds", "7,7"}, 1, "duplicate"},
		{"no-seeds", nil, 2, "exactly one of"},
		{"both", []string{"--seeds", "7", "--seeds-file", "x"}, 2, "exactly one of"},
		{"bad-seed", []string{"--seeds", "7,-1"}, 2, "not a node id"},
		{"bad-format", []string{"--seeds", "7", "--format", "xml"}, 2, "json, npz or summary"},
		{"bad-semantics", []string{"--seeds", "7", "--semantics", "PyG"}, 2, "want dgl or pyg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e, code := cli(t, append([]string{"sample", "--state", state}, tc.args...)...)
			if code != tc.code || !strings.Contains(e, tc.msg) {
				t.Fatalf("exit %d (want %d): %q, want %q", code, tc.code, e, tc.msg)
			}
		})
	}
	// No current epoch yet.
	graph, _ := testGraph(t, 100, 3, 4096)
	s2 := filepath.Join(t.TempDir(), "s2")
	if _, e, code := cli(t, "prepare", "--state", s2, "--graph", graph, "--train", writeTrain(t, []uint32{1}), "--fanouts", "2"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := cli(t, "sample", "--state", s2, "--seeds", "1"); code != 1 || !strings.Contains(e, "no current epoch") {
		t.Fatalf("unprepared: %d %s", code, e)
	}
	if _, e, code := cli(t, "sample", "--state", t.TempDir(), "--seeds", "1"); code != 1 || !strings.Contains(e, "not a state directory") {
		t.Fatalf("not a state dir: %d %s", code, e)
	}
}

func TestSampleCorruptEpoch(t *testing.T) {
	state, _ := preparedState(t)
	dir := filepath.Join(state, "epoch-0")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	damaged := false
	for _, e := range ents {
		if e.Name() != "manifest.json" {
			p := filepath.Join(dir, e.Name())
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			damaged = true
			break
		}
	}
	if !damaged {
		t.Fatal("no array file to damage")
	}
	if _, e, code := cli(t, "sample", "--state", state, "--seeds", "7"); code != 1 || !strings.Contains(e, "damaged") {
		t.Fatalf("corrupt epoch: %d %s", code, e)
	}
}

// TestSampleNPZ checks the npz against the JSON output with numpy.
func TestSampleNPZ(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("no numpy for", py)
	}
	state, _ := preparedState(t)
	js, e, code := cli(t, "sample", "--state", state, "--seeds", "14,7,21")
	if code != 0 {
		t.Fatal(e)
	}
	npz := filepath.Join(t.TempDir(), "b.npz")
	if _, e, code := cli(t, "sample", "--state", state, "--seeds", "14,7,21", "--format", "npz", "-o", npz); code != 0 {
		t.Fatal(e)
	}
	script := `
import json, sys, numpy as np
z = np.load(sys.argv[1]); j = json.loads(open(sys.argv[2]).read())
assert int(z["epoch"]) == j["epoch"], "epoch"
assert z["seeds"].tolist() == [14, 7, 21], "seeds"
for h, hop in enumerate(j["hops"], 1):
    for k in ("dst", "src", "edge_src", "edge_dst"):
        a = z["hop%d_%s" % (h, k)]
        assert a.dtype == (np.uint32 if k in ("dst", "src") else np.int32), (k, a.dtype)
        assert a.tolist() == hop[k], (h, k)
print("ok")
`
	jf := filepath.Join(t.TempDir(), "b.json")
	os.WriteFile(jf, []byte(js), 0o644)
	out, err := exec.Command(py, "-c", script, npz, jf).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("numpy check: %v\n%s", err, out)
	}
}

// TestSampleSummary checks the summary's counts against the JSON blocks.
func TestSampleSummary(t *testing.T) {
	state, _ := preparedState(t)
	js, e, code := cli(t, "sample", "--state", state, "--seeds", "14,7,21")
	if code != 0 {
		t.Fatal(e)
	}
	var b struct {
		Epoch int
		Hops  []struct {
			D []int64 `json:"dst"`
			S []int64 `json:"src"`
			E []int64 `json:"edge_src"`
		}
	}
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("epoch %d, 3 seeds\n", b.Epoch)
	for h, hop := range b.Hops {
		want += fmt.Sprintf("hop %d: %d dst <- %d src (%d new), %d edges\n",
			h+1, len(hop.D), len(hop.S), len(hop.S)-len(hop.D), len(hop.E))
	}
	got, e, code := cli(t, "sample", "--state", state, "--seeds", "14,7,21", "--format", "summary")
	if code != 0 || got != want {
		t.Fatalf("summary (exit %d, %s):\n%s\nwant:\n%s", code, e, got, want)
	}
}

// TestSampleOutputAtomic: -o writes exactly what stdout would get, leaves
// no temporary behind, and a failing sample leaves the previous file
// whole.
func TestSampleOutputAtomic(t *testing.T) {
	state, _ := preparedState(t)
	js, e, code := cli(t, "sample", "--state", state, "--seeds", "14,7,21")
	if code != 0 {
		t.Fatal(e)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "b.json")
	if err := os.WriteFile(out, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, code := cli(t, "sample", "--state", state, "--seeds", "14,7,21", "-o", out); code != 0 {
		t.Fatal(e)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != js {
		t.Fatalf("-o file (%v) differs from stdout", err)
	}
	if _, e, code := cli(t, "sample", "--state", state, "--seeds", "14,14", "-o", out); code == 0 {
		t.Fatalf("duplicate seeds accepted: %s", e)
	}
	if b, _ := os.ReadFile(out); string(b) != js {
		t.Fatal("a failed sample changed the previous output")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the output", len(ents))
	}
}

// TestSamplePyGEdgeIDs: sample --semantics pyg from a state prepared with
// --edge-ids prints the epoch's PyG assembly of the seeds, with each hop's
// edge ids, and npz carries them too.
func TestSamplePyGEdgeIDs(t *testing.T) {
	graph, _ := testGraph(t, 2000, 6, 4096)
	var train []uint32
	for v := uint32(0); v < 2000; v += 5 {
		train = append(train, v)
	}
	state := filepath.Join(t.TempDir(), "s")
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", writeTrain(t, train), "--fanouts", "4,3", "--edge-ids"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := cli(t, "advance", "--state", state); code != 0 {
		t.Fatal(e)
	}
	out, e, code := cli(t, "sample", "--state", state, "--seeds", "10,5,300", "--semantics", "pyg")
	if code != 0 {
		t.Fatal(e)
	}
	res, err := epochdir.Read(filepath.Join(state, "epoch-0"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := epoch.NewAssembler(res, nil).Assemble([]uint32{10, 5, 300}, epoch.PyG)
	if err != nil {
		t.Fatal(err)
	}
	hops, err := json.Marshal(want.Hops)
	if err != nil {
		t.Fatal(err)
	}
	if got, exp := strings.TrimSpace(out), `{"epoch":0,"semantics":"pyg","seeds":[10,5,300],"hops":`+string(hops)+"}"; got != exp || !strings.Contains(got, `"e_id":[`) {
		t.Fatalf("sample --semantics pyg printed\n%s\nwant\n%s", got, exp)
	}
	npz := filepath.Join(t.TempDir(), "b.npz")
	if _, e, code := cli(t, "sample", "--state", state, "--seeds", "10,5,300", "--semantics", "pyg", "--format", "npz", "-o", npz); code != 0 {
		t.Fatal(e)
	}
	raw, err := os.ReadFile(npz)
	if err != nil || !strings.Contains(string(raw), "hop2_e_id.npy") {
		t.Fatalf("npz without hop2_e_id (%v)", err)
	}
}
