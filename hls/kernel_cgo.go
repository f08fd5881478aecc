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
	return RunEdges(chunk, targets, out, nil, fanout, key, replace)
}

// RunEdges is Run that also writes, when edges is not nil (then
// len(edges) == len(out)), each slot's chunk-local edge index, as
// ReferenceEdges defines it, through the kernel's edge output
// (sample_kernel_split: the separate-array form of argument 7).
func RunEdges(chunk []uint32, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error {
	if err := validate(chunk, targets, out, edges, fanout); err != nil {
		return err
	}
	if len(targets) == 0 {
		return nil
	}
	if edges == nil {
		runUnchecked(chunk, targets, out, fanout, key, replace, false)
		return nil
	}
	C.sample_kernel_split(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(edges))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(len(targets)), C.uint32_t(fanout), C.uint64_t(key), cBool(replace))
	return nil
}

func cBool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

// runUnchecked calls the kernel without validation; tests use it to check
// the kernel's own guards. targets must be non-empty. With edges, out
// holds the samples and then the edge indices (2 × len(targets) × fanout),
// as the kernel's result buffer does on the FPGA.
func runUnchecked(chunk []uint32, targets []uint32, out []int32, fanout int, key uint64, replace, edges bool) {
	C.sample_kernel(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(len(targets)), C.uint32_t(fanout), C.uint64_t(key), cBool(replace), cBool(edges))
}
