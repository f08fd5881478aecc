package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/runloop"
)

func TestRunLoop(t *testing.T) {
	graph, _ := testGraph(t, 4000, 6, 8192)
	var train []uint32
	for v := uint32(0); v < 4000; v += 4 {
		train = append(train, v)
	}
	tf := writeTrain(t, train)
	out, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "5,5", "--batch-size", "64", "--epochs", "3", "--json", "--devices", "2")
	if code != 0 {
		t.Fatal(e)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	for i, l := range lines {
		var r runloop.EpochReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if int(r.Epoch) != i || r.Batches != 16 || r.Seeds != 1000 || r.Edges <= 0 || r.SampleS <= 0 || r.BytesRead <= 0 || r.Overlapped != (i > 0) {
			t.Fatalf("epoch %d: %+v", i, r)
		}
	}
	human, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "5", "--epochs", "2")
	if code != 0 || !strings.Contains(human, "epoch 1: 1 minibatches") || !strings.Contains(human, "in the background") {
		t.Fatalf("%d %s\n%s", code, e, human)
	}
	if _, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--epochs", "0"); code != 2 {
		t.Fatalf("--epochs 0: %d %s", code, e)
	}
}
