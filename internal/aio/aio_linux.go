//go:build linux

package aio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// iocb is the kernel's struct iocb (linux/aio_abi.h), little-endian.
type iocb struct {
	data     uint64
	key      uint32
	rwFlags  uint32
	opcode   uint16
	reqprio  int16
	fd       uint32
	buf      uint64
	nbytes   uint64
	offset   int64
	reserved uint64
	flags    uint32
	resfd    uint32
}

// ioEvent is the kernel's struct io_event.
type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

const iocbCmdPread = 0

// DirectFD returns f's descriptor where f is an *os.File opened O_DIRECT.
func DirectFD(f io.ReaderAt) (int, bool) {
	file, ok := f.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(file.Fd())
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_DIRECT == 0 {
		return 0, false
	}
	return fd, true
}

// Context is a Linux AIO context of up to Depth reads in flight. It is
// meant to be kept for a reader's life rather than set up and torn down
// per batch of reads (io_destroy waits for the context's last references,
// an RCU grace period). A Context is not safe for concurrent use.
type Context struct {
	id     uintptr
	depth  int
	cbs    []iocb
	ptrs   []uintptr
	events []ioEvent
}

// New sets up a context of depth reads; the error wraps ErrUnavailable
// where the kernel refuses one.
func New(depth int) (*Context, error) {
	depth = max(1, depth)
	a := &Context{depth: depth, cbs: make([]iocb, depth), ptrs: make([]uintptr, depth), events: make([]ioEvent, depth)}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&a.id)), 0); e != 0 {
		return nil, fmt.Errorf("%w: io_setup(%d): %v", ErrUnavailable, depth, e)
	}
	return a, nil
}

// Depth is the most reads the context keeps in flight.
func (a *Context) Depth() int { return a.depth }

// Destroy ends the context (no read is in flight: Read waits for all).
func (a *Context) Destroy() {
	unix.Syscall(unix.SYS_IO_DESTROY, a.id, 0, 0)
}

// Read reads n requests from the O_DIRECT file fd, up to depth (at most
// the context's Depth) in flight at once. prep(k, slot) gives request k's
// file offset and the aligned buffer it reads into (its length is the
// read's); slot, below depth, is free for the caller's use (a buffer per
// slot: a slot's next request is prepared only once its previous one is
// done). done(k, slot, buf, got, err) sees each request as it completes,
// with the bytes read (got < len(buf) at the end of the file), in the
// order they complete, on the caller's goroutine; an error it returns
// stops the reads. Every read submitted has ended when Read returns,
// whatever it returns.
func (a *Context) Read(fd, n, depth int, prep func(k, slot int) (int64, []byte), done func(k, slot int, buf []byte, got int, err error) error) (err error) {
	depth = max(1, min(depth, a.depth))
	cbs, ptrs, events := a.cbs, a.ptrs, a.events
	bufs := make([][]byte, depth)
	inflight := 0
	defer func() {
		// Reads still in flight after an error write into their buffers:
		// wait.
		for inflight > 0 {
			r, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.id, 1, uintptr(a.depth), uintptr(unsafe.Pointer(&events[0])), 0, 0)
			switch {
			case e == unix.EINTR:
			case e != 0:
				err = errors.Join(err, fmt.Errorf("io_getevents: %w", e))
				return
			default:
				inflight -= int(r)
			}
		}
	}()
	// submit submits the requests prepared in ptrs[:m].
	submit := func(m int) error {
		for m > 0 {
			r, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.id, uintptr(m), uintptr(unsafe.Pointer(&ptrs[0])))
			switch {
			case e == unix.EINTR || e == unix.EAGAIN:
				continue
			case e != 0:
				return fmt.Errorf("io_submit: %w", e)
			}
			inflight += int(r)
			copy(ptrs, ptrs[r:m])
			m -= int(r)
		}
		return nil
	}
	prepare := func(i, slot, k int) {
		off, buf := prep(k, slot)
		bufs[slot] = buf
		var p uint64
		if len(buf) > 0 {
			p = uint64(uintptr(unsafe.Pointer(&buf[0])))
		}
		cbs[slot] = iocb{data: uint64(k)<<32 | uint64(slot), opcode: iocbCmdPread, fd: uint32(fd),
			buf: p, nbytes: uint64(len(buf)), offset: off}
		ptrs[i] = uintptr(unsafe.Pointer(&cbs[slot]))
	}
	next := min(depth, n)
	for k := range next {
		prepare(k, k, k)
	}
	if err := submit(next); err != nil {
		return err
	}
	for inflight > 0 {
		r, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.id, 1, uintptr(a.depth), uintptr(unsafe.Pointer(&events[0])), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_getevents: %w", e)
		}
		inflight -= int(r)
		m := 0
		var errs []error
		for _, ev := range events[:r] {
			k, slot := int(ev.data>>32), int(uint32(ev.data))
			var rerr error
			got := int(ev.res)
			if ev.res < 0 {
				rerr, got = unix.Errno(-ev.res), 0
			}
			if err := done(k, slot, bufs[slot], got, rerr); err != nil {
				errs = append(errs, err)
				continue
			}
			if next < n {
				prepare(m, slot, next)
				next++
				m++
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if err := submit(m); err != nil {
			return err
		}
	}
	return nil
}

// OpenDirect opens path for reading with O_DIRECT (reads bypass the page
// cache), falling back to a buffered open where the file system refuses
// it (tmpfs answers EINVAL); direct says which.
func OpenDirect(path string) (f *os.File, direct bool, err error) {
	f, err = os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	f, err = os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	return f, false, nil
}
