package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/walk"
)

// The tests of issue 22, "no client can starve the server": each
// reproduces one way a client could, on a small graph and short timeouts.

// lockedBackend samples epochs and walks under one lock, as the streaming
// sampler (host.Sampler) does, and logs who took the lock, in order:
// "e<epoch>" for an epoch's sampling, "w<start>" for a walk set (its
// first start). A walk takes perStep per step, and stops between steps
// when its context ends.
type lockedBackend struct {
	g       *host.CSR
	perStep time.Duration
	mu      sync.Mutex // the sampler's one lock

	logMu   sync.Mutex
	log     []string
	stopped chan error // each walk set's end: nil, or its context's error
}

func newLockedBackend(g *host.CSR, perStep time.Duration) *lockedBackend {
	return &lockedBackend{g: g, perStep: perStep, stopped: make(chan error, 64)}
}

func (b *lockedBackend) record(s string) {
	b.logMu.Lock()
	b.log = append(b.log, s)
	b.logMu.Unlock()
}

func (b *lockedBackend) events() []string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	return slices.Clone(b.log)
}

// waitEvents waits until the log has at least n entries.
func (b *lockedBackend) waitEvents(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if ev := b.events(); len(ev) >= n {
			return ev
		} else if time.Now().After(deadline) {
			t.Fatalf("%d events (%v), want %d", len(ev), ev, n)
		}
	}
}

// stop reports a walk set's end, unless nobody listens.
func (b *lockedBackend) stop(err error) {
	select {
	case b.stopped <- err:
	default:
	}
}

func (b *lockedBackend) SampleEpoch(ctx context.Context, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record(fmt.Sprintf("e%d", key.Epoch))
	return host.Reference(b.g, seeds, fanouts, key)
}

func (b *lockedBackend) WalksInto(ctx context.Context, starts []uint32, c walk.Config, out []int32) (*walk.Stats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record(fmt.Sprintf("w%d", starts[0]))
	for t := 0; t < c.Length; t++ {
		if err := ctx.Err(); err != nil {
			b.stop(err)
			return nil, err
		}
		time.Sleep(b.perStep)
	}
	st, err := walk.InMemory{Graph: b.g}.WalksInto(ctx, starts, c, out)
	b.stop(err)
	return st, err
}

// walksFrame is a walks request frame.
func walksFrame(id uint32, starts []uint32, c walk.Config) []byte {
	return AppendFrame(nil, OpWalks, StatusOK, id, AppendWalksRequest(nil, starts, c))
}

func lockedServer(t *testing.T, b *lockedBackend, cfg Config) *Server {
	t.Helper()
	cfg.Config = pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(400, 2), Fanouts: []int{3}}, BatchSize: 10, PrepareAt: 1}
	cfg.Sampler, cfg.Walk, cfg.NumNodes = b, b, 400
	return newTestServer(t, cfg)
}

// TestAbandonedWalkCancelled (issue 22, item 7): a client that sends a
// long walk and disconnects has it stopped at once (it held the sampler
// for its whole length: hours for a length of 30 M); the sampler is then
// free for the next epoch and other walks.
func TestAbandonedWalkCancelled(t *testing.T) {
	b := newLockedBackend(randomCSR(400, 6, 1), 5*time.Millisecond)
	s := lockedServer(t, b, Config{})
	path := serveUnix(t, s)
	b.waitEvents(t, 1) // epoch 0
	gone := rawConn(t, path)
	gone.Write(walksFrame(1, []uint32{7}, walk.Config{Length: 4000, WalksPerNode: 1})) // 20 s of steps
	b.waitEvents(t, 2)
	gone.Close()
	select {
	case err := <-b.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the abandoned walk ended with %v, want cancelled", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the walk of a client that disconnected still runs")
	}
	c := dial(t, path)
	start := time.Now()
	if info, err := c.Advance(CurrentEpoch); err != nil || info.Epoch != 1 {
		t.Fatalf("advance: %+v %v", info, err)
	}
	if _, _, err := c.Walks([]uint32{3}, walk.Config{Length: 2, WalksPerNode: 1}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the next epoch and a short walk took %v after the abandoned walk", d)
	}
}

// TestWalkBounds (issue 22, item 7): a walks request's work is bounded:
// longer than --max-walk-length is refused before anything runs, and one
// running past --walk-timeout is stopped (CodeTimedOut); the sampler is
// free again right after.
func TestWalkBounds(t *testing.T) {
	b := newLockedBackend(randomCSR(400, 6, 1), 2*time.Millisecond)
	s := lockedServer(t, b, Config{MaxWalkLength: 1000, WalkTimeout: 100 * time.Millisecond})
	c := dial(t, serveUnix(t, s))
	var re *RemoteError
	if _, _, err := c.Walks([]uint32{1}, walk.Config{Length: 1001, WalksPerNode: 1}); !errors.As(err, &re) || re.Code != CodeBadRequest || !strings.Contains(re.Message, "--max-walk-length") {
		t.Fatalf("a walk over the length limit: %v", err)
	}
	if ev := b.events(); len(ev) != 1 {
		t.Fatalf("the walker ran for a refused request: %v", ev)
	}
	start := time.Now()
	if _, _, err := c.Walks([]uint32{1}, walk.Config{Length: 1000, WalksPerNode: 1}); !errors.As(err, &re) || re.Code != CodeTimedOut || !strings.Contains(re.Message, "--walk-timeout") {
		t.Fatalf("a walk past the timeout: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("a walk with a 100 ms bound answered after %v", d)
	}
	if rows, cols, err := c.Walks([]uint32{1, 2}, walk.Config{Length: 3, WalksPerNode: 2}); err != nil || cols != 4 || len(rows) != 16 {
		t.Fatalf("a short walk after a timed-out one: %d rows of %d, %v", len(rows), cols, err)
	}
}

// TestWalksTakeTurns (issue 22, item 7): with one sampler, walks take
// turns across connections, and the next epoch's sampling goes first: a
// client pipelining eight walks delays another client's walk, and an
// advance, by at most the walk that is running.
func TestWalksTakeTurns(t *testing.T) {
	b := newLockedBackend(randomCSR(400, 6, 1), 2*time.Millisecond)
	s := lockedServer(t, b, Config{})
	path := serveUnix(t, s)
	b.waitEvents(t, 1)
	busy := rawConn(t, path)
	for i := range uint32(8) {
		busy.Write(walksFrame(i, []uint32{1}, walk.Config{Length: 25, WalksPerNode: 1})) // 50 ms each
	}
	b.waitEvents(t, 2) // its first walk runs
	waitFor(t, "the busy client's walks to queue", func() bool { _, walks := s.gate.waiting(); return walks == 7 })
	other := dial(t, path)
	advanced := make(chan error, 1)
	go func() {
		// PrepareAt 1: epoch 1 is not prepared yet; the advance samples it.
		_, err := dial(t, path).Advance(CurrentEpoch)
		advanced <- err
	}()
	waitFor(t, "the advance to queue", func() bool { first, _ := s.gate.waiting(); return first == 1 })
	if _, _, err := other.Walks([]uint32{2}, walk.Config{Length: 3, WalksPerNode: 1}); err != nil {
		t.Fatal(err)
	}
	if err := <-advanced; err != nil {
		t.Fatal(err)
	}
	for range 8 {
		f, _, err := ReadFrame(busy, MaxReply, nil)
		if err != nil || f.Status != StatusOK {
			t.Fatalf("pipelined walk: %+v %v", f, err)
		}
	}
	ev := b.events()
	t.Logf("turns on the sampler: %v", ev)
	if i := slices.Index(ev, "e1"); i < 0 || i > 3 {
		t.Errorf("epoch 1 sampled at turn %d of %v: it waited for more than the running walk", i, ev)
	}
	if i := slices.Index(ev, "w2"); i < 0 || i > 4 {
		t.Errorf("the other client's walk ran at turn %d of %v: it waited for more than one walk of the busy client", i, ev)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// countingWalker is walk.InMemory counting the walk sets it runs.
type countingWalker struct {
	walk.InMemory
	runs atomic.Int32
}

func (w *countingWalker) WalksInto(ctx context.Context, starts []uint32, c walk.Config, out []int32) (*walk.Stats, error) {
	w.runs.Add(1)
	return w.InMemory.WalksInto(ctx, starts, c, out)
}

// startsUpTo is 0, 1, ..., n-1.
func startsUpTo(n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(i)
	}
	return s
}

// TestWalkRepliesReservedBeforeWalking (issue 22, item 8): five
// connections that never read each send eight walks whose replies are
// 1.1 MB; the budget is 4 MiB. Each walk reserves its reply's size before
// it runs, so only the walks whose replies fit are walked (three), where
// all forty were (44 MB of replies held against a 4 MiB budget), and a
// walk that could never fit a connection's share is refused before it
// runs.
func TestWalkRepliesReservedBeforeWalking(t *testing.T) {
	g := randomCSR(400, 6, 2)
	w := &countingWalker{InMemory: walk.InMemory{Graph: g}}
	const budgetSize = 4 << 20
	s := newTestServer(t, Config{
		Config:  pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(400, 2), Fanouts: []int{3}}, BatchSize: 10},
		Sampler: &refSampler{g: g}, Walk: w, NumNodes: 400, MaxRequest: 64 << 10, MaxInflight: budgetSize,
	})
	path := serveUnix(t, s)
	c := dial(t, path)
	var re *RemoteError
	if _, _, err := c.Walks(startsUpTo(400), walk.Config{Length: 100, WalksPerNode: 20}); !errors.As(err, &re) || re.Code != CodeOverBudget {
		t.Fatalf("a walk whose reply exceeds a connection's share: %v", err)
	}
	if n := w.runs.Load(); n != 0 {
		t.Fatalf("the walker ran for a request refused as over budget (%d runs)", n)
	}
	wc := walk.Config{Length: 10, WalksPerNode: 250, Seed: 3}
	starts := startsUpTo(100)
	reply := walksReplySize(len(starts), wc)
	for c := range 5 {
		nc := rawConn(t, path)
		for i := range 8 {
			nc.Write(walksFrame(uint32(c*8+i), starts, wc))
		}
	}
	// Let whatever the budget admits run.
	for last, stable := int32(-1), 0; stable < 30; time.Sleep(10 * time.Millisecond) {
		if n := w.runs.Load(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	now, peak := s.Inflight()
	t.Logf("%d of 40 walk sets run (replies of %d bytes); in flight %d, peak %d of %d", w.runs.Load(), reply, now, peak, budgetSize)
	if n := int64(w.runs.Load()); n > budgetSize/reply || n == 0 {
		t.Errorf("%d walk sets of %d-byte replies run for nobody reading, a budget of %d holds %d", n, reply, budgetSize, budgetSize/reply)
	}
	if peak > budgetSize {
		t.Errorf("accounted bytes peaked at %d, over the budget %d", peak, budgetSize)
	}
}

// TestUnreadRepliesDoNotFreezeOthers (issue 22, item 9): three clients
// leave a walk reply of 2 MB unread against a 6 MiB budget; the third's
// reservation waits first in line, and everyone else's requests behind it
// (for the 30 minutes a reply may wait for its reader). Now epoch_info is
// answered at once (control requests have a pool of their own), and once
// a request has waited StallTimeout, the connections whose replies moved
// no byte for as long are closed, so that next_batch is served too. A
// client that stops reading while nobody waits keeps its connection.
func TestUnreadRepliesDoNotFreezeOthers(t *testing.T) {
	g := randomCSR(400, 6, 2)
	w := &countingWalker{InMemory: walk.InMemory{Graph: g}}
	const stall = 300 * time.Millisecond
	s := newTestServer(t, Config{
		Config:  pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(400, 2), Fanouts: []int{3}}, BatchSize: 10},
		Sampler: &refSampler{g: g}, Walk: w, NumNodes: 400, MaxRequest: 64 << 10, MaxInflight: 6 << 20,
		StallTimeout: stall,
	})
	path := serveUnix(t, s)
	wc := walk.Config{Length: 10, WalksPerNode: 500, Seed: 3} // 2.2 MB replies: two fit in 6 MiB
	starts := startsUpTo(100)

	// Alone, a client that does not read keeps its connection.
	paused := rawConn(t, path)
	paused.Write(walksFrame(1, starts, wc))
	waitFor(t, "the first walk", func() bool { return w.runs.Load() == 1 })
	time.Sleep(3 * stall)
	if f, _, err := ReadFrame(paused, MaxReply, nil); err != nil || f.Status != StatusOK {
		t.Fatalf("a paused client's reply, nobody else waiting: %+v %v", f, err)
	}

	abusers := make([]net.Conn, 3)
	for i := range abusers {
		abusers[i] = rawConn(t, path)
		abusers[i].Write(walksFrame(uint32(i), starts, wc))
	}
	waitFor(t, "two walks run and the third waiting", func() bool {
		return w.runs.Load() == 1+2 && s.budget.oldestWait(time.Now()) > 0
	})
	c := dial(t, path)
	start := time.Now()
	if _, err := c.EpochInfo(); err != nil {
		t.Fatal(err)
	}
	infoLatency := time.Since(start)
	start = time.Now()
	if b, err := c.NextBatch(CurrentEpoch); err != nil || b.End {
		t.Fatalf("next_batch: %+v %v", b, err)
	}
	batchLatency := time.Since(start)
	t.Logf("behind unread 2.2 MB walk replies: epoch_info %v, next_batch %v (stall timeout %v)", infoLatency, batchLatency, stall)
	if infoLatency > time.Second {
		t.Errorf("epoch_info took %v behind unread replies", infoLatency)
	}
	if batchLatency > 10*stall+2*time.Second {
		t.Errorf("next_batch took %v behind unread replies, stall timeout %v", batchLatency, stall)
	}
	// At least one of the two whose replies held the budget was closed
	// (the second too if its reply had stalled as long by then; the third
	// reply, written since, waits for its reader: nobody waits for its
	// bytes).
	evicted := 0
	for _, a := range abusers {
		a.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := io.Copy(io.Discard, a); err == nil {
			evicted++ // read to the end: the server closed it
		}
	}
	if evicted < 1 || evicted > 2 {
		t.Errorf("%d of the connections holding unread replies closed, want one or two", evicted)
	}
}

// TestSplitsBudgeted (issue 22, item 11): splits lived for ever and were
// not counted (63 splits of every node held 810 MB). Now each holds a
// bound on what it keeps (splitBytes) of the in-flight budget, the splits
// together at most a quarter of it and MaxSplits of them; a split past
// either is refused (CodeOverBudget, naming drop_split), and drop_split
// gives its bytes back and makes its id unknown.
func TestSplitsBudgeted(t *testing.T) {
	g := randomCSR(2000, 8, 9)
	const budgetSize = 4 << 20
	s := newTestServer(t, Config{
		Config:  pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2000, 4), Fanouts: []int{4, 3}, Seed: 7}, BatchSize: 40},
		Sampler: &refSampler{g: g}, NumNodes: 2000, MaxRequest: 64 << 10, MaxInflight: budgetSize,
	})
	c := dial(t, serveUnix(t, s))
	per := s.splitBytes(2000)
	fit := int(budgetSize / maxSplitShare / per)
	if fit < 2 || fit >= MaxSplits {
		t.Fatalf("%d splits of every node fit (each %d bytes): the test needs a few", fit, per)
	}
	// Every node, in a different order each time: distinct splits.
	var ids []uint32
	var re *RemoteError
	for i := 0; ; i++ {
		nodes := startsUpTo(2000)
		nodes[0], nodes[i+1] = nodes[i+1], nodes[0]
		info, err := c.Split(nodes, 100)
		if err != nil {
			if !errors.As(err, &re) || re.Code != CodeOverBudget || !strings.Contains(re.Message, "drop_split") {
				t.Fatalf("split %d: %v, want over budget naming drop_split", i, err)
			}
			break
		}
		ids = append(ids, info.Split)
		if i > MaxSplits {
			t.Fatalf("%d splits of every node registered against a budget of %d", len(ids), budgetSize)
		}
	}
	// The last reply's bytes are given back just after it is written.
	waitFor(t, "the replies' bytes to be given back", func() bool { now, _ := s.Inflight(); return now == splitHeld(s) })
	now, peak := s.Inflight()
	t.Logf("%d splits of 2000 nodes registered (%d bytes each, %d in all); in flight %d, peak %d of %d", len(ids), per, splitHeld(s), now, peak, budgetSize)
	if len(ids) != fit || now != int64(fit)*per || peak > budgetSize {
		t.Fatalf("%d splits hold %d bytes (peak %d), want %d holding %d", len(ids), now, peak, fit, int64(fit)*per)
	}
	if b, err := c.SplitBatch(ids[1], 3, DefaultSemantics); err != nil || b.End || len(b.Blocks.Seeds) != 100 {
		t.Fatalf("a minibatch of a registered split: %v", err)
	}
	if err := c.DropSplit(ids[1]); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{c.DropSplit(ids[1]), func() error { _, err := c.SplitBatch(ids[1], 0, DefaultSemantics); return err }()} {
		if !errors.As(err, &re) || re.Code != CodeUnknownSplit {
			t.Fatalf("a dropped split: %v, want unknown split", err)
		}
	}
	info, err := c.Split(startsUpTo(2000), 100)
	if err != nil || slices.Contains(ids, info.Split) {
		t.Fatalf("a split after one was dropped: %+v %v (ids %v: not reused)", info, err, ids)
	}
	for _, id := range append(ids, info.Split) {
		if id != ids[1] {
			if err := c.DropSplit(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "every byte to be given back", func() bool { now, _ := s.Inflight(); return now == 0 })
	if now, _ := s.Inflight(); now != 0 || splitHeld(s) != 0 {
		t.Fatalf("%d bytes held (%d by splits) once every split is dropped", now, splitHeld(s))
	}
	// The count is bounded too: MaxSplits splits of one node each.
	for i := range MaxSplits {
		if _, err := c.Split([]uint32{uint32(i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Split([]uint32{MaxSplits}, 1); !errors.As(err, &re) || re.Code != CodeOverBudget || !strings.Contains(re.Message, "drop_split") {
		t.Fatalf("split %d: %v, want over budget", MaxSplits+1, err)
	}
}

func splitHeld(s *Server) int64 {
	return s.splits.heldBytes()
}
