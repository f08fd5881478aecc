package serve

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"golang.org/x/sys/unix"
)

// featureGraph writes g as a graph directory with a feature store of
// random rows (dim elements of dt) and labels, and opens the store.
func featureGraph(t *testing.T, g *host.CSR, dim int, dt featstore.DType) *featstore.Store {
	t.Helper()
	n := uint32(len(g.Indptr) - 1)
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, n, 64<<10, chunkfmt.Options{Symmetrize: true, Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := range n {
		nb, _ := g.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return featstoretest.Open(t, dir, dt, dim, 5, 7)
}

// checkFeatures checks that f holds exactly the store's rows of b's nodes
// (its last hop's src) and its seeds' labels.
func checkFeatures(t *testing.T, fs *featstore.Store, b *epoch.Blocks, f *Features) {
	t.Helper()
	if f == nil {
		t.Fatal("a reply without features")
	}
	nodes := b.Hops[len(b.Hops)-1].Src
	want := make([]byte, int64(len(nodes))*fs.RowBytes())
	if err := fs.ReadRows(nodes, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.X, want) || f.Dim != fs.Dim() || f.DType != featureDTypes[fs.DType()] {
		t.Fatalf("epoch %d: feature rows differ from the store's (dim %d, dtype %d)", b.Epoch, f.Dim, f.DType)
	}
	wy := make([]int32, len(b.Seeds))
	if err := fs.ReadLabels(b.Seeds, wy); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Y, wy) {
		t.Fatalf("epoch %d: labels differ", b.Epoch)
	}
}

// TestServeFeatures: with a feature store, every minibatch that several
// concurrent clients take over two epochs, and every sample reply, carry
// exactly the store's rows of their nodes and their seeds' labels, for
// every dtype; epoch_info describes them; the reply bound covers them; a
// store without planning (or planning without a store) is refused.
func TestServeFeatures(t *testing.T) {
	g := randomCSR(3000, 8, 5)
	for _, c := range []struct {
		dt  featstore.DType
		dim int
	}{{featstore.Float32, 16}, {featstore.Float16, 7}, {featstore.Int8, 33}, {featstore.Uint8, 1}} {
		fs := featureGraph(t, g, c.dim, c.dt)
		// Half the cases have the plans forget their node sets (as the
		// command line's do), so the rows are read with each minibatch's
		// n_id from its blocks.
		var forget int64
		if c.dt == featstore.Float32 || c.dt == featstore.Int8 {
			forget = fs.RowBytes()
		}
		cfg := Config{
			Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 3), Fanouts: []int{4, 3}, Seed: 2},
				BatchSize: 37, Epochs: 2, PrepareAt: 0.5, Features: &pipeline.FeaturePlanning{CacheRows: 300, Reorder: c.dt == featstore.Float16, RowBytes: forget}},
			Sampler: &refSampler{g: g}, NumNodes: 3000, Features: fs,
		}
		s := newTestServer(t, cfg)
		path := serveUnix(t, s)
		info := s.Info()
		if info.Features == nil || info.Features.Dim != c.dim || info.Features.DType != string(c.dt) || !info.Features.Labels {
			t.Fatalf("%s: epoch_info features %+v", c.dt, info.Features)
		}
		var mu sync.Mutex
		seen := map[[2]int]bool{}
		var wg sync.WaitGroup
		for range 3 {
			cl := dial(t, path)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for e := uint32(0); e < 2; e++ {
					for {
						b, err := cl.NextBatch(e)
						if err != nil {
							t.Error(err)
							return
						}
						if b.End {
							break
						}
						checkFeatures(t, fs, b.Blocks, b.Features)
						mu.Lock()
						seen[[2]int{int(b.Epoch), b.Index}] = true
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if want := 2 * epoch.BatchesPerRank(1000, 1, 37); len(seen) != want {
			t.Fatalf("%s: %d minibatches served, want %d", c.dt, len(seen), want)
		}
		cl := dial(t, path)
		b, f, err := cl.SampleFeatures(pipeline.CurrentEpoch, []uint32{6, 3, 2997})
		if err != nil {
			t.Fatal(err)
		}
		checkFeatures(t, fs, b, f)
		if bound, plain := s.replyBound(37), replyBound(37, cfg.Fanouts, cfg.NumNodes, false); bound < plain+fs.RowBytes()*37 {
			t.Fatalf("reply bound %d does not cover the feature rows (plain %d)", bound, plain)
		}
	}
	fs := featureGraph(t, g, 4, featstore.Float32)
	base := pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 3), Fanouts: []int{4}}, BatchSize: 10}
	if _, err := New(Config{Config: base, Sampler: &refSampler{g: g}, Features: fs}); err == nil {
		t.Fatal("a feature store without feature planning accepted")
	}
	base.Features = &pipeline.FeaturePlanning{}
	if _, err := New(Config{Config: base, Sampler: &refSampler{g: g}}); err == nil {
		t.Fatal("feature planning without a store accepted")
	}
	if _, err := New(Config{Config: base, Sampler: &refSampler{g: g}, Features: fs, NumNodes: 2999}); err == nil {
		t.Fatal("a store of another size accepted")
	}
}

// TestServeSharedRows: after map_rows on a Unix socket, minibatch and
// sample replies carry x's header only and pass its rows in a memory file
// (SCM_RIGHTS) holding exactly the store's bytes; map_rows is refused
// without a feature store.
func TestServeSharedRows(t *testing.T) {
	if !sharedRowsSupported {
		t.Skip("no memory files here")
	}
	g := randomCSR(2000, 6, 9)
	fs := featureGraph(t, g, 5, featstore.Float32)
	cfg := Config{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2000, 4), Fanouts: []int{3, 2}, Seed: 4},
			BatchSize: 29, Epochs: 1, Features: &pipeline.FeaturePlanning{CacheRows: 100}},
		Sampler: &refSampler{g: g}, NumNodes: 2000, Features: fs,
	}
	s := newTestServer(t, cfg)
	path := serveUnix(t, s)
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	uc := nc.(*net.UnixConn)
	// roundTrip sends a request and reads its reply, with the descriptor
	// that came along (-1: none).
	roundTrip := func(op uint8, payload []byte) (Frame, int) {
		t.Helper()
		if _, err := nc.Write(AppendFrame(nil, op, StatusOK, 1, payload)); err != nil {
			t.Fatal(err)
		}
		hdr := make([]byte, HeaderSize)
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := uc.ReadMsgUnix(hdr, oob)
		if err != nil || n != HeaderSize {
			t.Fatalf("header: %d bytes, %v", n, err)
		}
		fd := -1
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil || len(msgs) != 1 {
				t.Fatalf("control message: %v", err)
			}
			fds, err := unix.ParseUnixRights(&msgs[0])
			if err != nil || len(fds) != 1 {
				t.Fatalf("rights: %v %v", fds, err)
			}
			fd = fds[0]
		}
		length := binary.LittleEndian.Uint32(hdr)
		body := make([]byte, int(length)-(HeaderSize-4))
		if _, err := io.ReadFull(nc, body); err != nil {
			t.Fatal(err)
		}
		return Frame{Op: hdr[4], Status: hdr[5], Payload: body}, fd
	}
	// The client's side of the shared buffers: each buffer's memory file,
	// kept from the reply that brings it; rows read at the offset named;
	// a buffer released by clearing its lease word.
	files := map[uint32]int{}
	t.Cleanup(func() {
		for _, fd := range files {
			unix.Close(fd)
		}
	})
	readShared := func(fd int) func(s SharedRows, n int) ([]byte, error) {
		return func(s SharedRows, n int) ([]byte, error) {
			if fd >= 0 {
				if _, ok := files[s.Buffer]; ok {
					return nil, fmt.Errorf("buffer %d sent twice", s.Buffer)
				}
				files[s.Buffer] = fd
			}
			bfd, ok := files[s.Buffer]
			if !ok {
				return nil, fmt.Errorf("buffer %d never sent", s.Buffer)
			}
			if s.Retire != NoBuffer {
				if _, ok := files[s.Retire]; !ok {
					return nil, fmt.Errorf("retired buffer %d unknown", s.Retire)
				}
				unix.Close(files[s.Retire])
				delete(files, s.Retire)
			}
			b := make([]byte, n)
			_, err := unix.Pread(bfd, b, int64(s.Offset))
			return b, err
		}
	}
	release := func(s *SharedRows) {
		if _, err := unix.Pwrite(files[s.Buffer], make([]byte, 8), 0); err != nil {
			t.Fatal(err)
		}
	}
	if f, fd := roundTrip(OpMapRows, nil); f.Status != StatusOK || fd != -1 {
		t.Fatalf("map_rows: status %d, fd %d", f.Status, fd)
	}
	batches := 0
	var held *SharedRows // the first minibatch's rows, never released
	var heldX []byte
	used := map[uint32]bool{}
	for {
		f, fd := roundTrip(OpNextBatch, AppendEpochRequest(nil, 0))
		if f.Status == StatusEnd {
			break
		}
		if f.Status != StatusOK {
			t.Fatalf("next_batch: status %d, fd %d", f.Status, fd)
		}
		b, _, feat, err := decodeBatch(f.Payload, readShared(fd))
		if err != nil {
			t.Fatal(err)
		}
		if feat.Shared == nil || len(f.Payload) > 1<<16 {
			t.Fatalf("reply of %d bytes, shared %v: the rows came through the socket", len(f.Payload), feat.Shared)
		}
		if held != nil && feat.Shared.Buffer == held.Buffer {
			t.Fatalf("minibatch %d: buffer %d reused while the client holds it", batches, held.Buffer)
		}
		used[feat.Shared.Buffer] = true
		checkFeatures(t, fs, b, feat)
		if held == nil {
			held, heldX = feat.Shared, feat.X
		} else {
			release(feat.Shared)
		}
		batches++
	}
	if batches != epoch.BatchesPerRank(500, 1, 29) {
		t.Fatalf("%d minibatches", batches)
	}
	// One buffer held, one reused by every other minibatch (each released
	// before the next request), and a few where minibatches grew.
	if len(used) > 6 || len(used) >= batches {
		t.Fatalf("%d minibatches used %d buffers: no reuse", batches, len(used))
	}
	again, err := readShared(-1)(*held, len(heldX))
	if err != nil || !bytes.Equal(again, heldX) {
		t.Fatalf("the held buffer changed (%v)", err)
	}
	f, fd := roundTrip(OpSample, AppendSampleRequest(nil, pipeline.CurrentEpoch, []uint32{0, 4, 8}, DefaultSemantics))
	b, _, feat, err := decodeBatch(f.Payload, readShared(fd))
	if err != nil {
		t.Fatal(err)
	}
	checkFeatures(t, fs, b, feat)
	// A stream reply with the shared flag is malformed for a client that
	// did not ask.
	if _, _, _, err := DecodeBatch(f.Payload); err == nil {
		t.Fatal("a shared-rows reply decoded without its memory file")
	}
	// Without a feature store, map_rows is a bad request.
	plainSrv := newTestServer(t, Config{Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2000, 4), Fanouts: []int{3}}, BatchSize: 10}, Sampler: &refSampler{g: g}})
	cl := dial(t, serveUnix(t, plainSrv))
	if _, err := cl.roundTrip(OpMapRows, nil); err == nil {
		t.Fatal("map_rows accepted without a feature store")
	}
}
