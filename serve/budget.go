package serve

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/pipeline"
)

// budget is a weighted semaphore over bytes: the server's budget for all
// in-flight request and reply bytes, or one connection's share of it.
// Waiters are served first come, first served, so that a large request is
// not starved by a stream of small ones. It also keeps the high-water
// mark, which tests and operators read through Server.Inflight.
type budget struct {
	size int64

	mu      sync.Mutex
	used    int64
	peak    int64
	waiters list.List // of *budgetWaiter, oldest first
}

type budgetWaiter struct {
	n     int64
	since time.Time     // when it began to wait (the janitor's measure of contention)
	ready chan struct{} // closed once the bytes are granted
}

func newBudget(size int64) *budget { return &budget{size: size} }

// acquire takes n bytes, waiting until they are free, until ctx is done or
// until stop is closed (whichever first; the bytes are then not taken). n
// must not exceed the budget's size: such a request could never be served.
func (b *budget) acquire(ctx context.Context, stop <-chan struct{}, n int64) error {
	if n > b.size {
		return fmt.Errorf("serve: %d bytes exceed the whole budget of %d", n, b.size)
	}
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.used+n <= b.size {
		b.takeLocked(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, since: time.Now(), ready: make(chan struct{})}
	el := b.waiters.PushBack(w)
	b.mu.Unlock()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-stop:
		err = errStopped
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while we were giving up: keep the bytes rather than
		// lose a grant; the caller has them.
		return nil
	default:
	}
	front := b.waiters.Front() == el
	b.waiters.Remove(el)
	if front {
		// The waiters behind us may fit now.
		b.wakeLocked()
	}
	return err
}

// tryAcquire takes n bytes if they are free now and nobody waits (a
// waiter is first in line), and reports whether it did. It is for what
// may be had some other way when the budget is busy: a shared-rows
// buffer, whose rows can travel in the reply instead.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiters.Len() > 0 || b.used+n > b.size {
		return false
	}
	b.takeLocked(n)
	return true
}

// oldestWait is how long the first waiter has waited (0: none waits).
func (b *budget) oldestWait(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if el := b.waiters.Front(); el != nil {
		return now.Sub(el.Value.(*budgetWaiter).since)
	}
	return 0
}

// errStopped is acquire's error when its stop channel closes.
var errStopped = fmt.Errorf("serve: stopped waiting for the in-flight budget")

// release gives back n bytes taken by acquire.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		b.mu.Unlock()
		panic("serve: budget released more than it holds")
	}
	b.wakeLocked()
	b.mu.Unlock()
}

func (b *budget) takeLocked(n int64) {
	b.used += n
	b.peak = max(b.peak, b.used)
}

// wakeLocked grants the oldest waiters while they fit, in order.
func (b *budget) wakeLocked() {
	for {
		el := b.waiters.Front()
		if el == nil {
			return
		}
		w := el.Value.(*budgetWaiter)
		if b.used+w.n > b.size {
			return
		}
		b.takeLocked(w.n)
		b.waiters.Remove(el)
		close(w.ready)
	}
}

// inUse returns the bytes held now and the most ever held at once.
func (b *budget) inUse() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// smallReply is what a request whose reply is not a minibatch reserves for
// it: an epoch_info or advance JSON object, an error or end marker.
const smallReply = 64 << 10

// replyBound bounds the size of a minibatch reply frame for n seeds and
// the given fanouts, before it is assembled: hop h has d destinations
// (the seeds, then the previous hop's sources), at most d·fanout edges
// (a full hop, fanout -1: fullBound's),
// and at most d + edges sources; numNodes (when > 0) caps the distinct
// nodes of a hop. Sums saturate at 1<<62.
func replyBound(n int64, fanouts []int, numNodes int64, edgeIDs bool) int64 {
	size, _ := minibatchBound(n, fanouts, numNodes, fullBound{}, edgeIDs)
	return size
}

// fullBound bounds the edges of a full hop (fanout epoch.AllNeighbors),
// whose rows are as long as its destinations' degrees: each of d
// destinations has at most maxDegree neighbors, and since a hop's
// destinations are distinct nodes, each edge of the graph is one of its
// edges at most once, so there are at most numEdges. A zero field is not
// known (the bound then saturates).
type fullBound struct{ maxDegree, numEdges int64 }

// edges bounds the edges of a full hop with d destinations.
func (f fullBound) edges(d int64) int64 {
	e := int64(1 << 62)
	if f.maxDegree > 0 {
		e = satMul(d, f.maxDegree)
	}
	if f.numEdges > 0 {
		e = min(e, f.numEdges)
	}
	return e
}

// hopEdges bounds the edges of a hop of fanout f with d destinations.
func (f fullBound) hopEdges(d int64, fanout int) int64 {
	if fanout == epoch.AllNeighbors {
		return f.edges(d)
	}
	return satMul(d, int64(fanout))
}

// fullBound is the server's: the graph's largest degree and edge count
// (Config.MaxDegree, Config.NumEdges).
func (s *Server) fullBound() fullBound {
	return fullBound{maxDegree: s.cfg.MaxDegree, numEdges: s.cfg.NumEdges}
}

// satAdd and satMul saturate at 1<<62 (their operands are at most that).
func satAdd(a, b int64) int64 {
	if a > 1<<62-b {
		return 1 << 62
	}
	return a + b
}
func satMul(a, b int64) int64 {
	if b != 0 && a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// minibatchBound is replyBound and a bound on the minibatch's nodes (its
// last hop's sources). It holds for both semantics: a PyG hop expands a
// part of what the DGL hop does.
func minibatchBound(n int64, fanouts []int, numNodes int64, full fullBound, edgeIDs bool) (size, nodes int64) {
	size = satAdd(HeaderSize+10+arrayHeaderSize, satMul(4, n))
	arrays, perEdge := int64(4), int64(8)
	if edgeIDs {
		arrays, perEdge = 5, 16
	}
	d := n
	for _, f := range fanouts {
		edges := full.hopEdges(d, f)
		src := satAdd(d, edges)
		if numNodes > 0 {
			src = min(src, numNodes)
		}
		hop := satAdd(satAdd(arrays*arrayHeaderSize, satMul(4, d)), satAdd(satMul(4, src), satMul(perEdge, edges)))
		size = satAdd(size, hop)
		d = src
	}
	return size, d
}

// replyBound is the package replyBound for this server, with the bytes of
// the feature rows (one per node) and labels a reply carries besides.
func (s *Server) replyBound(n int64) int64 {
	size, nodes := minibatchBound(n, s.cfg.Fanouts, s.cfg.NumNodes, s.fullBound(), s.cfg.EdgeIDs)
	if s.features == nil {
		return size
	}
	return s.withFeatures(size, nodes, n)
}

// withFeatures adds to a reply's size the features of rows rows and n
// seeds' labels.
func (s *Server) withFeatures(size, rows, n int64) int64 {
	return satAdd(size, satAdd(featuresHeaderSize, satAdd(satMul(rows, s.cfg.Features.RowBytes()), satMul(4, n))))
}

// claimBound is the bound of a claimed minibatch's reply: where its epoch
// has a feature plan, the rows it carries are known exactly (its node
// set), so only the blocks are bounded; replyBound otherwise. Rows are
// most of a reply with features, and their loose bound (every node of the
// last hop distinct) would let one request take a connection's whole share
// and keep a pipelining client to one minibatch at a time.
func (s *Server) claimBound(cl pipeline.Claim) int64 {
	fp := cl.Features()
	if s.features == nil || fp == nil || cl.Index < 0 || cl.Index >= fp.Plan.NumBatches() {
		return s.batchBound()
	}
	n := s.batchSeeds()
	size, _ := minibatchBound(n, s.cfg.Fanouts, s.cfg.NumNodes, s.fullBound(), s.cfg.EdgeIDs)
	return satAdd(s.withFeatures(size, int64(fp.Plan.Batch(cl.Index).Len()), n), linkBound(s.cfg.Link, int64(s.cfg.BatchSize)))
}

// batchSeeds bounds a training minibatch's seeds: BatchSize nodes, or in
// link mode the endpoints of BatchSize positives and their negatives.
func (s *Server) batchSeeds() int64 {
	n := int64(s.cfg.BatchSize)
	if l := s.cfg.Link; l != nil {
		n = satAdd(satMul(2, n), satMul(2, int64(l.NumNegatives(int(n)))))
		if s.cfg.NumNodes > 0 {
			n = min(n, s.cfg.NumNodes)
		}
	}
	return n
}

// batchBound bounds a training minibatch's reply.
func (s *Server) batchBound() int64 {
	return satAdd(s.replyBound(s.batchSeeds()), linkBound(s.cfg.Link, int64(s.cfg.BatchSize)))
}

// linkBound bounds the link section of a minibatch of p positives (0
// without link mode): its fixed part and arrays, 8 bytes an index, and
// the supervision edges' labels at 8 bytes each.
func linkBound(l *epoch.Link, p int64) int64 {
	if l == nil {
		return 0
	}
	neg := int64(l.NumNegatives(int(p)))
	return satAdd(linkFixedSize+6*(arrayHeaderSize+8), satMul(8, satAdd(satMul(4, p), satMul(3, neg))))
}
