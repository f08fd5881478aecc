//go:build linux

package serve

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRowPool: a free buffer that holds the rows is reused (the smallest
// such), a held one never; a free one too small is retired when a larger
// one is made; rows written through one lease stay while it is held.
func TestRowPool(t *testing.T) {
	p := newRowPool(nil)
	defer p.close()
	free := func(l *rowLease) { atomic.StoreUint64(l.buf.lease(), leaseFree) }
	a, err := p.acquire(1000)
	if err != nil {
		t.Fatal(err)
	}
	if a.retire != noBuffer || a.buf.rows() < 1000 || len(a.buf.m)%4096 != 0 {
		t.Fatalf("first lease: retire %d, %d bytes", a.retire, a.buf.rows())
	}
	copy(a.bytes(3), "abc")
	b, _ := p.acquire(1000) // a is held: a second buffer
	if b.id() == a.id() {
		t.Fatal("a held buffer was leased again")
	}
	free(b)
	c, _ := p.acquire(500) // b is free and large enough
	if c.id() != b.id() || c.retire != noBuffer {
		t.Fatalf("lease of buffer %d (retire %d), want %d reused", c.id(), c.retire, b.id())
	}
	free(c)
	b.buf.sent = true          // as if its reply had gone out
	d, _ := p.acquire(8 << 20) // b is free but too small: retired
	if d.id() == b.id() || d.id() == a.id() || d.retire != b.id() {
		t.Fatalf("lease of buffer %d retiring %d, want a new one retiring %d", d.id(), d.retire, b.id())
	}
	if len(p.bufs) != 2 || string(a.bytes(3)) != "abc" {
		t.Fatalf("%d buffers, a holds %q", len(p.bufs), a.bytes(3))
	}
	// A buffer the client never received is dropped without a word.
	free(d)
	e, _ := p.acquire(16 << 20)
	if e.retire != noBuffer || len(p.bufs) != 2 {
		t.Fatalf("retired %d, which the client never mapped (%d buffers)", e.retire, len(p.bufs))
	}
	d = e
	fd, err := d.attach()
	if err != nil || fd < 0 {
		t.Fatalf("first attach: %d, %v", fd, err)
	}
	unix.Close(fd)
	if fd2, _ := d.attach(); fd2 != -1 {
		t.Fatalf("second attach passed descriptor %d again", fd2)
	}
}

// capAccount lets a pool hold at most limit bytes of buffers.
type capAccount struct{ held, limit int64 }

func (a *capAccount) chargeRows(n int64) bool {
	if a.held+n > a.limit {
		return false
	}
	a.held += n
	return true
}
func (a *capAccount) refundRows(n int64) { a.held -= n }

// TestRowPoolWait: where the pool may not grow, acquireWait waits for a
// held buffer to come back instead of putting the rows on the heap; one
// wait that times out is the pool's last, even once leases come back (a
// consumer that holds more minibatches than the pool has buffers would
// otherwise wait out every one); acquire never waits.
func TestRowPoolWait(t *testing.T) {
	p := newRowPool(&capAccount{limit: 2 << 20 * 2}) // room for one 2 MiB buffer (plus its lease page)
	defer p.close()
	ctx := context.Background()
	free := func(l *rowLease) { atomic.StoreUint64(l.buf.lease(), leaseFree) }
	a, err := p.acquireWait(ctx, 1<<20)
	if err != nil || !a.shared() {
		t.Fatalf("first lease: shared %v, %v", a.shared(), err)
	}
	if h, _ := p.acquire(1 << 20); h.shared() {
		t.Fatal("acquire leased a second buffer past the account's limit")
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		free(a)
	}()
	t0 := time.Now()
	b, err := p.acquireWait(ctx, 1<<20)
	if err != nil || !b.shared() || b.id() != a.id() {
		t.Fatalf("waited lease: shared %v, id %v (want %d), %v", b.shared(), b.id(), a.id(), err)
	}
	if w := time.Since(t0); w < 20*time.Millisecond {
		t.Fatalf("took the held buffer after %v, before it came back", w)
	}
	// b is never given back: one full wait, then none.
	t0 = time.Now()
	if h, _ := p.acquireWait(ctx, 1<<20); h.shared() || time.Since(t0) < leaseWait {
		t.Fatalf("lease while b is held: shared %v after %v (want the heap after %v)", h.shared(), time.Since(t0), leaseWait)
	}
	for i := range 3 {
		t0 = time.Now()
		if h, _ := p.acquireWait(ctx, 1<<20); h.shared() || time.Since(t0) > leaseWait/2 {
			t.Fatalf("lease %d after the wait, b still held: shared %v after %v (want the heap at once)", i+2, h.shared(), time.Since(t0))
		}
	}
	free(b)
	c, _ := p.acquireWait(ctx, 1<<20)
	if !c.shared() {
		t.Fatal("a buffer given back was not leased again")
	}
	t0 = time.Now()
	if h, _ := p.acquireWait(ctx, 1<<20); h.shared() || time.Since(t0) > leaseWait/2 {
		t.Fatalf("after a timed-out wait and a lease given back: shared %v after %v (want the heap at once)", h.shared(), time.Since(t0))
	}
	// Waiting ends with ctx.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	p.impatient = false
	if _, err := p.acquireWait(cctx, 1<<20); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past ctx: %v", err)
	}
	// A request larger than any buffer cannot be served by waiting.
	t0 = time.Now()
	if h, _ := p.acquireWait(ctx, 64<<20); h.shared() || time.Since(t0) > leaseWait/2 {
		t.Fatalf("oversized request: shared %v after %v (want the heap at once)", h.shared(), time.Since(t0))
	}
}
