package serve

import (
	"context"
	"sync"
)

// splitTable is a server's registered splits (Server's node and link
// splits, HeteroServer's typed ones): found by id, or by their content
// (key: asking again for the same split gets the same id), each holding a
// bound on what it keeps of the in-flight budget until it is dropped; the
// splits together hold at most 1/maxSplitShare of the budget and number
// at most MaxSplits. Ids are not reused: a dropped split's id stays
// unknown.
type splitTable[K comparable, V any] struct {
	mu      sync.Mutex
	byID    map[uint32]splitEntry[K, V]
	ids     map[K]uint32
	held    int64 // bytes the registered splits hold of the budget
	pending int   // registrations waiting for their bytes
	next    uint32
}

type splitEntry[K comparable, V any] struct {
	v    V
	key  K
	held int64
}

// add returns key's split: the one registered, or a new one, made by
// newSplit once need bytes of b are held for it (waiting for them until
// ctx ends or stop is closed); what names the split in an over-budget
// refusal ("120 nodes"). registered runs under the table's lock as a new
// split becomes visible. Errors are request errors: CodeOverBudget past
// MaxSplits or the splits' share, CodeShuttingDown when the wait stops,
// CodeBadRequest wrapping newSplit's error.
func (t *splitTable[K, V]) add(ctx context.Context, b *budget, stop <-chan struct{}, key K, need int64, what string,
	newSplit func() (V, error), registered func(V)) (uint32, V, error) {
	var zero V
	limit := b.size / maxSplitShare
	t.mu.Lock()
	if id, ok := t.ids[key]; ok {
		v := t.byID[id].v
		t.mu.Unlock()
		return id, v, nil
	}
	if len(t.byID)+t.pending >= MaxSplits {
		t.mu.Unlock()
		return 0, zero, newRequestError(CodeOverBudget, "split: the server holds %d splits, its most; drop one (drop_split) first", MaxSplits)
	}
	if t.held+need > limit {
		held := t.held
		t.mu.Unlock()
		return 0, zero, newRequestError(CodeOverBudget, "split: %s may keep %d bytes (with one epoch's sample), and the splits hold %d of their %d (a quarter of --max-inflight %d); drop one (drop_split) or raise --max-inflight",
			what, need, held, limit, b.size)
	}
	// Claimed under the lock, so that splits registered at once cannot
	// pass the limit together.
	t.held += need
	t.pending++
	t.mu.Unlock()
	unclaim := func() {
		t.mu.Lock()
		t.held -= need
		t.pending--
		t.mu.Unlock()
	}
	if err := b.acquire(ctx, stop, need); err != nil {
		unclaim()
		return 0, zero, newRequestError(CodeShuttingDown, "split: stopped waiting for the in-flight budget: %v", err)
	}
	v, err := newSplit()
	if err != nil {
		b.release(need)
		unclaim()
		return 0, zero, newRequestError(CodeBadRequest, "%v", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	if id, ok := t.ids[key]; ok {
		// Registered meanwhile by another request.
		t.held -= need
		b.release(need)
		return id, t.byID[id].v, nil
	}
	if t.byID == nil {
		t.byID, t.ids = make(map[uint32]splitEntry[K, V]), make(map[K]uint32)
	}
	id := t.next
	t.next++
	t.byID[id] = splitEntry[K, V]{v: v, key: key, held: need}
	t.ids[key] = id
	if registered != nil {
		registered(v)
	}
	return id, v, nil
}

// get returns split id.
func (t *splitTable[K, V]) get(id uint32) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	return e.v, ok
}

// drop forgets split id and gives back to b what it held; its id is
// unknown from then on (CodeUnknownSplit).
func (t *splitTable[K, V]) drop(id uint32, b *budget) error {
	t.mu.Lock()
	e, ok := t.byID[id]
	if ok {
		delete(t.byID, id)
		delete(t.ids, e.key)
		t.held -= e.held
	}
	t.mu.Unlock()
	if !ok {
		return newRequestError(CodeUnknownSplit, "unknown split %d", id)
	}
	b.release(e.held)
	return nil
}

// heldBytes returns the bytes the registered splits hold.
func (t *splitTable[K, V]) heldBytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held
}
