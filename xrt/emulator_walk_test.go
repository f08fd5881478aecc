package xrt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/rng"
)

// walkOnDevice runs one walk step of sample_kernel through an emulated
// device as a host does: nodes and then walk ids in the targets BO,
// ArgWalk = attempt0+1, the result synced back. It returns the candidates
// and, with edges, their chunk-local edge indices.
func walkOnDevice(t *testing.T, dev Device, uuid UUID, g *testGraph, nodes, walks []uint32, k int, key uint64, attempt0 uint32, edges bool) ([]int32, []int32, error) {
	t.Helper()
	run, rb := setupSample(t, dev, uuid, g, slices.Concat(nodes, walks), k, key)
	edgeArg := uint32(0)
	if edges {
		edgeArg = 1
	}
	for _, err := range []error{run.SetUint32(ArgNTargets, uint32(len(nodes))), run.SetUint32(ArgEdges, edgeArg),
		run.SetUint32(ArgWalk, attempt0+1), run.SetUint32(ArgReplace, 7)} { // a walk step ignores replace
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(30 * time.Second); err != nil {
		return nil, nil, err
	}
	if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
		t.Fatal(err)
	}
	n := len(nodes) * k
	all := getI32s(must[[]byte](t)(rb.Map()), 2*n)
	if !edges {
		return all[:n], nil, nil
	}
	return all[:n], all[n:], nil
}

// A walk step through the emulated device equals hls.ReferenceWalkEdges
// for any number of compute units (walkers split into shares), with and
// without edge indices.
func TestEmulatorWalk(t *testing.T) {
	g := newTestGraph(30000, 30000, 30, 2<<20)
	b := g.chunk(t, 0)
	chunk := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	r := rand.New(rand.NewPCG(3, 4))
	nodes, walks := make([]uint32, 20000), make([]uint32, 20000)
	for i := range nodes {
		nodes[i], walks[i] = uint32(r.IntN(len(g.adj))), r.Uint32()
	}
	for _, tc := range []struct {
		units, k int
		a0       uint32
		edges    bool
	}{{1, 1, 0, false}, {3, 1, 0, true}, {4, 5, 63, true}, {7, hls.MaxFanout, 1, false}} {
		t.Run(fmt.Sprintf("units=%d/k=%d/a0=%d/edges=%v", tc.units, tc.k, tc.a0, tc.edges), func(t *testing.T) {
			dev, uuid := openEmu(t, EmulatorConfig{ComputeUnits: tc.units})
			key := rng.WalkKey(5, uint32(tc.k))
			want, wantEdges := make([]int32, len(nodes)*tc.k), make([]int32, len(nodes)*tc.k)
			if err := hls.ReferenceWalkEdges(chunk, nodes, walks, want, wantEdges, tc.k, key, tc.a0); err != nil {
				t.Fatal(err)
			}
			got, gotEdges, err := walkOnDevice(t, dev, uuid, g, nodes, walks, tc.k, key, tc.a0, tc.edges)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatal("candidates differ from hls.ReferenceWalkEdges")
			}
			if tc.edges && !slices.Equal(gotEdges, wantEdges) {
				t.Fatal("edge indices differ from hls.ReferenceWalkEdges")
			}
		})
	}
}

// A run that never sets ArgWalk samples; setting it back to 0 after a walk
// step samples again, with the same result.
func TestEmulatorWalkDefault(t *testing.T) {
	g := newTestGraph(100, 100, 30, 8<<10)
	dev, uuid := openEmu(t, EmulatorConfig{})
	ts := g.targets(0, func(v uint32) bool { return v%3 != 0 })
	key := rng.Key(1, 2, 0)
	run, rb := setupSample(t, dev, uuid, g, ts, 4, key)
	read := func() []int32 {
		t.Helper()
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := run.Wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
			t.Fatal(err)
		}
		return getI32s(must[[]byte](t)(rb.Map()), len(ts)*4)
	}
	want := g.want(ts, 4, key, false)
	if got := read(); !slices.Equal(got, want) {
		t.Fatalf("walk unset: %v, want the samples %v", got, want)
	}
	// Walk step over the first half: nodes, then the second half as walk ids.
	half := len(ts) / 2
	if err := errors.Join(run.SetUint32(ArgWalk, 1), run.SetUint32(ArgNTargets, uint32(half))); err != nil {
		t.Fatal(err)
	}
	wantWalk := make([]int32, half*4)
	b := g.chunk(t, 0)
	if err := hls.ReferenceWalk(unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4), ts[:half], ts[half:2*half], wantWalk, 4, key, 0); err != nil {
		t.Fatal(err)
	}
	if got := read()[:half*4]; !slices.Equal(got, wantWalk) {
		t.Fatalf("walk = 1: %v, want %v", got, wantWalk)
	}
	if err := errors.Join(run.SetUint32(ArgWalk, 0), run.SetUint32(ArgNTargets, uint32(len(ts)))); err != nil {
		t.Fatal(err)
	}
	if got := read(); !slices.Equal(got, want) {
		t.Fatalf("walk = 0 again: %v, want %v", got, want)
	}
}

// Walk steps that cannot run end in StateError with a clear message.
func TestEmulatorWalkFailedRun(t *testing.T) {
	g := newTestGraph(100, 100, 30, 8<<10)
	dev, uuid := openEmu(t, EmulatorConfig{})
	for _, tc := range []struct {
		name    string
		targets []uint32 // the targets BO's words
		n       uint32
		want    error
		msg     string
	}{
		{"targets too small", []uint32{1, 2, 3}, 2, nil,
			"targets buffer of 12 bytes too small for a walk step's n_targets = 2 nodes and as many walk ids (16 bytes)"},
		{"node outside chunk", []uint32{5, 100, 1, 2}, 2, hls.ErrTargetOutsideChunk, "target 100 (row 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, _ := setupSample(t, dev, uuid, g, tc.targets, 2, 1)
			if err := errors.Join(run.SetUint32(ArgNTargets, tc.n), run.SetUint32(ArgWalk, 1)); err != nil {
				t.Fatal(err)
			}
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			st, err := run.Wait(10 * time.Second)
			if st != StateError || !errors.Is(err, ErrKernelFailed) {
				t.Fatalf("state %v err %v, want StateError wrapping ErrKernelFailed", st, err)
			}
			if (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v, want %v saying %q", err, tc.want, tc.msg)
			}
		})
	}
}

// runWalkUnits gives every compute unit a share of the walkers and their
// walk ids; the result is one launch's, whatever the number of units.
func TestEmulatorWalkUnits(t *testing.T) {
	g := newTestGraph(30000, 30000, 30, 2<<20)
	b := g.chunk(t, 0)
	chunk := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	nodes := g.targets(0, func(v uint32) bool { return v%4 != 1 })
	walks := make([]uint32, len(nodes))
	for i := range walks {
		walks[i] = uint32(len(nodes) - i)
	}
	const k = 3
	key := rng.WalkKey(8, 2)
	want, wantEdges := make([]int32, len(nodes)*k), make([]int32, len(nodes)*k)
	if err := hls.ReferenceWalkEdges(chunk, nodes, walks, want, wantEdges, k, key, 5); err != nil {
		t.Fatal(err)
	}
	for _, units := range []int{1, 2, 3, 7, 64} {
		got, edges := make([]int32, len(want)), make([]int32, len(want))
		if err := runWalkUnits(hls.RunWalkEdges, units, chunk, nodes, walks, got, edges, k, key, 5); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || !slices.Equal(edges, wantEdges) {
			t.Fatalf("%d units: candidates or edge indices differ from hls.ReferenceWalkEdges", units)
		}
		if err := runWalkUnits(hls.RunWalkEdges, units, chunk, nodes, walks, got, nil, k, key, 5); err != nil || !slices.Equal(got, want) {
			t.Fatalf("%d units without edges: %v", units, err)
		}
	}
}
