package gpu_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/gpu"
)

// TestFetchCapacities passes output arrays one element too small (and
// arrays sized from an earlier, smaller result) to ssg_fetch through the
// CPU stand-in library, whose checks are the CUDA library's: each must be
// an ErrInvalid naming the array, with nothing written. The same cases run
// against the CUDA library in csrc/test_gpu.cpp.
func TestFetchCapacities(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	indptr, indices := rmat(3000, 20000, 5)
	b, err := gpu.OpenCSR(path, 0, indptr, indices, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const canary = 0xdeadbeef
	fill := func(n uint64) ([]uint32, []int32) {
		u := make([]uint32, n)
		s := make([]int32, n)
		for i := range u {
			u[i], s[i] = canary, int32(-559038737) // 0xdeadbeef
		}
		return u, s
	}
	untouched := func(u ...[]uint32) bool {
		for _, a := range u {
			if slices.ContainsFunc(a, func(x uint32) bool { return x != canary }) {
				return false
			}
		}
		return true
	}

	// No result before the first sample, nor after a failed one.
	if err := b.RawFetch(make([]uint32, 10), nil, nil); !errors.Is(err, gpu.ErrInvalid) || !strings.Contains(err.Error(), "no result") {
		t.Errorf("fetch before sample: %v", err)
	}
	seeds := pickSeeds(3000, 0.1, 1)
	fan := []int32{15, 10, 5}
	counts, err := b.RawSample(gpu.Fused, seeds, fan, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	nf := counts[0] + counts[1] + counts[2]
	ns := 15*counts[0] + 10*counts[1] + 5*counts[2]
	nfin := counts[3]
	for _, tc := range []struct {
		name       string
		df, ds, dn uint64
	}{
		{"frontiers", 1, 0, 0},
		{"samples", 0, 1, 0},
		{"final", 0, 0, 1},
	} {
		fr, _ := fill(nf - tc.df)
		_, sa := fill(ns - tc.ds)
		fin, _ := fill(nfin - tc.dn)
		err := b.RawFetch(fr, sa, fin)
		if !errors.Is(err, gpu.ErrInvalid) || !strings.Contains(err.Error(), tc.name+" array too small") {
			t.Errorf("%s one short: err = %v, want ErrInvalid naming it", tc.name, err)
		}
		saU := make([]uint32, len(sa))
		for i, x := range sa {
			saU[i] = uint32(x)
		}
		if !untouched(fr, fin, saU) {
			t.Errorf("%s one short: the library wrote into the arrays", tc.name)
		}
	}
	// Exact capacities work.
	fr, _ := fill(nf)
	_, sa := fill(ns)
	fin, _ := fill(nfin)
	if err := b.RawFetch(fr, sa, fin); err != nil || untouched(fr) {
		t.Fatalf("exact capacities: %v", err)
	}

	// Arrays sized from an earlier, smaller result: a caller's stale counts.
	small, err := b.RawSample(gpu.Fused, seeds[:10], []int32{2}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := fill(small[0])
	if _, err := b.RawSample(gpu.BSP, seeds, fan, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.RawFetch(stale, nil, nil); !errors.Is(err, gpu.ErrInvalid) || !untouched(stale) {
		t.Errorf("stale counts: err = %v, untouched %v", err, untouched(stale))
	}

	if _, err := b.RawSample(gpu.Fused, seeds, fan, 0xdead, 0); !errors.Is(err, gpu.ErrCUDA) {
		t.Fatalf("failing sample: %v", err)
	}
	if err := b.RawFetch(fr, sa, fin); !errors.Is(err, gpu.ErrInvalid) || !strings.Contains(err.Error(), "no result") {
		t.Errorf("fetch after a failed sample: %v", err)
	}
}
