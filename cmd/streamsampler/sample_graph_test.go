package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestSampleGraphEqualsState: `sample --graph` (random reads, no state
// directory) prints exactly what `sample --state` prints for the same
// seeds, from a state prepared from the same graph with the same fanouts,
// seed and options, in every format and both semantics, edge ids
// included; and it is quiet on stderr unless --stats.
func TestSampleGraphEqualsState(t *testing.T) {
	graph, _ := testGraph(t, 3000, 6, 4096)
	var train []uint32
	for v := uint32(0); v < 3000; v += 7 {
		train = append(train, v)
	}
	for _, tc := range []struct {
		fanouts string
		extra   []string
	}{
		{"5,3", nil}, {"5,3", []string{"--edge-ids", "--replace", "--seed", "9"}},
		{"-1,3", []string{"--edge-ids"}}, {"4,-1", nil},
	} {
		fanouts, extra := tc.fanouts, tc.extra
		state := filepath.Join(t.TempDir(), "s")
		args := append([]string{"prepare", "-q", "--state", state, "--graph", graph, "--train", writeTrain(t, train), "--fanouts", fanouts}, extra...)
		if _, e, code := cli(t, args...); code != 0 {
			t.Fatal(e)
		}
		if _, e, code := cli(t, "advance", "--state", state); code != 0 {
			t.Fatal(e)
		}
		for _, format := range []string{"json", "summary"} {
			for _, sem := range []string{"dgl", "pyg"} {
				seeds := "14,7,2100,700"
				want, e, code := cli(t, "sample", "--state", state, "--seeds", seeds, "--format", format, "--semantics", sem)
				if code != 0 {
					t.Fatal(e)
				}
				gargs := append([]string{"sample", "--graph", graph, "--fanouts", fanouts, "--epoch", "0", "--seeds", seeds, "--format", format, "--semantics", sem}, extra...)
				got, e, code := cli(t, gargs...)
				if code != 0 || e != "" {
					t.Fatalf("%v: exit %d, stderr %q", gargs, code, e)
				}
				if got != want {
					t.Fatalf("%v: differs from sample --state\n--- graph\n%s\n--- state\n%s", gargs, got, want)
				}
			}
		}
	}
	// A later epoch is another stream: it differs from epoch 0's.
	e0, _, _ := cli(t, "sample", "--graph", graph, "--fanouts", "5,3", "--seeds", "14")
	e1, _, _ := cli(t, "sample", "--graph", graph, "--fanouts", "5,3", "--seeds", "14", "--epoch", "1")
	if e0 == e1 || !strings.Contains(e1, `"epoch":1`) {
		t.Fatalf("epoch 1 gave epoch 0's minibatch:\n%s", e1)
	}
	// --stats: one JSON object on stderr, what was read.
	_, e, code := cli(t, "sample", "--graph", graph, "--fanouts", "5,3", "--seeds", "14,15", "--stats", "--io", "pread", "--block-size", "512")
	var st struct {
		IO        string `json:"io"`
		BlockSize int    `json:"block_size"`
		Layers    []struct {
			Nodes, Reads int
		} `json:"layers"`
	}
	if code != 0 || json.Unmarshal([]byte(e), &st) != nil || st.IO != "pread" || st.BlockSize != 512 || len(st.Layers) != 2 || st.Layers[0].Nodes != 2 || st.Layers[0].Reads == 0 {
		t.Fatalf("--stats: exit %d, stderr %q (%+v)", code, e, st)
	}
}

// TestSampleGraphErrors: --graph's mistakes name the flag or the node.
func TestSampleGraphErrors(t *testing.T) {
	graph, _ := testGraph(t, 300, 4, 4096)
	state, _ := preparedState(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"both", []string{"--state", state, "--graph", graph, "--fanouts", "2", "--seeds", "1"}, 2, "exactly one of --state"},
		{"neither", []string{"--seeds", "1"}, 2, "exactly one of --state"},
		{"no-fanouts", []string{"--graph", graph, "--seeds", "1"}, 2, "--graph needs --fanouts"},
		{"bad-fanouts", []string{"--graph", graph, "--seeds", "1", "--fanouts", "3,0"}, 2, "not a positive integer"},
		{"seed-out-of-range", []string{"--graph", graph, "--fanouts", "2", "--seeds", "1,300"}, 1, "beyond the graph's 300 nodes"},
		{"duplicate", []string{"--graph", graph, "--fanouts", "2", "--seeds", "4,4"}, 1, "seed 4 at positions 0 and 1"},
		{"bad-io", []string{"--graph", graph, "--fanouts", "2", "--seeds", "4", "--io", "mmap"}, 2, "want aio or pread"},
		{"bad-block", []string{"--graph", graph, "--fanouts", "2", "--seeds", "4", "--block-size", "1000"}, 2, "power of two"},
		{"not-a-graph", []string{"--graph", t.TempDir(), "--fanouts", "2", "--seeds", "4"}, 1, "manifest"},
		{"fanouts-with-state", []string{"--state", state, "--seeds", "7", "--fanouts", "2"}, 2, "--fanouts applies to --graph only"},
		{"epoch-with-state", []string{"--state", state, "--seeds", "7", "--epoch", "2"}, 2, "--epoch applies to --graph only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e, code := cli(t, append([]string{"sample"}, tc.args...)...)
			if code != tc.code || !strings.Contains(e, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q", code, tc.code, e, tc.msg)
			}
		})
	}
}
