package featplan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Random reads through Linux native AIO (io_submit, io_getevents).
//
// A goroutine blocked in pread keeps its P (the scheduler's token to run
// Go code) until sysmon takes it back, 20 µs or more later: on two cores
// (GOMAXPROCS 2) the executor's sixteen to 128 pread goroutines kept about
// two reads in flight, and read 22–25 k random 4 KiB rows/s at any depth
// where fio reads 61 k (BenchmarkReadDepth; with GOMAXPROCS 8 the same
// goroutines read 62 k at depth 64). With AIO one goroutine keeps Depth
// reads in flight in the kernel, whatever GOMAXPROCS is: it submits them
// in one system call and waits for any of them in another. O_DIRECT only:
// on a buffered file io_submit reads synchronously. A Reader keeps one
// context for its life (aioCtx).

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

// directFD returns f's descriptor where f is an *os.File opened O_DIRECT.
func directFD(f io.ReaderAt) (int, bool) {
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

// aioCtx is a Linux AIO context of up to depth reads in flight, kept for
// a Reader's life rather than set up and torn down per minibatch
// (io_destroy waits for the context's last references, an RCU grace
// period).
type aioCtx struct {
	id     uintptr
	depth  int
	cbs    []iocb
	ptrs   []uintptr
	events []ioEvent
}

// newAIO sets up a context of depth reads; nil where the kernel refuses
// AIO (ENOSYS, EPERM, EAGAIN at fs.aio-max-nr...): the caller reads
// another way.
func newAIO(depth int) *aioCtx {
	a := &aioCtx{depth: depth, cbs: make([]iocb, depth), ptrs: make([]uintptr, depth), events: make([]ioEvent, depth)}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&a.id)), 0); e != 0 {
		return nil
	}
	return a
}

// destroy ends the context (no read is in flight: read waits for all).
func (a *aioCtx) destroy() {
	unix.Syscall(unix.SYS_IO_DESTROY, a.id, 0, 0)
}

// read reads the extents ext of the O_DIRECT file fd, len(bufs) (at most
// a.depth) at once, each into bufs[slot] (aligned buffers, each at least
// as long as any extent), and calls done with each extent's index and
// the bytes read (n < e.Length at the end of the file), in the order they
// complete, on the caller's goroutine. Every read submitted has ended
// when it returns, whatever it returns.
func (a *aioCtx) read(fd int, ext []Extent, bufs [][]byte, done func(k int, buf []byte, n int, err error) error) (err error) {
	depth := min(len(bufs), a.depth)
	cbs, ptrs, events := a.cbs, a.ptrs, a.events
	inflight := 0
	defer func() {
		// Reads still in flight after an error write into bufs: wait.
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
	// submit submits the extents prepared in ptrs[:n].
	submit := func(n int) error {
		for n > 0 {
			r, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.id, uintptr(n), uintptr(unsafe.Pointer(&ptrs[0])))
			switch {
			case e == unix.EINTR || e == unix.EAGAIN:
				continue
			case e != 0:
				return fmt.Errorf("io_submit: %w", e)
			}
			inflight += int(r)
			copy(ptrs, ptrs[r:n])
			n -= int(r)
		}
		return nil
	}
	prepare := func(i, slot, k int) {
		e := ext[k]
		cbs[slot] = iocb{data: uint64(k)<<32 | uint64(slot), opcode: iocbCmdPread, fd: uint32(fd),
			buf: uint64(uintptr(unsafe.Pointer(&bufs[slot][0]))), nbytes: uint64(e.Length), offset: e.Offset}
		ptrs[i] = uintptr(unsafe.Pointer(&cbs[slot]))
	}
	next := min(depth, len(ext))
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
		n := 0
		var errs []error
		for _, ev := range events[:r] {
			k, slot := int(ev.data>>32), int(uint32(ev.data))
			var rerr error
			got := int(ev.res)
			if ev.res < 0 {
				rerr, got = unix.Errno(-ev.res), 0
			}
			if err := done(k, bufs[slot], got, rerr); err != nil {
				errs = append(errs, err)
				continue
			}
			if next < len(ext) {
				prepare(n, slot, next)
				next++
				n++
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if err := submit(n); err != nil {
			return err
		}
	}
	return nil
}
