//go:build !amd64 || purego

package epoch

// Without a prefetch instruction the blocks are touched with loads
// instead (gather, relabel).
func prefetchIdx8(base *uint64, idx []uint32) {}

func prefetchRows(base *int32, rows []int32, k int) {}

const havePrefetch = false
