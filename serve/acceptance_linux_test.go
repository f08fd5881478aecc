//go:build linux

package serve

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/walk"
)

// latencies collects request latencies.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) time(f func() error) error {
	t0 := time.Now()
	err := f()
	l.mu.Lock()
	l.d = append(l.d, time.Since(t0))
	l.mu.Unlock()
	return err
}

// summary returns the count, median, 99th percentile and maximum.
func (l *latencies) summary() (n int, p50, p99, worst time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := slices.Clone(l.d)
	slices.Sort(d)
	if len(d) == 0 {
		return 0, 0, 0, 0
	}
	return len(d), d[len(d)/2], d[len(d)*99/100], d[len(d)-1]
}

// TestAbuseBounded is issue 22's acceptance test: every abuse of the
// reliability trial at once, against a 16 MiB budget, while well-behaved
// clients train (epoch_info, next_batch, advance) and walk. The abuse: a
// long walk whose client disconnects (item 7); five connections that
// never read, eight 1.1 MB walks each (items 8, 9); a shared-rows client
// that never frees a lease, sampling on (item 10); a client registering
// splits of every node until refused (item 11). The server's accounted
// bytes stay within --max-inflight and the control pool, the well-behaved
// clients' latencies stay bounded (logged beside their latencies alone),
// and once everyone has gone nothing is left: no bytes accounted, no
// memory file, no socket file. The process's RSS growth under the abuse
// is logged, and bounded loosely outside the race detector (the
// collector's slack: bytes given back are garbage until it runs); what is
// live on the heap, sampled three times, stays within the budget and the
// direct feature reads' buffers (MaxDirectReads × DirectReadBuffers).
//
// The figures of docs/PERFORMANCE.md ("Abuse", 2025) come from
//
//	go test ./serve -run TestAbuseBounded -count=1 -v
func TestAbuseBounded(t *testing.T) {
	const (
		budgetSize = 16 << 20
		stall      = 200 * time.Millisecond
		duration   = 3 * time.Second
	)
	g := randomCSR(3000, 6, 9)
	fs := featureGraph(t, g, 16, featstore.Float32)
	b := newLockedBackend(g, time.Millisecond)
	dir := t.TempDir()
	s := newTestServer(t, Config{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 2), Fanouts: []int{5, 3}, Seed: 4},
			BatchSize: 32, Features: &pipeline.FeaturePlanning{CacheRows: 200}},
		Sampler: b, Walk: b, NumNodes: 3000, Features: fs,
		MaxRequest: 256 << 10, MaxInflight: budgetSize, StallTimeout: stall,
	})
	path := filepath.Join(dir, "s.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	filesBefore := rowFiles(t)

	// The well-behaved clients alone first: the baseline (which also
	// brings the feature reads and the epochs to their steady memory).
	bctx, bcancel := context.WithTimeout(context.Background(), duration/3)
	defer bcancel()
	baseInfo, baseBatch, baseWalks, _ := wellBehaved(bctx, t, path, fs)
	baseLive := liveHeap()

	before := rss(t)
	var peakRSS, peakHeap, peakGoal atomic.Int64
	// The heap's objects (live and not yet collected) and the collector's
	// goal: read without stopping the world, unlike runtime.ReadMemStats.
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		for {
			peakRSS.Store(max(peakRSS.Load(), rss(t)))
			metrics.Read(heap)
			peakHeap.Store(max(peakHeap.Load(), int64(heap[0].Value.Uint64())))
			peakGoal.Store(max(peakGoal.Load(), int64(heap[1].Value.Uint64())))
			select {
			case <-stopRSS:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var abuse sync.WaitGroup
	// Item 7: a 4 s walk, then gone.
	gone := rawConn(t, path)
	gone.Write(walksFrame(1, []uint32{7}, walk.Config{Length: 4000, WalksPerNode: 1}))
	waitFor(t, "the long walk to start", func() bool { return slices.Contains(b.events(), "w7") })
	gone.Close()
	// Items 8 and 9: five connections, eight 1.1 MB walks each, never read;
	// each comes back after a while (a new connection, eight more walks).
	for c := range 5 {
		abuse.Add(1)
		go func() {
			defer abuse.Done()
			for ctx.Err() == nil {
				nc := rawConn(t, path)
				for i := range 8 {
					nc.Write(walksFrame(uint32(c*8+i), startsUpTo(100), walk.Config{Length: 10, WalksPerNode: 250, Seed: 3}))
				}
				select {
				case <-ctx.Done():
				case <-time.After(4 * stall):
				}
				nc.Close()
			}
		}()
	}
	// Item 10: shared rows, never freed (plain reads: the descriptors are
	// dropped), one sample after another.
	abuse.Add(1)
	go func() {
		defer abuse.Done()
		nc := rawConn(t, path)
		nc.Write(AppendFrame(nil, OpMapRows, StatusOK, 1, nil))
		for i := uint32(0); ctx.Err() == nil; i++ {
			seeds := []uint32{2 * (i % 1500), 2 * ((i + 7) % 1500)}
			nc.Write(AppendFrame(nil, OpSample, StatusOK, i, AppendSampleRequest(nil, CurrentEpoch, seeds, DefaultSemantics)))
			if _, _, err := ReadFrame(nc, MaxReply, nil); err != nil {
				return
			}
		}
	}()
	// Item 11: splits of every node, each new, until refused.
	var splits atomic.Int32
	abuse.Add(1)
	go func() {
		defer abuse.Done()
		c := dial(t, path)
		for i := 1; ctx.Err() == nil && i < 3000; i++ {
			nodes := startsUpTo(3000)
			nodes[0], nodes[i] = nodes[i], nodes[0]
			if _, err := c.Split(nodes, 64); err != nil {
				return
			}
			splits.Add(1)
		}
	}()

	// Three times during the abuse, what is live on the heap is what the
	// server accounts: nothing it holds escapes the budget.
	abuse.Add(1)
	go func() {
		defer abuse.Done()
		for range 3 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(duration / 4):
			}
			live := liveHeap()
			held, _ := s.Inflight()
			t.Logf("during the abuse: %d MiB live on the heap (%d MiB before it), %d MiB accounted", live>>20, baseLive>>20, held>>20)
			// Besides: one direct feature read's buffers (the shared-rows
			// client reads one at a time; MaxDirectReads bounds them), and
			// the planned reads' of the trainers' epoch (as large, held
			// whatever the clients, but maybe not open when baseLive was
			// taken).
			if live > baseLive+max(held, budgetSize)+2*DirectReadBuffers+4<<20 {
				t.Errorf("%d MiB live, more than the budget, two feature readers' buffers, the %d MiB live before the abuse and 4 MiB", live>>20, baseLive>>20)
			}
		}
	}()
	info, batch, walks, served := wellBehaved(ctx, t, path, fs)
	abuse.Wait()
	close(stopRSS)
	<-rssDone

	_, peak := s.Inflight()
	_, ctlPeak := s.ControlInflight()
	t.Logf("budget %d MiB: accounted peak %d bytes (%.1f MiB), control pool peak %d bytes; %d splits registered before refusal", budgetSize>>20, peak, float64(peak)/(1<<20), ctlPeak, splits.Load())
	growth := peakRSS.Load() - before
	t.Logf("RSS %d MiB → peak %d MiB: grew %d MiB; heap objects peak %d MiB, the collector's goal peak %d MiB", before>>20, peakRSS.Load()>>20, growth>>20, peakHeap.Load()>>20, peakGoal.Load()>>20)
	for _, l := range []struct {
		name    string
		l, base *latencies
		limit   time.Duration
	}{
		{"epoch_info", info, baseInfo, time.Second},
		{"next_batch", batch, baseBatch, 10*stall + 2*time.Second},
		{"walks (10 starts × 2, length 5)", walks, baseWalks, 10*stall + 2*time.Second},
	} {
		bn, b50, b99, bworst := l.base.summary()
		n, p50, p99, worst := l.l.summary()
		r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
		t.Logf("%s: alone %d requests, median %v, p99 %v, max %v; under abuse %d requests, median %v, p99 %v, max %v", l.name, bn, r(b50), r(b99), r(bworst), n, r(p50), r(p99), r(worst))
		if n == 0 || worst > l.limit {
			t.Errorf("%s: %d requests, the slowest %v, want under %v", l.name, n, worst, l.limit)
		}
	}
	if served < 10 {
		t.Errorf("%d minibatches served to the well-behaved trainers in %v", served, duration)
	}
	if peak > budgetSize || ctlPeak > ControlBudget {
		t.Errorf("accounted bytes peaked at %d (control pool %d), over --max-inflight %d (%d)", peak, ctlPeak, budgetSize, ControlBudget)
	}
	if raceEnabled {
		t.Logf("RSS growth not checked under the race detector")
	} else if limit := int64(4*(budgetSize+ControlBudget) + 16<<20); growth > limit {
		// Bytes given back to the budget are garbage until the next
		// collection, which GOGC=100 lets come at twice the live heap,
		// and what is allocated while the collector marks counts as live:
		// at this churn (a 1.1 MB reply every few milliseconds) its goal
		// reaches 4 to 6 times the budget.
		t.Errorf("RSS grew %d MiB, want under %d MiB (four times the budget and the control pool, for the collector's slack, and 16 MiB)", growth>>20, limit>>20)
	}

	// Everyone leaves: the splits are dropped, the connections closed.
	c := dial(t, path)
	for id := range uint32(splits.Load()) {
		if err := c.DropSplit(id); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if now, _ := s.Inflight(); now != 0 {
		t.Errorf("%d bytes still accounted after everyone left", now)
	}
	if n := rowFiles(t); n != filesBefore {
		t.Errorf("%d shared-rows memory files left open", n-filesBefore)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("left in the socket's directory: %v %v", ents, err)
	}
}

// wellBehaved runs two trainers (epoch_info, next_batch, advance at each
// epoch's end; every minibatch's rows checked) and a client that walks,
// until ctx ends, timing their requests.
func wellBehaved(ctx context.Context, t *testing.T, path string, fs *featstore.Store) (info, batch, walks *latencies, served int32) {
	info, batch, walks = &latencies{}, &latencies{}, &latencies{}
	var n atomic.Int32
	var good sync.WaitGroup
	for range 2 {
		good.Add(1)
		go func() {
			defer good.Done()
			c := dial(t, path)
			for ctx.Err() == nil {
				if err := info.time(func() error { _, err := c.EpochInfo(); return err }); err != nil {
					t.Error(err)
					return
				}
				var mb Minibatch
				if err := batch.time(func() (err error) { mb, err = c.NextBatch(CurrentEpoch); return err }); err != nil {
					t.Error(err)
					return
				}
				if mb.End {
					if _, err := c.Advance(mb.Epoch); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				checkFeatures(t, fs, mb.Blocks, mb.Features)
				n.Add(1)
			}
		}()
	}
	good.Add(1)
	go func() {
		defer good.Done()
		c := dial(t, path)
		for ctx.Err() == nil {
			if err := walks.time(func() error {
				_, _, err := c.Walks(startsUpTo(10), walk.Config{Length: 5, WalksPerNode: 2})
				return err
			}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	good.Wait()
	return info, batch, walks, n.Load()
}

// liveHeap is the heap's live bytes, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
