//go:build xrt && cgo

package xrt

/*
#cgo CFLAGS: -I/usr/include/xrt
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_kernel.h>

// xrtRunSetArg is variadic, which cgo cannot call. XRT reads the value
// with va_arg as the type the xclbin declares (a buffer handle for global
// arguments, "uint" as unsigned int, an 8-byte scalar as uint64_t), so
// each wrapper passes exactly that type; the Go side checks the kind
// against the xclbin before calling.
static int ss_run_set_bo(xrtRunHandle r, int i, xrtBufferHandle b) { return xrtRunSetArg(r, i, b); }
static int ss_run_set_u32(xrtRunHandle r, int i, unsigned int v) { return xrtRunSetArg(r, i, v); }
static int ss_run_set_u64(xrtRunHandle r, int i, uint64_t v) { return xrtRunSetArg(r, i, v); }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// Hardware reports whether Open can reach XRT in this build.
const Hardware = true

// cErr turns a failed XRT C call into a Go error naming the call. XRT's C
// API reports failures as a NULL handle or a non-zero return, sets errno
// for some of them and prints its exception message on stderr.
func cErr(call string, rc C.int, errno error) error {
	var en syscall.Errno
	switch {
	case errors.As(errno, &en) && en != 0:
		return fmt.Errorf("xrt: %s failed: %w", call, en)
	case rc < 0 && rc != -1:
		return fmt.Errorf("xrt: %s failed: %w", call, syscall.Errno(-rc))
	case rc > 0:
		return fmt.Errorf("xrt: %s failed: %w", call, syscall.Errno(rc))
	}
	return fmt.Errorf("xrt: %s failed (XRT printed the reason on stderr)", call)
}

// hwDevice is a card opened through XRT.
type hwDevice struct {
	index int

	mu      sync.Mutex
	h       C.xrtDeviceHandle
	xclbin  *xclbin.Xclbin // the loaded file as parsed here, for argument checks; nil if it did not parse
	uuid    UUID
	bos     map[*hwBO]struct{}
	kernels map[*hwKernel]struct{}
	runs    map[*hwRun]struct{}
}

// Open opens card index through XRT (xrtDeviceOpen). Without a card (or
// its driver) it returns an error naming the call; it never aborts the
// process, because the binding links libxrt_core (see link_core.go).
func Open(index int) (Device, error) {
	if index < 0 {
		return nil, fmt.Errorf("xrt: open device %d: negative index", index)
	}
	h, errno := C.xrtDeviceOpen(C.uint(index))
	if h == nil {
		return nil, fmt.Errorf("open device %d: %w", index, cErr("xrtDeviceOpen", 0, errno))
	}
	return &hwDevice{index: index, h: h, bos: map[*hwBO]struct{}{},
		kernels: map[*hwKernel]struct{}{}, runs: map[*hwRun]struct{}{}}, nil
}

func (d *hwDevice) Name() string { return fmt.Sprintf("xrt:%d(%s)", d.index, Driver) }

func (d *hwDevice) errorf(format string, a ...any) error {
	return fmt.Errorf("xrt: %s: "+format, append([]any{d.Name()}, a...)...)
}

// LoadXclbin programs the card (xrtDeviceLoadXclbinFile) and reads back
// the UUID (xrtDeviceGetXclbinUUID). The file is also parsed here so that
// kernel arguments can be checked before XRT reads them as varargs.
func (d *hwDevice) LoadXclbin(path string) (UUID, error) {
	if path == "" {
		return UUID{}, d.errorf("load xclbin: empty path (built-in kernels exist only in the emulator)")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil {
		return UUID{}, d.errorf("load xclbin: %w", ErrClosed)
	}
	x, perr := xclbin.ReadFile(path)
	if perr != nil {
		x = nil // XRT is the judge of what loads; only the checks are lost
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if rc, errno := C.xrtDeviceLoadXclbinFile(d.h, cpath); rc != 0 {
		err := cErr("xrtDeviceLoadXclbinFile", rc, errno)
		if perr != nil {
			err = fmt.Errorf("%w (and here: %v)", err, perr)
		}
		return UUID{}, d.errorf("load %s: %w", path, err)
	}
	var u C.xuid_t
	if rc, errno := C.xrtDeviceGetXclbinUUID(d.h, &u[0]); rc != 0 {
		return UUID{}, d.errorf("load %s: %w", path, cErr("xrtDeviceGetXclbinUUID", rc, errno))
	}
	for i := range d.uuid {
		d.uuid[i] = byte(u[i])
	}
	d.xclbin = x
	return d.uuid, nil
}

func (d *hwDevice) XclbinUUID() (UUID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil {
		return UUID{}, d.errorf("xclbin uuid: %w", ErrClosed)
	}
	var u C.xuid_t
	if rc, errno := C.xrtDeviceGetXclbinUUID(d.h, &u[0]); rc != 0 {
		return UUID{}, d.errorf("%w", cErr("xrtDeviceGetXclbinUUID", rc, errno))
	}
	var out UUID
	for i := range out {
		out[i] = byte(u[i])
	}
	return out, nil
}

func (d *hwDevice) AllocBO(size int, flags BOFlags, group int) (BO, error) {
	if size <= 0 {
		return nil, d.errorf("alloc BO: size %d must be positive", size)
	}
	if err := flags.valid(); err != nil {
		return nil, d.errorf("alloc BO: %w", err)
	}
	if group < 0 || group > math.MaxUint32 {
		return nil, d.errorf("alloc BO: memory group %d out of range", group)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil {
		return nil, d.errorf("alloc BO: %w", ErrClosed)
	}
	h, errno := C.xrtBOAlloc(d.h, C.size_t(size), C.xrtBufferFlags(flags), C.xrtMemoryGroup(group))
	if h == nil {
		err := cErr(fmt.Sprintf("xrtBOAlloc(size=%d, flags=%s, group=%d)", size, flags, group), 0, errno)
		if errors.Is(errno, syscall.ENOMEM) {
			err = fmt.Errorf("%w: %w", ErrOutOfDeviceMemory, err)
		}
		return nil, d.errorf("%w", err)
	}
	bo := &hwBO{dev: d, h: h, size: size, flags: flags}
	d.bos[bo] = struct{}{}
	return bo, nil
}

func (d *hwDevice) OpenKernel(uuid UUID, name string) (Kernel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil {
		return nil, d.errorf("open kernel %s: %w", name, ErrClosed)
	}
	var u C.xuid_t
	for i := range u {
		u[i] = C.uchar(uuid[i])
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h, errno := C.xrtPLKernelOpen(d.h, &u[0], cname)
	if h == nil {
		err := cErr("xrtPLKernelOpen", 0, errno)
		if d.uuid != uuid {
			err = fmt.Errorf("%w: %w (loaded: %s)", ErrNoXclbin, err, d.uuid)
		} else {
			err = fmt.Errorf("%w: %w", ErrNoSuchKernel, err)
		}
		return nil, d.errorf("open kernel %q of xclbin %s: %w", name, uuid, err)
	}
	k := &hwKernel{dev: d, h: h, name: name}
	if d.xclbin != nil {
		if xk, ok := d.xclbin.Kernel(name); ok {
			k.args = xk.Args
		}
	}
	d.kernels[k] = struct{}{}
	return k, nil
}

// Close closes every run, kernel and buffer of the device that is still
// open, then the device: XRT crashes at process exit if a buffer outlives
// its device (seen with the noop driver).
func (d *hwDevice) Close() error {
	d.mu.Lock()
	runs := make([]*hwRun, 0, len(d.runs))
	for r := range d.runs {
		runs = append(runs, r)
	}
	kernels := make([]*hwKernel, 0, len(d.kernels))
	for k := range d.kernels {
		kernels = append(kernels, k)
	}
	bos := make([]*hwBO, 0, len(d.bos))
	for b := range d.bos {
		bos = append(bos, b)
	}
	d.mu.Unlock()
	var errs []error
	for _, r := range runs {
		errs = append(errs, r.Close())
	}
	for _, k := range kernels {
		errs = append(errs, k.Close())
	}
	for _, b := range bos {
		if err := b.Free(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil {
		return errors.Join(errs...)
	}
	if rc, errno := C.xrtDeviceClose(d.h); rc != 0 {
		errs = append(errs, d.errorf("%w", cErr("xrtDeviceClose", rc, errno)))
	}
	d.h = nil
	return errors.Join(errs...)
}

// hwBO is an XRT buffer object.
type hwBO struct {
	dev   *hwDevice
	size  int
	flags BOFlags

	mu  sync.Mutex
	h   C.xrtBufferHandle // nil after Free
	mem []byte            // the host mapping, once mapped
}

func (b *hwBO) errorf(format string, a ...any) error {
	return fmt.Errorf("xrt: %s: BO (%s, %d bytes): "+format, append([]any{b.dev.Name(), b.flags, b.size}, a...)...)
}

// Map maps the buffer once (xrtBOMap) and returns the same slice after.
func (b *hwBO) Map() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h == nil {
		return nil, b.errorf("map: %w", ErrClosed)
	}
	if b.mem != nil {
		return b.mem, nil
	}
	if b.flags == BODevOnly {
		return nil, b.errorf("map: device-only buffers have no host view")
	}
	p, errno := C.xrtBOMap(b.h)
	if p == nil {
		return nil, b.errorf("%w", cErr("xrtBOMap", 0, errno))
	}
	b.mem = unsafe.Slice((*byte)(p), b.size)
	return b.mem, nil
}

// Sync checks the range here (XRT's noop driver accepts any) and calls
// xrtBOSync; for P2P buffers, whose host mapping is device memory, it is a
// no-op as in the emulator.
func (b *hwBO) Sync(dir SyncDir, size, offset int) error {
	if dir != ToDevice && dir != FromDevice {
		return b.errorf("sync: bad direction %d", int(dir))
	}
	if err := checkRange(size, offset, b.size); err != nil {
		return b.errorf("sync %s: %w", dir, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h == nil {
		return b.errorf("sync %s: %w", dir, ErrClosed)
	}
	if b.flags == BOP2P || size == 0 {
		return nil
	}
	cdir := C.enum_xclBOSyncDirection(C.XCL_BO_SYNC_BO_TO_DEVICE)
	if dir == FromDevice {
		cdir = C.XCL_BO_SYNC_BO_FROM_DEVICE
	}
	if rc, errno := C.xrtBOSync(b.h, cdir, C.size_t(size), C.size_t(offset)); rc != 0 {
		return b.errorf("%w", cErr(fmt.Sprintf("xrtBOSync(%s, size=%d, offset=%d)", dir, size, offset), rc, errno))
	}
	return nil
}

func (b *hwBO) Size() int      { return b.size }
func (b *hwBO) Flags() BOFlags { return b.flags }

func (b *hwBO) Address() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h == nil {
		return 0
	}
	return uint64(C.xrtBOAddress(b.h))
}

func (b *hwBO) Free() error {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h == nil {
		return b.errorf("free: %w", ErrClosed)
	}
	rc, errno := C.xrtBOFree(b.h)
	b.h, b.mem = nil, nil
	delete(b.dev.bos, b)
	if rc != 0 {
		return b.errorf("%w", cErr("xrtBOFree", rc, errno))
	}
	return nil
}

// hwKernel is an XRT kernel handle.
type hwKernel struct {
	dev  *hwDevice
	name string
	args []xclbin.Arg // from the parsed xclbin; nil if unknown

	mu sync.Mutex
	h  C.xrtKernelHandle
}

func (k *hwKernel) Name() string { return k.name }

func (k *hwKernel) errorf(format string, a ...any) error {
	return fmt.Errorf("xrt: %s: kernel %s: "+format, append([]any{k.dev.Name(), k.name}, a...)...)
}

func (k *hwKernel) GroupID(argIndex int) (int, error) {
	if _, err := k.arg(argIndex, true); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.h == nil {
		return 0, k.errorf("group id: %w", ErrClosed)
	}
	g, errno := C.xrtKernelArgGroupId(k.h, C.int(argIndex))
	if g < 0 {
		return 0, k.errorf("argument %d: %w: %w", argIndex, ErrBadArg, cErr("xrtKernelArgGroupId", 0, errno))
	}
	return int(g), nil
}

// arg returns the xclbin's description of argument i (nil when the xclbin
// could not be parsed here), checking it is a buffer if wantBO, a scalar
// otherwise.
func (k *hwKernel) arg(i int, wantBO bool) (*xclbin.Arg, error) {
	if k.args == nil {
		return nil, nil
	}
	for j := range k.args {
		a := &k.args[j]
		if a.Index != i {
			continue
		}
		if isBO := a.AddressQualifier == 1; isBO != wantBO {
			kind := "scalar"
			if isBO {
				kind = "buffer"
			}
			return nil, k.errorf("argument %d (%s): %w: it is a %s", i, a.Name, ErrBadArg, kind)
		}
		return a, nil
	}
	return nil, k.errorf("argument %d: %w: the kernel has %d arguments", i, ErrBadArg, len(k.args))
}

// hasArg reports whether the parsed xclbin declares scalar argument i
// (false when the xclbin could not be parsed here).
func (k *hwKernel) hasArg(i int) bool {
	for _, a := range k.args {
		if a.Index == i && a.AddressQualifier == 0 {
			return true
		}
	}
	return false
}

func (k *hwKernel) NewRun() (Run, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.h == nil {
		return nil, k.errorf("new run: %w", ErrClosed)
	}
	h, errno := C.xrtRunOpen(k.h)
	if h == nil {
		return nil, k.errorf("%w", cErr("xrtRunOpen", 0, errno))
	}
	r := &hwRun{k: k, h: h, set: map[int]bool{}}
	if k.name == SampleKernel && k.hasArg(ArgWalk) {
		// walk defaults to 0 (sampling), so that callers written before it
		// existed still run; set here rather than trusting the packet's
		// initial value.
		if rc, errno := C.ss_run_set_u32(h, C.int(ArgWalk), 0); rc != 0 {
			C.xrtRunClose(h)
			return nil, k.errorf("%w", cErr("xrtRunSetArg(walk = 0)", rc, errno))
		}
		r.set[ArgWalk] = true
	}
	k.dev.mu.Lock()
	k.dev.runs[r] = struct{}{}
	k.dev.mu.Unlock()
	return r, nil
}

func (k *hwKernel) Close() error {
	k.dev.mu.Lock()
	delete(k.dev.kernels, k)
	k.dev.mu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.h == nil {
		return nil
	}
	rc, errno := C.xrtKernelClose(k.h)
	k.h = nil
	if rc != 0 {
		return k.errorf("%w", cErr("xrtKernelClose", rc, errno))
	}
	return nil
}

// hwRun is an XRT run handle.
type hwRun struct {
	k *hwKernel

	mu      sync.Mutex
	h       C.xrtRunHandle
	set     map[int]bool // arguments set so far
	started bool
	bos     map[int]*hwBO // buffers bound, to refuse freed ones at Start
}

func (r *hwRun) SetBO(i int, bo BO) error {
	if _, err := r.k.arg(i, true); err != nil {
		return err
	}
	hb, ok := bo.(*hwBO)
	if !ok || hb == nil {
		return r.k.errorf("argument %d: %w: buffer %T is not an XRT buffer", i, ErrBadArg, bo)
	}
	if hb.dev != r.k.dev {
		return r.k.errorf("argument %d: %w: buffer belongs to %s", i, ErrBadArg, hb.dev.Name())
	}
	hb.mu.Lock()
	h := hb.h
	hb.mu.Unlock()
	if h == nil {
		return r.k.errorf("argument %d: %w", i, ErrClosed)
	}
	return r.call(i, fmt.Sprintf("xrtRunSetArg(%d, bo)", i), func(rh C.xrtRunHandle) (C.int, error) {
		rc, errno := C.ss_run_set_bo(rh, C.int(i), h)
		return rc, errno
	}, hb)
}

func (r *hwRun) setScalar(i int, size int, call func(C.xrtRunHandle) (C.int, error)) error {
	a, err := r.k.arg(i, false)
	if err != nil {
		return err
	}
	if a != nil && a.Size != size {
		return r.k.errorf("argument %d (%s): %w: a %d-byte scalar, set with a %d-byte value", i, a.Name, ErrBadArg, a.Size, size)
	}
	return r.call(i, fmt.Sprintf("xrtRunSetArg(%d, %d-byte scalar)", i, size), call, nil)
}

func (r *hwRun) SetUint32(i int, v uint32) error {
	return r.setScalar(i, 4, func(rh C.xrtRunHandle) (C.int, error) {
		rc, errno := C.ss_run_set_u32(rh, C.int(i), C.uint(v))
		return rc, errno
	})
}

func (r *hwRun) SetUint64(i int, v uint64) error {
	return r.setScalar(i, 8, func(rh C.xrtRunHandle) (C.int, error) {
		rc, errno := C.ss_run_set_u64(rh, C.int(i), C.uint64_t(v))
		return rc, errno
	})
}

func (r *hwRun) call(i int, name string, f func(C.xrtRunHandle) (C.int, error), bo *hwBO) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return r.k.errorf("set argument %d: %w", i, ErrClosed)
	}
	if rc, errno := f(r.h); rc != 0 {
		return r.k.errorf("%w: %w", ErrBadArg, cErr(name, rc, errno))
	}
	r.set[i] = true
	if r.bos == nil {
		r.bos = map[int]*hwBO{}
	}
	if bo != nil {
		r.bos[i] = bo
	} else {
		delete(r.bos, i)
	}
	return nil
}

func (r *hwRun) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return r.k.errorf("start: %w", ErrClosed)
	}
	for _, a := range r.k.args {
		if !r.set[a.Index] {
			return r.k.errorf("start: %w: argument %d (%s) not set", ErrBadArg, a.Index, a.Name)
		}
	}
	for i, bo := range r.bos {
		bo.mu.Lock()
		freed := bo.h == nil
		bo.mu.Unlock()
		if freed {
			return r.k.errorf("start: argument %d: buffer %w", i, ErrClosed)
		}
	}
	if rc, errno := C.xrtRunStart(r.h); rc != 0 {
		return r.k.errorf("%w", cErr("xrtRunStart", rc, errno))
	}
	r.started = true
	return nil
}

func (r *hwRun) Wait(timeout time.Duration) (State, error) {
	r.mu.Lock()
	h, started := r.h, r.started
	r.mu.Unlock()
	if h == nil {
		return StateAbort, r.k.errorf("wait: %w", ErrClosed)
	}
	if !started {
		return StateNew, r.k.errorf("wait: run not started")
	}
	var st State
	if timeout > 0 {
		ms := min((timeout+time.Millisecond-1)/time.Millisecond, math.MaxUint32)
		st = State(C.xrtRunWaitFor(h, C.uint(ms)))
	} else {
		st = State(C.xrtRunWait(h))
	}
	switch st {
	case StateCompleted:
		return st, nil
	case StateNew, StateQueued, StateRunning, StateSubmitted:
		if timeout > 0 {
			return StateTimeout, r.k.errorf("wait: %w after %v (run %s)", ErrTimeout, timeout, st)
		}
	case StateTimeout:
		return st, r.k.errorf("wait: %w (XRT reported the command timed out)", ErrTimeout)
	}
	return st, r.k.errorf("%w: run ended in state %s", ErrKernelFailed, st)
}

func (r *hwRun) Close() error {
	r.k.dev.mu.Lock()
	delete(r.k.dev.runs, r)
	r.k.dev.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return nil
	}
	if r.started {
		C.xrtRunWait(r.h) // a run in flight finishes first, as documented
	}
	rc, errno := C.xrtRunClose(r.h)
	r.h = nil
	if rc != 0 {
		return r.k.errorf("%w", cErr("xrtRunClose", rc, errno))
	}
	return nil
}
