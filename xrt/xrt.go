// Package xrt is the device API of streamsampler: devices, buffer objects
// (including peer-to-peer buffers that an NVMe SSD can read into
// directly), kernels and kernel runs, shaped after Xilinx XRT's native API.
//
// Two implementations share the interfaces below:
//
//   - Open drives a real FPGA (an AMD/Xilinx SmartSSD) through XRT's C API
//     with cgo. It is compiled only with the build tag "xrt" (link against
//     libxrt_core), or "xrt,xrt_noop" (link against XRT's no-hardware noop
//     driver instead, which makes every call succeed and is how CI runs the
//     host's whole call sequence without a card). Without the tag Open
//     returns ErrNoXRT.
//   - OpenEmulated is a software SmartSSD, always available: buffer objects
//     are page-aligned host memory with a separate "device" copy, so a
//     missing Sync is a visible bug as on hardware; P2P buffers have a
//     single storage that the host fills with pread on an O_DIRECT file,
//     exactly as it does with a BAR-mapped P2P buffer; kernels run on a
//     per-device command queue and execute package hls's sampling kernel.
//
// A typical host sequence (the same on both):
//
//	dev, _ := xrt.OpenEmulated(0, xrt.EmulatorConfig{}) // or xrt.Open(0)
//	uuid, _ := dev.LoadXclbin(path)                     // "" = built-in kernels (emulator)
//	k, _ := dev.OpenKernel(uuid, xrt.SampleKernel)
//	g, _ := k.GroupID(xrt.ArgChunk)
//	chunk, _ := dev.AllocBO(chunkSize, xrt.BOP2P, g)
//	_ = xrt.ReadP2P(f, chunk, 0, off, chunkSize)        // SSD → device memory
//	... targets BO: Map, copy, Sync(ToDevice) ...
//	r, _ := k.NewRun(); r.SetBO(xrt.ArgChunk, chunk) ...; r.Start()
//	st, err := r.Wait(time.Minute)
//	... result BO: Sync(FromDevice), Map, read ...
//
// None of the objects are safe for concurrent use by several goroutines
// unless stated; distinct runs, buffers and devices may be used from
// different goroutines at once.
package xrt

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; they are wrapped with context, test them with errors.Is.
var (
	// ErrNoXRT is returned by Open in a binary built without -tags xrt.
	ErrNoXRT = errors.New("xrt: built without -tags xrt; use the emulated device or rebuild")
	// ErrOutOfDeviceMemory is returned by AllocBO when the device's memory
	// (the emulator's DDR capacity, or XRT's allocator) cannot hold the buffer.
	ErrOutOfDeviceMemory = errors.New("xrt: out of device memory")
	// ErrTimeout is returned by Run.Wait when the run has not finished in time.
	ErrTimeout = errors.New("xrt: run timed out")
	// ErrKernelFailed is returned by Run.Wait when the run ended in an error
	// state; the wrapping error carries the kernel's message.
	ErrKernelFailed = errors.New("xrt: kernel run failed")
	// ErrClosed is returned when a device, buffer, kernel or run is used
	// after Close or Free.
	ErrClosed = errors.New("xrt: use after close")
	// ErrNoSuchKernel is returned by OpenKernel for a name the loaded xclbin
	// (or, for the emulator, its kernel library) does not provide.
	ErrNoSuchKernel = errors.New("xrt: no such kernel")
	// ErrNoXclbin is returned by OpenKernel before LoadXclbin succeeded, or
	// when the UUID is not the loaded xclbin's.
	ErrNoXclbin = errors.New("xrt: xclbin not loaded")
	// ErrBadArg is returned for a kernel argument of the wrong index or
	// kind, a buffer from another device or implementation, or a missing
	// argument at Start.
	ErrBadArg = errors.New("xrt: bad kernel argument")
	// ErrBounds is returned for a Sync or read range outside a buffer.
	ErrBounds = errors.New("xrt: range outside buffer")
	// ErrAlignment is returned by ReadP2P for offsets or sizes that
	// O_DIRECT cannot transfer.
	ErrAlignment = errors.New("xrt: misaligned transfer")
	// ErrShortRead is returned by ReadP2P when the file ends before n bytes.
	ErrShortRead = errors.New("xrt: short read")
	// ErrBusy is returned when a run is started (or a device closed in a
	// way that cannot wait) while a previous start is still in flight.
	ErrBusy = errors.New("xrt: run still in flight")
)

// SampleKernel is the name of the sampling kernel in the xclbin (and in the
// emulator's built-in kernel library).
const SampleKernel = "sample_kernel"

// Argument indices of SampleKernel. The kernel reads n_targets target node
// ids from the targets buffer, samples fanout neighbors of each from the
// chunk buffer under key, and writes n_targets*fanout int32 to the result
// buffer (-1 for empty slots); with edges = 1 another n_targets*fanout
// int32 after them, each slot's chunk-local edge index (hls.RunEdges), so
// the result buffer is twice as large.
//
// With walk != 0 it runs one random-walk step instead (hls.RunWalk,
// DESIGN §3 "Walks"): the targets buffer holds n_targets current nodes and
// then n_targets walk ids (2*n_targets uint32), key is the step's
// rng.WalkKey, replace is ignored, and row r holds the fanout candidates
// walk-1, walk, … of walker r (-1 throughout for a node without
// neighbors), with edge indices after them as above. A run that never
// sets walk samples (0, as XRT's zeroed command packet has it).
//
// With fanout hls.FanoutAll it runs the copy-all mode (fanout -1, every
// neighbor; hls.RunAllRaw): the result buffer holds a CSR-shaped result
// (status, a count per target, the neighbors, then with edges = 1 their
// edge indices; hls.AllResultWords) of at most the capacity that key
// carries, and the host launches again from where the status says the
// launch stopped.
const (
	ArgChunk    = 0 // BO: the chunk, uint32 words (chunk layout of docs/FORMAT.md)
	ArgResult   = 1 // BO: int32 samples, n_targets*fanout (then as many edge indices with edges = 1)
	ArgTargets  = 2 // BO: uint32 target node ids, all inside the chunk
	ArgNTargets = 3 // uint32
	ArgFanout   = 4 // uint32, 1..hls.MaxFanout, or hls.FanoutAll: the copy-all mode (fanout -1)
	ArgKey      = 5 // uint64, rng.Key(seed, epoch, layer); in copy-all mode hls.AllKey(capacity, skip)
	ArgReplace  = 6 // uint32, 0 or 1
	ArgEdges    = 7 // uint32, 0 or 1: also write chunk-local edge indices
	ArgWalk     = 8 // uint32, 0 = sampling, else a walk step with first attempt walk-1; 0 when not set
)

// UUID identifies an xclbin (the uuid field of its axlf header).
type UUID [16]byte

// String formats u as 8-4-4-4-12 lower-case hex, as xbutil prints it.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:16])
	return string(b[:])
}

// IsZero reports whether u is all zero (no xclbin).
func (u UUID) IsZero() bool { return u == UUID{} }

// BOFlags are buffer-object allocation flags, with XRT's values
// (xrt_mem.h: XCL_BO_FLAGS_*), so that they pass through to xrtBOAlloc
// unchanged.
type BOFlags uint32

// Buffer-object flags. BONormal buffers have a host copy and a device copy
// kept apart until Sync; the others are as XRT documents them.
const (
	BONormal    BOFlags = 0       // XRT_BO_FLAGS_NONE: host + device copy, Sync moves data
	BOCacheable BOFlags = 1 << 24 // XRT_BO_FLAGS_CACHEABLE: like normal, host-cached
	BODevOnly   BOFlags = 1 << 28 // XRT_BO_FLAGS_DEV_ONLY: device memory only, no host map
	BOHostOnly  BOFlags = 1 << 29 // XRT_BO_FLAGS_HOST_ONLY: host memory the device reaches over PCIe
	BOP2P       BOFlags = 1 << 30 // XRT_BO_FLAGS_P2P: device memory exposed on the PCIe BAR
)

// boFlagKinds are the flags this package knows; BOFlags may combine at most
// one of them (XRT treats them as a memory kind, not a bit set).
const boFlagKinds = BOCacheable | BODevOnly | BOHostOnly | BOP2P

// String names the memory kind, e.g. "p2p".
func (f BOFlags) String() string {
	switch f {
	case BONormal:
		return "normal"
	case BOCacheable:
		return "cacheable"
	case BODevOnly:
		return "dev-only"
	case BOHostOnly:
		return "host-only"
	case BOP2P:
		return "p2p"
	}
	return fmt.Sprintf("BOFlags(%#x)", uint32(f))
}

func (f BOFlags) valid() error {
	if f&^boFlagKinds != 0 {
		return fmt.Errorf("xrt: unknown buffer flags %#x", uint32(f&^boFlagKinds))
	}
	switch f {
	case BONormal, BOCacheable, BODevOnly, BOHostOnly, BOP2P:
		return nil
	}
	return fmt.Errorf("xrt: buffer flags %#x combine several memory kinds", uint32(f))
}

// SyncDir is the direction of BO.Sync.
type SyncDir int

// Sync directions, XRT's xclBOSyncDirection values.
const (
	ToDevice   SyncDir = 0 // XCL_BO_SYNC_BO_TO_DEVICE: host view → device memory
	FromDevice SyncDir = 1 // XCL_BO_SYNC_BO_FROM_DEVICE: device memory → host view
)

// String returns "to-device" or "from-device".
func (d SyncDir) String() string {
	switch d {
	case ToDevice:
		return "to-device"
	case FromDevice:
		return "from-device"
	}
	return fmt.Sprintf("SyncDir(%d)", int(d))
}

// State is the state of a run, with XRT's ert_cmd_state values.
type State int

// Run states (ert.h: ERT_CMD_STATE_*).
const (
	StateNew       State = 1
	StateQueued    State = 2
	StateRunning   State = 3
	StateCompleted State = 4
	StateError     State = 5
	StateAbort     State = 6
	StateSubmitted State = 7
	StateTimeout   State = 8
)

// String names the state in lower case, e.g. "completed".
func (s State) String() string {
	switch s {
	case StateNew:
		return "new"
	case StateQueued:
		return "queued"
	case StateRunning:
		return "running"
	case StateCompleted:
		return "completed"
	case StateError:
		return "error"
	case StateAbort:
		return "abort"
	case StateSubmitted:
		return "submitted"
	case StateTimeout:
		return "timeout"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Device is one accelerator card (or its emulation).
type Device interface {
	// Name describes the device, e.g. "emulated-smartssd:0".
	Name() string
	// LoadXclbin programs the device with the xclbin at path and returns
	// its UUID. The emulator accepts "" for its built-in kernels.
	LoadXclbin(path string) (UUID, error)
	// XclbinUUID is the UUID of the loaded xclbin (zero before LoadXclbin).
	XclbinUUID() (UUID, error)
	// AllocBO allocates size bytes of the given kind in memory group (bank)
	// group, as Kernel.GroupID reports it for the argument it will be bound to.
	AllocBO(size int, flags BOFlags, group int) (BO, error)
	// OpenKernel opens kernel name of the xclbin uuid (which must be loaded).
	OpenKernel(uuid UUID, name string) (Kernel, error)
	// Close waits for queued runs, frees what is left and releases the
	// device. Buffers, kernels and runs of the device are unusable after.
	Close() error
}

// HostBuffers is implemented by devices whose kernels can read host
// memory that the caller owns, as XRT's user-pointer buffer objects do
// (xrt::bo over a host pointer, host-only): the emulated SmartSSD, whose
// kernels run on the host anyway. The streaming sampler keeps its chunk
// cache in such memory and runs the kernel over a cached chunk without
// copying it (host.Options.ChunkCache); a SmartSSD reads its chunks
// peer-to-peer into its own DDR instead, and the XRT binding does not
// implement it.
type HostBuffers interface {
	// ImportHost returns a host-only buffer object over mem, for a kernel
	// argument connected to memory group group. mem must be page-aligned
	// (4096 bytes) and not empty, and must stay valid until the buffer is
	// freed (or its device closed): the buffer is a view of it, never a
	// copy, and Free releases the view, not mem.
	ImportHost(mem []byte, group int) (BO, error)
}

// BO is a buffer object: device memory with (for most kinds) a host view.
type BO interface {
	// Map returns the host view of the whole buffer. The slice stays valid
	// (the same memory) until Free; for normal buffers it is not the device
	// copy: Sync moves data between them.
	Map() ([]byte, error)
	// Sync copies size bytes at offset between the host view and device
	// memory. It is a no-op (after bounds checks) for P2P and host-only
	// buffers, whose host view is the memory the kernel reads.
	Sync(dir SyncDir, size, offset int) error
	// Size is the size requested at allocation.
	Size() int
	// Flags are the flags given at allocation.
	Flags() BOFlags
	// Address is the buffer's device address.
	Address() uint64
	// Free releases the buffer. Runs already started keep it alive until
	// they finish.
	Free() error
}

// Kernel is a kernel of the loaded xclbin.
type Kernel interface {
	// Name is the kernel's name.
	Name() string
	// GroupID is the memory group that buffer argument argIndex is
	// connected to; allocate that argument's BO in this group.
	GroupID(argIndex int) (int, error)
	// NewRun creates a run (an execution command) of the kernel.
	NewRun() (Run, error)
	// Close releases the kernel.
	Close() error
}

// Run is one execution of a kernel: arguments, start, wait. A run may be
// started again after it finished, with the same or updated arguments.
type Run interface {
	// SetBO binds buffer bo to argument i.
	SetBO(i int, bo BO) error
	// SetUint32 sets 32-bit scalar argument i.
	SetUint32(i int, v uint32) error
	// SetUint64 sets 64-bit scalar argument i.
	SetUint64(i int, v uint64) error
	// Start submits the run with the arguments as they are now.
	Start() error
	// Wait blocks until the run finishes or timeout passes (timeout <= 0
	// waits forever). It returns StateCompleted and nil on success; a
	// failed run returns StateError (or StateAbort) and an error wrapping
	// ErrKernelFailed; a timeout returns StateTimeout and an error wrapping
	// ErrTimeout, and the run goes on (a PL kernel cannot be aborted), so
	// Wait may be called again.
	Wait(timeout time.Duration) (State, error)
	// Close releases the run; a run still in flight finishes first.
	Close() error
}
