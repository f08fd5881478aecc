//go:build cgo

package hls

// The C++ kernel is compiled by cgo from sample_kernel.cpp in this
// directory; this file is the shim that calls it.

/*
#cgo CXXFLAGS: -O3 -std=c++17
#include "sample_kernel.h"
*/
import "C"

import "unsafe"

// Engine names the implementation behind Run: the HLS C++ kernel, compiled
// for the CPU by cgo.
const Engine = "hls-cpp"

// cMaxFanout and cLanes are the C++ constants, for tests that pin them.
const (
	cMaxFanout = C.MAX_FANOUT
	cLanes     = C.SAMPLE_LANES
)

// Run samples fanout neighbors of every target into out (row r for
// targets[r], -1 in empty slots) by calling the HLS C++ kernel once, after
// validating the inputs in Go. Its output equals Reference's bit for bit.
// The C code reads chunk and targets and writes out only for the duration
// of the call; it keeps no pointer.
func Run(chunk []uint32, targets []uint32, out []int32, fanout int, key uint64, replace bool) error {
	if err := validate(chunk, targets, out, fanout); err != nil {
		return err
	}
	if len(targets) == 0 {
		return nil
	}
	runUnchecked(chunk, targets, out, fanout, key, replace)
	return nil
}

// runUnchecked calls the kernel without validation; tests use it to check
// the kernel's own guards. targets must be non-empty.
func runUnchecked(chunk []uint32, targets []uint32, out []int32, fanout int, key uint64, replace bool) {
	rep := C.uint32_t(0)
	if replace {
		rep = 1
	}
	C.sample_kernel(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(len(targets)), C.uint32_t(fanout), C.uint64_t(key), rep)
}
