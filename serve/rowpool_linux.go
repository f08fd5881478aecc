//go:build linux

package serve

import (
	"fmt"
	"sync"
	"sync/atomic"
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

// acquire leases a buffer for n bytes of rows: the smallest free one that
// holds them, or a new one a quarter larger than n (rounded to 2 MiB), so
// that minibatches of similar sizes reuse it; or, where the pool may not
// grow (MaxRowBuffers, its account's refusal), n bytes of heap.
func (p *rowPool) acquire(n int) (*rowLease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("shared rows: connection closed")
	}
	var best, small *rowBuf
	at := -1
	for i, b := range p.bufs {
		if atomic.LoadUint64(b.lease()) != leaseFree {
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
			return &rowLease{heap: make([]byte, n), retire: noBuffer}, nil
		}
		b, err := newRowBuf(p.nextID, size)
		if err != nil {
			if p.acct != nil {
				p.acct.refundRows(int64(size))
			}
			return nil, err
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
	return l, nil
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
