package epochstats

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/featplan"
)

// TestReportFinishAndLines: the rates are the counts over the right
// times (ms/batch over the wall, edges/s over assembly alone, the feature
// rates over the reads' time, zero over no time), and the lines say so.
func TestReportFinishAndLines(t *testing.T) {
	feat := func() *Features {
		return &Features{ReadS: 2, PlanS: 0.5, Reads: featplan.Report{RowBytes: 100, RowsNeeded: 4000, RowsFromCache: 1000, RowsFromDisk: 3000, Reads: 30, BytesRead: 307200}}
	}
	for _, c := range []struct {
		name string
		r    Report
		// want: MsPerBatch, EdgesPerS, ReadGBps, rows/s, GB/s of features
		ms, eps, gbps, rps, fgbps float64
		lines                     []string // substrings of each line, in order
	}{
		{
			name: "run, features",
			r:    Report{Epoch: 3, Batches: 10, Seeds: 640, Edges: 50000, WallS: 4, AssembleS: 0.5, SampleS: 2, BytesRead: 4e9, BytesKnown: true, GraphBytes: 2e9, Overlapped: true, Features: feat()},
			ms:   400, eps: 1e5, gbps: 2, rps: 2000, fgbps: 4000 * 100 / 2 / 1e9,
			lines: []string{
				"epoch 3: 10 minibatches (640 seeds, 50000 edges) in 4.000 s, 400.000 ms/batch (assembly 0.500 s, feature rows and labels 2.000 s; assembly alone 1e+05 edges/s); sampled in 2.000 s in the background during the previous epoch, 4000000000 bytes read at 2.00 GB/s (2.00× the graph's 2000000000 bytes of chunks)",
				"  features: 4000 rows needed, 1000 from the cache (25.0%), 3000 read on demand; 30 reads of 307200 bytes in all",
			},
		},
		{
			name: "serve, left early, no features, sampler without statistics",
			r:    Report{Epoch: 0, NumBatches: 8, Batches: 3, Seeds: 30, Edges: 300, WallS: 0.3, AssembleS: 0.1, SampleS: 1},
			ms:   100, eps: 3000,
			lines: []string{"epoch 0: 3 of 8 minibatches (30 seeds, 300 edges) in 0.300 s, 100.000 ms/batch (assembly 0.100 s; assembly alone 3e+03 edges/s); sampled in 1.000 s before its first minibatch"},
		},
		{
			name: "a graph in the page cache",
			r:    Report{Epoch: 1, Batches: 2, Seeds: 4, Edges: 8, WallS: 0.002, AssembleS: 0.001, SampleS: 0.5, BytesKnown: true, Overlapped: true},
			ms:   1, eps: 8000,
			lines: []string{"epoch 1: 2 minibatches (4 seeds, 8 edges) in 0.002 s, 1.000 ms/batch (assembly 0.001 s; assembly alone 8e+03 edges/s); sampled in 0.500 s in the background during the previous epoch, 0 bytes read at 0.00 GB/s"},
		},
		{
			name: "the samples' memory (a full layer's cost)",
			r:    Report{Epoch: 1, Batches: 2, Seeds: 4, Edges: 8, WallS: 0.002, AssembleS: 0.001, SampleS: 0.5, BytesKnown: true, BytesRead: 5e8, ResultBytes: 123456},
			ms:   1, eps: 8000, gbps: 1,
			lines: []string{"epoch 1: 2 minibatches (4 seeds, 8 edges) in 0.002 s, 1.000 ms/batch (assembly 0.001 s; assembly alone 8e+03 edges/s); sampled in 0.500 s before its first minibatch, 123456 bytes of samples in memory, 500000000 bytes read at 1.00 GB/s"},
		},
		{
			name:  "nothing delivered, not sampled here",
			r:     Report{Epoch: 2, NumBatches: 8},
			lines: []string{"epoch 2: 0 of 8 minibatches (0 seeds, 0 edges) in 0.000 s, 0.000 ms/batch (assembly 0.000 s; assembly alone 0 edges/s); its sampling not timed here"},
		},
	} {
		r := c.r
		r.Finish()
		if r.MsPerBatch != c.ms || r.EdgesPerS != c.eps || r.ReadGBps != c.gbps {
			t.Errorf("%s: %v ms/batch, %v edges/s, %v GB/s; want %v, %v, %v", c.name, r.MsPerBatch, r.EdgesPerS, r.ReadGBps, c.ms, c.eps, c.gbps)
		}
		if f := r.Features; f != nil && (f.RowsPerS != c.rps || f.GBps != c.fgbps) {
			t.Errorf("%s: features %v rows/s, %v GB/s; want %v, %v", c.name, f.RowsPerS, f.GBps, c.rps, c.fgbps)
		}
		lines := r.Lines()
		if len(lines) != len(c.lines) {
			t.Fatalf("%s: %d lines %q, want %d", c.name, len(lines), lines, len(c.lines))
		}
		for i, want := range c.lines {
			if !strings.HasPrefix(lines[i], want) {
				t.Errorf("%s: line %d\n%s\nwant it to start\n%s", c.name, i, lines[i], want)
			}
		}
		if f := r.Features; f != nil && !strings.Contains(lines[1], "the reads alone: 2e+03 rows/s, 0.00 GB/s delivered in 2.000 s; planned in 0.500 s") {
			t.Errorf("%s: features line %q", c.name, lines[1])
		}
		if strings.Contains(strings.Join(lines, " "), "bytes read") != r.BytesKnown {
			t.Errorf("%s: bytes read %d, lines %q", c.name, r.BytesRead, lines)
		}
	}
}

// TestDirectFinishAndLine: rows read outside a plan, rated over their
// reads' time; without rows (no feature store) the line says nothing of
// features.
func TestDirectFinishAndLine(t *testing.T) {
	d := Direct{Batches: 4, Seeds: 130, Edges: 2000, WallS: 0.2, AssembleS: 0.05, SampleS: 0.01, SampleBytes: 999, BytesKnown: true,
		RowBytes: 24, Rows: 1000, Reads: 4, BytesRead: 32768, ReadS: 0.1}
	d.Finish()
	if d.MsPerBatch != 50 || d.RowsPerS != 1e4 || d.GBps != 1000*24/0.1/1e9 {
		t.Fatalf("%+v", d)
	}
	want := "epoch 1, split 0: 4 minibatches (130 seeds, 2000 edges) in 0.200 s, 50.000 ms/batch (assembly 0.050 s (sampling 0.010 s of it, 999 bytes read), feature rows and labels 0.100 s); features read directly: 1000 rows, 4 reads of 32768 bytes in all; the reads alone: 1e+04 rows/s, 0.00 GB/s delivered in 0.100 s"
	if got := d.Line("epoch 1, split 0"); got != want {
		t.Fatalf("\n%s\nwant\n%s", got, want)
	}
	plain := Direct{Batches: 1, Seeds: 5, Edges: 20, AssembleS: 0.001}
	plain.Finish()
	if got := plain.Line("epoch 0, sample requests"); strings.Contains(got, "feature") || plain.RowsPerS != 0 || plain.GBps != 0 {
		t.Fatalf("%q %+v", got, plain)
	}
}

// TestSpans: the union of intervals counts overlapping time once, in
// whatever order the intervals come, and not the gaps between them.
func TestSpans(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name  string
		spans [][2]int // ms from t0
		want  float64  // seconds
	}{
		{"none", nil, 0},
		{"empty ones", [][2]int{{5, 5}, {7, 3}}, 0},
		{"disjoint", [][2]int{{0, 10}, {20, 30}}, 0.020},
		{"overlapping, out of order", [][2]int{{20, 40}, {0, 10}, {5, 25}, {30, 35}}, 0.040},
		{"nested", [][2]int{{0, 100}, {10, 20}, {50, 60}}, 0.100},
		{"touching", [][2]int{{0, 10}, {10, 20}}, 0.020},
	} {
		var u Spans
		for _, s := range c.spans {
			u.Add(at(s[0]), at(s[1]))
		}
		if got := u.Seconds(); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v s, want %v", c.name, got, c.want)
		}
	}
	// Many: 1000 workers' intervals of 2 ms every 1 ms, then a gap: the
	// union is the covered stretch, and adding more later goes on from it.
	var u Spans
	for i := range 1000 {
		u.Add(at(i), at(i+2))
	}
	if got := u.Seconds(); math.Abs(got-1.001) > 1e-9 {
		t.Fatalf("%v s, want 1.001", got)
	}
	u.Add(at(2000), at(2500))
	if got := u.Seconds(); math.Abs(got-1.501) > 1e-9 {
		t.Fatalf("%v s, want 1.501", got)
	}
}
