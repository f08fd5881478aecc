package hls

import (
	"fmt"
	"math"
)

// Gather kernel (gather_kernel.cpp): the random-read sampler's SmartSSD
// path, where the host reads only the blocks that hold the neighbors it
// chose into device memory and the FPGA gathers the chosen words.

// GatherEmpty in a slot list marks an empty sample slot (GATHER_EMPTY).
const GatherEmpty = math.MaxUint32

// GatherBad is the output of a slot whose word is not a node id
// (GATHER_BAD): the kernel cannot report errors, its caller does.
const GatherBad = -2

// checkGather checks what the C++ kernel trusts: one output per slot and
// slot counts that fit its uint32 argument. (Indices past the blocks are
// the kernel's own guard: they give -1, never a read.)
func checkGather(blocks, slots []uint32, out []int32) error {
	if len(out) != len(slots) {
		return fmt.Errorf("%w: %d outputs for %d slots", ErrBadOutput, len(out), len(slots))
	}
	if uint64(len(slots)) > math.MaxUint32-1 {
		return fmt.Errorf("hls: gather of %d slots, at most %d per run", len(slots), uint64(math.MaxUint32-1))
	}
	return nil
}

// GatherReference is the gather kernel in Go, its definition: out[i] is
// blocks[slots[i]], -1 for GatherEmpty or an index past the blocks,
// GatherBad for a word not below numNodes.
func GatherReference(blocks, slots []uint32, out []int32, numNodes uint32) error {
	if err := checkGather(blocks, slots, out); err != nil {
		return err
	}
	for i, s := range slots {
		out[i] = -1
		if s != GatherEmpty && uint64(s) < uint64(len(blocks)) {
			if w := blocks[s]; w < numNodes {
				out[i] = int32(w)
			} else {
				out[i] = GatherBad
			}
		}
	}
	return nil
}
