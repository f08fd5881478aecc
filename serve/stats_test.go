package serve

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochstats"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
)

// logLines collects a server's log lines (Config.Logf).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")))
}

// starting returns the lines that start with prefix.
func (l *logLines) starting(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// delivered is what a client received of an epoch.
type delivered struct {
	batches, seeds, nid, labels int
	edges                       int64
}

func (d *delivered) add(b *epoch.Blocks, f *Features) {
	d.batches++
	d.seeds += len(b.Seeds)
	d.edges += int64(b.NumEdges())
	d.nid += len(b.Nodes())
	if f != nil {
		d.labels += len(f.Y)
	}
}

// TestServeEpochStats: the figures a server logs and answers in
// epoch_info (stats, previous_stats) are what its clients received: the
// minibatches, seeds, edges and n_id rows of every epoch, the feature
// rows from the cache and from disk (all from disk, row_bytes each,
// without a cache), the split's and the sample requests' rows read
// directly, the minibatches of the other semantics; each epoch's lines
// are logged once, the training line when its last minibatch is handed
// out, and ms/batch is over the wall that holds the feature reads.
func TestServeEpochStats(t *testing.T) {
	g := randomCSR(2500, 8, 11)
	fs := featureGraph(t, g, 6, featstore.Float32)
	const sampleBytes = 12345
	for _, c := range []struct {
		name      string
		features  bool
		cacheRows int
		clients   int
		other     bool // every third training minibatch of the other semantics
	}{
		{"no features", false, 0, 2, false},
		{"features, no cache", true, 0, 1, false},
		{"features, no cache, 3 clients", true, 0, 3, false},
		{"features, cache", true, 400, 2, false},
		{"features, other semantics", true, 400, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logLines
			cfg := Config{
				Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2500, 3), Fanouts: []int{4, 3}, Seed: 5},
					BatchSize: 45, Epochs: 2, PrepareAt: 0.5, Logf: logs.logf},
				Sampler: &refSampler{g: g}, NumNodes: 2500,
				SampleBytes: func() int64 { return sampleBytes }, GraphBytes: 2 * sampleBytes,
			}
			if c.features {
				cfg.Features = fs
				cfg.Config.Features = &pipeline.FeaturePlanning{CacheRows: c.cacheRows}
			}
			s := newTestServer(t, cfg)
			path := serveUnix(t, s)
			control := dial(t, path)
			info, err := control.EpochInfo()
			if err != nil {
				t.Fatal(err)
			}
			nb := info.NumBatches
			if st := info.Stats; st == nil || st.Epoch != 0 || st.Batches != 0 || st.NumBatches != nb || st.Complete || info.PreviousStats != nil {
				t.Fatalf("epoch_info before any minibatch: stats %+v, previous %+v", info.Stats, info.PreviousStats)
			}

			var got [2]delivered
			var other [2]delivered
			for e := range uint32(2) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range c.clients {
					cl := dial(t, path)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; ; i++ {
							sem := DefaultSemantics
							if c.other && i%3 == 1 {
								sem = epoch.PyG
							}
							b, err := cl.NextBatchAs(e, sem)
							if err != nil {
								t.Error(err)
								return
							}
							if b.End {
								return
							}
							mu.Lock()
							got[e].add(b.Blocks, b.Features)
							if sem != DefaultSemantics {
								other[e].add(b.Blocks, b.Features)
							}
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				if t.Failed() {
					return
				}
				// The training line is logged when the last minibatch is
				// handed out: before the epoch is left.
				if n := len(logs.starting(fmt.Sprintf("epoch %d: ", e))); n != 1 {
					t.Fatalf("epoch %d: %d training lines logged once its minibatches are out, want 1:\n%s", e, n, strings.Join(logs.lines, "\n"))
				}
				if e == 0 {
					// Evaluation in epoch 0, before it is left: a split
					// and a sample request.
					nodes := make([]uint32, 0, 130)
					for v := uint32(1); len(nodes) < 130; v += 7 {
						nodes = append(nodes, v)
					}
					sp, err := control.Split(nodes, 40)
					if err != nil {
						t.Fatal(err)
					}
					var split delivered
					for i := uint32(0); ; i++ {
						b, err := control.SplitBatch(sp.Split, i, DefaultSemantics)
						if err != nil {
							t.Fatal(err)
						}
						if b.End {
							break
						}
						split.add(b.Blocks, b.Features)
					}
					b, f, err := control.SampleFeatures(0, cfg.Train[:20])
					if err != nil {
						t.Fatal(err)
					}
					var sample delivered
					sample.add(b, f)
					if n := len(logs.starting("epoch 0, split")); n != 0 {
						t.Fatalf("split lines logged before the epoch is left: %d", n)
					}
					info, err := control.Advance(0)
					if err != nil {
						t.Fatal(err)
					}
					prev := info.PreviousStats
					if prev == nil || prev.Epoch != 0 || len(prev.Splits) != 1 || prev.Samples == nil {
						t.Fatalf("advance's previous_stats %+v", prev)
					}
					checkDirect(t, "split", &prev.Splits[0].Direct, split, c.features, fs.RowBytes())
					checkDirect(t, "sample", prev.Samples, sample, c.features, fs.RowBytes())
					if prev.Splits[0].Split != sp.Split || prev.Splits[0].SampleS <= 0 || prev.Splits[0].SampleBytes != sampleBytes {
						t.Fatalf("split figures %+v", prev.Splits[0])
					}
					for _, what := range []string{"split 0", "sample requests"} {
						want := fmt.Sprintf("epoch 0, %s: %d minibatches", what, map[string]int{"split 0": split.batches, "sample requests": 1}[what])
						if l := logs.starting("epoch 0, " + what); len(l) != 1 || !strings.HasPrefix(l[0], want) {
							t.Fatalf("%s lines %q, want one starting %q", what, l, want)
						}
					}
				}
			}
			info, err = control.EpochInfo()
			if err != nil {
				t.Fatal(err)
			}
			if info.Epoch != 1 || info.Stats == nil || info.PreviousStats == nil {
				t.Fatalf("epoch_info at the end: epoch %d, stats %+v, previous %+v", info.Epoch, info.Stats, info.PreviousStats)
			}
			for e, st := range []*EpochStats{info.PreviousStats, info.Stats} {
				d := got[e]
				if int(st.Epoch) != e || !st.Complete || st.Failed != 0 || st.Batches != nb || st.NumBatches != nb || st.Batches != d.batches || st.Seeds != d.seeds || st.Edges != d.edges {
					t.Fatalf("epoch %d: stats %+v, delivered %+v", e, st, d)
				}
				if st.SampleS <= 0 || st.BytesRead != sampleBytes || st.GraphBytes != 2*sampleBytes || st.Overlapped != (e > 0) || st.AssembleS <= 0 || st.EdgesPerS <= 0 {
					t.Fatalf("epoch %d: sampling and assembly figures %+v", e, st.Report)
				}
				// The headline is the wall, which holds assembly and the
				// feature reads.
				if st.WallS <= 0 || math.Abs(st.MsPerBatch-st.WallS*1e3/float64(nb)) > 1e-9 || st.AssembleS > st.WallS {
					t.Fatalf("epoch %d: wall %v s, %v ms/batch, assembly %v s", e, st.WallS, st.MsPerBatch, st.AssembleS)
				}
				f := st.Features
				if !c.features {
					if f != nil || st.OtherSemantics != nil {
						t.Fatalf("epoch %d: feature figures without features: %+v", e, f)
					}
					continue
				}
				rd := f.Reads
				if f.ReadS <= 0 || f.ReadS > st.WallS || f.Labels != int64(d.labels) || rd.RowBytes != fs.RowBytes() || rd.Batches != nb {
					t.Fatalf("epoch %d: features %+v (wall %v s, labels delivered %d)", e, f, st.WallS, d.labels)
				}
				if rd.RowsFromCache+rd.RowsFromDisk != rd.RowsNeeded || rd.Reads <= 0 || rd.BytesRead < rd.RowsFromDisk*rd.RowBytes {
					t.Fatalf("epoch %d: reads %+v", e, rd)
				}
				if math.Abs(f.RowsPerS-float64(rd.RowsNeeded)/f.ReadS) > 1e-6*f.RowsPerS || math.Abs(f.GBps-float64(rd.RowsNeeded*rd.RowBytes)/f.ReadS/1e9) > 1e-9*max(1, f.GBps) {
					t.Fatalf("epoch %d: rates %v rows/s, %v GB/s over %v s of %d rows", e, f.RowsPerS, f.GBps, f.ReadS, rd.RowsNeeded)
				}
				if !c.other {
					// The plan's rows are the n_id the clients received.
					if rd.RowsNeeded != int64(d.nid) {
						t.Fatalf("epoch %d: %d rows needed, the clients received %d", e, rd.RowsNeeded, d.nid)
					}
					if st.OtherSemantics != nil {
						t.Fatalf("epoch %d: other semantics %+v", e, st.OtherSemantics)
					}
				} else {
					o := st.OtherSemantics
					if o == nil || o.Batches != other[e].batches || o.Seeds != other[e].seeds || o.Rows != int64(other[e].nid) || o.ReadS <= 0 || o.BytesRead < o.Rows*o.RowBytes {
						t.Fatalf("epoch %d: other semantics %+v, delivered %+v", e, o, other[e])
					}
				}
				if c.cacheRows == 0 {
					if rd.RowsFromCache != 0 || rd.RowsFromDisk != int64(d.nid) || rd.DiskRowBytes != int64(d.nid)*fs.RowBytes() {
						t.Fatalf("epoch %d without a cache: reads %+v, %d rows received", e, rd, d.nid)
					}
				} else if rd.RowsFromCache == 0 {
					t.Fatalf("epoch %d with a cache of %d rows: no hit %+v", e, c.cacheRows, rd)
				}
			}
			defer func() {
				if t.Failed() {
					t.Log(strings.Join(logs.lines, "\n"))
				}
			}()
			// Shutting down logs nothing twice.
			if err := s.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			for e := range 2 {
				lines := logs.starting(fmt.Sprintf("epoch %d: ", e))
				if len(lines) != 1 {
					t.Fatalf("epoch %d: %d training lines, want 1", e, len(lines))
				}
				want := fmt.Sprintf("epoch %d: %d minibatches (%d seeds, %d edges) in ", e, nb, got[e].seeds, got[e].edges)
				if !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], "ms/batch (assembly ") || !strings.Contains(lines[0], "assembly alone") {
					t.Fatalf("epoch %d: line %q, want it to start %q", e, lines[0], want)
				}
				if c.features != strings.Contains(lines[0], "feature rows and labels") {
					t.Fatalf("epoch %d: line %q", e, lines[0])
				}
			}
			if n := len(logs.starting("features: ")); c.features && n != 2 || !c.features && n != 0 {
				t.Fatalf("%d features lines:\n%s", n, strings.Join(logs.lines, "\n"))
			}
			if n := len(logs.starting("epoch 0, split 0")); n != 1 {
				t.Fatalf("%d split lines after shutdown", n)
			}
		})
	}
}

// checkDirect checks the figures of minibatches read outside the plan
// against what the client received.
func checkDirect(t *testing.T, what string, d *epochstats.Direct, got delivered, features bool, rowBytes int64) {
	t.Helper()
	if d.Batches != got.batches || d.Seeds != got.seeds || d.Edges != got.edges || d.Labels != int64(got.labels) {
		t.Fatalf("%s: %+v; received %+v", what, d, got)
	}
	if d.WallS < 0 || math.Abs(d.MsPerBatch-d.WallS*1e3/float64(d.Batches)) > 1e-9 {
		t.Fatalf("%s: wall %v s, %v ms/batch", what, d.WallS, d.MsPerBatch)
	}
	if !features {
		if d.Rows != 0 || d.Reads != 0 || d.ReadS != 0 {
			t.Fatalf("%s: rows read without features: %+v", what, d)
		}
		return
	}
	if d.Rows != int64(got.nid) || d.RowBytes != rowBytes || d.Reads <= 0 || d.BytesRead < d.Rows*rowBytes || d.ReadS <= 0 || math.Abs(d.RowsPerS-float64(d.Rows)/d.ReadS) > 1e-6*d.RowsPerS {
		t.Fatalf("%s: %+v; received %d rows", what, d, got.nid)
	}
}

// TestServeEpochStatsLeftEarly: an epoch left before its end (advance) is
// logged once, when it is left, with the minibatches handed out of how
// many; one under way at shutdown, at shutdown.
func TestServeEpochStatsLeftEarly(t *testing.T) {
	g := randomCSR(2000, 8, 12)
	var logs logLines
	cfg := Config{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2000, 2), Fanouts: []int{3, 3}, Seed: 5},
			BatchSize: 50, Logf: logs.logf},
		Sampler: &refSampler{g: g}, NumNodes: 2000,
	}
	s := newTestServer(t, cfg)
	cl := dial(t, serveUnix(t, s))
	nb := s.Info().NumBatches
	for _, c := range []struct {
		e     uint32
		take  int
		leave func() error
	}{
		{0, 3, func() error { _, err := cl.Advance(0); return err }},
		{1, 2, func() error { return s.Shutdown(t.Context()) }},
	} {
		var got delivered
		for range c.take {
			b, err := cl.NextBatch(c.e)
			if err != nil || b.End {
				t.Fatal(b.End, err)
			}
			got.add(b.Blocks, b.Features)
		}
		if info, err := cl.EpochInfo(); err != nil || info.Stats == nil || info.Stats.Batches != c.take || info.Stats.Complete {
			t.Fatalf("epoch %d: epoch_info %+v, %v", c.e, info.Stats, err)
		}
		prefix := fmt.Sprintf("epoch %d: ", c.e)
		if l := logs.starting(prefix); len(l) != 0 {
			t.Fatalf("epoch %d logged before it is left: %q", c.e, l)
		}
		if err := c.leave(); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("epoch %d: %d of %d minibatches (%d seeds, %d edges) in ", c.e, c.take, nb, got.seeds, got.edges)
		if l := logs.starting(prefix); len(l) != 1 || !strings.HasPrefix(l[0], want) {
			t.Fatalf("epoch %d left: lines %q, want one starting %q", c.e, l, want)
		}
		if c.e == 0 {
			info, err := cl.EpochInfo()
			if p := info.PreviousStats; err != nil || p == nil || p.Epoch != 0 || p.Batches != c.take || p.NumBatches != nb || p.Complete || p.Seeds != got.seeds {
				t.Fatalf("previous_stats %+v, %v", p, err)
			}
		}
	}
}
