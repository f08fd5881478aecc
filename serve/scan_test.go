package serve

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// bruteScan is minibatch [a, b) of a full scan written from PyG's
// semantics directly on the CSR (fullscan's own tests check the pass at
// length; this checks what travels): the seeds, then each seed's
// neighbors in CSR order, new ones appended; an edge per stored neighbor.
func bruteScan(g *host.CSR, a, b uint32) *epoch.Blocks {
	h := epoch.Hop{}
	pos := map[uint32]int32{}
	for v := a; v < b; v++ {
		pos[v] = int32(len(h.Src))
		h.Src = append(h.Src, v)
	}
	h.Dst = slices.Clone(h.Src)
	for v := a; v < b; v++ {
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			u := g.Indices[p]
			l, ok := pos[u]
			if !ok {
				l = int32(len(h.Src))
				pos[u] = l
				h.Src = append(h.Src, u)
			}
			h.EdgeSrc = append(h.EdgeSrc, l)
			h.EdgeDst = append(h.EdgeDst, int32(v-a))
			h.EdgeIDs = append(h.EdgeIDs, int64(p))
		}
	}
	return &epoch.Blocks{Seeds: h.Dst, Hops: []epoch.Hop{h}}
}

// scanServer serves g (with a feature store) and says where its graph is.
func scanServer(t *testing.T, n int) (*host.CSR, *featstore.Store, string, *Client) {
	t.Helper()
	g := randomCSR(n, 8, 21)
	fs := featureGraph(t, g, 6, featstore.Float32)
	dir := filepath.Dir(fs.FeaturesPath())
	cfg := Config{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(n, 4), Fanouts: []int{3}, Seed: 2},
			BatchSize: 50, Epochs: 1, Features: &pipeline.FeaturePlanning{CacheRows: 100}},
		Sampler: &refSampler{g: g}, NumNodes: int64(n), Features: fs, Graph: dir,
	}
	s := newTestServer(t, cfg)
	return g, fs, dir, dial(t, serveUnix(t, s))
}

func code(err error) uint16 {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// TestScanServesEveryNode: a scan's minibatches, asked for in any order
// within the window, are the brute-force pass's (seeds, n_id, edges, edge
// ids, semantics) with exactly the store's rows of n_id and the seeds'
// labels; each once; the end marker at and past the end; errors for the
// rest.
func TestScanServesEveryNode(t *testing.T) {
	const n = 1500
	g, fs, _, cl := scanServer(t, n)
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		info, err := cl.Scan(ScanRequest{BatchSize: 100, Flags: ScanRows | ScanEdgeIDs, Semantics: sem})
		if err != nil {
			t.Fatal(err)
		}
		if info.NumBatches != 15 || info.NumNodes != n || info.NumEdges != uint64(len(g.Indices)) || info.Features == nil ||
			info.Features.Dim != 6 || !info.Features.Labels || !info.Resident {
			t.Fatalf("scan info %+v", info)
		}
		order := []uint32{2, 0, 1}
		for i := uint32(3); i < 15; i++ {
			order = append(order, i)
		}
		for _, i := range order {
			b, err := cl.ScanBatch(info.Scan, i)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteScan(g, i*100, min(i*100+100, n))
			want.Semantics = sem
			if b.End || b.Index != int(i) || !sameBlocks(b.Blocks, want) {
				t.Fatalf("%v minibatch %d (end %v, index %d) differs from the brute-force pass", sem, i, b.End, b.Index)
			}
			checkFeatures(t, fs, b.Blocks, b.Features)
		}
		if _, err := cl.ScanBatch(info.Scan, 1); code(err) != CodeBadRequest {
			t.Fatalf("minibatch 1 again: %v, want bad request", err)
		}
		if b, err := cl.ScanBatch(info.Scan, 15); err != nil || !b.End {
			t.Fatalf("past the last: %+v, %v; want the end marker", b, err)
		}
		if b, err := cl.ScanBatch(info.Scan, 99); err != nil || !b.End {
			t.Fatalf("far past the last: %+v, %v; want the end marker", b, err)
		}
		if err := cl.DropScan(info.Scan); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.ScanBatch(info.Scan, 0); code(err) != CodeUnknownScan {
			t.Fatalf("a dropped scan: %v, want unknown scan", err)
		}
	}
	// Without rows or edge ids: blocks alone.
	info, err := cl.Scan(ScanRequest{BatchSize: 700, Semantics: epoch.PyG})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cl.ScanBatch(info.Scan, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := bruteScan(g, 700, 1400)
	want.Semantics, want.Hops[0].EdgeIDs = epoch.PyG, nil
	if b.Features != nil || !sameBlocks(b.Blocks, want) {
		t.Fatal("a scan without rows or edge ids: the minibatch differs")
	}
	small, err := cl.Scan(ScanRequest{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ScanBatch(small.Scan, scanAhead); code(err) != CodeBadRequest {
		t.Fatalf("%d ahead: %v, want bad request", scanAhead, err)
	}
	if _, err := cl.ScanBatch(small.Scan, scanAhead-1); err != nil {
		t.Fatalf("%d ahead: %v", scanAhead-1, err)
	}
	if err := cl.DropScan(small.Scan); err != nil {
		t.Fatal(err)
	}
	if err := cl.DropScan(info.Scan); err != nil {
		t.Fatal(err)
	}
	if err := cl.DropScan(info.Scan); code(err) != CodeUnknownScan {
		t.Fatalf("dropped twice: %v", err)
	}
}

// TestScanLayerStore: a scan reads its rows from another feature store of
// the same graph named by its absolute path (a layer's outputs, in a
// directory linking the graph's files); a relative path, a store of
// another graph, bad flags and too many scans are refused, and the
// connection stays usable.
func TestScanLayerStore(t *testing.T) {
	const n = 800
	_, _, dir, cl := scanServer(t, n)
	layer := filepath.Join(t.TempDir(), "layer-1")
	if err := os.Mkdir(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{chunkfmt.ManifestFile, chunkfmt.IndexFile, chunkfmt.ChunksFile} {
		if err := os.Symlink(filepath.Join(dir, f), filepath.Join(layer, f)); err != nil {
			t.Fatal(err)
		}
	}
	ls := featstoretest.Open(t, layer, featstore.Float16, 3, 0, 11)
	info, err := cl.Scan(ScanRequest{BatchSize: 64, Flags: ScanRows, Semantics: epoch.PyG, Store: layer})
	if err != nil {
		t.Fatal(err)
	}
	if info.Features == nil || info.Features.DType != "float16" || info.Features.Labels {
		t.Fatalf("scan info %+v", info)
	}
	for i := uint32(0); i < uint32(info.NumBatches); i++ {
		b, err := cl.ScanBatch(info.Scan, i)
		if err != nil {
			t.Fatal(err)
		}
		nodes := b.Blocks.Hops[0].Src
		want := make([]byte, int64(len(nodes))*ls.RowBytes())
		if err := ls.ReadRows(nodes, want); err != nil {
			t.Fatal(err)
		}
		if b.Features == nil || string(b.Features.X) != string(want) || b.Features.Y != nil || b.Features.DType != DtypeF16 {
			t.Fatalf("minibatch %d: rows differ from the layer store's", i)
		}
	}
	other := filepath.Dir(featureGraph(t, randomCSR(n, 8, 99), 3, featstore.Float32).FeaturesPath())
	for _, r := range []ScanRequest{
		{BatchSize: 64, Flags: ScanRows, Store: "layer-1"},
		{BatchSize: 64, Flags: ScanRows, Store: other},
		{BatchSize: 64, Flags: ScanRows, Store: filepath.Join(t.TempDir(), "none")},
	} {
		if _, err := cl.Scan(r); code(err) != CodeBadRequest {
			t.Errorf("scan %+v: %v, want bad request", r, err)
		}
	}
	if _, err := cl.Scan(ScanRequest{BatchSize: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Scan(ScanRequest{BatchSize: 64}); code(err) != CodeOverBudget {
		t.Fatalf("a third scan on one connection: %v, want over budget", err)
	}
	// Malformed payloads.
	for _, p := range [][]byte{
		{1, 0, 0},                      // short
		{0, 0, 0, 0, 0, 0},             // batch size 0
		{1, 0, 0, 0, 0x80, 0},          // unknown flag
		{1, 0, 0, 0, 0, 7},             // semantics
		{1, 0, 0, 0, 0, 0, 0xff, 0xfe}, // path not UTF-8
	} {
		if _, err := DecodeScanRequest(p); !errors.Is(err, ErrMalformed) {
			t.Errorf("payload %v: %v, want ErrMalformed", p, err)
		}
	}
	if _, err := cl.EpochInfo(); err != nil {
		t.Fatalf("the connection after refusals: %v", err)
	}
}

// TestScanRequestRoundTrip: every request encodes and decodes to itself.
func TestScanRequestRoundTrip(t *testing.T) {
	for _, r := range []ScanRequest{
		{BatchSize: 1, Semantics: DefaultSemantics},
		{BatchSize: 4096, Flags: ScanRows | ScanEdgeIDs, Semantics: epoch.PyG, Store: "/tmp/layer-1"},
		{BatchSize: 7, Flags: ScanEdgeIDs, Semantics: epoch.DGL, Store: "/ünïcode"},
	} {
		got, err := DecodeScanRequest(AppendScanRequest(nil, r))
		if err != nil || got != r {
			t.Errorf("%+v: decoded %+v, %v", r, got, err)
		}
	}
	s, i, err := DecodeScanBatchRequest(AppendScanBatchRequest(nil, 3, 9))
	if err != nil || s != 3 || i != 9 {
		t.Errorf("scan_batch: %d %d %v", s, i, err)
	}
	if d, err := DecodeDropScanRequest(AppendDropScanRequest(nil, 5)); err != nil || d != 5 {
		t.Errorf("drop_scan: %d %v", d, err)
	}
}

// FuzzDecodeScanRequest feeds arbitrary payloads to the scan request
// decoder: none may panic, every error wraps ErrMalformed, and whatever
// decodes re-encodes to the same bytes; scan_batch and drop_scan's
// decoders too.
func FuzzDecodeScanRequest(f *testing.F) {
	f.Add(AppendScanRequest(nil, ScanRequest{BatchSize: 4096, Flags: ScanRows | ScanEdgeIDs, Semantics: epoch.PyG}))
	f.Add(AppendScanRequest(nil, ScanRequest{BatchSize: 1, Semantics: DefaultSemantics, Store: "/data/layer-1"}))
	f.Add([]byte{1, 0, 0, 0, 4, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := DecodeScanRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		} else if re := AppendScanRequest(nil, r); string(re) != string(p) {
			t.Fatalf("scan request re-encodes differently")
		}
		if s, i, err := DecodeScanBatchRequest(p); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("scan_batch error %v does not wrap ErrMalformed", err)
			}
		} else if string(AppendScanBatchRequest(nil, s, i)) != string(p) {
			t.Fatalf("scan_batch request re-encodes differently")
		}
		if s, err := DecodeDropScanRequest(p); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("drop_scan error %v does not wrap ErrMalformed", err)
			}
		} else if string(AppendDropScanRequest(nil, s)) != string(p) {
			t.Fatalf("drop_scan request re-encodes differently")
		}
	})
}

// TestScanDropWhileInFlight: a drop_scan pipelined behind scan_batch
// requests of the same scan (their handlers running concurrently) closes
// the scan once they are done: every scan_batch is answered with its
// minibatch or unknown scan, the drop with ok, nothing panics (run with
// -race), and the scan's slot is free again.
func TestScanDropWhileInFlight(t *testing.T) {
	g := randomCSR(3000, 8, 23)
	fs := featureGraph(t, g, 4, featstore.Float32)
	cfg := Config{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 4), Fanouts: []int{3}, Seed: 2},
			BatchSize: 50, Epochs: 1, Features: &pipeline.FeaturePlanning{CacheRows: 100}},
		Sampler: &refSampler{g: g}, NumNodes: 3000, Features: fs, Graph: filepath.Dir(fs.FeaturesPath()),
	}
	s := newTestServer(t, cfg)
	path := serveUnix(t, s)
	for round := 0; round < 8; round++ {
		cl := dial(t, path)
		if _, err := cl.Scan(ScanRequest{BatchSize: 40, Flags: ScanRows | ScanEdgeIDs}); err != nil {
			t.Fatal(err)
		}
		cl.Close() // the scan was that connection's: it closes with it
		nc := rawConn(t, path)
		req := func(op uint8, id uint32, p []byte) {
			if _, err := nc.Write(AppendFrame(nil, op, StatusOK, id, p)); err != nil {
				t.Fatal(err)
			}
		}
		req(OpScan, 1, AppendScanRequest(nil, ScanRequest{BatchSize: 40, Flags: ScanRows | ScanEdgeIDs}))
		f, _, err := ReadFrame(nc, MaxReply, nil)
		if err != nil || f.Status != StatusOK {
			t.Fatalf("scan: %+v %v", f, err)
		}
		const n = 6
		for i := uint32(0); i < n; i++ {
			req(OpScanBatch, 10+i, AppendScanBatchRequest(nil, 1, i))
		}
		req(OpDropScan, 99, AppendDropScanRequest(nil, 1))
		for range n + 1 {
			f, _, err := ReadFrame(nc, MaxReply, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case f.ID == 99 && f.Status == StatusOK:
			case f.Op == OpScanBatch && f.Status == StatusOK:
			case f.Op == OpScanBatch && f.Status == StatusError && DecodeError(f.Payload).Code == CodeUnknownScan:
			default:
				t.Fatalf("reply op %d id %d status %d: %v", f.Op, f.ID, f.Status, DecodeError(f.Payload))
			}
		}
		nc.Close()
	}
	// Every scan was closed: the server's slots are all free.
	deadline := time.Now().Add(5 * time.Second)
	for s.scanCount.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d scans still open", s.scanCount.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
