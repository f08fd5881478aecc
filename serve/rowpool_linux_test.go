//go:build linux

package serve

import (
	"sync/atomic"
	"testing"

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
