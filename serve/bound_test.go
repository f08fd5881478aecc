package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
)

// TestReplyBound: the bound is exact for a minibatch whose nodes have
// fanout distinct new neighbors each, and never below a real reply's size.
func TestReplyBound(t *testing.T) {
	// Seed 5 with neighbors 8 and 9: the 106-byte reply of the frame
	// layout (10 header + 10 + seeds 14 + dst 14 + src 22 + 2 × 18 edges),
	// and 106 + 26 with edge ids (an i64 array of 2).
	b := &epoch.Blocks{Seeds: []uint32{5}, Hops: []epoch.Hop{{Dst: []uint32{5}, Src: []uint32{5, 8, 9}, EdgeSrc: []int32{1, 2}, EdgeDst: []int32{0, 0}}}}
	if got, want := replyBound(1, []int{2}, 0, false), int64(len(MarshalBlocks(OpSample, 1, b, NoBatch))); got != want || want != 106 {
		t.Fatalf("replyBound(1, [2]) = %d, exact reply %d (want 106)", got, want)
	}
	b.Hops[0].EdgeIDs = []int64{40, 41}
	if got, want := replyBound(1, []int{2}, 0, true), int64(len(MarshalBlocks(OpSample, 1, b, NoBatch))); got != want || want != 106+26 {
		t.Fatalf("replyBound(1, [2]) with edge ids = %d, exact reply %d (want 132)", got, want)
	}
	if got := replyBound(1, []int{2}, 2, false); got != 106-4 {
		t.Fatalf("replyBound capped at 2 nodes = %d, want %d", got, 106-4)
	}
	if got := replyBound(1<<40, []int{1 << 20, 1 << 20, 1 << 20}, 0, true); got != 1<<62 {
		t.Fatalf("huge bound = %d, want saturation at 1<<62", got)
	}

	g := randomCSR(2000, 12, 3)
	train := trainNodes(2000, 1)
	r := rand.New(rand.NewPCG(4, 4))
	for _, fanouts := range [][]int{{3}, {5, 3}, {10, 10, 10}, {1, 25}} {
		ref, err := host.Reference(g, train, fanouts, epoch.Key{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 7, 64, 1000} {
			seeds := append([]uint32(nil), ref.Frontier(0)...)
			r.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
			for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
				blocks, err := epoch.NewAssembler(ref, nil).Assemble(seeds[:n], sem)
				if err != nil {
					t.Fatal(err)
				}
				size := int64(len(MarshalBlocks(OpNextBatch, 1, blocks, 0)))
				for _, nodes := range []int64{0, 2000} {
					if bound := replyBound(int64(n), fanouts, nodes, false); bound < size {
						t.Errorf("%v fanouts %v, %d seeds, %d nodes: bound %d below the reply's %d bytes", sem, fanouts, n, nodes, bound, size)
					}
				}
			}
		}
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, nil, 101); err == nil {
		t.Fatal("acquired more than the budget")
	}
	if err := b.acquire(ctx, nil, 60); err != nil {
		t.Fatal(err)
	}
	// First come, first served: 50 waits, and so does 10 behind it
	// although 10 would fit.
	order := make(chan int64, 2)
	for _, n := range []int64{50, 10} {
		go func() {
			if err := b.acquire(ctx, nil, n); err != nil {
				t.Error(err)
			}
			order <- n
		}()
		for {
			b.mu.Lock()
			queued := b.waiters.Len()
			b.mu.Unlock()
			if (n == 50 && queued == 1) || (n == 10 && queued == 2) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	select {
	case n := <-order:
		t.Fatalf("%d granted while 60 of 100 are held and 50 waits first", n)
	case <-time.After(20 * time.Millisecond):
	}
	b.release(60)
	if a, c := <-order, <-order; a+c != 60 {
		t.Fatalf("granted %d and %d, want 50 and 10", a, c)
	}
	if used, peak := b.inUse(); used != 60 || peak != 60 {
		t.Fatalf("in use %d, peak %d; want 60, 60", used, peak)
	}
	// A waiter that gives up takes nothing, and unblocks those behind it.
	stop := make(chan struct{})
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- b.acquire(ctx, stop, 90) }()
	time.Sleep(5 * time.Millisecond)
	small := make(chan error, 1)
	go func() { small <- b.acquire(ctx, nil, 40) }()
	time.Sleep(5 * time.Millisecond)
	close(stop)
	if err := <-gaveUp; !errors.Is(err, errStopped) {
		t.Fatalf("stopped waiter: %v", err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	b.release(100)
	if used, _ := b.inUse(); used != 0 {
		t.Fatalf("%d bytes still held", used)
	}
}

// rss returns the process's resident set size in bytes.
func rss(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// TestManyMaximumRequestsBounded: 100 connections each send a
// maximum-size sample request at once. The server's accounted in-flight
// bytes never exceed --max-inflight (the readers wait instead), every
// request is answered, all bytes are given back, and the process's RSS
// grows by a bounded amount (without the budget: 100 × 2 MiB of frames
// and decoded seeds at once, plus the assembler's scratch).
func TestManyMaximumRequestsBounded(t *testing.T) {
	const (
		conns      = 100
		maxRequest = 1 << 20
		budgetSize = 40 << 20
	)
	g := randomCSR(300, 4, 8)
	s := newTestServer(t, Config{
		Sampler: &refSampler{g: g}, MaxRequest: maxRequest, MaxInflight: budgetSize,
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(300, 1), Fanouts: []int{2}}, BatchSize: 8},
	})
	path := serveUnix(t, s)
	// The largest sample the cap admits; node 1 over and over, so that it
	// is refused as a duplicate after being read, decoded and checked.
	n := (maxRequest - HeaderSize - 4 - arrayHeaderSize) / 4
	seeds := make([]uint32, n)
	for i := range seeds {
		seeds[i] = 1
	}
	frame := AppendFrame(nil, OpSample, 0, 7, AppendSampleRequest(nil, CurrentEpoch, seeds, DefaultSemantics))
	if len(frame) != maxRequest {
		t.Fatalf("frame of %d bytes, want the cap %d", len(frame), maxRequest)
	}
	perRequest := (&conn{s: s}).estimate(Frame{Op: OpSample}, len(frame)-HeaderSize)
	if perRequest > s.connSize || 3*perRequest > budgetSize || 5*perRequest < budgetSize {
		t.Fatalf("each request reserves %d bytes: want 3 to 5 to fit in %d", perRequest, budgetSize)
	}
	ncs := make([]net.Conn, conns)
	for i := range ncs {
		ncs[i] = rawConn(t, path)
		ncs[i].SetDeadline(time.Now().Add(2 * time.Minute))
	}

	before := rss(t)
	var peakRSS atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peakRSS.Store(max(peakRSS.Load(), rss(t)))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var answered atomic.Int32
	for _, nc := range ncs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := nc.Write(frame); err != nil {
				t.Error(err)
				return
			}
			f, _, err := ReadFrame(nc, MaxReply, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if f.ID != 7 || f.Status != StatusError || DecodeError(f.Payload).Code != CodeDuplicateSeed {
				t.Errorf("reply %+v %v, want a duplicate-seed error", f, DecodeError(f.Payload))
				return
			}
			answered.Add(1)
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if answered.Load() != conns {
		t.Fatalf("%d of %d requests answered", answered.Load(), conns)
	}
	now, peak := s.Inflight()
	t.Logf("in flight: peak %d bytes (budget %d, %d per request); RSS %d → peak %d MiB", peak, budgetSize, perRequest, before>>20, peakRSS.Load()>>20)
	if peak > budgetSize {
		t.Errorf("accounted in-flight bytes peaked at %d, over the budget %d", peak, budgetSize)
	}
	if peak < 2*perRequest {
		t.Errorf("peak %d: requests never overlapped (each %d bytes); the test did not load the server", peak, perRequest)
	}
	for deadline := time.Now().Add(5 * time.Second); now != 0 && time.Now().Before(deadline); now, _ = s.Inflight() {
		time.Sleep(time.Millisecond) // the last replies' bytes are given back after the write
	}
	if now != 0 {
		t.Errorf("%d bytes still accounted after every reply", now)
	}
	// Loosely: what is live stays well under the accounted bytes (the
	// reply bound is not filled: the requests are refused), so the budget
	// and some runtime slack bound the growth. Without the budget (a
	// budget of 100×) the same run grows by about 125 MiB.
	if growth := peakRSS.Load() - before; raceEnabled {
		t.Logf("RSS grew %d MiB (not checked under the race detector)", growth>>20)
	} else if limit := int64(budgetSize + 16<<20); growth > limit {
		t.Errorf("RSS grew %d MiB, want under %d MiB (the budget and 16 MiB)", growth>>20, limit>>20)
	}
}

// TestReplyHeldUntilWritten: a reply's bytes stay accounted until the
// client reads it, and another connection's request that does not fit
// meanwhile waits (it is not refused), then is served.
func TestReplyHeldUntilWritten(t *testing.T) {
	g := randomCSR(40000, 8, 9)
	train := trainNodes(40000, 1)
	cfg := Config{
		Sampler: &refSampler{g: g}, MaxRequest: 1 << 10,
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: train, Fanouts: []int{8}}, BatchSize: 20000},
	}
	bound := replyBound(20000, []int{8}, 0, false)
	// One next_batch's bound at a time, on any connection.
	cfg.MaxInflight = bound + bound/2
	cfg.MaxConnInflight = cfg.MaxInflight
	s := newTestServer(t, cfg)
	path := serveUnix(t, s)
	slow := rawConn(t, path)
	slow.Write(AppendFrame(nil, OpNextBatch, 0, 1, AppendEpochRequest(nil, CurrentEpoch)))
	// The reply (about a megabyte) overfills the socket buffers: the
	// server holds its size until slow reads it.
	// Wait for the reservation of its bound to be traded for its size.
	var held int64
	for deadline := time.Now().Add(10 * time.Second); (held == 0 || held > bound) && time.Now().Before(deadline); held, _ = s.Inflight() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if again, _ := s.Inflight(); again != held {
		t.Fatalf("accounted bytes moved from %d to %d while the reply is unread", held, again)
	}
	if held < 500<<10 || held > bound {
		t.Fatalf("%d bytes accounted for an unread minibatch reply, want its size (bound %d)", held, bound)
	}
	other := dial(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := other.NextBatch(CurrentEpoch)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a request over the budget was answered (%v) while the first reply is unread", err)
	case <-time.After(100 * time.Millisecond):
	}
	f, _, err := ReadFrame(slow, MaxReply, nil)
	if err != nil || f.Status != StatusOK || f.ID != 1 {
		t.Fatalf("slow reader's reply: %+v %v", f, err)
	}
	if int64(len(f.Payload)+HeaderSize) != held {
		t.Errorf("accounted %d bytes for a %d-byte reply", held, len(f.Payload)+HeaderSize)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting request: %v", err)
	}
}

// TestSampleOverBudget: a sample whose reply bound exceeds a connection's
// share is refused with CodeOverBudget and the connection stays usable.
func TestSampleOverBudget(t *testing.T) {
	g := randomCSR(100, 4, 10)
	s := newTestServer(t, Config{
		Sampler: &refSampler{g: g}, MaxRequest: 1 << 16, MaxInflight: 1 << 18,
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(100, 1), Fanouts: []int{10, 10}}, BatchSize: 4},
	})
	c := dial(t, serveUnix(t, s))
	var re *RemoteError
	if _, err := c.Sample(CurrentEpoch, make([]uint32, 10000)); !errors.As(err, &re) || re.Code != CodeOverBudget || !strings.Contains(re.Message, "--max-inflight") {
		t.Fatalf("sample of 10000 seeds: %v, want over budget naming --max-inflight", err)
	}
	if b, err := c.Sample(CurrentEpoch, []uint32{1, 2, 3}); err != nil || len(b.Seeds) != 3 {
		t.Fatalf("connection unusable after an over-budget request: %v", err)
	}
}

func TestConfigBudgetErrors(t *testing.T) {
	smp := &refSampler{g: randomCSR(10, 2, 7)}
	base := pipeline.Config{Sampling: epoch.Sampling{Train: []uint32{1}, Fanouts: []int{1}}, BatchSize: 1}
	for name, cfg := range map[string]Config{
		"budget below a request": {Sampler: smp, Config: base, MaxRequest: 1 << 20, MaxInflight: 1 << 20},
		"share over the budget":  {Sampler: smp, Config: base, MaxInflight: 1 << 30, MaxConnInflight: 1 << 31},
		"token too long":         {Sampler: smp, Config: base, Token: bytes.Repeat([]byte("x"), MaxToken+1)},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}
