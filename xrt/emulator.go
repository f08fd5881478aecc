package xrt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// EmulatorConfig configures a software SmartSSD. The zero value is a
// SmartSSD with 4 GiB of DDR and no transfer throttling.
type EmulatorConfig struct {
	// DDRBytes is the device memory capacity; allocations beyond what is
	// left fail with ErrOutOfDeviceMemory. 0 means SmartSSDDDRBytes.
	DDRBytes int64
	// SyncBytesPerSecond, if positive, makes Sync take as long as a PCIe
	// transfer of that bandwidth would (e.g. 3.2e9 for the SmartSSD's
	// Gen3 x4 link), so pipelining can be studied without hardware.
	SyncBytesPerSecond float64

	// ComputeUnits is how many compute units run each launch of the
	// sampling kernel, each over a contiguous share of its targets, on
	// goroutines of their own; 0 means one per core (GOMAXPROCS). The
	// samples do not depend on it.
	ComputeUnits int

	// beforeRun, if set, is called on the device's queue goroutine before
	// each run executes (tests use it to make a kernel slow).
	beforeRun func()
}

// units is the compute units a launch runs on.
func (c EmulatorConfig) units() int {
	if c.ComputeUnits > 0 {
		return c.ComputeUnits
	}
	return runtime.GOMAXPROCS(0)
}

// emuPage is the granule of emulated device memory: buffers are mmap'd,
// so they are page-aligned, which O_DIRECT needs.
const emuPage = 4096

// emuDDRBase is where the emulator's device addresses start (the bank's
// base address in SampleKernelXclbin).
const emuDDRBase = 0x4000000000

// builtinUUID is the UUID of the emulator's built-in kernel library,
// returned by LoadXclbin(""). It spells "streamsampler-emu" in ASCII
// (truncated), so it is recognisable in logs.
var builtinUUID = UUID{'s', 't', 'r', 'e', 'a', 'm', 's', 'a', 'm', 'p', 'l', 'e', 'r', 'e', 'm', 'u'}

// kernelFunc is the signature of the sampling kernel that emulated runs
// of SampleKernel execute (package hls's RunEdges): edges is nil when the
// run does not ask for edge indices.
type kernelFunc func(chunk, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error

// walkFunc is the signature of the walk-step mode that emulated runs of
// SampleKernel execute when ArgWalk != 0 (package hls's RunWalkEdges).
type walkFunc func(chunk, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error

// emuDevice is a software SmartSSD.
type emuDevice struct {
	index int
	cfg   EmulatorConfig

	mu       sync.Mutex
	cond     *sync.Cond // signals queue changes to the worker
	closed   bool
	used     int64 // bytes of device memory charged
	nextAddr uint64
	bos      map[*emuBO]struct{}
	xclbin   *xclbin.Xclbin
	queue    []*emuCmd
	workerWG sync.WaitGroup
}

// OpenEmulated opens software SmartSSD number index (any non-negative
// number; devices are independent, each with its own memory and command
// queue, and may be used concurrently).
func OpenEmulated(index int, cfg EmulatorConfig) (Device, error) {
	if index < 0 {
		return nil, fmt.Errorf("xrt: open emulated device %d: negative index", index)
	}
	if cfg.DDRBytes < 0 {
		return nil, fmt.Errorf("xrt: open emulated device %d: negative DDR capacity %d", index, cfg.DDRBytes)
	}
	if cfg.DDRBytes == 0 {
		cfg.DDRBytes = SmartSSDDDRBytes
	}
	d := &emuDevice{index: index, cfg: cfg, nextAddr: emuDDRBase, bos: map[*emuBO]struct{}{}}
	d.cond = sync.NewCond(&d.mu)
	d.workerWG.Add(1)
	go d.worker()
	return d, nil
}

func (d *emuDevice) Name() string { return fmt.Sprintf("emulated-smartssd:%d", d.index) }

func (d *emuDevice) errorf(format string, a ...any) error {
	return fmt.Errorf("xrt: %s: "+format, append([]any{d.Name()}, a...)...)
}

// LoadXclbin "programs" the device. "" loads the built-in kernel library
// (SampleKernelXclbin with a fixed UUID); a path is parsed as an xclbin,
// and every kernel it declares must be one the emulator implements.
func (d *emuDevice) LoadXclbin(path string) (UUID, error) {
	var x *xclbin.Xclbin
	if path == "" {
		x = SampleKernelXclbin(builtinUUID)
	} else {
		var err error
		if x, err = xclbin.ReadFile(path); err != nil {
			return UUID{}, d.errorf("load xclbin: %w", err)
		}
		if len(x.Kernels) == 0 {
			return UUID{}, d.errorf("load xclbin %s: no kernels in its metadata", path)
		}
		for _, k := range x.Kernels {
			var want []xclbin.Arg
			switch k.Name {
			case SampleKernel:
				want = SampleKernelXclbin(UUID{}).Kernels[0].Args
			case GatherKernel:
				want = gatherArgs()
			default:
				return UUID{}, d.errorf("load xclbin %s: kernel %q: %w (the emulator implements only %s and %s)", path, k.Name, ErrNoSuchKernel, SampleKernel, GatherKernel)
			}
			if err := checkSignature(x, &k, want); err != nil {
				return UUID{}, d.errorf("load xclbin %s: %w", path, err)
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return UUID{}, d.errorf("load xclbin: %w", ErrClosed)
	}
	d.xclbin = x
	return UUID(x.UUID), nil
}

// checkSignature verifies that an xclbin's kernel (sample_kernel or
// gather_kernel) has the argument contract want that the emulated kernel
// implements.
func checkSignature(x *xclbin.Xclbin, k *xclbin.Kernel, want []xclbin.Arg) error {
	if len(k.Args) != len(want) {
		return fmt.Errorf("kernel %s has %d arguments, want %d", k.Name, len(k.Args), len(want))
	}
	for _, w := range want {
		found := false
		for _, a := range k.Args {
			if a.Index == w.Index {
				found = true
				if a.AddressQualifier != w.AddressQualifier || a.Size != w.Size {
					return fmt.Errorf("kernel %s argument %d (%s): address qualifier %d size %d, want %d and %d",
						k.Name, a.Index, a.Name, a.AddressQualifier, a.Size, w.AddressQualifier, w.Size)
				}
			}
		}
		if !found {
			return fmt.Errorf("kernel %s has no argument %d (%s)", k.Name, w.Index, w.Name)
		}
		if w.AddressQualifier == 1 {
			if _, err := x.GroupID(k.Name, w.Index); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *emuDevice) XclbinUUID() (UUID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return UUID{}, d.errorf("xclbin uuid: %w", ErrClosed)
	}
	if d.xclbin == nil {
		return UUID{}, nil
	}
	return UUID(d.xclbin.UUID), nil
}

// AllocBO allocates page-aligned host memory for the buffer (and, for
// normal and cacheable buffers, a second mapping as the device copy),
// charging device memory for every kind but host-only.
func (d *emuDevice) AllocBO(size int, flags BOFlags, group int) (BO, error) {
	if size <= 0 {
		return nil, d.errorf("alloc BO: size %d must be positive", size)
	}
	if err := flags.valid(); err != nil {
		return nil, d.errorf("alloc BO: %w", err)
	}
	rounded := (int64(size) + emuPage - 1) &^ (emuPage - 1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, d.errorf("alloc BO: %w", ErrClosed)
	}
	if err := d.checkGroup(group); err != nil {
		return nil, d.errorf("alloc BO of %d bytes: %w", size, err)
	}
	charge := rounded
	if flags == BOHostOnly {
		charge = 0
	}
	if d.used+charge > d.cfg.DDRBytes {
		return nil, d.errorf("alloc %s BO of %d bytes: %w (%d of %d bytes free)",
			flags, size, ErrOutOfDeviceMemory, d.cfg.DDRBytes-d.used, d.cfg.DDRBytes)
	}
	bo := &emuBO{dev: d, size: size, flags: flags, group: group, charged: charge, addr: d.nextAddr}
	mmap := func() ([]byte, error) {
		b, err := unix.Mmap(-1, 0, int(rounded), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return nil, d.errorf("alloc BO of %d bytes: mmap: %w", size, err)
		}
		return b, nil
	}
	var err error
	if bo.mem, err = mmap(); err != nil {
		return nil, err
	}
	switch flags {
	case BONormal, BOCacheable:
		if bo.host, err = mmap(); err != nil {
			unix.Munmap(bo.mem)
			return nil, err
		}
	case BOP2P, BOHostOnly:
		bo.host = bo.mem // one storage: the host view is what the kernel reads
	case BODevOnly:
		// no host view
	}
	if flags != BOHostOnly {
		d.nextAddr += uint64(rounded)
	}
	d.used += charge
	d.bos[bo] = struct{}{}
	return bo, nil
}

var _ HostBuffers = (*emuDevice)(nil)

// ImportHost is xrt.HostBuffers: a host-only buffer over the caller's
// memory (no device memory charged, nothing copied; Free leaves mem
// alone). The kernel reads mem as it reads any buffer's device copy.
func (d *emuDevice) ImportHost(mem []byte, group int) (BO, error) {
	if len(mem) == 0 {
		return nil, d.errorf("import host memory: empty")
	}
	if addr := uintptr(unsafe.Pointer(&mem[0])); addr%emuPage != 0 {
		return nil, d.errorf("import %d bytes of host memory at %#x: %w: want a multiple of %d", len(mem), addr, ErrAlignment, emuPage)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, d.errorf("import host memory: %w", ErrClosed)
	}
	if err := d.checkGroup(group); err != nil {
		return nil, d.errorf("import %d bytes of host memory: %w", len(mem), err)
	}
	bo := &emuBO{dev: d, size: len(mem), flags: BOHostOnly, group: group, addr: d.nextAddr, host: mem, mem: mem, borrowed: true}
	d.bos[bo] = struct{}{}
	return bo, nil
}

// checkGroup validates a memory group against the loaded xclbin (or the
// built-in single bank before one is loaded). d.mu is held.
func (d *emuDevice) checkGroup(group int) error {
	mems := 1
	if d.xclbin != nil {
		mems = len(d.xclbin.Mems)
		if group >= 0 && group < mems && !d.xclbin.Mems[group].Used {
			return fmt.Errorf("memory group %d (%s) is not used by the xclbin", group, d.xclbin.Mems[group].Tag)
		}
	}
	if group < 0 || group >= mems {
		return fmt.Errorf("no memory group %d (the device has %d)", group, mems)
	}
	return nil
}

func (d *emuDevice) OpenKernel(uuid UUID, name string) (Kernel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, d.errorf("open kernel %s: %w", name, ErrClosed)
	}
	if d.xclbin == nil {
		return nil, d.errorf("open kernel %s: %w", name, ErrNoXclbin)
	}
	if UUID(d.xclbin.UUID) != uuid {
		return nil, d.errorf("open kernel %s: xclbin %s: %w (loaded: %s)", name, uuid, ErrNoXclbin, UUID(d.xclbin.UUID))
	}
	k, ok := d.xclbin.Kernel(name)
	if !ok {
		return nil, d.errorf("open kernel %q of xclbin %s: %w", name, uuid, ErrNoSuchKernel)
	}
	args := append([]xclbin.Arg(nil), k.Args...)
	sort.Slice(args, func(i, j int) bool { return args[i].Index < args[j].Index })
	for i, a := range args {
		if a.Index != i {
			return nil, d.errorf("open kernel %q: argument indices are not 0..%d", name, len(args)-1)
		}
	}
	ek := &emuKernel{dev: d, name: name, x: d.xclbin, args: args}
	if name == SampleKernel {
		ek.fn, ek.walk = sampleKernelImpl, walkKernelImpl
	}
	return ek, nil
}

// Close drains the command queue, then frees every buffer still allocated.
func (d *emuDevice) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.cond.Broadcast()
	d.mu.Unlock()
	d.workerWG.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for bo := range d.bos {
		bo.mu.Lock()
		bo.freed = true
		if err := bo.releaseLocked(); err != nil {
			errs = append(errs, err)
		}
		bo.mu.Unlock()
	}
	return errors.Join(errs...)
}

// emuBO is an emulated buffer object.
type emuBO struct {
	dev     *emuDevice
	size    int
	flags   BOFlags
	group   int
	addr    uint64
	charged int64
	// host is the host view (nil for dev-only); mem is the device copy
	// the kernel reads and writes. They are the same memory for P2P and
	// host-only buffers.
	host, mem []byte

	mu       sync.Mutex
	pins     int  // runs in flight that use the buffer
	freed    bool // Free was called
	released bool // memory unmapped and capacity returned
	borrowed bool // the memory is the caller's (ImportHost): never unmapped here
}

func (b *emuBO) errorf(format string, a ...any) error {
	return fmt.Errorf("xrt: %s: BO %#x (%s, %d bytes): "+format,
		append([]any{b.dev.Name(), b.addr, b.flags, b.size}, a...)...)
}

func (b *emuBO) Map() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil, b.errorf("map: %w", ErrClosed)
	}
	if b.host == nil {
		return nil, b.errorf("map: device-only buffers have no host view")
	}
	return b.host[:b.size:b.size], nil
}

func checkRange(size, offset, total int) error {
	if size < 0 || offset < 0 || offset > total || size > total-offset {
		return fmt.Errorf("%w: %d bytes at offset %d of a %d-byte buffer", ErrBounds, size, offset, total)
	}
	return nil
}

func (b *emuBO) Sync(dir SyncDir, size, offset int) error {
	if dir != ToDevice && dir != FromDevice {
		return b.errorf("sync: bad direction %d", int(dir))
	}
	if err := checkRange(size, offset, b.size); err != nil {
		return b.errorf("sync %s: %w", dir, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return b.errorf("sync %s: %w", dir, ErrClosed)
	}
	switch b.flags {
	case BODevOnly:
		return b.errorf("sync %s: device-only buffers have no host view", dir)
	case BOP2P, BOHostOnly:
		return nil // one storage: nothing to move, as XRT does
	}
	if dir == ToDevice {
		copy(b.mem[offset:offset+size], b.host[offset:offset+size])
	} else {
		copy(b.host[offset:offset+size], b.mem[offset:offset+size])
	}
	if bw := b.dev.cfg.SyncBytesPerSecond; bw > 0 {
		time.Sleep(time.Duration(float64(size) / bw * float64(time.Second)))
	}
	return nil
}

func (b *emuBO) Size() int       { return b.size }
func (b *emuBO) Flags() BOFlags  { return b.flags }
func (b *emuBO) Address() uint64 { return b.addr }

// Free releases the buffer now, or when the last run using it finishes.
func (b *emuBO) Free() error {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return b.errorf("free: %w", ErrClosed)
	}
	b.freed = true
	if b.pins > 0 {
		return nil
	}
	return b.releaseLocked()
}

// releaseLocked unmaps the memory and returns capacity; b.dev.mu and b.mu
// are held.
func (b *emuBO) releaseLocked() error {
	if b.released {
		return nil
	}
	b.released = true
	b.dev.used -= b.charged
	delete(b.dev.bos, b)
	if b.borrowed {
		b.host, b.mem = nil, nil
		return nil
	}
	var err error
	if e := unix.Munmap(b.mem); e != nil {
		err = b.errorf("munmap: %w", e)
	}
	if b.flags == BONormal || b.flags == BOCacheable {
		if e := unix.Munmap(b.host); e != nil && err == nil {
			err = b.errorf("munmap: %w", e)
		}
	}
	b.host, b.mem = nil, nil
	return err
}

// pin keeps the buffer alive for a run; it fails if it was freed.
func (b *emuBO) pin() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return b.errorf("%w", ErrClosed)
	}
	b.pins++
	return nil
}

func (b *emuBO) unpin() {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pins--
	if b.pins == 0 && b.freed {
		_ = b.releaseLocked() // the freeing caller already returned; nothing to report to
	}
}

// filePread is os.File.ReadAt, a variable so tests can inject failures.
var filePread = (*os.File).ReadAt
