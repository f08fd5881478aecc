package serve

import (
	"bufio"
	"bytes"
	"net"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// A client that pipelines its requests on one connection — a training
// epoch's next_batch requests across the epoch's end and an advance, a
// split's split_batch requests past its end, an unknown split — gets
// the replies in request order, each byte for byte what a server of the
// same configuration answers to the same requests sent one at a time,
// although the server assembles the minibatches concurrently.
func TestHeteroPipelinedRequests(t *testing.T) {
	dir := buildHeteroMini(t)
	var split uint32
	var n int // minibatches an epoch
	requests := func() [][]byte {
		var rs [][]byte
		id := uint32(1)
		add := func(op uint8, payload []byte) {
			rs = append(rs, AppendFrame(nil, op, StatusOK, id, payload))
			id++
		}
		// Requests past the epoch's end answer the end.
		for range n + 2 {
			add(OpNextBatch, AppendBatchRequest(nil, CurrentEpoch, DefaultSemantics))
		}
		add(OpAdvance, AppendEpochRequest(nil, 0))
		for range n + 1 {
			add(OpNextBatch, AppendBatchRequest(nil, 1, epoch.DGL))
		}
		for i := range uint32(7) {
			add(OpSplitBatch, AppendSplitBatchRequest(nil, split, i, DefaultSemantics))
		}
		add(OpSplitBatch, AppendSplitBatchRequest(nil, split+100, 0, DefaultSemantics))
		add(OpEpochInfo, nil)
		return rs
	}
	exchange := func(pipelined bool) [][]byte {
		srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
		if n = srv.epochs.NumBatches(); n < 2 {
			t.Fatalf("%d minibatches an epoch, the test wants at least 2", n)
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
	one, piped := exchange(false), exchange(true)
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
		if !bytes.Equal(one[i], piped[i]) {
			t.Errorf("reply %d (op %d, status %d): pipelined %d bytes differ from one-at-a-time %d bytes", i, f.Op, f.Status, len(piped[i]), len(one[i]))
		}
	}
	if ends != 5 || batches != 2*n+5 { // epoch 0 and 1 end 2 and 1 times, the split (5 minibatches) 2 times
		t.Fatalf("%d minibatches and %d ends among %d replies (%d minibatches an epoch): the requests did not reach what the test means", batches, ends, len(one), n)
	}
}
