package hostbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

// writeGraph packs a graph of n nodes whose neighbor lists come from
// adj(v) into a graph directory of chunkSize chunks.
func writeGraph(t testing.TB, n uint32, chunkSize int64, adj func(v uint32) []uint32) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "graph")
	w, err := chunkfmt.NewWriter(dir, n, chunkSize, chunkfmt.Options{Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := range n {
		if err := w.Append(adj(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// randomGraph is a graph of n nodes with random sorted neighbor lists of
// up to 2*avgDeg nodes.
func randomGraph(t testing.TB, n uint32, avgDeg int, chunkSize int64) string {
	r := rand.New(rand.NewPCG(uint64(n), 3))
	return writeGraph(t, n, chunkSize, func(uint32) []uint32 {
		nb := make([]uint32, r.IntN(2*avgDeg+1))
		for i := range nb {
			nb[i] = uint32(r.IntN(int(n)))
		}
		slices.Sort(nb)
		return slices.Compact(nb)
	})
}

// testTargets are the thresholds the tests judge reports against, the
// ones `streamsampler bench` uses.
var testTargets = Targets{MaxFloorRatio: 1.5, RSSFactor: 1.1, MinSpeedup: 1, MinEdgesPerCPUSecond: 30e6}

func testConfig(dir string, devices int) Config {
	return Config{
		Graph: dir, Fanouts: [][]int{{5, 3}, {4, 4, 4}}, Runs: 2, TrainFrac: 0.2, BatchSize: 64, Seed: 7,
		Backend: "emu", Devices: devices,
		Open: func() (host.Backend, error) { return host.Open(dir, host.Options{Backend: "emu", Devices: devices}) },
	}
}

// TestRun measures a small graph end to end and checks that the report's
// figures are consistent with each other and with the graph.
func TestRun(t *testing.T) {
	dir := randomGraph(t, 10000, 6, 32<<10)
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cfg := testConfig(dir, 2)
	cfg.Log = &log
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Judge(testTargets)
	if r.NumNodes != 10000 || r.Chunks != len(m.Chunks) || r.Train != 2000 || r.Runs != 2 || r.SeqReadGBps <= 0 || len(r.Sets) != 2 {
		t.Fatalf("report: %+v", r)
	}
	if !strings.HasPrefix(log.String(), "graph "+dir+": 10000 nodes") || strings.Count(log.String(), "\n") != 1 {
		t.Fatalf("log: %q", log.String())
	}
	for i, s := range r.Sets {
		if !slices.Equal(s.Fanouts, cfg.Fanouts[i]) || len(s.Layers) != len(s.Fanouts) || len(s.EpochWalls) != 2 {
			t.Fatalf("set %d: %+v", i, s)
		}
		var bytesRead, bytesNeeded int64
		for l, ly := range s.Layers {
			if ly.Layer != l || ly.Fanout != s.Fanouts[l] || ly.Targets <= 0 || ly.SampledSlots <= 0 || ly.BytesRead <= 0 || ly.GatherFloorS <= 0 || ly.KernelFloorS <= 0 {
				t.Fatalf("set %d layer %d: %+v", i, l, ly)
			}
			// The floor's bytes are the work's, not the reads': at
			// least one chunk, at most the graph's used bytes.
			if ly.BytesNeeded <= 0 || ly.BytesNeeded > usedBytes(t, cfg.Graph) {
				t.Fatalf("set %d layer %d: %d bytes needed", i, l, ly.BytesNeeded)
			}
			bytesRead += ly.BytesRead
			bytesNeeded += ly.BytesNeeded
		}
		if s.BytesNeeded != bytesNeeded || math.Abs(s.IOFloorS-float64(bytesNeeded)/(r.SeqReadGBps*1e9)) > 1e-9*s.IOFloorS {
			t.Fatalf("set %d: I/O floor %v s for %d bytes needed at %v GB/s", i, s.IOFloorS, bytesNeeded, r.SeqReadGBps)
		}
		if s.Layers[0].Targets != r.Train {
			t.Fatalf("set %d: layer 0 has %d targets, want the %d training nodes", i, s.Layers[0].Targets, r.Train)
		}
		if s.BytesRead != bytesRead || s.EpochWallS != Median(s.EpochWalls) {
			t.Fatalf("set %d: totals inconsistent: %+v", i, s)
		}
		if want := s.EpochWallS / max(s.IOFloorS, s.GatherFloorS); math.Abs(s.FloorRatio-want) > 1e-12*want || s.PassFloorRatio != (s.FloorRatio <= 1.5) {
			t.Fatalf("set %d: floor ratio %v, want %v", i, s.FloorRatio, want)
		}
		if runtime.GOOS == "linux" && (s.PeakRSS <= 0 || s.RSSBudget <= 0) {
			t.Fatalf("set %d: RSS %d budget %d", i, s.PeakRSS, s.RSSBudget)
		}
		if want := int64(1.1 * float64(s.ResultBytes+s.BufferBytes+s.IndexBytes)); s.RSSBudget != want || s.PassRSS != (s.PeakRSS > 0 && s.PeakRSS <= want) {
			t.Fatalf("set %d: RSS budget %d pass %v, want %d from the 1.1 target", i, s.RSSBudget, s.PassRSS, want)
		}
	}
	a := r.Assembly
	if !a.IdenticalBlocks || a.Edges <= 0 || a.Batches != 2000/64+1 || a.Speedup <= 0 || !slices.Equal(a.Fanouts, cfg.Fanouts[0]) {
		t.Fatalf("assembly: %+v", a)
	}
	if a.PassVsBaseline != (a.Speedup >= 1) || a.PassEdgesPerCore != (a.EdgesPerCPUS >= 30e6) {
		t.Fatalf("assembly pass flags disagree with the targets: %+v", a)
	}
	pass := a.IdenticalBlocks && a.PassVsBaseline && a.PassEdgesPerCore
	for _, s := range r.Sets {
		pass = pass && s.PassFloorRatio && s.PassRSS
	}
	if r.Pass != pass {
		t.Fatalf("pass %v, want %v", r.Pass, pass)
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	// The JSON carries every measurement the verdict rests on: judged
	// again from it, the report is the same.
	var back Report
	err = json.Unmarshal(js.Bytes(), &back)
	back.Judge(testTargets)
	if err != nil || !reflect.DeepEqual(&back, r) {
		t.Fatalf("JSON round trip: %v\n%s", err, js.String())
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{log.String(), "fanouts [5 3]", "fanouts [4 4 4]", "PASS blocks identical", "overall\n",
		"(target <= 1.5)\n", " vs 1.1 x (two epochs ", " assembly at least as fast as the per-minibatch sampler\n", " assembly >= 30M edges per CPU-second on one core\n"} {
		if !strings.Contains(txt.String(), want) {
			t.Fatalf("text report lacks %q:\n%s", want, txt.String())
		}
	}
}

func TestRunConfigErrors(t *testing.T) {
	dir := randomGraph(t, 100, 2, 4096)
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no-graph", func(c *Config) { c.Graph = "" }},
		{"no-fanouts", func(c *Config) { c.Fanouts = nil }},
		{"empty-set", func(c *Config) { c.Fanouts = [][]int{{2}, {}} }},
		{"full-layer", func(c *Config) { c.Fanouts = [][]int{{2}, {-1, 3}} }},
		{"zero-runs", func(c *Config) { c.Runs = 0 }},
		{"train-frac", func(c *Config) { c.TrainFrac = 1.5 }},
		{"train-frac-nan", func(c *Config) { c.TrainFrac = math.NaN() }},
		{"batch-size", func(c *Config) { c.BatchSize = 0 }},
		{"max-batches", func(c *Config) { c.MaxBatches = -1 }},
		{"no-open", func(c *Config) { c.Open = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(dir, 1)
			tc.edit(&cfg)
			if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
		})
	}
	cfg := testConfig(filepath.Join(t.TempDir(), "missing"), 1)
	if _, err := Run(context.Background(), cfg); err == nil || errors.Is(err, ErrConfig) {
		t.Fatalf("missing graph: got %v", err)
	}
}

func TestRunCancelled(t *testing.T) {
	dir := randomGraph(t, 2000, 4, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, testConfig(dir, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestKernelFloorEqualsReference checks that the kernel floor runs the
// real sampling kernel over every target: its samples are the reference's.
func TestKernelFloorEqualsReference(t *testing.T) {
	dir := randomGraph(t, 5000, 8, 2048)
	g, err := chunkfmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	targets := make([]uint32, 0, 1700)
	for v := uint32(1); v < 5000; v += 3 {
		targets = append(targets, v)
	}
	for _, replace := range []bool{false, true} {
		key := epoch.Key{Seed: 3, Epoch: 1, Replace: replace}
		ref, err := host.Reference(host.GraphAdjacency(g), targets, []int{6}, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{1, 3} {
			d, out, err := KernelFloor(g, targets, 6, key.Layer(0), replace, workers)
			if err != nil || d <= 0 {
				t.Fatalf("replace %v workers %d: %v, %v", replace, workers, d, err)
			}
			if !slices.Equal(out, ref.Layers[0].Samples) {
				t.Fatalf("replace %v workers %d: samples differ from the reference", replace, workers)
			}
		}
	}
}

// TestGatherFloorReadsAdjacency gives every node the single neighbor 7, so
// every random adjacency read returns 7 and the checksum is exact.
func TestGatherFloorReadsAdjacency(t *testing.T) {
	dir := writeGraph(t, 3000, 1024, func(v uint32) []uint32 {
		if v%5 == 0 {
			return nil // no neighbors: no reads
		}
		return []uint32{7}
	})
	g, err := chunkfmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	targets := make([]uint32, 0, 3000)
	for v := range uint32(3000) {
		targets = append(targets, v)
	}
	const k = 4
	for _, workers := range []int{1, 2} {
		_, sum, err := GatherFloor(g, targets, k, workers)
		if err != nil {
			t.Fatal(err)
		}
		if want := uint64(7 * k * 2400); sum != want {
			t.Fatalf("workers %d: checksum %d, want %d", workers, sum, want)
		}
	}
}

func TestSeqReadRate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 3*seqReqBytes/2+123)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{1 << 20, 1 << 30} {
		rate, _, err := SeqReadRate(p, limit)
		if err != nil || rate <= 0 || math.IsInf(rate, 0) {
			t.Fatalf("limit %d: rate %v, %v", limit, rate, err)
		}
	}
	if _, _, err := SeqReadRate(filepath.Join(t.TempDir(), "missing"), 1<<20); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: got %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SeqReadRate(empty, 1<<20); err == nil || !strings.Contains(err.Error(), "nothing read") {
		t.Fatalf("empty file: got %v", err)
	}
}

// TestReadSeqCounts checks the byte count directly, short last read and
// limit included.
func TestReadSeqCounts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, tc := range []struct{ limit, want int64 }{{1 << 20, 10000}, {4096, 4096}, {5000, 8192}} {
		n, err := readSeq(f, buf, tc.limit)
		if err != nil || n.bytes != tc.want {
			t.Fatalf("limit %d: read %d, %v; want %d", tc.limit, n.bytes, err, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(tc.in)
		if got := Median(in); got != tc.want || !slices.Equal(in, tc.in) {
			t.Fatalf("Median(%v) = %v (input now %v), want %v", tc.in, got, in, tc.want)
		}
	}
}

// TestPeakRSSGrows touches 64 MiB after a reset: the peak must cover it.
func TestPeakRSSGrows(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux only")
	}
	resetPeakRSS()
	before := peakRSS()
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after := peakRSS()
	runtime.KeepAlive(b)
	if before <= 0 || after < before+60<<20 {
		t.Fatalf("peak RSS %d before, %d after touching 64 MiB", before, after)
	}
}

// TestJudge holds one report to two sets of targets: the verdicts follow
// the thresholds, and the text names the thresholds used.
func TestJudge(t *testing.T) {
	r := &Report{
		Sets:     []Set{{FloorRatio: 1.4, PeakRSS: 1050, ResultBytes: 800, BufferBytes: 100, IndexBytes: 100}},
		Assembly: Assembly{Speedup: 1.2, EdgesPerCPUS: 40e6, IdenticalBlocks: true},
	}
	r.Judge(testTargets)
	if s := r.Sets[0]; !s.PassFloorRatio || s.RSSBudget != 1100 || !s.PassRSS || !r.Assembly.PassVsBaseline || !r.Assembly.PassEdgesPerCore || !r.Pass {
		t.Fatalf("against the bench targets: %+v", r)
	}
	strict := Targets{MaxFloorRatio: 1.2, RSSFactor: 1.0, MinSpeedup: 2, MinEdgesPerCPUSecond: 50e6}
	r.Judge(strict)
	if s := r.Sets[0]; s.PassFloorRatio || s.RSSBudget != 1000 || s.PassRSS || r.Assembly.PassVsBaseline || r.Assembly.PassEdgesPerCore || r.Pass {
		t.Fatalf("against stricter targets: %+v", r)
	}
	var txt bytes.Buffer
	if err := r.WriteBody(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FAIL epoch wall", "(target <= 1.2)\n", "FAIL peak RSS", " vs 1 x (two epochs ", "FAIL assembly at least 2x as fast as", "FAIL assembly >= 50M edges", "FAIL overall"} {
		if !strings.Contains(txt.String(), want) {
			t.Fatalf("text lacks %q:\n%s", want, txt.String())
		}
	}
	// Blocks that differ fail whatever the thresholds.
	r.Assembly.IdenticalBlocks = false
	r.Judge(Targets{})
	if r.Pass {
		t.Fatal("a report with differing blocks passed")
	}
}

// usedBytes is the graph's chunk bytes in use (manifest), the most a
// layer can need.
func usedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range m.Chunks {
		n += c.BytesUsed
	}
	return n
}
