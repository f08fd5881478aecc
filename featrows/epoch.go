package featrows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/streamsampler/streamsampler/featplan"
)

// Epoch executes one epoch's plan: a featplan.Reader over the Executor's
// feature file (opened O_DIRECT), and the turn that orders its
// minibatches.
type Epoch struct {
	e        uint32
	path     string
	rowBytes int64
	plan     *featplan.Plan
	direct   bool
	closed   atomic.Bool

	// rmu is held by the minibatch whose turn it is while it reads, and
	// by Report and Close, which must not run beside a read.
	rmu sync.Mutex
	r   *featplan.Reader

	mu    sync.Mutex
	next  int           // the minibatch whose turn it is
	err   error         // set once: every later minibatch fails with it
	moved chan struct{} // closed (and replaced) whenever next, err or closed changes
}

// openEpoch starts epoch e's reads under plan p, from x's feature file.
func (x *Executor) openEpoch(e uint32, p *featplan.Plan) (*Epoch, error) {
	r, err := featplan.NewReader(x.planned, x.path, x.fs.RowBytes(), p, x.opts)
	if err != nil {
		return nil, fmt.Errorf("featrows: epoch %d: %w", e, err)
	}
	return &Epoch{e: e, path: x.path, rowBytes: x.fs.RowBytes(), plan: p, direct: x.direct, r: r, moved: make(chan struct{})}, nil
}

// Direct reports whether the epoch's feature file is read with O_DIRECT
// (false where the file system refuses it: tmpfs).
func (ep *Epoch) Direct() bool { return ep.direct }

// Turn returns the minibatch whose turn it is: the number of minibatches
// read or skipped so far.
func (ep *Epoch) Turn() int {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.next
}

// Read delivers minibatch index of the plan: it waits for the
// minibatch's turn (or for ctx: see below), reads the rows of nodes — the
// minibatch's n_id, which must be the one planned (featplan.Reader.NextNodes
// checks it) — into dst (at least len(nodes)·RowBytes bytes), and passes
// the turn on. With dst nil the rows are read for the plan's sake (its
// cache, which later minibatches take rows from) and dropped: a minibatch
// delivered with other semantics than the plan's reads its own rows
// directly.
//
// A failed read fails the epoch's later minibatches (ErrEpochFailed). So
// does a ctx that ends while the minibatch waits, as its turn would never
// be taken: pass one that ends only when the whole delivery does (a
// server's shutdown), not a single request's.
func (ep *Epoch) Read(ctx context.Context, index int, nodes []uint32, dst []byte) error {
	_, err := ep.ReadInto(ctx, index, nodes, func() ([]byte, error) { return dst, nil })
	return err
}

// ReadInto is Read where the destination is had in the minibatch's turn:
// once the turn comes, alloc returns dst (it may wait for memory that
// earlier minibatches, already delivered, give back: a shared buffer the
// consumer returns as it consumes). An alloc that fails passes the turn
// on with the rows read for the plan's sake, as Read with dst nil, and
// ReadInto returns its error unwrapped, with the epoch unfailed.
func (ep *Epoch) ReadInto(ctx context.Context, index int, nodes []uint32, alloc func() ([]byte, error)) ([]byte, error) {
	if err := ep.await(ctx, index); err != nil {
		return nil, err
	}
	dst, aerr := alloc()
	ep.rmu.Lock()
	err := ep.read(index, nodes, dst)
	ep.rmu.Unlock()
	if err := ep.pass(index, err); err != nil {
		return nil, err
	}
	if aerr != nil {
		return nil, aerr
	}
	return dst, nil
}

func (ep *Epoch) read(index int, nodes []uint32, dst []byte) error {
	if ep.closed.Load() {
		return ErrClosed
	}
	if dst == nil {
		dst = make([]byte, int64(len(nodes))*ep.rowBytes)
	}
	i, err := ep.r.NextNodes(nodes, dst)
	if err == nil && i != index {
		err = fmt.Errorf("the reader served minibatch %d in its turn", i)
	}
	return err
}

// errForgotten is why a minibatch without its n_id cannot be skipped
// under a plan that forgot its node sets.
var errForgotten = errors.New("it failed to assemble, and the rows later minibatches take from the cache it fills are unknown without its n_id (the plan forgot its node sets)")

// Skip takes the turn of minibatch index without delivering it (its
// assembly failed), so that the minibatches after it get theirs. Where the
// plan still holds its node sets, the rows are read and dropped: the cache
// later minibatches take rows from is filled as planned. Where the plan
// forgot them (featplan.Plan.ForgetNodes), they cannot be, and the epoch's
// later minibatches fail (ErrEpochFailed). ctx is as for Read.
func (ep *Epoch) Skip(ctx context.Context, index int) error {
	if err := ep.await(ctx, index); err != nil {
		return err
	}
	var err error
	if ep.plan.Forgotten() {
		err = errForgotten
	} else {
		ep.rmu.Lock()
		if ep.closed.Load() {
			err = ErrClosed
		} else {
			_, err = ep.r.Next(make([]byte, int64(ep.plan.Batch(index).Len())*ep.rowBytes))
		}
		ep.rmu.Unlock()
	}
	return ep.pass(index, err)
}

// await returns once it is minibatch index's turn, or with the error that
// keeps it from coming: a failed or closed epoch, a turn outside the plan,
// or ctx (which then fails the epoch, as the turn will not be taken).
func (ep *Epoch) await(ctx context.Context, index int) error {
	if index < 0 || index >= ep.plan.NumBatches() {
		return fmt.Errorf("%w: epoch %d has %d minibatches, not %d", ErrTurn, ep.e, ep.plan.NumBatches(), index)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for {
		switch {
		case ep.closed.Load():
			return fmt.Errorf("%w: epoch %d, minibatch %d: the epoch's feature reads are closed", ErrClosed, ep.e, index)
		case ep.err != nil:
			return fmt.Errorf("featrows: epoch %d, minibatch %d: %w: %w", ep.e, index, ErrEpochFailed, ep.err)
		case index < ep.next:
			return fmt.Errorf("%w: epoch %d, minibatch %d: its turn has passed (at minibatch %d)", ErrTurn, ep.e, index, ep.next)
		case index == ep.next:
			return nil
		}
		moved := ep.moved
		ep.mu.Unlock()
		select {
		case <-moved:
			ep.mu.Lock()
		case <-ctx.Done():
			ep.mu.Lock()
			if index == ep.next && ep.err == nil && !ep.closed.Load() {
				return nil // its turn came as ctx ended: take it
			}
			if ep.err == nil && !ep.closed.Load() {
				ep.failLocked(fmt.Errorf("featrows: epoch %d: minibatch %d stopped waiting for its turn: %w", ep.e, index, ctx.Err()))
				return ep.err
			}
		}
	}
}

// pass ends minibatch index's turn, failing the epoch where err is set,
// and returns err (named by epoch, minibatch and file).
func (ep *Epoch) pass(index int, err error) error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("featrows: %s: epoch %d, minibatch %d: %w", ep.path, ep.e, index, err)
		if ep.err == nil {
			ep.err = err
		}
	}
	ep.next++
	ep.wakeLocked()
	return err
}

func (ep *Epoch) failLocked(err error) {
	ep.err = err
	ep.wakeLocked()
}

func (ep *Epoch) wakeLocked() {
	close(ep.moved)
	ep.moved = make(chan struct{})
}

// Report returns what the minibatches delivered so far read (the plan's
// whole report, optimum included, once every minibatch has had its turn).
func (ep *Epoch) Report() featplan.Report {
	ep.rmu.Lock()
	defer ep.rmu.Unlock()
	return ep.r.Report()
}

// Close ends the epoch's reads, after any read in progress (the file is
// the Executor's, and stays open); minibatches waiting for their turn,
// and later ones, fail with ErrClosed. Closing twice is a no-op.
func (ep *Epoch) Close() error {
	ep.mu.Lock()
	if ep.closed.Swap(true) {
		ep.mu.Unlock()
		return nil
	}
	ep.wakeLocked()
	ep.mu.Unlock()
	// Once the read in progress, if any, is over, the epoch reads no more
	// (and what its reader does in the background stops).
	ep.rmu.Lock()
	defer ep.rmu.Unlock()
	return ep.r.Close()
}
