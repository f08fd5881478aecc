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
	// The graph fits the chunk cache (--chunk-cache auto): epoch 0 reads
	// every chunk once, the later epochs nothing.
	for i, l := range lines {
		var r runloop.EpochReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if int(r.Epoch) != i || r.Batches != 16 || r.Seeds != 1000 || r.Edges <= 0 || r.SampleS <= 0 || r.Overlapped != (i > 0) ||
			r.Stats == nil || r.Stats.Cache == nil || (i == 0) != (r.BytesRead > 0) || i == 0 && r.BytesRead != r.Stats.GraphBytes {
			t.Fatalf("epoch %d: %+v", i, r)
		}
	}
	// With only the two buffers per device, every epoch reads.
	out, e, code = cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "5,5", "--batch-size", "64", "--epochs", "2", "--json", "--devices", "2", "--chunk-cache", "0")
	if code != 0 {
		t.Fatal(e)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r runloop.EpochReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.BytesRead <= 0 || r.Stats.Cache.Slots != 4 || r.Stats.Cache.Budget != 0 {
			t.Fatalf("--chunk-cache 0, epoch %d: %+v", r.Epoch, r)
		}
	}
	human, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "5", "--epochs", "2")
	if code != 0 || !strings.Contains(human, "epoch 1: 1 minibatches") || !strings.Contains(human, "in the background") {
		t.Fatalf("%d %s\n%s", code, e, human)
	}
	// The cache's size is said at start, as --feature-cache's is.
	if !strings.Contains(e, "chunk cache ") || !strings.Contains(e, "of the graph's 15 chunks") || !strings.Contains(e, "auto: half of the") {
		t.Fatalf("stderr does not report the chunk cache: %s", e)
	}
	if _, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--fanouts", "5", "--chunk-cache", "lots"); code != 2 || !strings.Contains(e, "--chunk-cache") {
		t.Fatalf("--chunk-cache lots: %d %s", code, e)
	}
	if _, e, code := cli(t, "run", "--graph", graph, "--train", tf, "--epochs", "0"); code != 2 {
		t.Fatalf("--epochs 0: %d %s", code, e)
	}
}
