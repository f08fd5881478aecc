//go:build cgo

package hls

/*
#include "gather_kernel.h"
*/
import "C"

import "unsafe"

// cGatherEmpty and cGatherBad are the C++ constants, for tests that pin
// them.
const (
	cGatherEmpty = C.GATHER_EMPTY
	cGatherBad   = C.GATHER_BAD
)

// Gather runs the gather kernel's C++ (gather_kernel.cpp, as the FPGA
// runs it) on the CPU: out[i] = blocks[slots[i]], as GatherReference
// defines it. The C code keeps no pointer.
func Gather(blocks, slots []uint32, out []int32, numNodes uint32) error {
	if err := checkGather(blocks, slots, out); err != nil {
		return err
	}
	if len(slots) == 0 {
		return nil
	}
	C.gather_kernel(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(blocks))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(slots))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		C.uint32_t(len(slots)), C.uint64_t(len(blocks)), C.uint32_t(numNodes))
	return nil
}
