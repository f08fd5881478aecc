//go:build linux

package serve

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A rowPool is a connection's shared-rows buffers: memory files that both
// the server and the client keep mapped, so that a minibatch's rows are
// written once, into memory the client already maps, instead of into a
// fresh file per reply (whose pages the kernel would allocate, zero, map
// twice and free, every minibatch: as much work as the rows themselves).
//
// A buffer's first page is its lease: a little-endian u64 at offset 0,
// leaseHeld while a reply's rows are in it, set back to leaseFree by the
// client once nothing of its own refers to them (docs/PROTOCOL.md). The
// server reuses only free buffers; where none is large enough it maps a
// new one, and retires the smallest free one that was too small (the
// client unmaps it when the reply that names it arrives).
//
// A client that never frees its leases would otherwise have the pool map
// a new buffer (a memory file and a descriptor) for every minibatch. So a
// pool holds at most MaxRowBuffers buffers, each charged to its
// connection's share and the in-flight budget (acct) while it lives;
// where no free buffer fits and a new one cannot be had, the lease is of
// memory on the heap instead, and that minibatch's rows travel in its
// reply, counted with it.
type rowPool struct {
	mu     sync.Mutex
	acct   rowAccount
	bufs   []*rowBuf
	nextID uint32
	closed bool
	// impatient: a wait for a lease timed out; acquireWait no longer
	// waits on this connection.
	impatient bool
}

// MaxRowBuffers is the most shared-rows buffers (memory files) a
// connection's pool holds; past it, rows travel in the replies.
const MaxRowBuffers = 16

// rowBuf is one buffer of a pool.
type rowBuf struct {
	id   uint32
	fd   int
	m    []byte // the whole file: the lease page, then the rows
	sent bool   // its descriptor has gone to the client (owned by the lease holder)
}

// rowLease is a reply's hold on a buffer: its rows are at rowsOffset;
// or, where the pool had no room (buf nil), rows on the heap that travel
// in the reply.
type rowLease struct {
	pool   *rowPool
	buf    *rowBuf
	heap   []byte
	retire uint32 // a buffer the client should unmap (noBuffer: none)
}

const (
	leaseFree  = 0
	leaseHeld  = 1
	rowsOffset = 4096 // the lease page
	noBuffer   = ^uint32(0)
	poolRound  = 1 << 21 // buffers grow in 2 MiB steps
)

func (b *rowBuf) lease() *uint64 { return (*uint64)(unsafe.Pointer(&b.m[0])) }

func (b *rowBuf) rows() int { return len(b.m) - rowsOffset }

// closeBuf unmaps and closes buffer b, giving back its charge.
func (p *rowPool) closeBuf(b *rowBuf) {
	size := int64(len(b.m))
	unix.Munmap(b.m)
	unix.Close(b.fd)
	if p.acct != nil {
		p.acct.refundRows(size)
	}
}

// newRowPool returns an empty pool whose buffers are charged to acct
// (nil: to nothing).
func newRowPool(acct rowAccount) *rowPool { return &rowPool{acct: acct} }

// leaseWait is how long acquireWait waits for the client to give back a
// lease before it puts a minibatch's rows on the heap. A consumer that
// drops each minibatch before it asks for more than its requests in
// flight gives a buffer back within one step of its loop; the wait only
// has to outlast a step. One that holds more minibatches than the pool
// has buffers (a loader's prefetch queue, list(loader)) would make every
// minibatch wait the whole of it (397 ms a minibatch for a consumer that
// kept six), so the first wait that times out is the connection's last:
// from then on its rows go on the heap at once, as before waits existed.
const leaseWait = 500 * time.Millisecond

// acquireWait is acquire where the pool may not grow but a buffer large
// enough is leased: it waits, up to leaseWait (or ctx), for the client to
// give one back, and takes that instead of n bytes of heap. Rows on the
// heap travel through the socket (a copy into the kernel and one out of
// it, 0.86 GB/s against the shared buffers' 2.5 on the benchmark VM) and
// load the Go heap, whose collector then runs without pause inside a
// memory limit: with the client's four requests in flight and a pool
// that holds two of them, an out-of-core epoch took 42 s instead of 28
// (docs/PERFORMANCE.md, issue 23 item 4). Callers take their turn before
// they wait (featrows.Epoch.ReadInto), so the leases waited for are of
// minibatches already sent, which the client gives back as it consumes.
// The first wait that times out is the connection's last (leaseWait).
func (p *rowPool) acquireWait(ctx context.Context, n int) (*rowLease, error) {
	deadline := time.Now().Add(leaseWait)
	pause := 20 * time.Microsecond
	for {
		l, wait, err := p.tryAcquire(n)
		if err != nil || l != nil {
			return l, err
		}
		if !wait || time.Now().After(deadline) {
			if wait { // timed out: no more waits on this connection
				p.mu.Lock()
				p.impatient = true
				p.mu.Unlock()
			}
			return &rowLease{heap: make([]byte, n), retire: noBuffer}, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, time.Millisecond)
	}
}

// acquire leases a buffer for n bytes of rows: the smallest free one that
// holds them, or a new one a quarter larger than n (rounded to 2 MiB), so
// that minibatches of similar sizes reuse it; or, where the pool may not
// grow (MaxRowBuffers, its account's refusal), n bytes of heap.
func (p *rowPool) acquire(n int) (*rowLease, error) {
	l, _, err := p.tryAcquire(n)
	if l == nil && err == nil {
		l = &rowLease{heap: make([]byte, n), retire: noBuffer}
	}
	return l, err
}

// tryAcquire is acquire without the heap: where the pool may not grow it
// returns no lease, and whether a leased buffer large enough could come
// back (worth waiting for, unless an earlier wait timed out).
func (p *rowPool) tryAcquire(n int) (_ *rowLease, wait bool, _ error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, fmt.Errorf("shared rows: connection closed")
	}
	var best, small *rowBuf
	at := -1
	heldFits := false
	for i, b := range p.bufs {
		if atomic.LoadUint64(b.lease()) != leaseFree {
			heldFits = heldFits || b.rows() >= n
			continue
		}
		if b.rows() >= n {
			if best == nil || b.rows() < best.rows() {
				best = b
			}
		} else if small == nil || b.rows() < small.rows() {
			small, at = b, i
		}
	}
	l := &rowLease{pool: p, buf: best, retire: noBuffer}
	if best == nil {
		size := rowsOffset + (n+n/4+poolRound-1)/poolRound*poolRound
		if small == nil && len(p.bufs) >= MaxRowBuffers || p.acct != nil && !p.acct.chargeRows(int64(size)) {
			return nil, heldFits && !p.impatient, nil
		}
		b, err := newRowBuf(p.nextID, size)
		if err != nil {
			if p.acct != nil {
				p.acct.refundRows(int64(size))
			}
			return nil, false, err
		}
		p.nextID++
		if small != nil {
			p.bufs = append(p.bufs[:at], p.bufs[at+1:]...)
			p.closeBuf(small)
			if small.sent {
				l.retire = small.id // the client maps it too
			}
		}
		p.bufs = append(p.bufs, b)
		l.buf = b
	}
	atomic.StoreUint64(l.buf.lease(), leaseHeld)
	return l, false, nil
}

// newRowBuf maps a new memory file of size bytes, populated at once (one
// call instead of a fault per page as rows are written).
func newRowBuf(id uint32, size int) (*rowBuf, error) {
	fd, err := unix.MemfdCreate("streamsampler-rows", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sizing a memory file of %d bytes: %w", size, err)
	}
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping a memory file of %d bytes: %w", size, err)
	}
	return &rowBuf{id: id, fd: fd, m: m}, nil
}

// id is the leased buffer's id.
func (l *rowLease) id() uint32 { return l.buf.id }

// shared reports whether the lease is of a shared buffer (else its rows
// are on the heap and travel in the reply).
func (l *rowLease) shared() bool { return l.buf != nil }

// bytes is where the lease's n bytes of rows go.
func (l *rowLease) bytes(n int) []byte {
	if l.buf == nil {
		return l.heap[:n]
	}
	return l.buf.m[rowsOffset : rowsOffset+n]
}

// abandon frees a lease whose reply will not be sent (nil: none).
func (l *rowLease) abandon() {
	if l != nil && l.buf != nil {
		atomic.StoreUint64(l.buf.lease(), leaseFree)
	}
}

// attach returns a descriptor to pass with the reply (a duplicate, which
// the writer closes) the first time the buffer goes to the client, -1
// after.
func (l *rowLease) attach() (int, error) {
	if l.buf.sent {
		return -1, nil
	}
	fd, err := unix.Dup(l.buf.fd)
	if err != nil {
		return -1, fmt.Errorf("passing a memory file: %w", err)
	}
	unix.CloseOnExec(fd)
	l.buf.sent = true
	return fd, nil
}

// close unmaps and closes every buffer (the connection is gone; the
// client's mappings keep their pages until it unmaps them).
func (p *rowPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bufs {
		p.closeBuf(b)
	}
	p.bufs, p.closed = nil, true
}
