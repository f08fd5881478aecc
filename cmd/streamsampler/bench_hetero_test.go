package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/heterosample"
	"github.com/streamsampler/streamsampler/host"
)

// decodeEpochReport parses bench's epochs-only JSON, failing the test with
// the command's output when it does not parse.
func decodeEpochReport(t *testing.T, out, errOut string, code int) *EpochReport {
	t.Helper()
	var r EpochReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %q %s", code, err, out, errOut)
	}
	return &r
}

// checkSet checks a set's medians against its epochs and their ratios.
func checkSet(t *testing.T, s EpochSet, runs int) {
	t.Helper()
	if len(s.Epochs) != runs {
		t.Fatalf("%d epochs, want %d", len(s.Epochs), runs)
	}
	var walls []float64
	for _, e := range s.Epochs {
		if e.WallS <= 0 || e.SampledEdges <= 0 || e.BytesRead <= 0 || e.CPUS < 0 {
			t.Fatalf("epoch %+v", e)
		}
		walls = append(walls, e.WallS)
	}
	slices.Sort(walls)
	if s.WallS != walls[len(walls)/2] { // odd runs: the middle one
		t.Fatalf("median wall %v of %v", s.WallS, walls)
	}
	if want := s.WallS * 1e9 / float64(s.SampledEdges); s.NsPerEdge != want {
		t.Fatalf("ns/edge %v, want %v", s.NsPerEdge, want)
	}
	if s.PeakRSS <= 0 {
		t.Fatalf("peak RSS %d", s.PeakRSS)
	}
}

// bench of a heterogeneous directory samples exactly the epochs of the
// in-memory reference (heterosample.Reference over each relation's CSR)
// for its training set, and counts their edges per relation.
func TestBenchHeteroEpochs(t *testing.T) {
	dir := buildHeteroMini(t)
	const runs = 3
	out, errOut, code := cli(t, "bench", "--graph", dir, "--train-type", "politician", "--train-frac", "0.5",
		"--fanouts", "4,3", "--relation-fanouts", "politician___likes___politician=2,1", "--runs", "3", "--seed", "7", "--json", "--devices", "2")
	r := decodeEpochReport(t, out, errOut, code)
	g, err := heterofmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	schema, dirs := heterosample.SchemaOf(dir, g.Manifest)
	pol := schema.NodeTypes[schema.TypeIndex("politician")].Count
	if !r.Hetero || r.TrainType != "politician" || r.Train != int(float64(pol)*0.5) || r.Runs != runs || len(r.Sets) != 1 {
		t.Fatalf("report: %+v", r)
	}
	var stored int64
	graphs := make([]host.Adjacency, len(dirs))
	for i, d := range dirs {
		c, err := host.LoadCSR(d)
		if err != nil {
			t.Fatal(err)
		}
		graphs[i] = c
		stored += int64(len(c.Indices))
	}
	if r.NumEdges != stored {
		t.Fatalf("num_edges %d, the relations store %d", r.NumEdges, stored)
	}
	set := r.Sets[0]
	checkSet(t, set, runs)
	train := benchTrainingSet(pol, 0.5, 0, 7)
	fanouts, err := schema.FanoutsFromMap(map[string][]int{"politician___likes___politician": {2, 1}}, []int{4, 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, rel := range schema.Relations {
		if !slices.Equal(set.RelationFanouts[rel.String()], fanouts[i]) {
			t.Fatalf("relation %s: fanouts %v, want %v", rel, set.RelationFanouts[rel.String()], fanouts[i])
		}
	}
	for e := range runs {
		ref, err := heterosample.Reference(schema, graphs, []heteroepoch.Seeds{{Type: "politician", Nodes: train}}, fanouts, epoch.Key{Seed: 7, Epoch: uint32(e)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := set.Epochs[e].SampledEdges, ref.SampledEdges(); got != want {
			t.Fatalf("epoch %d: %d sampled edges, the reference %d", e, got, want)
		}
		if e != runs-1 {
			continue
		}
		// Relations are the last epoch's.
		var sum int64
		for i, rel := range schema.Relations {
			var want int64
			for _, layer := range ref.Layers {
				for _, s := range layer[i].Samples {
					if s >= 0 {
						want++
					}
				}
			}
			got := set.Relations[i]
			if got.Relation != rel.String() || got.SampledEdges != want || got.StoredEdges != int64(len(graphs[i].(*host.CSR).Indices)) {
				t.Fatalf("relation %d: %+v, want %s with %d sampled edges", i, got, rel, want)
			}
			sum += got.SampledEdges
		}
		if sum != set.Epochs[e].SampledEdges {
			t.Fatalf("relations sum to %d sampled edges, the epoch %d", sum, set.Epochs[e].SampledEdges)
		}
	}

	human, errOut, code := cli(t, "bench", "--graph", dir, "--train-type", "politician", "--train-count", "5", "--fanouts", "3", "--runs", "1")
	if code != 0 || !strings.Contains(human, "heterogeneous graph") || !strings.Contains(human, "5 training nodes of type politician") ||
		!strings.Contains(human, "relation politician___likes___politician") || !strings.Contains(human, "ns/edge") {
		t.Fatalf("human report (exit %d):\n%s%s", code, human, errOut)
	}
}

// bench --epoch-only of a homogeneous graph samples the reference's epochs
// for the training set the full bench draws (the same seeds).
func TestBenchEpochOnly(t *testing.T) {
	dir, csr := testGraph(t, 5000, 6, 16<<10)
	out, errOut, code := cli(t, "bench", "--graph", dir, "--epoch-only", "--train-count", "300", "--fanouts", "5,3", "--fanouts", "2", "--runs", "1", "--seed", "3", "--json")
	r := decodeEpochReport(t, out, errOut, code)
	if r.Hetero || r.Train != 300 || r.NumEdges != int64(len(csr.Indices)) || len(r.Sets) != 2 || r.ChunkCache != 0 {
		t.Fatalf("report: %+v", r)
	}
	train := benchTrainingSet(5000, 0, 300, 3)
	if len(train) != 300 || !slices.IsSorted(train) || len(slices.Compact(slices.Clone(train))) != 300 || train[len(train)-1] >= 5000 {
		t.Fatalf("training set: %d nodes, sorted %v", len(train), slices.IsSorted(train))
	}
	// A fraction and the count it comes to draw the same nodes (one
	// seeded shuffle's prefix), so the two flags seed the same epochs.
	if a, b := benchTrainingSet(5000, 0.06, 0, 3), benchTrainingSet(5000, 0, 300, 3); !slices.Equal(a, b) {
		t.Fatalf("--train-frac 0.06 and --train-count 300 differ")
	}
	for i, fan := range [][]int{{5, 3}, {2}} {
		checkSet(t, r.Sets[i], 1)
		ref, err := host.Reference(csr, train, fan, epoch.Key{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Sets[i].SampledEdges, ref.NumSampledEdges(); got != want || r.Sets[i].Relations != nil {
			t.Fatalf("fanouts %v: %d sampled edges, the reference %d", fan, got, want)
		}
	}
}

// bench refuses flags that do not fit the graph, naming them.
func TestBenchEpochsUsage(t *testing.T) {
	hdir := buildHeteroMini(t)
	dir, _ := testGraph(t, 1000, 4, 16<<10)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--graph", hdir}, "--train-type names"},
		{[]string{"--graph", hdir, "--train-type", "paper"}, `--train-type "paper": not a node type`},
		{[]string{"--graph", hdir, "--train-type", "politician", "--chunk-cache", "auto"}, "--chunk-cache \"auto\""},
		{[]string{"--graph", hdir, "--train-type", "politician", "--relation-fanouts", "a___b___c=2"}, "not a relation of the graph"},
		{[]string{"--graph", hdir, "--train-type", "politician", "--relation-fanouts", "oops"}, "want src___rel___dst=FANOUTS"},
		{[]string{"--graph", dir, "--epoch-only", "--train-type", "politician"}, "is homogeneous"},
		{[]string{"--graph", dir, "--train-count", "5"}, "are for --epoch-only or a heterogeneous graph"},
		{[]string{"--graph", dir, "--epoch-only", "--train-count", "-1"}, "--train-count -1"},
	} {
		_, errOut, code := cli(t, append([]string{"bench", "--runs", "1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("bench %v: exit %d, %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
