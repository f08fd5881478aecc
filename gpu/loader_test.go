package gpu_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/host"
)

// These tests run everywhere (CI has no GPU): they exercise the loader's
// error paths and, through a CPU stand-in library, the Go marshalling.

func needCgo(t *testing.T) {
	t.Helper()
	if _, err := gpu.OpenCSR("/nonexistent/x.so", 0, []uint64{0}, nil, gpu.Options{}); errors.Is(err, gpu.ErrNoCgo) {
		t.Skip("built without cgo")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the loader is linux-only")
	}
}

func TestMissingLibrary(t *testing.T) {
	needCgo(t)
	path := filepath.Join(t.TempDir(), "libstreamsampler_gpu.so")
	_, err := gpu.OpenCSR(path, 0, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrLibraryNotFound) {
		t.Fatalf("err = %v, want ErrLibraryNotFound", err)
	}
	for _, want := range []string{path, "no such file", "make gpu", "CUDA machine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	// Default search: $STREAMSAMPLER_GPU_LIB, next to the executable, system path.
	t.Setenv(gpu.EnvLib, path)
	_, err = gpu.OpenCSR("", 0, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrLibraryNotFound) {
		t.Fatalf("err = %v, want ErrLibraryNotFound", err)
	}
	exe, _ := os.Executable()
	for _, want := range []string{path, filepath.Join(filepath.Dir(exe), gpu.LibName), "system library path"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestNotALibrary(t *testing.T) {
	needCgo(t)
	path := filepath.Join(t.TempDir(), "libstreamsampler_gpu.so")
	if err := os.WriteFile(path, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gpu.OpenCSR(path, 0, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrLibraryInvalid) || !strings.Contains(err.Error(), "dlopen "+path) {
		t.Fatalf("err = %v, want ErrLibraryInvalid naming dlopen and the path", err)
	}
}

func TestLibraryWithoutSymbols(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libnosym.so", "-DFAKE_NOSYM")
	_, err := gpu.OpenCSR(path, 0, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrLibraryInvalid) {
		t.Fatalf("err = %v, want ErrLibraryInvalid", err)
	}
	if !strings.Contains(err.Error(), "lacks symbol ssg_abi_version") {
		t.Errorf("error %q does not name the missing symbol", err)
	}
}

func TestNoDevice(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libnodev.so", "-DFAKE_NODEVICE")
	_, err := gpu.OpenCSR(path, 0, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrNoDevice) {
		t.Fatalf("err = %v, want ErrNoDevice", err)
	}
	if want := "gpu: no CUDA device: cudaGetDeviceCount returned 100 (cudaErrorNoDevice"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}
}

func TestDeviceOutOfRange(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	_, err := gpu.OpenCSR(path, 3, []uint64{0, 0}, nil, gpu.Options{})
	if !errors.Is(err, gpu.ErrNoDevice) || !strings.Contains(err.Error(), "no CUDA device 3") {
		t.Fatalf("err = %v, want ErrNoDevice for device 3", err)
	}
}

// TestMarshallingWithCPUStandIn runs the whole Go side (requests, counts,
// fetch into an epoch.Result, SampleBlocks, error mapping) over the CPU
// stand-in library and compares with host.Reference.
func TestMarshallingWithCPUStandIn(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	indptr, indices := rmat(3000, 20000, 5)
	b, err := gpu.OpenCSR(path, 0, indptr, indices, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Device() != "fake CPU device" || b.LibraryPath() != path {
		t.Errorf("device %q lib %q", b.Device(), b.LibraryPath())
	}
	csr := &host.CSR{Indptr: indptr, Indices: indices}
	seeds := pickSeeds(3000, 0.1, 1)
	ctx := context.Background()
	for _, tc := range []struct {
		fan []int
		key epoch.Key
	}{
		{[]int{15, 10, 5}, epoch.Key{Seed: 1, Epoch: 0}},
		{[]int{3, 7}, epoch.Key{Seed: 9, Epoch: 4, Replace: true}},
		{[]int{64}, epoch.Key{Seed: 2, Epoch: 1}},
	} {
		want, err := host.Reference(csr, seeds, tc.fan, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.SampleEpoch(ctx, seeds, tc.fan, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if err := diffResults(got, want); err != nil {
			t.Errorf("fanouts %v key %+v: %v", tc.fan, tc.key, err)
		}
		batch := seeds[:50]
		blk, err := b.SampleBlocks(ctx, batch, tc.fan, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		wantBlk, err := want.Assemble(batch, epoch.DGL)
		if err != nil {
			t.Fatal(err)
		}
		if err := diffBlocks(blk, wantBlk); err != nil {
			t.Errorf("blocks, fanouts %v: %v", tc.fan, err)
		}
	}

	// Errors: caught in Go, reported by the library, after Close.
	if _, err := b.SampleEpoch(ctx, []uint32{1, 3000}, []int{2}, epoch.Key{}); !errors.Is(err, gpu.ErrInvalid) || !strings.Contains(err.Error(), "seed 3000") {
		t.Errorf("bad seed: %v", err)
	}
	if _, err := b.SampleEpoch(ctx, seeds, []int{65}, epoch.Key{}); !errors.Is(err, gpu.ErrInvalid) {
		t.Errorf("fanout 65: %v", err)
	}
	_, err = b.SampleEpoch(ctx, seeds, []int{2}, epoch.Key{Seed: 0xdead})
	if !errors.Is(err, gpu.ErrCUDA) || !strings.Contains(err.Error(), "cudaErrorLaunchFailure (unspecified launch failure)") {
		t.Errorf("launch failure: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.SampleEpoch(cctx, seeds, []int{2}, epoch.Key{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	b.Close()
	if _, err := b.SampleEpoch(ctx, seeds, []int{2}, epoch.Key{}); !errors.Is(err, gpu.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestEdgeIDsWithCPUStandIn: with Options.EdgeIDs the Go side fetches the
// library's edge ids (ssg_fetch_edges) into every layer, equal to
// host.ReferenceEdgeIDs on a multigraph (repeated neighbors), in both
// modes of replacement; without it the result has none, and the
// samples are the same.
func TestEdgeIDsWithCPUStandIn(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	indptr, indices := rmat(2000, 12000, 8)
	mi, mx := multigraph(indptr, indices)
	withIDs, err := gpu.OpenCSR(path, 0, mi, mx, gpu.Options{EdgeIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer withIDs.Close()
	plain, err := gpu.OpenCSR(path, 0, mi, mx, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	csr := &host.CSR{Indptr: mi, Indices: mx}
	seeds := pickSeeds(2000, 0.1, 3)
	for _, key := range []epoch.Key{{Seed: 4, Epoch: 1}, {Seed: 5, Epoch: 2, Replace: true}} {
		fan := []int{12, 5, 30}
		want, err := host.ReferenceEdgeIDs(csr, seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := withIDs.SampleEpoch(context.Background(), seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := diffResults(got, want); err != nil {
			t.Errorf("key %+v: %v", key, err)
		}
		off, err := plain.SampleEpoch(context.Background(), seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := host.Reference(csr, seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := diffResults(off, ref); err != nil {
			t.Errorf("key %+v without edge ids: %v", key, err)
		}
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]gpu.Mode{"": gpu.Fused, "fused": gpu.Fused, "BSP": gpu.BSP} {
		if m, err := gpu.ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := gpu.ParseMode("warp"); !errors.Is(err, gpu.ErrInvalid) {
		t.Errorf("ParseMode(warp) = %v", err)
	}
}

// TestWithoutCgo builds and runs this package's tests with CGO_ENABLED=0,
// where Open must fail with ErrNoCgo (TestOpenWithoutCgo).
func TestWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package again")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	cmd := exec.Command(goTool, "test", "-count=1", "-run", "^TestOpenWithoutCgo$", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("CGO_ENABLED=0 go test: %v\n%s", err, out)
	}
}
