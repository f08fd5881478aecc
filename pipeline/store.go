package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/statedir"
)

var (
	// ErrNotPrepared is returned by Store.Advance when no next epoch was
	// prepared.
	ErrNotPrepared = errors.New("pipeline: next epoch not prepared")
	// ErrNoCurrent is returned by Store.Current and Store.Assemble before any
	// epoch has been made current.
	ErrNoCurrent = errors.New("epoch: no current epoch")
	// ErrNotCurrent is returned by Store.AssembleAt for an epoch that is not
	// (or no longer) the current one.
	ErrNotCurrent = errors.New("epoch: epoch is not current")
	// ErrAlreadyPreparing is returned by Store.Prepare while a next epoch
	// is being prepared or is prepared and not yet advanced to.
	ErrAlreadyPreparing = errors.New("epoch: next epoch already preparing or prepared")
)

// DefaultIndexBudget is the most memory a Store spends on a Result's
// position index (Result.Index) by default; above it, Sample binary-searches.
const DefaultIndexBudget = 512 << 20

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithIndexBudget sets the memory a Store may spend on each resident
// epoch's index (Result.DenseIndexBytes: 1.33 bits per node per layer),
// and on one goroutine's relabel table over every node id
// (epoch.RelabelTableBytes: 8 bytes per node up to 2^24 nodes) where it
// fits too; 0 disables the index, and Sample then binary-searches the
// frontiers and relabels through a hash table.
func WithIndexBudget(bytes int64) StoreOption { return func(s *Store) { s.indexBudget = bytes } }

// WithNumNodes sizes the index for a graph of n nodes instead of
// max(Final)+1 (the same lookups; only useful to bound memory up front).
func WithNumNodes(n uint32) StoreOption { return func(s *Store) { s.numNodes = n } }

// WithTxn commits every prepared epoch through tx (over any stale copy a
// killed run left) before it can become current, and records CURRENT and
// prunes older epochs of tx's directory on Advance. The caller closes tx
// after the Store's last use.
func WithTxn(tx *statedir.Txn) StoreOption { return func(s *Store) { s.txn = tx } }

// Store keeps two epochs resident: the current one, which Sample reads,
// and the next one, which Prepare fills in the background. Sample may be
// called from any number of goroutines, concurrently with Prepare and
// Advance: Advance swaps an atomic pointer, and a Sample that began before
// the swap finishes on the epoch it started with.
type Store struct {
	cur atomic.Pointer[resident]

	mu   sync.Mutex
	next *pending

	asm sync.Pool // *epoch.Assembler, scratch space reused across calls

	indexBudget int64
	numNodes    uint32
	txn         *statedir.Txn
}

// resident is a Result with its optional index.
type resident struct {
	r  *epoch.Result
	ix *epoch.Index
}

// pending is one Prepare in flight or done.
type pending struct {
	key    epoch.Key
	done   chan struct{}
	cancel context.CancelFunc
	res    *resident
	err    error
}

// NewStore returns an empty Store.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{indexBudget: DefaultIndexBudget}
	for _, o := range opts {
		o(s)
	}
	return s
}

// install builds the index for r when it fits the budget.
func (s *Store) install(r *epoch.Result) (*resident, error) {
	if r == nil {
		return nil, errors.New("epoch: nil result")
	}
	res := &resident{r: r}
	// The budget covers the index and one Assembler's relabel table over
	// every node id; each further concurrent Sample holds another table.
	// Where only the index fits, assemblers relabel through tables sized
	// by the minibatch instead.
	n := s.numNodes
	if n == 0 {
		n = r.NumNodes()
	}
	if ixBytes := r.DenseIndexBytes(n); s.indexBudget > 0 && len(r.Layers) > 0 && ixBytes <= s.indexBudget {
		ix, err := r.Index(s.numNodes, indexOptions(ixBytes, n, runtime.GOMAXPROCS(0), s.indexBudget, memavail.Available())...)
		if err != nil {
			return nil, err
		}
		res.ix = ix
	}
	return res, nil
}

// indexOptions are the options of an index of ixBytes over n node ids
// that assemblers goroutines read at once: a relabel table over every
// node id for each of them (epoch.RelabelTableBytes) only where they fit
// the budget beside the index, and where they fit what memory this
// process may still use (a quarter of avail, memavail.Available), as each
// goroutine holds its own. Otherwise assemblers relabel through tables
// sized by the minibatch. On 16 cores a scale-22 epoch's 16 tables of
// 32 MiB each, twice over (the feature plan's node sets, then the
// minibatches), took a server out of its 1 GiB cgroup (OOM-killed before
// its first minibatch, docs/PERFORMANCE.md).
func indexOptions(ixBytes int64, n uint32, assemblers int, budget, avail int64) []epoch.IndexOption {
	if avail > 0 {
		budget = min(budget, avail/4)
	}
	if ixBytes+int64(max(assemblers, 1))*epoch.RelabelTableBytes(n) > budget {
		return []epoch.IndexOption{epoch.WithoutRelabelTable()}
	}
	return nil
}

// SetCurrent makes r the current epoch directly (for a Result loaded with
// Read, say), leaving any preparation alone.
func (s *Store) SetCurrent(r *epoch.Result) error {
	res, err := s.install(r)
	if err != nil {
		return err
	}
	s.cur.Store(res)
	return nil
}

// Current returns the current epoch's Result, or ErrNoCurrent.
func (s *Store) Current() (*epoch.Result, error) {
	c := s.cur.Load()
	if c == nil {
		return nil, ErrNoCurrent
	}
	return c.r, nil
}

// Assemble assembles a minibatch from the current epoch with DGL semantics.
func (s *Store) Assemble(seeds []uint32) (*epoch.Blocks, error) {
	c := s.cur.Load()
	if c == nil {
		return nil, ErrNoCurrent
	}
	return s.assembleFrom(c, seeds, epoch.DGL)
}

// AssembleAt is Assemble pinned to epoch e, with the given semantics: it fails with ErrNotCurrent
// (naming both epochs) when the current epoch is another, so that a
// minibatch cut from epoch e's order is never assembled from the next
// epoch's samples after an Advance.
func (s *Store) AssembleAt(e uint32, seeds []uint32, sem epoch.Semantics) (*epoch.Blocks, error) {
	c, err := s.at(e)
	if err != nil {
		return nil, err
	}
	return s.assembleFrom(c, seeds, sem)
}

// at returns the current epoch, which must be e.
func (s *Store) at(e uint32) (*resident, error) {
	c := s.cur.Load()
	if c == nil {
		return nil, ErrNoCurrent
	}
	if c.r.Key.Epoch != e {
		return nil, fmt.Errorf("%w: asked for epoch %d, current is %d", ErrNotCurrent, e, c.r.Key.Epoch)
	}
	return c, nil
}

func (s *Store) assembleFrom(c *resident, seeds []uint32, sem epoch.Semantics) (b *epoch.Blocks, err error) {
	s.withAssembler(c, func(a *epoch.Assembler) { b, err = a.Assemble(seeds, sem) })
	return b, err
}

// NodeSetAt returns the node set of seeds' minibatch under sem from epoch
// e (Assembler.NodeSet), which must be current as for AssembleAt.
func (s *Store) NodeSetAt(e uint32, seeds []uint32, sem epoch.Semantics) (nodes []uint32, err error) {
	c, err := s.at(e)
	if err != nil {
		return nil, err
	}
	s.withAssembler(c, func(a *epoch.Assembler) { nodes, err = a.NodeSet(seeds, sem, nil) })
	return nodes, err
}

// withAssembler runs fn with a pooled Assembler over c.
func (s *Store) withAssembler(c *resident, fn func(a *epoch.Assembler)) {
	a, _ := s.asm.Get().(*epoch.Assembler)
	if a == nil {
		a = &epoch.Assembler{}
	}
	a.Reset(c.r, c.ix)
	fn(a)
	a.Reset(nil, nil) // do not keep an old epoch alive from the pool
	s.asm.Put(a)
}

// Prepare starts fn in a goroutine to build the epoch named by key, which
// becomes the next epoch. ctx bounds the preparation (it is passed to fn);
// Discard cancels it. The Result must carry key. Prepare fails with
// ErrAlreadyPreparing while another next epoch is pending or ready.
func (s *Store) Prepare(ctx context.Context, key epoch.Key, fn func(ctx context.Context) (*epoch.Result, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next != nil {
		return fmt.Errorf("%w (epoch %d)", ErrAlreadyPreparing, s.next.key.Epoch)
	}
	cctx, cancel := context.WithCancel(ctx)
	p := &pending{key: key, done: make(chan struct{}), cancel: cancel}
	s.next = p
	go func() {
		defer close(p.done)
		defer cancel()
		p.res, p.err = s.build(cctx, key, fn)
	}()
	return nil
}

// build runs fn and readies its Result: key check, index, persistence.
func (s *Store) build(ctx context.Context, key epoch.Key, fn func(ctx context.Context) (*epoch.Result, error)) (res *resident, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("epoch: preparing epoch %d: panic: %v", key.Epoch, r)
		}
	}()
	r, err := fn(ctx)
	if err != nil {
		return nil, fmt.Errorf("epoch: preparing epoch %d: %w", key.Epoch, err)
	}
	if r == nil {
		return nil, fmt.Errorf("epoch: preparing epoch %d: no result", key.Epoch)
	}
	if r.Key != key {
		return nil, fmt.Errorf("epoch: preparing epoch %d: result has key %+v, want %+v", key.Epoch, r.Key, key)
	}
	if s.txn != nil {
		if err := s.txn.Commit(r, true); err != nil {
			return nil, fmt.Errorf("epoch: preparing epoch %d: %w", key.Epoch, err)
		}
	}
	res, err = s.install(r)
	if err != nil {
		return nil, fmt.Errorf("epoch: preparing epoch %d: %w", key.Epoch, err)
	}
	return res, nil
}

// Preparing reports the key of the pending next epoch, if any.
func (s *Store) Preparing() (epoch.Key, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		return epoch.Key{}, false
	}
	return s.next.key, true
}

// Ready reports whether the next epoch has been prepared successfully, so
// that Advance will not wait.
func (s *Store) Ready() bool {
	s.mu.Lock()
	p := s.next
	s.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return p.err == nil
	default:
		return false
	}
}

// Advance makes the next epoch current, waiting for its preparation if it
// is still running (until ctx is done, which leaves it running). It
// returns ErrNotPrepared if Prepare was not called, and the preparation's
// error if it failed (the Store is then ready for another Prepare). With
// WithState, an error deleting old epoch directories is returned together
// with the new current Result.
func (s *Store) Advance(ctx context.Context) (*epoch.Result, error) {
	s.mu.Lock()
	p := s.next
	s.mu.Unlock()
	if p == nil {
		return nil, ErrNotPrepared
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("epoch: waiting for epoch %d: %w", p.key.Epoch, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next != p {
		return nil, fmt.Errorf("%w: epoch %d was advanced to or discarded concurrently", ErrNotPrepared, p.key.Epoch)
	}
	if p.err != nil {
		s.next = nil
		return nil, p.err
	}
	if s.txn != nil {
		if err := s.txn.State().SetCurrent(p.key.Epoch); err != nil {
			return nil, err // nothing switched; Advance may be retried
		}
	}
	s.next = nil
	s.cur.Store(p.res)
	if s.txn != nil {
		// The switch has happened; a failure to delete old epochs is
		// reported beside the new Result.
		if err := s.txn.State().Prune(p.key.Epoch); err != nil {
			return p.res.r, err
		}
	}
	return p.res.r, nil
}

// Discard cancels a pending preparation, waits for it to stop and forgets
// it (or a prepared next epoch). The current epoch stays.
func (s *Store) Discard() {
	s.mu.Lock()
	p := s.next
	s.next = nil
	s.mu.Unlock()
	if p != nil {
		p.cancel()
		<-p.done
	}
}
