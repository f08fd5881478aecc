package hls

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGatherEqualsReference: the C++ gather kernel (with cgo) gives
// GatherReference's output exactly on random blocks and slots, empty
// slots, indices past the blocks and words that are not nodes; and
// GatherReference itself gives blocks[slot] or its markers.
func TestGatherEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		numNodes := uint32(1 + r.IntN(1<<20))
		blocks := make([]uint32, 1+r.IntN(5000))
		for i := range blocks {
			blocks[i] = uint32(r.IntN(int(numNodes) + int(numNodes)/50 + 1)) // about 2% not nodes
		}
		slots := make([]uint32, r.IntN(3000))
		for i := range slots {
			switch r.IntN(10) {
			case 0:
				slots[i] = GatherEmpty
			case 1:
				slots[i] = uint32(len(blocks) + r.IntN(10))
			default:
				slots[i] = uint32(r.IntN(len(blocks)))
			}
		}
		want := make([]int32, len(slots))
		if err := GatherReference(blocks, slots, want, numNodes); err != nil {
			t.Fatal(err)
		}
		for i, s := range slots {
			var w int32 = -1
			switch {
			case s == GatherEmpty || int(s) >= len(blocks):
			case blocks[s] >= numNodes:
				w = GatherBad
			default:
				w = int32(blocks[s])
			}
			if want[i] != w {
				t.Fatalf("reference slot %d: %d, want %d", i, want[i], w)
			}
		}
		got := make([]int32, len(slots)+1)
		got[len(slots)] = 12345
		if err := Gather(blocks, slots, got[:len(slots)], numNodes); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[:len(slots)], want) || got[len(slots)] != 12345 {
			t.Fatalf("trial %d: the kernel differs from the reference", trial)
		}
	}
	if err := Gather([]uint32{1}, []uint32{0, 0}, make([]int32, 1), 5); !errors.Is(err, ErrBadOutput) {
		t.Fatalf("short output: %v", err)
	}
}

// TestGatherCSim builds and runs the gather kernel's C-simulation
// testbench (as `make -C hls csim` does).
func TestGatherCSim(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found; the C-simulation testbench is not built")
	}
	tb := filepath.Join(t.TempDir(), "gather_kernel_tb")
	build := exec.Command(cxx, "-O2", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wno-unknown-pragmas", "-Wno-unused-label",
		"-o", tb, "gather_kernel_tb.cpp", "gather_kernel.cpp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(tb).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("testbench: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
