package serve

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
)

// A client that pipelines its requests on one connection — a training
// epoch's next_batch requests across the epoch's end and an advance, a
// split's split_batch requests past its end, an unknown split — gets
// the replies in request order, each byte for byte what a server of the
// same configuration answers to the same requests sent one at a time,
// although the server assembles the minibatches concurrently; and so
// with some or all of the node types' rows held in memory (HoldFeatures).
func TestHeteroPipelinedRequests(t *testing.T) {
	dir := buildHeteroMini(t)
	var split uint32
	var n int // minibatches an epoch
	requests := func() [][]byte {
		rs := pipelinedRequests(n, split)
		// An unknown split (an error reply) and epoch_info, after.
		rs = append(rs, AppendFrame(nil, OpSplitBatch, StatusOK, uint32(len(rs)+1), AppendSplitBatchRequest(nil, split+100, 0, DefaultSemantics)))
		return append(rs, AppendFrame(nil, OpEpochInfo, StatusOK, uint32(len(rs)+1), nil))
	}
	// exchange holds the held smallest stores in memory first.
	exchange := func(pipelined bool, held int) [][]byte {
		srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
		if n = srv.epochs.NumBatches(); n < 2 {
			t.Fatalf("%d minibatches an epoch, the test wants at least 2", n)
		}
		var sizes []int64
		for _, fs := range cfg.Features {
			sizes = append(sizes, int64(fs.NumNodes())*fs.RowBytes())
		}
		slices.Sort(sizes)
		var hold int64
		for _, sz := range sizes[:held] {
			hold += sz
		}
		types, got, err := srv.epochs.HoldFeatures(context.Background(), hold)
		if err != nil || len(types) != held || got != hold {
			t.Fatalf("HoldFeatures(%d): types %v (%d bytes), %v; want %d types", hold, types, got, err, held)
		}
		info, err := c.HeteroSplit(cfg.Schema.TypeIndex(cfg.TrainType), splitNodes(cfg.Schema.NodeTypes[0].Count), 16)
		if err != nil {
			t.Fatal(err)
		}
		split = info.Split
		conn, err := net.Dial("unix", c.nc.RemoteAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		reqs := requests()
		var replies [][]byte
		read := func() {
			f, _, err := ReadFrame(r, MaxReply, nil)
			if err != nil {
				t.Fatalf("reply %d: %v", len(replies), err)
			}
			if want := uint32(len(replies) + 1); f.ID != want {
				t.Fatalf("reply %d has id %d, want %d: out of request order", len(replies), f.ID, want)
			}
			replies = append(replies, AppendFrame(nil, f.Op, f.Status, f.ID, f.Payload))
		}
		if pipelined {
			if _, err := conn.Write(bytes.Join(reqs, nil)); err != nil {
				t.Fatal(err)
			}
			for range reqs {
				read()
			}
		} else {
			for _, q := range reqs {
				if _, err := conn.Write(q); err != nil {
					t.Fatal(err)
				}
				read()
			}
		}
		return replies
	}
	one := exchange(false, 0)
	for _, held := range []int{0, 1, 3} { // hetero-mini's three types have stores
		piped := exchange(true, held)
		for i := range one {
			if !bytes.Equal(one[i], piped[i]) {
				t.Errorf("%d types held: reply %d: pipelined %d bytes differ from one-at-a-time %d bytes", held, i, len(piped[i]), len(one[i]))
			}
		}
	}
	ends, batches := 0, 0
	for i := range one {
		f, _, err := ReadFrame(bytes.NewReader(one[i]), MaxReply, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Status == StatusEnd:
			ends++
		case f.Status == StatusOK && (f.Op == OpNextBatch || f.Op == OpSplitBatch):
			batches++
		}
	}
	if ends != 4 || batches != 2*n+5 { // epoch 0 and 1 end 2 and 1 times, the split (5 minibatches) once
		t.Fatalf("%d minibatches and %d ends among %d replies (%d minibatches an epoch): the requests did not reach what the test means", batches, ends, len(one), n)
	}
}

// Rows held in memory are not read again: with every type's feature file
// overwritten on disk (its size kept) after HoldFeatures, a held server
// still delivers the rows it loaded, while a server that reads its files
// refuses the changed rows (their CRC-32Cs).
func TestHeteroHeldFeaturesNotReread(t *testing.T) {
	dir := buildHeteroMini(t)
	held, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
	if _, _, err := held.epochs.HoldFeatures(context.Background(), 1<<40); err != nil {
		t.Fatal(err)
	}
	_, plain, _ := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
	want := map[string][]byte{}
	for ti, fs := range cfg.Features {
		path := fs.FeaturesPath()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want[cfg.Schema.NodeTypes[ti].Name] = slices.Clone(b)
		for i := range b {
			b[i] ^= 0xa5
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	b, end, err := c.NextHeteroBatch(CurrentEpoch, DefaultSemantics, &info.Hetero)
	if err != nil || end {
		t.Fatalf("held: %v (end %v)", err, end)
	}
	for ti, x := range b.X {
		name := cfg.Schema.NodeTypes[ti].Name
		rb := cfg.Features[ti].RowBytes()
		for i, v := range b.PyG.Nodes[ti].NID {
			if !bytes.Equal(x.Rows[int64(i)*rb:int64(i+1)*rb], want[name][int64(v)*rb:int64(v+1)*rb]) {
				t.Fatalf("held: type %s node %d: not the row it loaded", name, v)
			}
		}
	}
	if _, _, err := plain.NextHeteroBatch(CurrentEpoch, DefaultSemantics, &info.Hetero); err == nil || !strings.Contains(err.Error(), "CRC-32C") {
		t.Fatalf("a server reading its files delivered changed rows: %v", err)
	}
}

// A reply frame is allocated at its size once (wireSize is exact), its
// rows read straight into it the same as rows read first: in both
// semantics, with edge ids and rows, and for the byte examples (one with
// labels).
func TestHeteroWireSize(t *testing.T) {
	for _, b := range []*HeteroBatch{exampleBatch(), exampleSplitBatch()} {
		if b.wireSize() != mustMarshalLen(t, b) {
			t.Fatalf("byte example: wireSize %d, frame %d bytes", b.wireSize(), mustMarshalLen(t, b))
		}
	}
	dir := buildHeteroMini(t)
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		srv, _, _ := heteroSplitServer(t, dir, 1, sem, 0)
		ep, err := srv.epochs.Prepare(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range min(len(ep.Batches), 20) {
			// The server's assembly (rows read into the frame) and the Go
			// API's (rows read first) lay out the same frame.
			b, err := ep.batch(i, DefaultSemantics)
			if err != nil {
				t.Fatal(err)
			}
			if b.X == nil || !b.EdgeIDs {
				t.Fatalf("%v minibatch %d: rows %v, edge ids %v: the test wants both", sem, i, b.X != nil, b.EdgeIDs)
			}
			size := b.wireSize()
			deferred, err := MarshalHeteroBatch(OpNextBatch, 1, b)
			if err != nil {
				t.Fatal(err)
			}
			read, err := ep.Batch(i, DefaultSemantics)
			if err != nil {
				t.Fatal(err)
			}
			if read.X[0].Rows == nil {
				t.Fatalf("%v minibatch %d: Batch left the rows unread", sem, i)
			}
			whole, err := MarshalHeteroBatch(OpNextBatch, 1, read)
			if err != nil {
				t.Fatal(err)
			}
			if size != len(deferred) || !bytes.Equal(deferred, whole) {
				t.Fatalf("%v minibatch %d: wireSize %d, frame %d bytes; equal to Batch's: %v", sem, i, size, len(deferred), bytes.Equal(deferred, whole))
			}
		}
	}
}

func mustMarshalLen(t *testing.T, b *HeteroBatch) int {
	t.Helper()
	out, err := MarshalHeteroBatch(OpNextBatch, 1, b)
	if err != nil {
		t.Fatal(err)
	}
	return len(out)
}

// pipelinedRequests are a client's pipelined requests (ids 1, 2, ...):
// every minibatch of epoch 0 (PyG) and two past its end, an advance,
// epoch 1 in DGL, and a split's minibatches past its end (n minibatches
// an epoch; the split has 5).
func pipelinedRequests(n int, split uint32) [][]byte {
	var rs [][]byte
	id := uint32(1)
	add := func(op uint8, payload []byte) {
		rs = append(rs, AppendFrame(nil, op, StatusOK, id, payload))
		id++
	}
	for range n + 2 {
		add(OpNextBatch, AppendBatchRequest(nil, CurrentEpoch, DefaultSemantics))
	}
	add(OpAdvance, AppendEpochRequest(nil, 0))
	for range n + 1 {
		add(OpNextBatch, AppendBatchRequest(nil, 1, epoch.DGL))
	}
	for i := range uint32(6) {
		add(OpSplitBatch, AppendSplitBatchRequest(nil, split, i, epoch.PyG))
	}
	return rs
}

// A client that stops reading keeps its connection while nobody waits for
// the in-flight budget; once another client's request has waited
// StallTimeout for bytes the stalled one holds, the stalled connection is
// closed and the other answered (the homogeneous server's rule).
func TestHeteroStalledClientEvicted(t *testing.T) {
	dir := buildHeteroMini(t)
	ref, _, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
	ep, err := ref.epochs.Prepare(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var reply int64 // the epoch's largest
	for i := range ep.Batches {
		b, err := ep.Batch(i, DefaultSemantics)
		if err != nil {
			t.Fatal(err)
		}
		reply = max(reply, int64(mustMarshalLen(t, b)))
	}
	// Three of the largest replies: a request reserves half of it (its
	// bound is larger: it is built alone, after the connection's earlier
	// replies are written), which covers any reply, so the stalled
	// client never waits for the budget itself; its blocked reply and
	// its next reservation leave too little for another's.
	if bound := ref.epochs.replyBound(cfg.Schema.TypeIndex(cfg.TrainType), int64(cfg.BatchSize)); bound <= 3*reply/2 {
		t.Fatalf("reply bound %d, largest reply %d: the test wants the bound above half of three replies", bound, reply)
	}
	const stall = 100 * time.Millisecond
	cfg.MaxInflight, cfg.StallTimeout = 3*reply, stall
	h, err := NewHeteroEpochs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, c := startHeteroServer(t, h)
	sock := c.nc.RemoteAddr().String()
	stalled, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	var reqs []byte
	for i := range 200 {
		reqs = append(reqs, AppendFrame(nil, OpNextBatch, StatusOK, uint32(i+1), AppendBatchRequest(nil, CurrentEpoch, DefaultSemantics))...)
	}
	go stalled.Write(reqs) // never read: its replies fill the socket, then the server's writer blocks
	state := func() *heteroConn {
		srv.connMu.Lock()
		defer srv.connMu.Unlock()
		for _, st := range srv.conns {
			// A write stuck for a while: only the stalled client has one.
			if p := st.wprog.Load(); p != 0 && time.Since(time.Unix(0, p)) > 2*stall {
				return st
			}
		}
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	var st *heteroConn
	for st = state(); st == nil; st = state() {
		if time.Now().After(deadline) {
			t.Fatal("the stalled client's reply never blocked its writer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(3 * stall) // alone, a paused client keeps its connection
	if st.evicted.Load() {
		t.Fatal("a stalled client was closed while nobody waited for the budget")
	}
	info, err := c.HeteroEpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.NextHeteroBatch(CurrentEpoch, DefaultSemantics, &info.Hetero)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the waiting client: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting client was not answered: the stalled connection was not closed")
	}
	if !st.evicted.Load() {
		t.Fatal("the waiting client was answered, but the stalled connection was not closed")
	}
	// The stalled client reads what was sent before the close, then the end.
	stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, stalled); err != nil {
		t.Fatalf("the stalled connection: %v, want it closed by the server", err)
	}
}
