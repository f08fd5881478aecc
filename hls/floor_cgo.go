//go:build cgo

package hls

/*
#cgo CFLAGS: -O3
#include <stdint.h>
void gather_floor(const uint32_t* chunk, const uint32_t* targets, uint32_t n, int32_t* out,
                  uint32_t k, uint64_t x);
*/
import "C"

import "unsafe"

// gatherFloorC runs gather_floor.c, the memory floor of BenchmarkKernel.
// It lives outside the test files only because they cannot use cgo.
func gatherFloorC(chunk, targets []uint32, out []int32, k int, seed uint64) {
	if len(targets) == 0 {
		return
	}
	C.gather_floor(
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(chunk))),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(targets))),
		C.uint32_t(len(targets)),
		(*C.int32_t)(unsafe.Pointer(unsafe.SliceData(out))),
		C.uint32_t(k), C.uint64_t(seed))
}
