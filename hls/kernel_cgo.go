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
		runUnchecked(chunk, targets, out, fanout, key, replace, false, 0)
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
// as the kernel's result buffer does on the FPGA. walk is argument 8: with
// walk != 0 targets holds the nodes and then as many walk ids, as the
// kernel's targets buffer does on the FPGA, and the kernel reads
// len(targets)/2 walkers.
func runUnchecked(chunk []uint32, targets []uint32, out []int32, fanout int, key uint64, replace, edges bool, walk uint32) {
	n := len(targets)
	if walk != 0 {
		n /= 2
	}
	C.sample_kernel(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(n), C.uint32_t(fanout), C.uint64_t(key), cBool(replace), cBool(edges), C.uint32_t(walk))
}

// RunWalk computes k candidates of one random-walk step for every walker
// (node nodes[r] on walk walks[r]) into out, row r, by calling the HLS C++
// kernel in its walk-step mode, after validating the inputs in Go. Its
// output equals ReferenceWalk's bit for bit. The C code keeps no pointer.
func RunWalk(chunk []uint32, nodes, walks []uint32, out []int32, k int, key uint64, attempt0 uint32) error {
	return RunWalkEdges(chunk, nodes, walks, out, nil, k, key, attempt0)
}

// RunWalkEdges is RunWalk that also writes, when edges is not nil, each
// candidate's chunk-local edge index, as ReferenceWalkEdges defines it
// (walk_kernel_split: the separate-array form of arguments 2, 7 and 8).
func RunWalkEdges(chunk []uint32, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error {
	if err := validateWalk(chunk, nodes, walks, out, edges, k); err != nil {
		return err
	}
	if len(nodes) == 0 {
		return nil
	}
	C.walk_kernel_split(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(edges))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(nodes))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(walks))),
		C.uint32_t(len(nodes)), C.uint32_t(k), C.uint64_t(key), C.uint32_t(attempt0))
	return nil
}

// RunAll runs the kernel's copy-all mode (fanout -1: every neighbor, in
// CSR order) once, through sample_all_split, after validating the inputs
// as ReferenceAll does: targets[0]'s neighbors from position skip, then
// the others', into out until it is full, each target's count in counts,
// with edges (as long as out) their chunk-local edge indices. It returns
// where the launch stopped; its output equals ReferenceAll's bit for bit.
func RunAll(chunk, targets []uint32, skip uint32, counts, out, edges []int32) (AllProgress, error) {
	if err := validateAll(chunk, targets, skip, counts, out, edges); err != nil {
		return AllProgress{}, err
	}
	if len(targets) == 0 {
		return AllProgress{}, nil
	}
	var status [AllStatusWords]int32
	C.sample_all_split(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(&status[0])),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(counts))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(edges))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(len(targets)), C.uint32_t(len(out)), C.uint32_t(skip))
	return ParseAllStatus(status[:], counts, len(out))
}

// RunAllRaw runs the copy-all mode through the synthesised top itself
// (sample_kernel with fanout FanoutAll and key AllKey(capacity, skip))
// over one result buffer laid out as on the FPGA (sample_kernel.h). It is
// what the emulated device executes; it validates first, as RunAll.
func RunAllRaw(chunk, targets []uint32, result []int32, capacity int, skip uint32, edges bool) error {
	_, counts, out, eout, err := splitAll(result, len(targets), capacity, edges)
	if err != nil {
		return err
	}
	if err := validateAll(chunk, targets, skip, counts, out, eout); err != nil {
		return err
	}
	if len(targets) == 0 {
		result[0], result[1] = 0, 0
		return nil
	}
	C.sample_kernel(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(result))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(len(targets)), C.uint32_t(FanoutAll), C.uint64_t(AllKey(capacity, skip)), 0, cBool(edges), 0)
	return nil
}
