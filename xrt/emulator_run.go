package xrt

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// emuKernel is a kernel of the xclbin loaded in an emulated device.
type emuKernel struct {
	dev  *emuDevice
	name string
	x    *xclbin.Xclbin
	args []xclbin.Arg
	fn   kernelFunc
	walk walkFunc

	mu     sync.Mutex
	closed bool
}

func (k *emuKernel) Name() string { return k.name }

func (k *emuKernel) GroupID(argIndex int) (int, error) {
	g, err := k.x.GroupID(k.name, argIndex)
	if err != nil {
		return 0, fmt.Errorf("xrt: %s: kernel %s: group of argument %d: %w: %v", k.dev.Name(), k.name, argIndex, ErrBadArg, err)
	}
	return g, nil
}

func (k *emuKernel) NewRun() (Run, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, fmt.Errorf("xrt: %s: kernel %s: new run: %w", k.dev.Name(), k.name, ErrClosed)
	}
	r := &emuRun{k: k, vals: make([]argVal, len(k.args))}
	if k.name == SampleKernel && len(r.vals) > ArgWalk {
		// walk defaults to 0 (sampling), as in XRT's zeroed command
		// packet, so that callers written before it existed still run.
		r.vals[ArgWalk] = argVal{set: true}
	}
	return r, nil
}

func (k *emuKernel) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	return nil
}

// argVal is one argument of a run: a buffer or a scalar.
type argVal struct {
	set    bool
	bo     *emuBO
	scalar uint64
}

// emuRun is a run of an emulated kernel.
type emuRun struct {
	k *emuKernel

	mu     sync.Mutex
	vals   []argVal
	cur    *emuCmd // the last started command
	closed bool
}

// emuCmd is one started run on the device queue: a snapshot of the
// arguments, as an ERT command packet is.
type emuCmd struct {
	k    *emuKernel
	vals []argVal
	done chan struct{} // closed when state is final

	mu    sync.Mutex
	state State
	err   error
}

func (c *emuCmd) setState(s State, err error) {
	c.mu.Lock()
	c.state, c.err = s, err
	c.mu.Unlock()
}

func (c *emuCmd) get() (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.err
}

func (r *emuRun) errorf(format string, a ...any) error {
	return fmt.Errorf("xrt: %s: kernel %s: "+format, append([]any{r.k.dev.Name(), r.k.name}, a...)...)
}

// arg returns the declared argument i.
func (r *emuRun) arg(i int) (*xclbin.Arg, error) {
	for j := range r.k.args {
		if r.k.args[j].Index == i {
			return &r.k.args[j], nil
		}
	}
	return nil, r.errorf("argument %d: %w: the kernel has %d arguments", i, ErrBadArg, len(r.k.args))
}

func (r *emuRun) SetBO(i int, bo BO) error {
	a, err := r.arg(i)
	if err != nil {
		return err
	}
	if a.AddressQualifier != 1 {
		return r.errorf("argument %d (%s): %w: a %d-byte scalar, not a buffer", i, a.Name, ErrBadArg, a.Size)
	}
	eb, ok := bo.(*emuBO)
	if !ok || eb == nil {
		return r.errorf("argument %d (%s): %w: buffer %T is not from an emulated device", i, a.Name, ErrBadArg, bo)
	}
	if eb.dev != r.k.dev {
		return r.errorf("argument %d (%s): %w: buffer belongs to %s", i, a.Name, ErrBadArg, eb.dev.Name())
	}
	g, err := r.k.x.GroupID(r.k.name, i)
	if err == nil && g != eb.group {
		return r.errorf("argument %d (%s): %w: buffer in memory group %d, the argument is connected to group %d", i, a.Name, ErrBadArg, eb.group, g)
	}
	return r.set(i, argVal{set: true, bo: eb})
}

func (r *emuRun) setScalar(i int, v uint64, size int) error {
	a, err := r.arg(i)
	if err != nil {
		return err
	}
	if a.AddressQualifier != 0 {
		return r.errorf("argument %d (%s): %w: a buffer, not a scalar", i, a.Name, ErrBadArg)
	}
	if a.Size != size {
		return r.errorf("argument %d (%s): %w: a %d-byte scalar, set with a %d-byte value", i, a.Name, ErrBadArg, a.Size, size)
	}
	return r.set(i, argVal{set: true, scalar: v})
}

func (r *emuRun) set(i int, v argVal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.errorf("set argument %d: %w", i, ErrClosed)
	}
	r.vals[i] = v
	return nil
}

func (r *emuRun) SetUint32(i int, v uint32) error { return r.setScalar(i, uint64(v), 4) }
func (r *emuRun) SetUint64(i int, v uint64) error { return r.setScalar(i, v, 8) }

func (r *emuRun) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.errorf("start: %w", ErrClosed)
	}
	if r.cur != nil {
		select {
		case <-r.cur.done:
		default:
			return r.errorf("start: %w", ErrBusy)
		}
	}
	for j, v := range r.vals {
		if !v.set {
			return r.errorf("start: %w: argument %d (%s) not set", ErrBadArg, r.k.args[j].Index, r.k.args[j].Name)
		}
	}
	cmd := &emuCmd{k: r.k, vals: append([]argVal(nil), r.vals...), done: make(chan struct{}), state: StateQueued}
	var pinned []*emuBO
	for _, v := range cmd.vals {
		if v.bo == nil {
			continue
		}
		if err := v.bo.pin(); err != nil {
			for _, p := range pinned {
				p.unpin()
			}
			return r.errorf("start: %w", err)
		}
		pinned = append(pinned, v.bo)
	}
	d := r.k.dev
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		for _, p := range pinned {
			p.unpin()
		}
		return r.errorf("start: %w", ErrClosed)
	}
	d.queue = append(d.queue, cmd)
	d.cond.Signal()
	d.mu.Unlock()
	r.cur = cmd
	return nil
}

func (r *emuRun) Wait(timeout time.Duration) (State, error) {
	r.mu.Lock()
	cmd := r.cur
	r.mu.Unlock()
	if cmd == nil {
		return StateNew, r.errorf("wait: run not started")
	}
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-cmd.done:
		case <-t.C:
			st, _ := cmd.get()
			return StateTimeout, r.errorf("wait: %w after %v (run %s)", ErrTimeout, timeout, st)
		}
	} else {
		<-cmd.done
	}
	st, err := cmd.get()
	if st != StateCompleted {
		return st, r.errorf("%w: %w", ErrKernelFailed, err)
	}
	return st, nil
}

// Close releases the run after a started command finishes.
func (r *emuRun) Close() error {
	r.mu.Lock()
	cmd := r.cur
	r.closed = true
	r.mu.Unlock()
	if cmd != nil {
		<-cmd.done
	}
	return nil
}

// worker is the device's compute unit: it executes queued runs in order.
func (d *emuDevice) worker() {
	defer d.workerWG.Done()
	for {
		d.mu.Lock()
		for len(d.queue) == 0 && !d.closed {
			d.cond.Wait()
		}
		if len(d.queue) == 0 {
			d.mu.Unlock()
			return
		}
		cmd := d.queue[0]
		d.queue[0] = nil
		d.queue = d.queue[1:]
		d.mu.Unlock()

		cmd.setState(StateRunning, nil)
		err := d.execute(cmd)
		for _, v := range cmd.vals {
			if v.bo != nil {
				v.bo.unpin()
			}
		}
		if err != nil {
			cmd.setState(StateError, err)
		} else {
			cmd.setState(StateCompleted, nil)
		}
		close(cmd.done)
	}
}

// execute runs one command; a panic in the kernel becomes an error
// rather than taking the process down, as a hung CU would not either.
func (d *emuDevice) execute(cmd *emuCmd) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("kernel %s panicked: %v", cmd.k.name, p)
		}
	}()
	if d.cfg.beforeRun != nil {
		d.cfg.beforeRun()
	}
	if cmd.k.name == GatherKernel {
		return runGatherKernel(gatherKernelImpl, cmd.vals)
	}
	if cmd.k.name != SampleKernel {
		return fmt.Errorf("kernel %s: %w", cmd.k.name, ErrNoSuchKernel)
	}
	return runSampleKernel(cmd.k.fn, cmd.k.walk, cmd.vals, d.cfg.units())
}

// words views a buffer's device copy as little-endian 32-bit words (the
// memory is page-aligned, and the hosts this runs on are little-endian).
func words(b *emuBO, n int) []uint32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b.mem[0])), n)
}

// runSampleKernel checks SampleKernel's arguments against the buffers, as
// the hardware cannot (it would read or write out of bounds), and runs fn
// (sampling) or walkFn (a walk step, ArgWalk != 0) on the device copies.
func runSampleKernel(fn kernelFunc, walkFn walkFunc, v []argVal, units int) error {
	walk := uint32(v[ArgWalk].scalar)
	if fn == nil || (walk != 0 && walkFn == nil) {
		return errors.New("no sampling kernel implementation linked into the emulator")
	}
	chunk, result, targets := v[ArgChunk].bo, v[ArgResult].bo, v[ArgTargets].bo
	n := int(uint32(v[ArgNTargets].scalar))
	fanout := int(uint32(v[ArgFanout].scalar))
	key := v[ArgKey].scalar
	replace := uint32(v[ArgReplace].scalar)
	if replace > 1 && walk == 0 { // a walk step ignores replace
		return fmt.Errorf("replace = %d, want 0 or 1", replace)
	}
	edges := uint32(v[ArgEdges].scalar)
	if edges > 1 {
		return fmt.Errorf("edges = %d, want 0 or 1", edges)
	}
	if uint32(fanout) == hls.FanoutAll && walk == 0 {
		return runAllKernel(v, n, key, edges == 1)
	}
	if fanout <= 0 {
		return fmt.Errorf("fanout = %d, want at least 1", fanout)
	}
	if walk != 0 {
		if need := int64(n) * 8; need > int64(targets.size) {
			return fmt.Errorf("targets buffer of %d bytes too small for a walk step's n_targets = %d nodes and as many walk ids (%d bytes)", targets.size, n, need)
		}
	} else if int64(n)*4 > int64(targets.size) {
		return fmt.Errorf("targets buffer of %d bytes too small for n_targets = %d (%d bytes)", targets.size, n, int64(n)*4)
	}
	words32 := int64(n) * int64(fanout) * int64(1+edges) // samples, then edge indices
	if need := words32 * 4; need > int64(result.size) {
		return fmt.Errorf("result buffer of %d bytes too small for n_targets*fanout*(1+edges) = %d*%d*%d int32 (%d bytes)", result.size, n, fanout, 1+edges, need)
	}
	var out, eout []int32
	if n > 0 {
		all := unsafe.Slice((*int32)(unsafe.Pointer(&result.mem[0])), words32)
		out = all[:n*fanout]
		if edges == 1 {
			eout = all[n*fanout:]
		}
	}
	if walk != 0 {
		tw := words(targets, 2*n)
		return runWalkUnits(walkFn, units, words(chunk, chunk.size/4), tw[:n], tw[n:], out, eout, fanout, key, walk-1)
	}
	return runUnits(fn, units, words(chunk, chunk.size/4), words(targets, n), out, eout, fanout, key, replace == 1)
}

// runAllKernel runs SampleKernel's copy-all mode (fanout hls.FanoutAll;
// hls.RunAllRaw): key is hls.AllKey(capacity, skip), and the result
// buffer must hold the layout of hls.AllResultWords. It runs on one
// compute unit: the rows' lengths are known only as they are copied, so
// the targets cannot be cut into shares whose outputs land at known
// places, and the copy is a sequential stream that one unit keeps at the
// memory's rate.
func runAllKernel(v []argVal, n int, key uint64, edges bool) error {
	chunk, result, targets := v[ArgChunk].bo, v[ArgResult].bo, v[ArgTargets].bo
	if int64(n)*4 > int64(targets.size) {
		return fmt.Errorf("targets buffer of %d bytes too small for n_targets = %d (%d bytes)", targets.size, n, int64(n)*4)
	}
	capacity := int(key >> 32)
	words32 := int64(hls.AllResultWords(n, capacity, edges))
	if need := words32 * 4; need > int64(result.size) {
		return fmt.Errorf("result buffer of %d bytes too small for a copy-all launch of %d targets and capacity %d (edges %v): %d bytes", result.size, n, capacity, edges, need)
	}
	res := unsafe.Slice((*int32)(unsafe.Pointer(&result.mem[0])), words32)
	return allKernelImpl(words(chunk, chunk.size/4), words(targets, n), res, capacity, uint32(key), edges)
}

// unitTargets is the least share of a launch's targets worth a compute
// unit of its own, and the multiple every share is cut at (a multiple of
// the kernel's 32 lanes).
const unitTargets = 4096

// runUnits runs fn as a device with units compute units would: the
// targets are cut into contiguous shares (multiples of unitTargets), and
// each unit samples its share into its own range of out (and of edges,
// when not nil), concurrently.
// Each target's samples depend only on the chunk, the target, the key and
// the slot (DESIGN §3), so the result is the one launch's, bit for bit.
// A panic in a unit becomes that unit's error.
func runUnits(fn kernelFunc, units int, chunk, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error {
	return splitUnits(units, len(targets), func(lo, hi int) error {
		return fn(chunk, targets[lo:hi], out[lo*fanout:hi*fanout], share(edges, lo*fanout, hi*fanout), fanout, key, replace)
	})
}

// runWalkUnits is runUnits for a walk step: each unit takes a contiguous
// share of the walkers (their nodes and their walk ids). A walker's
// candidates depend only on the chunk, its node, its walk id, the key and
// the attempt (DESIGN §3 "Walks"), so the result is the one launch's.
func runWalkUnits(fn walkFunc, units int, chunk, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error {
	return splitUnits(units, len(nodes), func(lo, hi int) error {
		return fn(chunk, nodes[lo:hi], walks[lo:hi], out[lo*k:hi*k], share(edges, lo*k, hi*k), k, key, attempt0)
	})
}

// share is s[lo:hi], or nil for a nil s (no edge output).
func share(s []int32, lo, hi int) []int32 {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}

// splitUnits cuts n targets into contiguous shares (multiples of
// unitTargets) for at most units compute units and runs each share
// [lo, hi) on a goroutine of its own; one unit runs on the caller's.
func splitUnits(units, n int, run func(lo, hi int) error) error {
	units = min(units, n/unitTargets)
	if units <= 1 {
		return run(0, n)
	}
	share := (n/units + unitTargets - 1) / unitTargets * unitTargets
	errs := make([]error, units)
	var wg sync.WaitGroup
	for u := range units {
		lo, hi := min(u*share, n), min((u+1)*share, n)
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[u] = fmt.Errorf("compute unit %d panicked: %v", u, p)
				}
			}()
			errs[u] = run(lo, hi)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
