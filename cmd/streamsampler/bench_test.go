package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

// TestBenchRuns runs the benchmark end to end on a small graph: it must
// print a complete JSON report whose figures are consistent, and its
// per-minibatch baseline must build the very blocks the epoch assembly
// builds.
func TestBenchRuns(t *testing.T) {
	dir, _ := testGraph(t, 20000, 8, 64<<10)
	out, errOut, code := cli(t, "bench", "--graph", dir, "--runs", "2", "--json", "--batch-size", "128", "--devices", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if len(r.Sets) != 2 || r.Train != 2000 || r.Chunks < 8 || r.SeqReadGBps <= 0 {
		t.Fatalf("report: %+v", r)
	}
	for _, s := range r.Sets {
		if s.EpochWallS <= 0 || s.BytesRead <= 0 || s.GatherFloorS <= 0 || s.FloorRatio <= 0 || len(s.Layers) != 3 {
			t.Fatalf("set %v: %+v", s.Fanouts, s)
		}
	}
	if !r.Assembly.IdenticalBlocks || r.Assembly.Edges <= 0 {
		t.Fatalf("assembly: %+v", r.Assembly)
	}
	human, _, code := cli(t, "bench", "--graph", dir, "--runs", "1", "--fanouts", "5,5", "--max-batches", "3")
	if code != 0 || !strings.Contains(human, "overall") || !strings.Contains(human, "PASS blocks identical") {
		t.Fatalf("human report (exit %d):\n%s", code, human)
	}
}

// TestMinibatchSamplerMatchesAssembly checks the benchmark's peer against
// the epoch assembly directly, including with replacement.
func TestMinibatchSamplerMatchesAssembly(t *testing.T) {
	_, g := testGraph(t, 3000, 6, 8192)
	for _, rep := range []bool{false, true} {
		key := epoch.Key{Seed: 9, Epoch: 2, Replace: rep}
		train := make([]uint32, 0, 300)
		for v := uint32(0); v < 3000; v += 10 {
			train = append(train, v)
		}
		res, err := host.Reference(g, train, []int{7, 4, 3}, key)
		if err != nil {
			t.Fatal(err)
		}
		ms := &minibatchSampler{g: g, fanouts: []int{7, 4, 3}, key: key}
		for _, b := range epoch.Batches(train, 64, 1, 2) {
			x, err := res.Sample(b)
			if err != nil {
				t.Fatal(err)
			}
			y, err := ms.sample(b)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBlocks(x, y) {
				t.Fatalf("replace=%v: blocks differ for batch starting %d", rep, b[0])
			}
		}
	}
}
