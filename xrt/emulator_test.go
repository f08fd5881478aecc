package xrt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/rng"
	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

func openEmu(t testing.TB, cfg EmulatorConfig) (Device, UUID) {
	t.Helper()
	d, err := OpenEmulated(0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	u, err := d.LoadXclbin("")
	if err != nil {
		t.Fatal(err)
	}
	return d, u
}

// The host's whole sequence on a real chunk file read with O_DIRECT
// equals rng.Sample for every target, fanout and mode.
func TestEmulatorEndToEnd(t *testing.T) {
	g := newTestGraph(3000, 1000, 90, 256<<10)
	path := g.writeFile(t, t.TempDir())
	f, direct := openDirect(t, path)
	defer f.Close()
	t.Logf("O_DIRECT on %s: %v (kernel engine %s)", filepath.Dir(path), direct, KernelEngine)
	dev, uuid := openEmu(t, EmulatorConfig{})
	for _, fanout := range []int{1, 5, 25, hls.MaxFanout} {
		for _, replace := range []bool{false, true} {
			for c := range g.starts {
				key := rng.Key(42, uint32(fanout), c)
				ts := g.targets(c, func(v uint32) bool { return v%3 != 1 })
				got, err := sampleOnDevice(t, dev, uuid, f, g, c, ts, fanout, key, replace)
				if err != nil {
					t.Fatalf("fanout %d replace %v chunk %d: %v", fanout, replace, c, err)
				}
				want := g.want(ts, fanout, key, replace)
				if !slices.Equal(got, want) {
					t.Fatalf("fanout %d replace %v chunk %d: kernel output differs from rng.Sample", fanout, replace, c)
				}
				// edges = 1: the same samples, then the edge indices.
				gotS, gotE, err := sampleOnDeviceEdges(t, dev, uuid, f, g, c, ts, fanout, key, replace, true)
				if err != nil {
					t.Fatalf("fanout %d replace %v chunk %d with edges: %v", fanout, replace, c, err)
				}
				b := g.chunk(t, c)
				wantE := make([]int32, len(want))
				if err := hls.ReferenceEdges(unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4), ts, make([]int32, len(want)), wantE, fanout, key, replace); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gotS, want) || !slices.Equal(gotE, wantE) {
					t.Fatalf("fanout %d replace %v chunk %d: kernel output with edges differs from hls.ReferenceEdges", fanout, replace, c)
				}
			}
		}
	}
}

// A normal BO's host view and device copy are apart until Sync, as on
// hardware: forgetting either sync is a visible bug.
func TestEmulatorMissingSyncIsVisible(t *testing.T) {
	g := newTestGraph(200, 100, 20, 16<<10)
	dev, uuid := openEmu(t, EmulatorConfig{})
	k := must[Kernel](t)(dev.OpenKernel(uuid, SampleKernel))
	chunk := must[BO](t)(dev.AllocBO(g.chunkSize, BOP2P, 0))
	copy(must[[]byte](t)(chunk.Map()), g.chunk(t, 1)) // P2P: no sync needed
	ts := g.targets(1, func(uint32) bool { return true })
	tb := must[BO](t)(dev.AllocBO(4*len(ts), BONormal, 0))
	putU32s(must[[]byte](t)(tb.Map()), ts)
	const fanout = 4
	rb := must[BO](t)(dev.AllocBO(4*len(ts)*fanout, BONormal, 0))
	run := must[Run](t)(k.NewRun())
	setAll := func() {
		for _, err := range []error{run.SetBO(0, chunk), run.SetBO(1, rb), run.SetBO(2, tb), run.SetUint32(3, uint32(len(ts))),
			run.SetUint32(4, fanout), run.SetUint64(5, 7), run.SetUint32(6, 0), run.SetUint32(7, 0)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	setAll()
	// Targets not synced: the device copy holds zeros, node 0 is not in chunk 1.
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := run.Wait(10 * time.Second)
	if st != StateError || !errors.Is(err, ErrKernelFailed) || !errors.Is(err, hls.ErrTargetOutsideChunk) {
		t.Fatalf("unsynced targets: state %v err %v, want error state wrapping ErrKernelFailed and hls.ErrTargetOutsideChunk", st, err)
	}
	if err := tb.Sync(ToDevice, tb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if st, err := run.Wait(10 * time.Second); st != StateCompleted || err != nil {
		t.Fatalf("state %v err %v", st, err)
	}
	rm := must[[]byte](t)(rb.Map())
	if got := getI32s(rm, len(ts)*fanout); slices.ContainsFunc(got, func(v int32) bool { return v != 0 }) {
		t.Fatal("result visible in the host view before Sync(FromDevice)")
	}
	if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	if got, want := getI32s(rm, len(ts)*fanout), g.want(ts, fanout, 7, false); !slices.Equal(got, want) {
		t.Fatalf("after sync: %v, want %v", got[:8], want[:8])
	}
}

func TestEmulatorCapacity(t *testing.T) {
	const ddr = 64 << 10
	dev, _ := openEmu(t, EmulatorConfig{DDRBytes: ddr})
	a := must[BO](t)(dev.AllocBO(40<<10, BONormal, 0))
	if _, err := dev.AllocBO(24<<10+1, BOP2P, 0); !errors.Is(err, ErrOutOfDeviceMemory) {
		t.Fatalf("alloc beyond capacity: %v, want ErrOutOfDeviceMemory", err)
	}
	// Host-only buffers live in host memory and do not count.
	h := must[BO](t)(dev.AllocBO(1<<20, BOHostOnly, 0))
	b := must[BO](t)(dev.AllocBO(24<<10, BOP2P, 0)) // exactly fills the DDR
	if _, err := dev.AllocBO(1, BODevOnly, 0); !errors.Is(err, ErrOutOfDeviceMemory) {
		t.Fatalf("alloc on a full device: %v", err)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); !errors.Is(err, ErrClosed) {
		t.Fatalf("double free: %v, want ErrClosed", err)
	}
	c := must[BO](t)(dev.AllocBO(40<<10, BOCacheable, 0))
	if c.Address() == a.Address() || c.Address() == b.Address() || c.Address()%emuPage != 0 {
		t.Fatalf("addresses %#x %#x %#x", a.Address(), b.Address(), c.Address())
	}
	for _, bo := range []BO{h, b, c} {
		if err := bo.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if used := dev.(*emuDevice).used; used != 0 {
		t.Fatalf("%d bytes still charged after freeing everything", used)
	}
	// Default capacity is a SmartSSD's 4 GiB.
	d2, _ := openEmu(t, EmulatorConfig{})
	if _, err := d2.AllocBO(SmartSSDDDRBytes+1, BONormal, 0); !errors.Is(err, ErrOutOfDeviceMemory) {
		t.Fatalf("alloc of 4 GiB + 1: %v", err)
	}
}

func TestEmulatorAllocErrors(t *testing.T) {
	dev, _ := openEmu(t, EmulatorConfig{})
	for _, tc := range []struct {
		size  int
		flags BOFlags
		group int
	}{{0, BONormal, 0}, {-4, BONormal, 0}, {4096, BOP2P | BOHostOnly, 0}, {4096, 1 << 3, 0}, {4096, BONormal, 1}, {4096, BONormal, -1}} {
		if _, err := dev.AllocBO(tc.size, tc.flags, tc.group); err == nil {
			t.Errorf("AllocBO(%d, %v, %d) succeeded", tc.size, tc.flags, tc.group)
		}
	}
	if _, err := OpenEmulated(-1, EmulatorConfig{}); err == nil {
		t.Error("negative index accepted")
	}
	if _, err := OpenEmulated(0, EmulatorConfig{DDRBytes: -1}); err == nil {
		t.Error("negative capacity accepted")
	}
}

func TestEmulatorSyncBounds(t *testing.T) {
	dev, _ := openEmu(t, EmulatorConfig{})
	bo := must[BO](t)(dev.AllocBO(10000, BONormal, 0))
	m := must[[]byte](t)(bo.Map())
	if len(m) != 10000 || cap(m) != 10000 || !isAligned(m, emuPage) {
		t.Fatalf("map: len %d cap %d aligned %v", len(m), cap(m), isAligned(m, emuPage))
	}
	for _, tc := range []struct {
		dir          SyncDir
		size, offset int
		ok           bool
	}{
		{ToDevice, 10000, 0, true}, {FromDevice, 10000, 0, true}, {ToDevice, 1, 9999, true}, {ToDevice, 0, 10000, true},
		{ToDevice, 3, 17, true}, {ToDevice, 10001, 0, false}, {ToDevice, 1, 10000, false}, {FromDevice, -1, 0, false},
		{FromDevice, 10, -1, false}, {ToDevice, 0, 10001, false}, {SyncDir(2), 1, 0, false},
	} {
		err := bo.Sync(tc.dir, tc.size, tc.offset)
		if (err == nil) != tc.ok {
			t.Errorf("Sync(%v, %d, %d) = %v, want ok=%v", tc.dir, tc.size, tc.offset, err, tc.ok)
		}
		if !tc.ok && tc.dir != SyncDir(2) && !errors.Is(err, ErrBounds) {
			t.Errorf("Sync(%v, %d, %d) = %v, want ErrBounds", tc.dir, tc.size, tc.offset, err)
		}
	}
	// A partial sync moves exactly its range.
	for i := range m {
		m[i] = 0xAA
	}
	if err := bo.Sync(ToDevice, 100, 50); err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = 0
	}
	if err := bo.Sync(FromDevice, 10000, 0); err != nil {
		t.Fatal(err)
	}
	for i, v := range m {
		if want := byte(0); i >= 50 && i < 150 && v != 0xAA || (i < 50 || i >= 150) && v != want {
			t.Fatalf("byte %d = %#x after partial sync", i, v)
		}
	}
	devOnly := must[BO](t)(dev.AllocBO(4096, BODevOnly, 0))
	if _, err := devOnly.Map(); err == nil {
		t.Error("dev-only buffer mapped")
	}
	if err := devOnly.Sync(ToDevice, 4096, 0); err == nil {
		t.Error("dev-only buffer synced")
	}
	if err := bo.Free(); err != nil {
		t.Fatal(err)
	}
	if err := bo.Sync(ToDevice, 1, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("sync after free: %v", err)
	}
	if _, err := bo.Map(); !errors.Is(err, ErrClosed) {
		t.Errorf("map after free: %v", err)
	}
}

// setupSample prepares a runnable sample_kernel run on chunk 0 of g; it
// returns the run and the result buffer.
func setupSample(t *testing.T, dev Device, uuid UUID, g *testGraph, ts []uint32, fanout int, key uint64) (Run, BO) {
	t.Helper()
	k := must[Kernel](t)(dev.OpenKernel(uuid, SampleKernel))
	chunk := must[BO](t)(dev.AllocBO(g.chunkSize, BOP2P, 0))
	copy(must[[]byte](t)(chunk.Map()), g.chunk(t, 0))
	tb := must[BO](t)(dev.AllocBO(max(4*len(ts), 4), BONormal, 0))
	putU32s(must[[]byte](t)(tb.Map()), ts)
	if err := tb.Sync(ToDevice, tb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	rb := must[BO](t)(dev.AllocBO(max(4*len(ts)*fanout, 4), BONormal, 0))
	run := must[Run](t)(k.NewRun())
	for _, err := range []error{run.SetBO(0, chunk), run.SetBO(1, rb), run.SetBO(2, tb), run.SetUint32(3, uint32(len(ts))),
		run.SetUint32(4, uint32(fanout)), run.SetUint64(5, key), run.SetUint32(6, 0), run.SetUint32(7, 0)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return run, rb
}

func TestEmulatorTimeout(t *testing.T) {
	release := make(chan struct{})
	g := newTestGraph(100, 100, 30, 8<<10)
	dev, uuid := openEmu(t, EmulatorConfig{beforeRun: func() { <-release }})
	ts := g.targets(0, func(uint32) bool { return true })
	run, rb := setupSample(t, dev, uuid, g, ts, 10, 99)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := run.Wait(20 * time.Millisecond)
	if st != StateTimeout || !errors.Is(err, ErrTimeout) {
		t.Fatalf("slow kernel: state %v err %v, want timeout", st, err)
	}
	if err := run.Start(); !errors.Is(err, ErrBusy) {
		t.Fatalf("restart while in flight: %v, want ErrBusy", err)
	}
	// Freeing a buffer of a run in flight defers the release until it ends.
	if err := rb.Free(); err != nil {
		t.Fatal(err)
	}
	close(release)
	if st, err := run.Wait(0); st != StateCompleted || err != nil {
		t.Fatalf("after release: state %v err %v", st, err)
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
}

// A run whose kernel fails ends in StateError; Wait says why.
func TestEmulatorFailedRun(t *testing.T) {
	g := newTestGraph(100, 100, 30, 8<<10)
	dev, uuid := openEmu(t, EmulatorConfig{})
	for _, tc := range []struct {
		name    string
		targets []uint32
		fanout  int
		setup   func(Run, BO) error
		want    error
		msg     string
	}{
		{"target outside chunk", []uint32{5, 100}, 4, nil, hls.ErrTargetOutsideChunk, ""},
		{"fanout too big", []uint32{5}, hls.MaxFanout + 1, nil, hls.ErrBadFanout, ""},
		{"result too small", []uint32{1, 2, 3}, 8, func(r Run, rb BO) error { return r.SetUint32(ArgNTargets, 100) }, nil, "targets buffer of 12 bytes too small for n_targets = 100"},
		{"replace not boolean", []uint32{1}, 2, func(r Run, rb BO) error { return r.SetUint32(ArgReplace, 2) }, nil, "replace = 2"},
		{"edges not boolean", []uint32{1}, 2, func(r Run, rb BO) error { return r.SetUint32(ArgEdges, 2) }, nil, "edges = 2"},
		{"result too small for edges", []uint32{1, 2}, 3, func(r Run, rb BO) error { return r.SetUint32(ArgEdges, 1) }, nil,
			"result buffer of 24 bytes too small for n_targets*fanout*(1+edges) = 2*3*2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, rb := setupSample(t, dev, uuid, g, tc.targets, tc.fanout, 1)
			if tc.setup != nil {
				if err := tc.setup(run, rb); err != nil {
					t.Fatal(err)
				}
			}
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			st, err := run.Wait(10 * time.Second)
			if st != StateError || !errors.Is(err, ErrKernelFailed) {
				t.Fatalf("state %v err %v, want StateError wrapping ErrKernelFailed", st, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %q does not say %q", err, tc.msg)
			}
			// Waiting again reports the same outcome.
			if st2, err2 := run.Wait(time.Second); st2 != st || err2.Error() != err.Error() {
				t.Fatalf("second wait: %v %v", st2, err2)
			}
		})
	}
	// A result buffer too small for n_targets*fanout.
	run, _ := setupSample(t, dev, uuid, g, []uint32{1, 2}, 3, 1)
	small := must[BO](t)(dev.AllocBO(20, BONormal, 0))
	if err := run.SetBO(ArgResult, small); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(10 * time.Second); !strings.Contains(fmt.Sprint(err), "result buffer of 20 bytes too small for n_targets*fanout*(1+edges) = 2*3*1") {
		t.Fatalf("small result buffer: %v", err)
	}
}

func TestEmulatorArgErrors(t *testing.T) {
	dev, uuid := openEmu(t, EmulatorConfig{})
	other, _ := openEmu(t, EmulatorConfig{})
	k := must[Kernel](t)(dev.OpenKernel(uuid, SampleKernel))
	if k.Name() != SampleKernel {
		t.Fatal(k.Name())
	}
	for arg, want := range map[int]int{ArgChunk: 0, ArgResult: 0, ArgTargets: 0} {
		if g, err := k.GroupID(arg); err != nil || g != want {
			t.Errorf("GroupID(%d) = %d, %v", arg, g, err)
		}
	}
	for _, arg := range []int{ArgNTargets, ArgFanout, ArgKey, ArgReplace, ArgEdges, ArgWalk, 9, -1} {
		if _, err := k.GroupID(arg); !errors.Is(err, ErrBadArg) {
			t.Errorf("GroupID(%d) = %v, want ErrBadArg", arg, err)
		}
	}
	bo := must[BO](t)(dev.AllocBO(4096, BONormal, 0))
	foreign := must[BO](t)(other.AllocBO(4096, BONormal, 0))
	run := must[Run](t)(k.NewRun())
	for name, err := range map[string]error{
		"BO of another device": run.SetBO(ArgChunk, foreign),
		"BO on a scalar":       run.SetBO(ArgFanout, bo),
		"nil BO":               run.SetBO(ArgChunk, nil),
		"u32 on a u64":         run.SetUint32(ArgKey, 1),
		"u64 on a u32":         run.SetUint64(ArgFanout, 1),
		"scalar on a BO":       run.SetUint32(ArgChunk, 1),
		"index 9":              run.SetUint32(9, 1),
		"index -1":             run.SetUint64(-1, 1),
	} {
		if !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: %v, want ErrBadArg", name, err)
		}
	}
	if _, err := run.Wait(time.Second); err == nil {
		t.Error("Wait before Start succeeded")
	}
	for _, err := range []error{run.SetBO(0, bo), run.SetBO(1, bo), run.SetBO(2, bo), run.SetUint32(3, 0), run.SetUint32(4, 1), run.SetUint64(5, 1)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Start(); !errors.Is(err, ErrBadArg) || !strings.Contains(err.Error(), "argument 6 (replace) not set") {
		t.Fatalf("start with an argument unset: %v", err)
	}
	if err := bo.Free(); err != nil {
		t.Fatal(err)
	}
	if err := run.SetUint32(6, 0); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); !errors.Is(err, ErrBadArg) || !strings.Contains(err.Error(), "argument 7 (edges) not set") {
		t.Fatalf("start with edges unset: %v", err)
	}
	if err := run.SetUint32(ArgEdges, 0); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("start with a freed BO: %v", err)
	}
	// Kernels and xclbins.
	fresh, _ := OpenEmulated(3, EmulatorConfig{})
	defer fresh.Close()
	if u, err := fresh.XclbinUUID(); err != nil || !u.IsZero() {
		t.Errorf("uuid before load: %v %v", u, err)
	}
	if _, err := fresh.OpenKernel(uuid, SampleKernel); !errors.Is(err, ErrNoXclbin) {
		t.Errorf("open kernel before load: %v", err)
	}
	if _, err := dev.OpenKernel(UUID{1}, SampleKernel); !errors.Is(err, ErrNoXclbin) {
		t.Errorf("open kernel of another uuid: %v", err)
	}
	if _, err := dev.OpenKernel(uuid, "vadd"); !errors.Is(err, ErrNoSuchKernel) {
		t.Errorf("open unknown kernel: %v", err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.NewRun(); !errors.Is(err, ErrClosed) {
		t.Errorf("new run on a closed kernel: %v", err)
	}
}

func TestEmulatorLoadXclbin(t *testing.T) {
	dir := t.TempDir()
	uuid := UUID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	path := filepath.Join(dir, "sample.xclbin")
	if err := xclbin.WriteFile(path, SampleKernelXclbin(uuid)); err != nil {
		t.Fatal(err)
	}
	dev, builtin := openEmu(t, EmulatorConfig{})
	if got := must[UUID](t)(dev.LoadXclbin(path)); got != uuid {
		t.Fatalf("loaded uuid %v, want %v", got, uuid)
	}
	if got := must[UUID](t)(dev.XclbinUUID()); got != uuid {
		t.Fatalf("XclbinUUID %v", got)
	}
	if _, err := dev.OpenKernel(builtin, SampleKernel); !errors.Is(err, ErrNoXclbin) {
		t.Fatalf("kernel of the replaced xclbin: %v", err)
	}
	g := newTestGraph(100, 100, 30, 8<<10)
	ts := g.targets(0, func(v uint32) bool { return v%2 == 0 })
	run, rb := setupSample(t, dev, uuid, g, ts, 6, 5)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	if got := getI32s(must[[]byte](t)(rb.Map()), len(ts)*6); !slices.Equal(got, g.want(ts, 6, 5, false)) {
		t.Fatal("run of the loaded xclbin differs from rng.Sample")
	}

	other := SampleKernelXclbin(uuid)
	other.Kernels[0].Name = "vadd"
	bad := filepath.Join(dir, "vadd.xclbin")
	if err := xclbin.WriteFile(bad, other); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.LoadXclbin(bad); !errors.Is(err, ErrNoSuchKernel) {
		t.Errorf("xclbin with an unknown kernel: %v", err)
	}
	wrongSig := SampleKernelXclbin(uuid)
	wrongSig.Kernels[0].Args[ArgKey].Size = 4
	if err := xclbin.WriteFile(bad, wrongSig); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.LoadXclbin(bad); err == nil || !strings.Contains(err.Error(), "argument 5 (key)") {
		t.Errorf("xclbin with a wrong signature: %v", err)
	}
	if err := os.WriteFile(bad, []byte("not an xclbin at all, but long enough?"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.LoadXclbin(bad); !errors.Is(err, xclbin.ErrFormat) {
		t.Errorf("garbage xclbin: %v", err)
	}
	if _, err := dev.LoadXclbin(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing xclbin: %v", err)
	}
}

// Several devices run at once, each with its own queue; outputs stay
// exact (run with -race).
func TestEmulatorConcurrentDevices(t *testing.T) {
	g := newTestGraph(2000, 500, 60, 64<<10)
	path := g.writeFile(t, t.TempDir())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dev, err := OpenEmulated(i, EmulatorConfig{})
			if err != nil {
				errs <- err
				return
			}
			defer dev.Close()
			uuid := must[UUID](t)(dev.LoadXclbin(""))
			f, _ := openDirect(t, path)
			defer f.Close()
			for round := range 3 {
				for c := range g.starts {
					key := rng.Key(uint64(i), uint32(round), c)
					ts := g.targets(c, func(v uint32) bool { return int(v)%(i+2) == 0 })
					got, err := sampleOnDevice(t, dev, uuid, f, g, c, ts, 10, key, round == 1)
					if err != nil {
						errs <- fmt.Errorf("device %d chunk %d: %w", i, c, err)
						return
					}
					if !slices.Equal(got, g.want(ts, 10, key, round == 1)) {
						errs <- fmt.Errorf("device %d chunk %d round %d: output differs from rng.Sample", i, c, round)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Many runs queued at once on one device all complete, in order.
func TestEmulatorQueue(t *testing.T) {
	g := newTestGraph(100, 100, 30, 8<<10)
	dev, uuid := openEmu(t, EmulatorConfig{})
	ts := g.targets(0, func(uint32) bool { return true })
	type job struct {
		run Run
		rb  BO
		key uint64
	}
	var jobs []job
	for i := range 16 {
		run, rb := setupSample(t, dev, uuid, g, ts, 3, uint64(i))
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job{run, rb, uint64(i)})
	}
	for _, j := range jobs {
		if _, err := j.run.Wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := j.rb.Sync(FromDevice, j.rb.Size(), 0); err != nil {
			t.Fatal(err)
		}
		if got := getI32s(must[[]byte](t)(j.rb.Map()), len(ts)*3); !slices.Equal(got, g.want(ts, 3, j.key, false)) {
			t.Fatalf("key %d: wrong output", j.key)
		}
	}
}

// Close waits for queued runs, then frees the device's buffers.
func TestEmulatorClose(t *testing.T) {
	g := newTestGraph(100, 100, 30, 8<<10)
	release := make(chan struct{})
	dev, err := OpenEmulated(0, EmulatorConfig{beforeRun: func() { <-release }})
	if err != nil {
		t.Fatal(err)
	}
	uuid := must[UUID](t)(dev.LoadXclbin(""))
	run, _ := setupSample(t, dev, uuid, g, []uint32{1, 2}, 2, 1)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(20 * time.Millisecond); close(release) }()
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := run.Wait(time.Second); st != StateCompleted || err != nil {
		t.Fatalf("run queued before Close: %v %v", st, err)
	}
	if used := dev.(*emuDevice).used; used != 0 {
		t.Fatalf("%d bytes charged after Close", used)
	}
	if _, err := dev.AllocBO(4096, BONormal, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("alloc after close: %v", err)
	}
	if _, err := dev.LoadXclbin(""); !errors.Is(err, ErrClosed) {
		t.Errorf("load after close: %v", err)
	}
	if err := run.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("start after close: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestSyncThrottle(t *testing.T) {
	dev, _ := openEmu(t, EmulatorConfig{SyncBytesPerSecond: 1e6})
	bo := must[BO](t)(dev.AllocBO(50000, BONormal, 0))
	t0 := time.Now()
	if err := bo.Sync(ToDevice, 50000, 0); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el < 45*time.Millisecond {
		t.Fatalf("50 kB at 1 MB/s took %v, want ≥ 50ms", el)
	}
}

// A launch split over compute units samples exactly what one unit does
// (rng.Sample for every target), whatever the number of units, including
// counts that do not divide the targets, and with targets in any order.
func TestEmulatorComputeUnits(t *testing.T) {
	g := newTestGraph(30000, 30000, 30, 2<<20)
	b := g.chunk(t, 0)
	chunk := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	ts := g.targets(0, func(v uint32) bool { return v%5 != 2 })
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	for _, fanout := range []int{1, 7, hls.MaxFanout} {
		key := rng.Key(9, uint32(fanout), 0)
		want := g.want(ts, fanout, key, false)
		wantEdges := make([]int32, len(want))
		if err := hls.ReferenceEdges(chunk, ts, make([]int32, len(want)), wantEdges, fanout, key, false); err != nil {
			t.Fatal(err)
		}
		for _, units := range []int{1, 2, 3, 7, 64} {
			got := make([]int32, len(ts)*fanout)
			if err := runUnits(hls.RunEdges, units, chunk, ts, got, nil, fanout, key, false); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("fanout %d, %d units: samples differ from rng.Sample", fanout, units)
			}
			// With edge indices: each unit fills its share of both arrays.
			edges := make([]int32, len(got))
			if err := runUnits(hls.RunEdges, units, chunk, ts, got, edges, fanout, key, false); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || !slices.Equal(edges, wantEdges) {
				t.Fatalf("fanout %d, %d units: samples or edge indices differ from hls.ReferenceEdges", fanout, units)
			}
		}
	}
	// A unit that panics fails the launch with an error naming it.
	boom := func(chunk, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error {
		if &targets[0] != &ts[0] {
			panic("boom")
		}
		return nil
	}
	if err := runUnits(boom, 2, chunk, ts, make([]int32, len(ts)), nil, 1, 0, false); err == nil || !strings.Contains(err.Error(), "compute unit 1 panicked") {
		t.Fatalf("panicking unit: %v", err)
	}
}

// ImportHost: a kernel run over caller-owned host memory samples what it
// samples from a P2P buffer holding the same chunk; the memory is a view
// (a later write is seen), Free and Close leave it mapped, and a
// misaligned or empty slice or a group the xclbin lacks is refused.
func TestEmulatorImportHost(t *testing.T) {
	g := newTestGraph(400, 400, 40, 64<<10)
	ts := g.targets(0, func(v uint32) bool { return v%2 == 0 })
	const fanout = 7
	key := rng.Key(5, 1, 0)
	dev, uuid := openEmu(t, EmulatorConfig{})
	hb, ok := dev.(HostBuffers)
	if !ok {
		t.Fatal("the emulated device does not implement HostBuffers")
	}
	run, rb := setupSample(t, dev, uuid, g, ts, fanout, key)
	sample := func() []int32 {
		t.Helper()
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := run.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
			t.Fatal(err)
		}
		return getI32s(must[[]byte](t)(rb.Map()), len(ts)*fanout)
	}
	want := sample() // from the P2P buffer setupSample filled
	mem, err := unix.Mmap(-1, 0, g.chunkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	bo := must[BO](t)(hb.ImportHost(mem, 0))
	if bo.Flags() != BOHostOnly || bo.Size() != len(mem) {
		t.Fatalf("imported buffer: %s, %d bytes", bo.Flags(), bo.Size())
	}
	copy(mem, g.chunk(t, 0)) // after the import: a view, not a copy
	if err := run.SetBO(ArgChunk, bo); err != nil {
		t.Fatal(err)
	}
	if got := sample(); !slices.Equal(got, want) {
		t.Fatal("samples over imported host memory differ from those over the P2P buffer")
	}
	if err := bo.Free(); err != nil {
		t.Fatal(err)
	}
	mem[0] ^= 1 // still mapped: Free released the view only
	mem[0] ^= 1
	for _, tc := range []struct {
		mem   []byte
		group int
		want  string
	}{
		{mem[8:4104], 0, "want a multiple of 4096"},
		{nil, 0, "empty"},
		{mem, 7, "no memory group 7"},
	} {
		if _, err := hb.ImportHost(tc.mem, tc.group); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ImportHost(%d bytes, group %d) = %v, want an error saying %q", len(tc.mem), tc.group, err, tc.want)
		}
	}
	if _, err := hb.ImportHost(mem, 0); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil { // frees the import it still holds
		t.Fatal(err)
	}
	mem[0] ^= 1
	mem[0] ^= 1
	if _, err := hb.ImportHost(mem, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("ImportHost after Close = %v, want ErrClosed", err)
	}
}
