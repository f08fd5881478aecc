// Package aio reads many O_DIRECT extents of one file at once through
// Linux native AIO (io_submit, io_getevents), from one goroutine.
//
// A goroutine blocked in pread keeps its P (the scheduler's token to run
// Go code) until sysmon takes it back, 20 µs or more later: on two cores
// (GOMAXPROCS 2) the feature executor's sixteen to 128 pread goroutines
// kept about two reads in flight, and read 22–25 k random 4 KiB rows/s at
// any depth where fio reads 61 k (featplan's BenchmarkReadDepth; with
// GOMAXPROCS 8 the same goroutines read 62 k at depth 64). With AIO one
// goroutine keeps Depth reads in flight in the kernel, whatever
// GOMAXPROCS is: it submits them in one system call and waits for any of
// them in another. O_DIRECT only: on a buffered file io_submit reads
// synchronously.
//
// Two readers share it: featplan's planned feature reads and randread's
// random reads of neighbor blocks (docs/PERFORMANCE.md).
package aio

import (
	"errors"
	"unsafe"
)

// ErrUnavailable is returned by New where the kernel refuses an AIO
// context (ENOSYS, EPERM, EAGAIN at fs.aio-max-nr...): the caller reads
// another way.
var ErrUnavailable = errors.New("aio: no Linux AIO context")

// Align is the alignment of the buffers and offsets of O_DIRECT reads
// this package's callers use: the page size, a multiple of every logical
// block size.
const Align = 4096

// Aligned returns a buffer of n bytes whose first byte is Align-aligned.
func Aligned(n int64) []byte {
	b := make([]byte, n+Align)
	o := int(-uintptr(unsafe.Pointer(&b[0])) & (Align - 1))
	return b[o : int64(o)+n : int64(o)+n]
}
