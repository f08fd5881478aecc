package serve

import (
	"container/list"
	"context"
	"slices"
	"sync"
)

// A samplerGate gives the sampler to one user at a time. The streaming
// sampler holds one lock for a whole epoch or a whole walk set, so
// whoever takes it next decides who waits: left to the lock, a client
// pipelining walks would have them all run before another client's one
// walk, and the next epoch's preparation would wait behind all of them.
// The gate orders them instead: epoch (and split) sampling first, in
// arrival order, since every trainer waits on it; then walks, one per
// connection in turn (round robin), so that each connection's walks wait
// for at most one walk of every other connection at a time. Each walk's
// turn is bounded (Config.WalkTimeout, Config.MaxWalkLength), and a walk
// whose connection is gone leaves the line (its context ends).
type samplerGate struct {
	mu     sync.Mutex
	busy   bool
	first  list.List          // of *gateWaiter: epoch and split sampling
	queues map[any]*list.List // walks waiting, per owner (a connection)
	ring   []any              // owners with walks waiting, next turn first
}

type gateWaiter struct {
	owner any
	first bool
	ready chan struct{} // closed when the turn is granted
}

func newSamplerGate() *samplerGate { return &samplerGate{queues: map[any]*list.List{}} }

// enter waits for the sampler: for sampling an epoch when first is set,
// else for a walk of owner. It returns nil holding the turn (leave gives
// it back), or ctx's error without it.
func (g *samplerGate) enter(ctx context.Context, owner any, first bool) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{owner: owner, first: first, ready: make(chan struct{})}
	var el *list.Element
	if first {
		el = g.first.PushBack(w)
	} else {
		q := g.queues[owner]
		if q == nil {
			q = list.New()
			g.queues[owner] = q
			g.ring = append(g.ring, owner)
		}
		el = q.PushBack(w)
	}
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while giving up: pass the turn on.
		g.passLocked()
	default:
		g.removeLocked(w, el)
	}
	return ctx.Err()
}

// leave gives the turn to the next waiter.
func (g *samplerGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passLocked()
}

// passLocked hands the turn over: to the first epoch sampling waiting,
// else to the front walk of the owner whose turn it is (who then goes to
// the back of the ring); or marks the sampler free.
func (g *samplerGate) passLocked() {
	if el := g.first.Front(); el != nil {
		g.first.Remove(el)
		close(el.Value.(*gateWaiter).ready)
		return
	}
	if len(g.ring) == 0 {
		g.busy = false
		return
	}
	owner := g.ring[0]
	g.ring = g.ring[1:]
	q := g.queues[owner]
	w := q.Remove(q.Front()).(*gateWaiter)
	if q.Len() == 0 {
		delete(g.queues, owner)
	} else {
		g.ring = append(g.ring, owner)
	}
	close(w.ready)
}

// removeLocked takes a waiter that gave up out of line.
func (g *samplerGate) removeLocked(w *gateWaiter, el *list.Element) {
	if w.first {
		g.first.Remove(el)
		return
	}
	q := g.queues[w.owner]
	q.Remove(el)
	if q.Len() > 0 {
		return
	}
	delete(g.queues, w.owner)
	if i := slices.Index(g.ring, w.owner); i >= 0 {
		g.ring = slices.Delete(g.ring, i, i+1)
	}
}

// waiting returns how many wait: epoch samplings and walks.
func (g *samplerGate) waiting() (first, walks int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range g.queues {
		walks += q.Len()
	}
	return g.first.Len(), walks
}
