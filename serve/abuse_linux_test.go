//go:build linux

package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/pipeline"
)

// rowFiles counts this process's descriptors of shared-rows memory files.
func rowFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(target, "memfd:streamsampler-rows") {
			n++
		}
	}
	return n
}

// TestSharedRowLeasesBounded (issue 22, item 10): a shared-rows client
// that never frees its leases had the server map a new 2 MiB memory file,
// and keep a descriptor, for every minibatch, without limit. Now a
// connection's pool holds at most MaxRowBuffers buffers, charged to the
// budget (the buffers of all connections to a quarter of it); past that,
// the rows travel in the replies, still exactly the store's; and the
// connection's end gives back every buffer and its bytes.
func TestSharedRowLeasesBounded(t *testing.T) {
	g := randomCSR(3000, 6, 9)
	fs := featureGraph(t, g, 5, featstore.Float32)
	for _, tc := range []struct {
		budget   int64
		wantBufs int
	}{
		{0, MaxRowBuffers}, // 256 MiB: the count binds
		{16 << 20, 1},      // a quarter is 4 MiB: one 2 MiB buffer (and its lease page)
	} {
		cfg := Config{
			Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 2), Fanouts: []int{3, 2}, Seed: 4},
				BatchSize: 29, Epochs: 1, Features: &pipeline.FeaturePlanning{CacheRows: 100}},
			Sampler: &refSampler{g: g}, NumNodes: 3000, Features: fs, MaxInflight: tc.budget, MaxRequest: 1 << 20,
		}
		s := newTestServer(t, cfg)
		before := rowFiles(t)
		nc := rawConn(t, serveUnix(t, s))
		nc.Write(AppendFrame(nil, OpMapRows, StatusOK, 1, nil))
		if f, _, err := ReadFrame(nc, MaxReply, nil); err != nil || f.Status != StatusOK {
			t.Fatalf("map_rows: %+v %v", f, err)
		}
		// Plain reads: the kernel drops the descriptors that come along,
		// and the client never frees a lease.
		shared, inline := 0, 0
		for i := range 40 {
			nc.Write(AppendFrame(nil, OpNextBatch, StatusOK, uint32(i), AppendEpochRequest(nil, 0)))
			f, _, err := ReadFrame(nc, MaxReply, nil)
			if err != nil || f.Status != StatusOK {
				t.Fatalf("next_batch %d: %+v %v", i, f, err)
			}
			b, _, feat, err := decodeBatch(f.Payload, func(s SharedRows, n int) ([]byte, error) { return nil, nil })
			if err != nil {
				t.Fatal(err)
			}
			if feat.Shared != nil {
				shared++
				continue
			}
			inline++
			checkFeatures(t, fs, b, feat)
		}
		files := rowFiles(t) - before
		now, peak := s.Inflight()
		t.Logf("budget %d: %d replies with shared rows, %d with their rows inline; %d memory files; in flight %d, peak %d", s.budget.size, shared, inline, files, now, peak)
		if shared != tc.wantBufs || files != tc.wantBufs {
			t.Errorf("%d shared replies and %d memory files for a client that frees nothing, want %d", shared, files, tc.wantBufs)
		}
		if peak > s.budget.size {
			t.Errorf("accounted bytes peaked at %d, over the budget %d", peak, s.budget.size)
		}
		if held := s.rowsHeld.Load(); held > s.budget.size/maxRowsShare || held < int64(files)*(2<<20) {
			t.Errorf("shared-rows buffers account for %d bytes (%d files)", held, files)
		}
		nc.Close()
		waitFor(t, "the connection's buffers to be dropped", func() bool {
			now, _ := s.Inflight()
			return rowFiles(t) == before && s.rowsHeld.Load() == 0 && now == 0
		})
	}
}
