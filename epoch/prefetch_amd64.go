//go:build amd64 && !purego

package epoch

// prefetchIdx8 asks the CPU to start loading base[idx[i]] for each i
// (8-byte elements), without waiting for the lines. A prefetch never
// faults, so an index beyond the array is harmless.
//
//go:noescape
func prefetchIdx8(base *uint64, idx []uint32)

// prefetchRows asks the CPU to start loading both ends of each row
// base[row*k : row*k+k] (4-byte elements; a row may straddle two lines).
//
//go:noescape
func prefetchRows(base *int32, rows []int32, k int)

const havePrefetch = true
