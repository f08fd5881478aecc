package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/runloop"
)

// --fanouts -1,3 (a full first hop, then 3 sampled neighbors) through
// prepare (1 and 3 emulated devices, with edge ids), sample and run: the
// prepared epoch equals host.ReferenceEdgeIDs on the graph (samples, row
// offsets and edge ids), `sample` prints its assembly, and run's JSON
// reports the epochs' samples' memory. The separate "--fanouts -1"
// argument is taken as the flag's value, not as a flag.
func TestFullNeighborhoodsCommands(t *testing.T) {
	graph, g := testGraph(t, 1500, 6, 4096)
	var train []uint32
	for v := uint32(0); v < 1500; v += 9 {
		train = append(train, v)
	}
	tf := writeTrain(t, train)
	for _, devices := range []string{"1", "3"} {
		state := filepath.Join(t.TempDir(), "s"+devices)
		if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", tf, "--fanouts", "-1,3", "--seed", "4", "--edge-ids", "--devices", devices); code != 0 {
			t.Fatal(e)
		}
		got, err := epochdir.Read(filepath.Join(state, "epoch-0"))
		if err != nil {
			t.Fatal(err)
		}
		seeds := got.Frontier(0)
		want, err := host.ReferenceEdgeIDs(g, seeds, []int{-1, 3}, epoch.Key{Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != want.Key || !equalLayers(got, want) {
			t.Fatalf("devices %s: the prepared epoch differs from the reference", devices)
		}
		if _, e, code := cli(t, "advance", "--state", state); code != 0 {
			t.Fatal(e)
		}
		out, e, code := cli(t, "sample", "--state", state, "--seeds", itoa(train[3])+","+itoa(train[1]))
		if code != 0 {
			t.Fatal(e)
		}
		b, err := want.Assemble([]uint32{train[3], train[1]}, epoch.DGL)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) != string(b.AppendJSON(nil)) {
			t.Fatalf("sample printed\n%s\nwant\n%s", out, b.AppendJSON(nil))
		}
	}
	out, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "-1", "--batch-size", "50", "--epochs", "2", "--json")
	if code != 0 {
		t.Fatal(e)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r runloop.EpochReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.ResultBytes <= 0 || r.Stats == nil || len(r.Stats.Layers) != 1 || r.Stats.Layers[0].Fanout != -1 || r.Stats.ResultBytes() <= 0 || r.Edges <= 0 {
			t.Fatalf("run --fanouts -1: %s", l)
		}
	}
	if _, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "-2"); code != 2 || !strings.Contains(e, "every neighbor") {
		t.Fatalf("--fanouts -2: %d %s", code, e)
	}
}

// equalLayers compares two Results' layers and last frontiers exactly.
func equalLayers(a, b *epoch.Result) bool {
	if len(a.Layers) != len(b.Layers) || !slices.Equal(a.Final, b.Final) {
		return false
	}
	for l := range a.Layers {
		x, y := &a.Layers[l], &b.Layers[l]
		if x.Fanout != y.Fanout || !slices.Equal(x.Frontier, y.Frontier) || !slices.Equal(x.Samples, y.Samples) ||
			!slices.Equal(x.EdgeIDs, y.EdgeIDs) || !slices.Equal(x.Offsets, y.Offsets) {
			return false
		}
	}
	return true
}
