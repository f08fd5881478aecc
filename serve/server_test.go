package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// randomCSR is a random symmetric graph with some isolated nodes.
func randomCSR(n int, avgDeg int, seed uint64) *host.CSR {
	r := rand.New(rand.NewPCG(seed, 1))
	adj := make([][]uint32, n)
	for i := 0; i < n*avgDeg/2; i++ {
		u, v := uint32(r.IntN(n)), uint32(r.IntN(n))
		if u%17 == 0 || v%17 == 0 || u == v {
			continue
		}
		adj[u] = append(adj[u], v)
		adj[v] = append(adj[v], u)
	}
	c := &host.CSR{Indptr: make([]uint64, n+1)}
	for u := range adj {
		slices.Sort(adj[u])
		adj[u] = slices.Compact(adj[u])
		c.Indices = append(c.Indices, adj[u]...)
		c.Indptr[u+1] = uint64(len(c.Indices))
	}
	return c
}

// refSampler is host.Reference behind EpochSampler, counting calls per
// epoch and optionally holding each call until gate is closed.
type refSampler struct {
	g     *host.CSR
	mu    sync.Mutex
	calls map[uint32]int
	gate  chan struct{} // when set, calls for epochs >= hold wait for it to close
	hold  uint32
	fail  atomic.Bool
}

func (s *refSampler) SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[uint32]int{}
	}
	s.calls[key.Epoch]++
	s.mu.Unlock()
	if s.gate != nil && key.Epoch >= s.hold {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.fail.Load() {
		return nil, errors.New("injected failure")
	}
	return host.Reference(s.g, seeds, fanouts, key)
}

func (s *refSampler) count(e uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[e]
}

// waitCount waits for epoch e's preparation to have started.
func waitCount(t *testing.T, s *refSampler, e uint32) {
	t.Helper()
	for i := 0; i < 500 && s.count(e) == 0; i++ {
		time.Sleep(2 * time.Millisecond)
	}
}

func trainNodes(n, every int) []uint32 {
	var t []uint32
	for v := 0; v < n; v += every {
		t = append(t, uint32(v))
	}
	return t
}

func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

// serveUnix serves s on a socket in a temp dir and returns its path.
func serveUnix(t *testing.T, s *Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	return path
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConcurrentClientsCoverEpoch: many clients share one cursor; every
// minibatch is handed out exactly once, equals the reference assembly of
// its seeds, and the next epoch starts only after the end marker.
func TestConcurrentClientsCoverEpoch(t *testing.T) {
	g := randomCSR(600, 8, 1)
	smp := &refSampler{g: g}
	train := trainNodes(600, 2)
	cfg := Config{Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{4, 3}, Seed: 9}, BatchSize: 16}}
	s := newTestServer(t, cfg)
	path := serveUnix(t, s)

	for e := uint32(0); e < 3; e++ {
		ref, err := host.Reference(g, train, cfg.Fanouts, epoch.Key{Seed: 9, Epoch: e})
		if err != nil {
			t.Fatal(err)
		}
		want := epoch.Batches(train, 16, 9, e)
		var mu sync.Mutex
		got := map[int]*epoch.Blocks{}
		var wg sync.WaitGroup
		for w := 0; w < 6; w++ {
			c := dial(t, path)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					b, err := c.NextBatch(e)
					if err != nil {
						t.Error(err)
						return
					}
					if b.End {
						if b.Epoch != e {
							t.Errorf("end marker for epoch %d, want %d", b.Epoch, e)
						}
						return
					}
					mu.Lock()
					if got[b.Index] != nil {
						t.Errorf("batch %d handed out twice", b.Index)
					}
					got[b.Index] = b.Blocks
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(got) != len(want) {
			t.Fatalf("epoch %d: %d batches, want %d", e, len(got), len(want))
		}
		for i, seeds := range want {
			wb, err := ref.Assemble(seeds, epoch.DGL)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[i], wb) {
				t.Fatalf("epoch %d batch %d differs from the reference assembly", e, i)
			}
		}
		if smp.count(e+1) != 1 {
			t.Fatalf("epoch %d prepared %d times by the end of epoch %d, want 1", e+1, smp.count(e+1), e)
		}
	}
}

func TestPrepareAtThreshold(t *testing.T) {
	g := randomCSR(200, 6, 2)
	for _, at := range []float64{0, 0.5, 0.8, 1} {
		smp := &refSampler{g: g}
		s := newTestServer(t, Config{Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(200, 1), Fanouts: []int{3}}, BatchSize: 20, PrepareAt: at}})
		n := s.Info().NumBatches // 10
		threshold := int(at*float64(n) + 0.999)
		for i := 0; i < n; i++ {
			if i >= threshold {
				waitCount(t, smp, 1)
			}
			if i >= threshold != (smp.count(1) == 1) {
				t.Fatalf("prepare-at %g: after %d of %d batches, epoch 1 prepared %d times", at, i, n, smp.count(1))
			}
			if _, err := s.NextBatch(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
		}
		waitCount(t, smp, 1)
		if smp.count(1) != 1 {
			t.Fatalf("prepare-at %g: epoch 1 not prepared at the end", at)
		}
	}
}

// TestShardingEqualBatches: ranks' shards are disjoint, cover the
// training set, differ by at most one node, and every rank serves the
// same number of minibatches, dropping only what that takes.
func TestShardingEqualBatches(t *testing.T) {
	g := randomCSR(300, 4, 3)
	for _, tc := range []struct{ n, world, batch int }{{103, 4, 5}, {100, 3, 11}, {64, 4, 16}, {10, 4, 2}} {
		train := trainNodes(tc.n, 1)
		for e := uint32(0); e < 2; e++ {
			seen := map[uint32]int{}
			counts := map[int]bool{}
			for r := 0; r < tc.world; r++ {
				s := newTestServer(t, Config{Sampler: &refSampler{g: g}, Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{2}, Seed: 5, Rank: r, World: tc.world}, BatchSize: tc.batch, FirstEpoch: e, PrepareAt: 1}})
				info := s.Info()
				if info.ShardSize < tc.n/tc.world || info.ShardSize > tc.n/tc.world+1 {
					t.Fatalf("%+v rank %d: shard of %d", tc, r, info.ShardSize)
				}
				counts[info.NumBatches] = true
				shard, _ := epoch.Shard(train, r, tc.world, 5, e)
				for _, v := range shard {
					seen[v]++
				}
				served := 0
				for {
					b, err := s.NextBatch(context.Background(), e)
					if err != nil {
						t.Fatal(err)
					}
					if b.End {
						break
					}
					for _, v := range b.Blocks.Seeds {
						if !slices.Contains(shard, v) {
							t.Fatalf("rank %d served node %d outside its shard", r, v)
						}
					}
					served += len(b.Blocks.Seeds)
				}
				if served+info.Dropped != info.ShardSize || info.Dropped >= tc.batch || info.Dropped > 1 {
					t.Fatalf("%+v rank %d: served %d + dropped %d != shard %d", tc, r, served, info.Dropped, info.ShardSize)
				}
			}
			if len(counts) != 1 {
				t.Fatalf("%+v: ranks serve different batch counts %v", tc, counts)
			}
			if len(seen) != tc.n {
				t.Fatalf("%+v: shards cover %d of %d nodes", tc, len(seen), tc.n)
			}
			for v, k := range seen {
				if k != 1 {
					t.Fatalf("node %d in %d shards", v, k)
				}
			}
		}
	}
}

func TestSampleAndErrors(t *testing.T) {
	g := randomCSR(300, 5, 4)
	smp := &refSampler{g: g}
	train := trainNodes(300, 3)
	s := newTestServer(t, Config{Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{5, 2}, Seed: 1}, BatchSize: 10, PrepareAt: 1}})
	c := dial(t, serveUnix(t, s))
	ref, _ := host.Reference(g, train, []int{5, 2}, epoch.Key{Seed: 1})
	seeds := []uint32{30, 0, 297}
	b, err := c.Sample(CurrentEpoch, seeds)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := ref.Assemble(seeds, epoch.DGL)
	if !reflect.DeepEqual(b, wb) {
		t.Fatal("sample differs from the reference assembly")
	}
	wantCode := func(err error, code uint16) {
		t.Helper()
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != code {
			t.Fatalf("err %v, want code %d", err, code)
		}
	}
	_, err = c.Sample(CurrentEpoch, []uint32{1})
	wantCode(err, CodeNotInFrontier)
	_, err = c.Sample(0, []uint32{3, 3})
	wantCode(err, CodeDuplicateSeed)
	_, err = c.Sample(7, []uint32{3})
	wantCode(err, CodeUnknownEpoch)
	_, err = c.NextBatch(5)
	wantCode(err, CodeUnknownEpoch)
	_, err = c.NextBatch(1)
	wantCode(err, CodeEpochNotDone)
	_, err = c.Advance(4)
	wantCode(err, CodeUnknownEpoch)

	// Explicit advance, twice: idempotent.
	for i := 0; i < 2; i++ {
		info, err := c.Advance(0)
		if err != nil || info.Epoch != 1 || info.Served != 0 {
			t.Fatalf("advance: %+v %v", info, err)
		}
	}
	// Epoch 0 is gone: next_batch answers end, sample unknown epoch.
	if b, err := c.NextBatch(0); err != nil || !b.End {
		t.Fatalf("next_batch of a past epoch: %+v %v", b, err)
	}
	_, err = c.Sample(0, []uint32{3})
	wantCode(err, CodeUnknownEpoch)
	// A failed preparation is an error reply, and is retried.
	smp.fail.Store(true)
	_, err = c.Advance(1)
	wantCode(err, CodeInternal)
	smp.fail.Store(false)
	if info, err := c.Advance(1); err != nil || info.Epoch != 2 {
		t.Fatalf("advance after a failure: %+v %v", info, err)
	}
}

// rawConn sends hand-made bytes.
func rawConn(t *testing.T, path string) net.Conn {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func TestMalformedAndOversized(t *testing.T) {
	g := randomCSR(100, 4, 5)
	s, err := New(Config{Sampler: &refSampler{g: g}, Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(100, 1), Fanouts: []int{2}}, BatchSize: 8}, MaxRequest: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	path := serveUnix(t, s)
	good := dial(t, path)

	readReply := func(nc net.Conn) Frame {
		t.Helper()
		f, _, err := ReadFrame(nc, MaxReply, nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Malformed payloads and unknown ops: an error reply, the connection lives.
	nc := rawConn(t, path)
	for _, tc := range []struct {
		frame []byte
		code  uint16
	}{
		{AppendFrame(nil, OpNextBatch, 0, 1, []byte{1, 2}), CodeBadRequest},
		{AppendFrame(nil, OpSample, 0, 2, []byte{0, 0, 0, 0, DtypeI32, 1}), CodeBadRequest},
		{AppendFrame(nil, OpEpochInfo, 0, 3, []byte{1}), CodeBadRequest},
		{AppendFrame(nil, 99, 0, 4, nil), CodeUnknownOp},
	} {
		nc.Write(tc.frame)
		f := readReply(nc)
		if f.Status != StatusError || DecodeError(f.Payload).Code != tc.code || f.ID != binary.LittleEndian.Uint32(tc.frame[6:]) {
			t.Fatalf("reply %+v %v, want code %d", f, DecodeError(f.Payload), tc.code)
		}
	}
	nc.Write(AppendFrame(nil, OpEpochInfo, 0, 5, nil))
	if f := readReply(nc); f.Status != StatusOK {
		t.Fatalf("connection unusable after errors: %+v", f)
	}
	// Oversized: an error reply, then the connection is closed.
	big := rawConn(t, path)
	big.Write(AppendFrame(nil, OpSample, 0, 6, AppendSampleRequest(nil, 0, make([]uint32, 300), DefaultSemantics)))
	if f := readReply(big); f.Status != StatusError || DecodeError(f.Payload).Code != CodeTooLarge {
		t.Fatalf("oversized: %+v", f)
	}
	if _, _, err := ReadFrame(big, MaxReply, nil); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("oversized: connection still open (%v)", err)
	}
	// A length below the header: error reply and close.
	short := rawConn(t, path)
	short.Write([]byte{2, 0, 0, 0, 1, 0})
	if f := readReply(short); f.Status != StatusError || DecodeError(f.Payload).Code != CodeBadRequest {
		t.Fatalf("short frame: %+v", f)
	}
	// Half a frame, then gone; a request then gone before its reply.
	half := rawConn(t, path)
	half.Write(AppendFrame(nil, OpEpochInfo, 0, 7, nil)[:5])
	half.Close()
	gone := rawConn(t, path)
	gone.Write(AppendFrame(nil, OpNextBatch, 0, 8, AppendEpochRequest(nil, CurrentEpoch)))
	gone.Close()
	// The well-behaved client is served throughout.
	if _, err := good.EpochInfo(); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := good.NextBatch(0)
		if err != nil {
			t.Fatal(err)
		}
		if b.End {
			break
		}
	}
}

func TestShutdownGraceful(t *testing.T) {
	g := randomCSR(200, 4, 6)
	// Epoch 1's preparation is held, so that a request for it is in
	// flight when shutdown starts.
	smp := &refSampler{g: g, gate: make(chan struct{}), hold: 1}
	s, err := New(Config{Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(200, 1), Fanouts: []int{2}}, BatchSize: 200, PrepareAt: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c := dial(t, path)
	if b, err := c.NextBatch(0); err != nil || b.End {
		t.Fatal(b, err)
	}
	reply := make(chan error, 1)
	go func() {
		_, err := c.NextBatch(1)
		reply <- err
	}()
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file still there after shutdown began: %v", err)
	}
	if _, err := net.Dial("unix", path); err == nil {
		t.Fatal("still accepting after shutdown began")
	}
	close(smp.gate)
	if err := <-reply; err != nil {
		t.Fatalf("in-flight request not answered: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
}

func TestListeners(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:80", "nonsense"} {
		if ln, err := ListenTCP(addr); err == nil {
			ln.Close()
			t.Errorf("ListenTCP(%q) accepted a non-loopback address", addr)
		}
	}
	ln, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	dir := t.TempDir()
	notSock := filepath.Join(dir, "file")
	os.WriteFile(notSock, []byte("x"), 0o644)
	if _, err := ListenUnix(notSock); err == nil {
		t.Error("ListenUnix replaced a regular file")
	}
	sock := filepath.Join(dir, "s.sock")
	l1, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(sock); err == nil {
		t.Error("ListenUnix took over a live socket")
	}
	l1.(*unixListener).UnixListener.Close() // as a crash leaves it: the file stays
	l2, err := ListenUnix(sock)             // stale socket file
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	l2.Close()
}

func TestConfigErrors(t *testing.T) {
	smp := &refSampler{g: randomCSR(10, 2, 7)}
	for name, cfg := range map[string]Config{
		"no sampler": {Config: pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1}, Fanouts: []int{1}}, BatchSize: 1}},
		"batch":      {Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1}, Fanouts: []int{1}}}},
		"fanouts":    {Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1}}, BatchSize: 1}},
		"rank":       {Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1, 2}, Fanouts: []int{1}, Rank: 2, World: 2}, BatchSize: 1}},
		"prepare-at": {Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1}, Fanouts: []int{1}}, BatchSize: 1, PrepareAt: 1.5}},
		"too few":    {Sampler: smp, Config: pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1}, Fanouts: []int{1}, World: 2}, BatchSize: 1}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// TestPipelinedInOrder: requests pipelined on one connection claim
// minibatches in request order, whatever order the replies come back in.
func TestPipelinedInOrder(t *testing.T) {
	g := randomCSR(400, 6, 8)
	s := newTestServer(t, Config{Sampler: &refSampler{g: g}, Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(400, 1), Fanouts: []int{4, 4}}, BatchSize: 10, PrepareAt: 1}})
	nc := rawConn(t, serveUnix(t, s))
	var req []byte
	for id := uint32(0); id < 45; id++ {
		req = AppendFrame(req, OpNextBatch, 0, id, AppendEpochRequest(nil, 0))
	}
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 45; i++ {
		f, _, err := ReadFrame(nc, MaxReply, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.ID >= 40 {
			if f.Status != StatusEnd {
				t.Fatalf("request %d: status %d, want end", f.ID, f.Status)
			}
			continue
		}
		_, idx, err := DecodeBlocks(f.Payload)
		if err != nil || idx != int(f.ID) {
			t.Fatalf("request %d got batch %d (%v)", f.ID, idx, err)
		}
	}
}

// TestAdvanceDuringClaims: an explicit advance in the middle of an epoch,
// racing with clients pulling minibatches, never hands out a minibatch
// assembled from the wrong epoch.
func TestAdvanceDuringClaims(t *testing.T) {
	g := randomCSR(500, 6, 9)
	train := trainNodes(500, 1)
	s := newTestServer(t, Config{Sampler: &refSampler{g: g}, Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{3, 3}, Seed: 2}, BatchSize: 5, PrepareAt: 0}})
	path := serveUnix(t, s)
	refs := map[uint32]*epoch.Result{}
	for e := uint32(0); e < 4; e++ {
		refs[e], _ = host.Reference(g, train, []int{3, 3}, epoch.Key{Seed: 2, Epoch: e})
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := dial(t, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := uint32(0); e < 3; {
				b, err := c.NextBatch(e)
				if err != nil {
					var re *RemoteError
					if errors.As(err, &re) && re.Code == CodeUnknownEpoch {
						e++ // someone advanced past e+1 already
						continue
					}
					t.Error(err)
					return
				}
				if b.End {
					e++
					continue
				}
				want, _ := refs[e].Assemble(epoch.Batches(train, 5, 2, e)[b.Index], epoch.DGL)
				if !reflect.DeepEqual(b.Blocks, want) {
					t.Errorf("epoch %d batch %d assembled from the wrong epoch", e, b.Index)
					return
				}
			}
		}()
	}
	c := dial(t, path)
	for e := uint32(0); e < 2; e++ {
		time.Sleep(5 * time.Millisecond)
		if _, err := c.Advance(e); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
