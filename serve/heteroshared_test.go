//go:build linux

package serve

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
)

// heteroSharedClient is the client's side of a heterogeneous connection with
// shared rows, as the Python client does it: it reads each reply header
// with the descriptor passed along, maps each buffer from the reply that
// brings it, unmaps a buffer a reply retires, and clears a buffer's lease
// word when told.
type heteroSharedClient struct {
	t      *testing.T
	uc     *net.UnixConn
	maps   map[uint32][]byte
	gone   map[uint32]bool // retired buffers
	fds    int             // descriptors received
	schema *heteroepoch.Schema
}

func dialHeteroShared(t *testing.T, c *Client, schema *heteroepoch.Schema) *heteroSharedClient {
	t.Helper()
	nc, err := net.Dial("unix", c.nc.RemoteAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc := &heteroSharedClient{t: t, uc: nc.(*net.UnixConn), maps: map[uint32][]byte{}, gone: map[uint32]bool{}, schema: schema}
	t.Cleanup(func() {
		nc.Close()
		for _, m := range sc.maps {
			unix.Munmap(m)
		}
	})
	return sc
}

// send writes request frames (pipelined when several).
func (sc *heteroSharedClient) send(frames ...[]byte) {
	sc.t.Helper()
	if _, err := sc.uc.Write(bytes.Join(frames, nil)); err != nil {
		sc.t.Fatal(err)
	}
}

// read reads one reply frame and the descriptor that came with it (-1:
// none).
func (sc *heteroSharedClient) read() (Frame, int) {
	sc.t.Helper()
	hdr := make([]byte, HeaderSize)
	fd := -1
	for got := 0; got < HeaderSize; {
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := sc.uc.ReadMsgUnix(hdr[got:], oob)
		if err != nil || n == 0 {
			sc.t.Fatalf("reply header: %d bytes, %v", n, err)
		}
		got += n
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil || len(msgs) != 1 {
				sc.t.Fatalf("control message: %v", err)
			}
			fds, err := unix.ParseUnixRights(&msgs[0])
			if err != nil || len(fds) != 1 || fd != -1 {
				sc.t.Fatalf("rights: %v %v (a descriptor already: %d)", fds, err, fd)
			}
			fd = fds[0]
			sc.fds++
		}
	}
	body := make([]byte, int(binary.LittleEndian.Uint32(hdr))-(HeaderSize-4))
	if _, err := io.ReadFull(sc.uc, body); err != nil {
		sc.t.Fatal(err)
	}
	return Frame{Op: hdr[4], Status: hdr[5], ID: binary.LittleEndian.Uint32(hdr[6:]), Payload: body}, fd
}

// resolver maps the buffer whose descriptor came with a reply (fd, -1:
// none) and gives the decoder the buffers, retiring as told.
func (sc *heteroSharedClient) resolver(fd int) HeteroSharedRows {
	return func(buf, retire uint32) ([]byte, error) {
		if fd >= 0 {
			defer unix.Close(fd)
			if _, ok := sc.maps[buf]; ok || sc.gone[buf] {
				return nil, fmt.Errorf("buffer %d sent twice", buf)
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return nil, err
			}
			m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				return nil, err
			}
			sc.maps[buf] = m
			fd = -1
		}
		if retire != NoBuffer {
			m, ok := sc.maps[retire]
			if !ok {
				return nil, fmt.Errorf("retired buffer %d unknown", retire)
			}
			unix.Munmap(m)
			delete(sc.maps, retire)
			sc.gone[retire] = true
		}
		m, ok := sc.maps[buf]
		if !ok {
			return nil, fmt.Errorf("buffer %d never sent", buf)
		}
		return m, nil
	}
}

// release clears buffer buf's lease word: the server may reuse it.
func (sc *heteroSharedClient) release(buf uint32) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&sc.maps[buf][0])), leaseFree)
}

// decode decodes a minibatch reply (fd: its descriptor) and returns it
// with its rows (copied out of the buffer) and the frame that carries the
// same minibatch with its rows inline (the frame of a connection without
// shared rows).
func (sc *heteroSharedClient) decode(f Frame, fd int) (*HeteroBatch, []byte) {
	sc.t.Helper()
	if fd >= 0 && f.Payload[9]&batchHeteroShared == 0 {
		sc.t.Fatalf("reply %d: a descriptor with rows inline", f.ID)
	}
	b, err := DecodeHeteroBatchShared(f.Payload, sc.schema, sc.resolver(fd))
	if err != nil {
		sc.t.Fatalf("reply %d: %v", f.ID, err)
	}
	sh := b.Shared
	b.Shared = nil
	inline, err := MarshalHeteroBatch(f.Op, f.ID, b)
	if err != nil {
		sc.t.Fatal(err)
	}
	b.Shared = sh
	return b, inline
}

// frameBytes is a frame as it was on the wire.
func frameBytes(f Frame) []byte { return AppendFrame(nil, f.Op, f.Status, f.ID, f.Payload) }

// A heterogeneous server with map_rows gives, decoded, exactly the
// minibatches — rows included — of one without, to requests pipelined
// across two epochs (PyG and DGL) and a split: each reply's rows in one
// shared buffer, its reply carrying no row, the buffers reused as the
// client clears their lease words.
func TestHeteroSharedRowsEqualInline(t *testing.T) {
	dir := buildHeteroMini(t)
	var n int
	exchange := func(shared bool) ([][]byte, *heteroSharedClient) {
		srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
		n = srv.epochs.NumBatches()
		info, err := c.HeteroSplit(cfg.Schema.TypeIndex(cfg.TrainType), splitNodes(cfg.Schema.NodeTypes[0].Count), 16)
		if err != nil {
			t.Fatal(err)
		}
		sc := dialHeteroShared(t, c, cfg.Schema)
		if shared {
			sc.send(AppendFrame(nil, OpMapRows, StatusOK, 99, nil))
			if f, fd := sc.read(); f.Status != StatusOK || fd != -1 {
				t.Fatalf("map_rows: status %d (%s), fd %d", f.Status, f.Payload, fd)
			}
		}
		reqs := pipelinedRequests(n, info.Split)
		sc.send(reqs...)
		var frames [][]byte
		for i := range reqs {
			f, fd := sc.read()
			if f.ID != uint32(i+1) {
				t.Fatalf("reply %d has id %d", i, f.ID)
			}
			if !shared || f.Status != StatusOK || (f.Op != OpNextBatch && f.Op != OpSplitBatch) {
				if fd != -1 {
					t.Fatalf("reply %d: a descriptor on a connection without shared rows", i)
				}
				frames = append(frames, frameBytes(f))
				continue
			}
			if f.Payload[9]&batchHeteroShared == 0 {
				t.Fatalf("reply %d (%d bytes): rows inline on a connection whose client clears its leases", i, len(f.Payload))
			}
			b, inline := sc.decode(f, fd)
			if want := (&HeteroBatch{Semantics: b.Semantics, PyG: b.PyG, DGL: b.DGL, Hops: b.Hops, EdgeIDs: b.EdgeIDs, X: b.X, Y: b.Y, Shared: b.Shared}); want.wireSize()-HeaderSize != len(f.Payload) {
				t.Fatalf("reply %d: %d bytes, wireSize says %d", i, len(f.Payload), want.wireSize()-HeaderSize)
			}
			sc.release(b.Shared.Buffer)
			frames = append(frames, inline)
		}
		return frames, sc
	}
	plain, _ := exchange(false)
	shared, sc := exchange(true)
	batches := 0
	for i := range plain {
		if !bytes.Equal(plain[i], shared[i]) {
			t.Errorf("reply %d: with shared rows (%d bytes inline) differs from without (%d bytes)", i, len(shared[i]), len(plain[i]))
		}
		if plain[i][5] == StatusOK && (plain[i][4] == OpNextBatch || plain[i][4] == OpSplitBatch) {
			batches++
		}
	}
	if batches != 2*n+5 {
		t.Fatalf("%d minibatches, want %d: the requests did not reach what the test means", batches, 2*n+5)
	}
	// A buffer is reused once its lease is cleared: the replies in
	// flight at once (being built, queued, in the socket's buffer: a
	// reply without rows is small) need a few buffers, not one a
	// minibatch; the pool holds at most MaxRowBuffers.
	if sc.fds*4 > batches || len(sc.maps) > MaxRowBuffers {
		t.Fatalf("%d minibatches took %d buffers, %d mapped at the end", batches, sc.fds, len(sc.maps))
	}
}

// A client that never clears a lease word still gets every minibatch,
// equal to those of a connection without shared rows: with room for one
// buffer (a quarter of the in-flight budget), the first minibatch's rows
// are shared, the second's wait leaseWait for that buffer and then travel
// in the reply, and every later one's at once (the connection no longer
// waits).
func TestHeteroSharedRowsNeverReleased(t *testing.T) {
	dir := buildHeteroMini(t)
	collect := func(shared bool, maxInflight int64) ([][]byte, []bool, time.Duration) {
		srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, maxInflight)
		sc := dialHeteroShared(t, c, cfg.Schema)
		if shared {
			sc.send(AppendFrame(nil, OpMapRows, StatusOK, 99, nil))
			if f, _ := sc.read(); f.Status != StatusOK {
				t.Fatalf("map_rows: status %d (%s)", f.Status, f.Payload)
			}
		}
		var frames [][]byte
		var flags []bool
		t0 := time.Now()
		for i := range srv.epochs.NumBatches() {
			sc.send(AppendFrame(nil, OpNextBatch, StatusOK, uint32(i+1), AppendBatchRequest(nil, CurrentEpoch, DefaultSemantics)))
			f, fd := sc.read()
			if f.Status != StatusOK {
				t.Fatalf("minibatch %d: status %d (%s)", i, f.Status, f.Payload)
			}
			flags = append(flags, f.Payload[9]&batchHeteroShared != 0)
			if !shared {
				frames = append(frames, frameBytes(f))
				continue
			}
			_, inline := sc.decode(f, fd) // and never released
			frames = append(frames, inline)
		}
		return frames, flags, time.Since(t0)
	}
	plain, _, _ := collect(false, 0)
	// One buffer of 2 MiB and its lease page fits a quarter of the budget,
	// two do not.
	shared, flags, took := collect(true, 4*(poolRoundBytes()+rowsOffset)+1<<20)
	if len(plain) < 3 {
		t.Fatalf("%d minibatches, the test wants 3", len(plain))
	}
	for i := range plain {
		if !bytes.Equal(plain[i], shared[i]) {
			t.Errorf("minibatch %d differs with shared rows never released", i)
		}
		if flags[i] != (i == 0) {
			t.Errorf("minibatch %d: rows shared %v, want %v", i, flags[i], i == 0)
		}
	}
	if took < leaseWait || took > leaseWait+10*time.Second {
		t.Errorf("%d minibatches took %v: want one wait of %v", len(plain), took, leaseWait)
	}
}

func poolRoundBytes() int64 { return int64(poolRound) }

// A reply whose rows need a larger buffer than the free one retires that
// one: the reply names it, the client unmaps it, and no later reply
// names it; the rows are those a connection without shared rows gets.
func TestHeteroSharedRowsRetire(t *testing.T) {
	defer func(r int) { poolRound = r }(poolRound)
	poolRound = 4096 // buffers of the rows' size, so that a larger minibatch needs a new one
	dir := buildHeteroMini(t)
	srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
	nodes := splitNodes(cfg.Schema.NodeTypes[0].Count)
	tt := cfg.Schema.TypeIndex(cfg.TrainType)
	small, err := c.HeteroSplit(tt, nodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	large, err := c.HeteroSplit(tt, nodes, 64)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := srv.Inflight() // the splits' hold
	sc := dialHeteroShared(t, c, cfg.Schema)
	ref := dialHeteroShared(t, c, cfg.Schema)
	sc.send(AppendFrame(nil, OpMapRows, StatusOK, 1, nil))
	if f, _ := sc.read(); f.Status != StatusOK {
		t.Fatalf("map_rows: status %d (%s)", f.Status, f.Payload)
	}
	var retired []uint32
	used := map[uint32]bool{}
	for i, q := range []struct{ split, index uint32 }{{small.Split, 0}, {large.Split, 0}, {small.Split, 1}, {large.Split, 0}, {small.Split, 2}} {
		req := AppendFrame(nil, OpSplitBatch, StatusOK, uint32(i+2), AppendSplitBatchRequest(nil, q.split, q.index, epoch.PyG))
		sc.send(req)
		f, fd := sc.read()
		if f.Status != StatusOK || f.Payload[9]&batchHeteroShared == 0 {
			t.Fatalf("request %d: status %d, flags %#x", i, f.Status, f.Payload[9])
		}
		b, inline := sc.decode(f, fd)
		for _, r := range retired {
			if b.Shared.Buffer == r {
				t.Fatalf("request %d: rows in buffer %d, retired before", i, r)
			}
		}
		if b.Shared.Retire != NoBuffer {
			if !used[b.Shared.Retire] {
				t.Fatalf("request %d retires buffer %d, never used", i, b.Shared.Retire)
			}
			retired = append(retired, b.Shared.Retire)
		}
		used[b.Shared.Buffer] = true
		sc.release(b.Shared.Buffer)
		ref.send(req)
		want, _ := ref.read()
		if !bytes.Equal(inline, frameBytes(want)) {
			t.Fatalf("request %d: the minibatch differs from a connection without shared rows", i)
		}
	}
	if len(retired) == 0 {
		t.Fatalf("no buffer retired (buffers used %v): the minibatches' sizes do not reach what the test means", used)
	}
	for _, r := range retired {
		if _, mapped := sc.maps[r]; mapped {
			t.Fatalf("retired buffer %d still mapped", r)
		}
	}
	// The buffers are charged to the in-flight budget while they live,
	// and given back with the connection.
	if held, _ := srv.Inflight(); held <= before {
		t.Fatalf("%d bytes held with buffers mapped, %d before", held, before)
	}
	sc.uc.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		held, _ := srv.Inflight()
		if held == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of the budget held after the connection closed, %d before it", held, before)
		}
	}
}

// map_rows is refused (error 1, as on the homogeneous server) on TCP, by
// a server without feature stores, and with a payload.
func TestHeteroMapRowsRefused(t *testing.T) {
	dir := buildHeteroMini(t)
	srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.PyG, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() {
		ln.Close()
		<-done
	}()
	bare := cfg
	bare.Features, bare.Labels = nil, nil
	h, err := NewHeteroEpochs(bare)
	if err != nil {
		t.Fatal(err)
	}
	_, cb := startHeteroServer(t, h)
	ask := func(network, addr string, payload []byte) *RemoteError {
		nc, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write(AppendFrame(nil, OpMapRows, StatusOK, 3, payload)); err != nil {
			t.Fatal(err)
		}
		f, _, err := ReadFrame(bufio.NewReader(nc), MaxReply, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.Status != StatusError {
			return nil
		}
		return DecodeError(f.Payload)
	}
	for _, q := range []struct {
		what, network, addr string
		payload             []byte
		ok                  bool
	}{
		{"unix", "unix", c.nc.RemoteAddr().String(), nil, true},
		{"tcp", "tcp", ln.Addr().String(), nil, false},
		{"no features", "unix", cb.nc.RemoteAddr().String(), nil, false},
		{"payload", "unix", c.nc.RemoteAddr().String(), []byte{1}, false},
	} {
		e := ask(q.network, q.addr, q.payload)
		if q.ok != (e == nil) || e != nil && e.Code != CodeBadRequest {
			t.Errorf("%s: map_rows answered %v, want ok %v or error %d", q.what, e, q.ok, CodeBadRequest)
		}
	}
}

// Leases are taken in request order: with room for one buffer, a client
// that pipelines a whole epoch's requests and clears each minibatch's
// lease as it reads it gets every minibatch's rows shared, none after a
// wait that ran out. Were a later request's assembly to take the buffer
// first, the earlier one would wait for a lease the client clears only
// after reading it, which is never written before the earlier one: the
// wait would run out (500 ms) and the rows go inline from then on.
func TestHeteroSharedRowsLeasedInRequestOrder(t *testing.T) {
	dir := buildHeteroMini(t)
	srv, c, cfg := heteroSplitServer(t, dir, 1, epoch.DGL, 4*(poolRoundBytes()+rowsOffset)+1<<20)
	sc := dialHeteroShared(t, c, cfg.Schema)
	sc.send(AppendFrame(nil, OpMapRows, StatusOK, 99, nil))
	if f, _ := sc.read(); f.Status != StatusOK {
		t.Fatalf("map_rows: status %d (%s)", f.Status, f.Payload)
	}
	n := srv.epochs.NumBatches()
	var reqs [][]byte
	for i := range n {
		reqs = append(reqs, AppendFrame(nil, OpNextBatch, StatusOK, uint32(i+1), AppendBatchRequest(nil, CurrentEpoch, DefaultSemantics)))
	}
	t0 := time.Now()
	sc.send(reqs...)
	for i := range n {
		f, fd := sc.read()
		if f.Status != StatusOK || f.Payload[9]&batchHeteroShared == 0 {
			t.Fatalf("minibatch %d of %d: status %d, rows shared %v (after %v)", i, n, f.Status, f.Payload[9]&batchHeteroShared != 0, time.Since(t0))
		}
		b, _ := sc.decode(f, fd)
		sc.release(b.Shared.Buffer)
	}
	if sc.fds != 1 {
		t.Fatalf("%d buffers for room for one", sc.fds)
	}
}
