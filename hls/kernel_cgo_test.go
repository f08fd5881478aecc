//go:build cgo

package hls

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/rng"
)

func init() {
	edgeEngines = append(edgeEngines, edgeEngine{"sample_kernel(edges=1)", runContiguous})
}

// runContiguous runs the kernel as the FPGA does with edges = 1: one result
// buffer holding the samples and then the edge indices.
func runContiguous(chunk, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error {
	if err := validate(chunk, targets, out, edges, fanout); err != nil {
		return err
	}
	if len(targets) == 0 {
		return nil
	}
	buf := make([]int32, 2*len(out))
	runUnchecked(chunk, targets, buf, fanout, key, replace, true, 0)
	copy(out, buf)
	copy(edges, buf[len(out):])
	return nil
}

func TestCConstants(t *testing.T) {
	if cMaxFanout != MaxFanout {
		t.Fatalf("C MAX_FANOUT = %d, hls.MaxFanout = %d", cMaxFanout, MaxFanout)
	}
	if cLanes != 32 {
		t.Fatalf("C SAMPLE_LANES = %d, want 32", cLanes)
	}
}

// The kernel's own guards, without the Go validation in front: a target
// outside the chunk or with descending offsets gets a row of -1, a fanout
// above MAX_FANOUT gives all -1, and nothing past the result rows is
// written.
func TestKernelGuards(t *testing.T) {
	chunk := buildChunk(10, [][]uint32{{1, 2}, {3}, {4, 5, 6}}, 0) // nodes 10..12
	bad := slices.Clone(chunk)
	bad[4] = bad[3] - 1 // node 11: end before begin
	const canary = 12345
	tests := []struct {
		name    string
		chunk   []uint32
		targets []uint32
		fanout  int
		want    []int32
	}{
		{"outside", chunk, []uint32{9, 10, 13, 1 << 31}, 2, []int32{-1, -1, 1, 2, -1, -1, -1, -1}},
		{"descending", bad, []uint32{11, 10}, 3, []int32{-1, -1, -1, 1, 2, -1}},
		{"fanout-too-big", chunk, []uint32{10}, MaxFanout + 2, slices.Repeat([]int32{-1}, MaxFanout+2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := slices.Repeat([]int32{canary}, len(tc.want)+5)
			runUnchecked(tc.chunk, tc.targets, out, tc.fanout, 1, false, false, 0)
			if !slices.Equal(out[:len(tc.want)], tc.want) {
				t.Fatalf("got %v, want %v", out[:len(tc.want)], tc.want)
			}
			for i, v := range out[len(tc.want):] {
				if v != canary {
					t.Fatalf("wrote %d past the result, at +%d", v, i)
				}
			}
		})
	}
	// With edges the rows are followed by as many edge indices, -1 where
	// the guards leave a slot empty, and nothing after them.
	for _, tc := range tests {
		t.Run(tc.name+"/edges", func(t *testing.T) {
			out := slices.Repeat([]int32{canary}, 2*len(tc.want)+5)
			runUnchecked(tc.chunk, tc.targets, out, tc.fanout, 1, false, true, 0)
			if !slices.Equal(out[:len(tc.want)], tc.want) {
				t.Fatalf("got %v, want %v", out[:len(tc.want)], tc.want)
			}
			for i, v := range tc.want {
				e := out[len(tc.want)+i]
				if (v == -1) != (e == -1) || (v != -1 && tc.chunk[int(e)+3+int(tc.chunk[0])] != uint32(v)) {
					t.Fatalf("slot %d: sample %d, edge index %d", i, v, e)
				}
			}
			for i, v := range out[2*len(tc.want):] {
				if v != canary {
					t.Fatalf("wrote %d past the edge indices, at +%d", v, i)
				}
			}
		})
	}
	out := []int32{canary}
	runUnchecked(chunk, []uint32{10}, out, 0, 1, false, false, 0)
	if out[0] != canary {
		t.Fatalf("fanout 0 wrote %d", out[0])
	}
}

func init() {
	walkEngines = append(walkEngines, walkEngine{walkContiguous, runWalkContiguous, true})
}

// runWalkContiguous runs the walk-step mode as the FPGA does: one targets
// buffer with the nodes and then the walk ids, argument 8 = attempt0 + 1,
// and one result buffer with the candidates and then the edge indices.
// attempt0 = 2^32-1 is not expressible as argument 8; it goes through
// RunWalkEdges.
func runWalkContiguous(chunk, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error {
	if err := validateWalk(chunk, nodes, walks, out, edges, k); err != nil {
		return err
	}
	if len(nodes) == 0 || attempt0 == math.MaxUint32 {
		return RunWalkEdges(chunk, nodes, walks, out, edges, k, key, attempt0)
	}
	buf := make([]int32, 2*len(out))
	runUnchecked(chunk, append(slices.Clone(nodes), walks...), buf, k, key, false, true, attempt0+1)
	copy(out, buf)
	if edges != nil {
		copy(edges, buf[len(out):])
	}
	return nil
}

// The walk-step mode's own guards, without the Go validation: a node
// outside the chunk or with descending offsets gets a row of -1, k above
// MAX_FANOUT gives all -1, and nothing past the result is written.
func TestWalkKernelGuards(t *testing.T) {
	chunk := buildChunk(10, [][]uint32{{1, 2}, {3}, {4, 5, 6}}, 0) // nodes 10..12
	bad := slices.Clone(chunk)
	bad[4] = bad[3] - 1 // node 11: end before begin
	const canary = 12345
	key := rng.WalkKey(5, 1)
	row := func(c []uint32, v uint32, w uint32, k int) []int32 {
		out := make([]int32, k)
		if err := ReferenceWalk(c, []uint32{v}, []uint32{w}, out, k, key, 0); err != nil {
			t.Fatal(err)
		}
		return out
	}
	tests := []struct {
		name         string
		chunk        []uint32
		nodes, walks []uint32
		k            int
		want         []int32
	}{
		{"outside", chunk, []uint32{9, 10, 13, 1 << 31}, []uint32{1, 2, 3, 4}, 2, slices.Concat([]int32{-1, -1}, row(chunk, 10, 2, 2), []int32{-1, -1, -1, -1})},
		{"descending", bad, []uint32{11, 12}, []uint32{1, 2}, 3, slices.Concat([]int32{-1, -1, -1}, row(bad, 12, 2, 3))},
		{"k-too-big", chunk, []uint32{10}, []uint32{1}, MaxFanout + 2, slices.Repeat([]int32{-1}, MaxFanout+2)},
	}
	for _, tc := range tests {
		for _, edges := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/edges=%v", tc.name, edges), func(t *testing.T) {
				n := len(tc.want)
				if edges {
					n *= 2
				}
				out := slices.Repeat([]int32{canary}, n+5)
				runUnchecked(tc.chunk, slices.Concat(tc.nodes, tc.walks), out, tc.k, key, false, edges, 1)
				if !slices.Equal(out[:len(tc.want)], tc.want) {
					t.Fatalf("got %v, want %v", out[:len(tc.want)], tc.want)
				}
				for i, v := range tc.want {
					if !edges {
						break
					}
					e := out[len(tc.want)+i]
					if (v == -1) != (e == -1) || (v != -1 && tc.chunk[int(e)+3+int(tc.chunk[0])] != uint32(v)) {
						t.Fatalf("slot %d: candidate %d, edge index %d", i, v, e)
					}
				}
				for i, v := range out[n:] {
					if v != canary {
						t.Fatalf("wrote %d past the result, at +%d", v, i)
					}
				}
			})
		}
	}
}

// TestGatherConstants pins the gather kernel's C constants to Go's.
func TestGatherConstants(t *testing.T) {
	if cGatherEmpty != GatherEmpty || cGatherBad != GatherBad {
		t.Fatalf("C: GATHER_EMPTY %d GATHER_BAD %d; Go: %d %d", uint64(cGatherEmpty), cGatherBad, uint64(GatherEmpty), GatherBad)
	}
}
