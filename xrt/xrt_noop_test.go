//go:build xrt && cgo && xrt_noop

package xrt

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/xrt/xclbin"
)

// The host's whole XRT call sequence through the binding, on XRT's noop
// driver: open, load a generated xclbin, kernel, group ids, normal and P2P
// buffers, map, P2P read, sync, arguments, start, wait, free, close. The
// noop driver executes nothing, so the result buffer keeps what the host
// wrote into it; what is checked is that every call goes through.
func TestNoopHostSequence(t *testing.T) {
	if !Hardware || Driver != "xrt_noop" {
		t.Fatalf("Hardware %v Driver %q", Hardware, Driver)
	}
	dir := t.TempDir()
	uuid := UUID{0x5a, 0x3b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	xpath := filepath.Join(dir, "sample_kernel.xclbin")
	if err := xclbin.WriteFile(xpath, SampleKernelXclbin(uuid)); err != nil {
		t.Fatal(err)
	}
	g := newTestGraph(300, 100, 20, 16<<10)
	chunks := g.writeFile(t, dir)

	dev, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if !strings.Contains(dev.Name(), "xrt_noop") {
		t.Errorf("name %q", dev.Name())
	}
	if _, err := dev.LoadXclbin(""); err == nil {
		t.Error("empty xclbin path accepted on hardware")
	}
	bad := filepath.Join(dir, "bad.xclbin")
	os.WriteFile(bad, []byte("garbage"), 0o644)
	if _, err := dev.LoadXclbin(bad); err == nil || !strings.Contains(err.Error(), "xrtDeviceLoadXclbinFile") {
		t.Errorf("garbage xclbin: %v", err)
	}
	got, err := dev.LoadXclbin(xpath)
	if err != nil {
		t.Fatal(err)
	}
	if got != uuid {
		t.Fatalf("xrtDeviceGetXclbinUUID gave %v, want %v", got, uuid)
	}
	if u, err := dev.XclbinUUID(); err != nil || u != uuid {
		t.Fatalf("XclbinUUID: %v %v", u, err)
	}
	if _, err := dev.OpenKernel(uuid, "vadd"); !errors.Is(err, ErrNoSuchKernel) || !strings.Contains(err.Error(), "xrtPLKernelOpen") {
		t.Errorf("unknown kernel: %v", err)
	}
	k, err := dev.OpenKernel(uuid, SampleKernel)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []int{ArgChunk, ArgResult, ArgTargets} {
		if gid, err := k.GroupID(a); err != nil || gid != 0 {
			t.Errorf("GroupID(%d) = %d, %v", a, gid, err)
		}
	}
	if _, err := k.GroupID(ArgKey); !errors.Is(err, ErrBadArg) {
		t.Errorf("GroupID of a scalar: %v", err)
	}

	chunkBO, err := dev.AllocBO(g.chunkSize, BOP2P, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The noop driver's P2P mapping is malloc'd memory that need not be
	// 512-aligned, so the chunk file is read without O_DIRECT here.
	f, err := os.Open(chunks)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ReadP2P(f, chunkBO, 0, int64(g.chunkSize), g.chunkSize); err != nil {
		t.Fatal(err)
	}
	cm, err := chunkBO.Map()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cm, g.chunk(t, 1)) {
		t.Fatal("P2P read did not land in the mapped buffer")
	}
	ts := g.targets(1, func(v uint32) bool { return v%2 == 0 })
	const fanout = 8
	tb, err := dev.AllocBO(4*len(ts), BONormal, 0)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := tb.Map()
	if err != nil {
		t.Fatal(err)
	}
	putU32s(tm, ts)
	if err := tb.Sync(ToDevice, tb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	if err := tb.Sync(ToDevice, tb.Size()+1, 0); !errors.Is(err, ErrBounds) {
		t.Errorf("out-of-bounds sync: %v (the noop driver accepts it; the binding must not)", err)
	}
	rb, err := dev.AllocBO(4*len(ts)*fanout, BONormal, 0)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := rb.Map()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rm {
		rm[i] = 0xEE
	}
	if err := rb.Sync(ToDevice, rb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	host, err := dev.AllocBO(4096, BOHostOnly, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Free(); err != nil {
		t.Fatal(err)
	}

	run, err := k.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.SetUint32(ArgKey, 1); !errors.Is(err, ErrBadArg) {
		t.Errorf("u32 on the u64 key: %v", err)
	}
	if err := run.SetBO(ArgFanout, rb); !errors.Is(err, ErrBadArg) {
		t.Errorf("BO on a scalar: %v", err)
	}
	emu, _ := OpenEmulated(0, EmulatorConfig{})
	defer emu.Close()
	ebo, _ := emu.AllocBO(4096, BONormal, 0)
	if err := run.SetBO(ArgChunk, ebo); !errors.Is(err, ErrBadArg) {
		t.Errorf("emulated BO on an XRT run: %v", err)
	}
	for _, err := range []error{run.SetBO(ArgChunk, chunkBO), run.SetBO(ArgResult, rb), run.SetBO(ArgTargets, tb),
		run.SetUint32(ArgNTargets, uint32(len(ts))), run.SetUint32(ArgFanout, fanout), run.SetUint64(ArgKey, 1<<40|3)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run.Wait(time.Second); err == nil {
		t.Error("Wait before Start succeeded")
	}
	if err := run.Start(); !errors.Is(err, ErrBadArg) {
		t.Errorf("start with replace unset: %v", err)
	}
	if err := run.SetUint32(ArgReplace, 0); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); !errors.Is(err, ErrBadArg) {
		t.Errorf("start with edges unset: %v", err)
	}
	if err := run.SetUint32(ArgEdges, 0); err != nil {
		t.Fatal(err)
	}
	// walk (argument 8) was set to 0 by NewRun: the run above needs no
	// more. It takes a u32; there is no argument after it.
	if err := run.SetUint64(ArgWalk, 1); !errors.Is(err, ErrBadArg) {
		t.Errorf("u64 on the u32 walk: %v", err)
	}
	if err := run.SetUint32(ArgWalk+1, 0); !errors.Is(err, ErrBadArg) {
		t.Errorf("argument %d: %v", ArgWalk+1, err)
	}
	if err := run.SetUint32(ArgWalk, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // a run handle is reusable
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		st, err := run.Wait(5 * time.Second)
		if err != nil || st != StateCompleted {
			t.Fatalf("wait: %v %v", st, err)
		}
	}
	// The copy-all mode (fanout -1) through the binding: the fanout
	// argument FanoutAll, the key carrying capacity and skip, the edges
	// flag, then the host's reads of the status and counts and of the
	// neighbors and edge indices at their offsets (hls.AllResultWords'
	// layout), and one past the buffer refused.
	words := rb.Size() / 4
	capacity := (words - hls.AllStatusWords - len(ts)) / 2
	for _, err := range []error{run.SetUint32(ArgFanout, hls.FanoutAll), run.SetUint64(ArgKey, hls.AllKey(capacity, 3)), run.SetUint32(ArgEdges, 1)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if st, err := run.Wait(5 * time.Second); err != nil || st != StateCompleted {
		t.Fatalf("copy-all wait: %v %v", st, err)
	}
	hdr := hls.AllStatusWords + len(ts)
	for _, part := range [][2]int{{hdr, 0}, {capacity, hdr}, {capacity, hdr + capacity}} {
		if err := rb.Sync(FromDevice, 4*part[0], 4*part[1]); err != nil {
			t.Fatalf("copy-all sync of %d words at word %d: %v", part[0], part[1], err)
		}
	}
	if hls.AllResultWords(len(ts), capacity, true) > words {
		t.Fatalf("copy-all layout of %d words in a %d-word buffer", hls.AllResultWords(len(ts), capacity, true), words)
	}
	if err := rb.Sync(FromDevice, 4*(words-hdr-capacity+1), 4*(hdr+capacity)); !errors.Is(err, ErrBounds) {
		t.Errorf("copy-all sync past the buffer: %v", err)
	}
	if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(rm, func(b byte) bool { return b != 0xEE }) {
		t.Error("the noop driver changed the result buffer")
	}
	if rb.Address() == 0 {
		t.Error("address 0")
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("start after close: %v", err)
	}
	for _, bo := range []BO{chunkBO, tb} {
		if err := bo.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Free(); !errors.Is(err, ErrClosed) {
		t.Errorf("double free: %v", err)
	}
	if _, err := tb.Map(); !errors.Is(err, ErrClosed) {
		t.Errorf("map after free: %v", err)
	}
	// rb, k are left open: Close must release them before the device.
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.AllocBO(4096, BONormal, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("alloc after close: %v", err)
	}
	if err := rb.Free(); !errors.Is(err, ErrClosed) {
		t.Errorf("free after device close: %v", err)
	}
}

// Several noop devices at once, each running the sequence (with -race).
func TestNoopConcurrentDevices(t *testing.T) {
	dir := t.TempDir()
	uuid := UUID{9}
	xpath := filepath.Join(dir, "s.xclbin")
	if err := xclbin.WriteFile(xpath, SampleKernelXclbin(uuid)); err != nil {
		t.Fatal(err)
	}
	g := newTestGraph(100, 100, 10, 8<<10)
	path := g.writeFile(t, dir)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			dev, err := Open(i)
			if err != nil {
				errs <- err
				return
			}
			defer dev.Close()
			if _, err := dev.LoadXclbin(xpath); err != nil {
				errs <- err
				return
			}
			f, err := os.Open(path)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			_, err = sampleOnDevice(t, dev, uuid, f, g, 0, []uint32{1, 2, 3}, 4, 1, false)
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestNoopProbe builds testdata/noop_probe.c against the noop driver and
// checks the driver behaviour docs/KERNEL.md reports, including the crash
// at exit when a buffer outlives its device (why Device.Close frees them).
func TestNoopProbe(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "noop_probe")
	out, err := exec.Command(cc, "-I/usr/include/xrt", "testdata/noop_probe.c", "-o", bin,
		"-Wl,--no-as-needed", "-lxrt_noop", "-lxrt_coreutil").CombinedOutput()
	if err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	xpath := filepath.Join(dir, "s.xclbin")
	if err := xclbin.WriteFile(xpath, SampleKernelXclbin(UUID{0xde, 0xad, 0xbe, 0xef})); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, xpath)
	cmd.Dir = dir
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, stdout)
	}
	for _, want := range []string{
		"open(5) -> ok", "load -> 0", "uuid -> 0 deadbeef000000000000000000000000", "kernel -> ok",
		"group(0)=0 group(3)=-1", "start (no args set) -> 0", "waitfor -> 4", "addr=deadbeef",
		"sync past end -> 0", "p2p map -> ok page-aligned=0", "close -> 0",
	} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("probe output lacks %q:\n%s", want, stdout)
		}
	}
	cmd = exec.Command(bin, xpath, "leak")
	cmd.Dir = dir
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSEGV {
		t.Logf("leaking a BO past xrtDeviceClose no longer crashes the noop driver (%v); Device.Close still frees first", err)
	}
}
