package featplan

// AutoCacheBytes is the feature cache a command gets by default
// (--feature-cache auto) for a store of dataBytes of rows in a process
// that may use available bytes (memavail.Available): the whole store when
// it fits in half of that, else that half. The other half is left to the
// rest of an epoch — its results and node sets, the plan, the reply
// buffers — and to the page cache the process is charged for inside a
// memory cgroup. Without a figure for the memory (available <= 0) it is
// 0: no cache, rather than one that could exhaust the machine.
func AutoCacheBytes(dataBytes, available int64) int64 {
	if available <= 0 || dataBytes <= 0 {
		return 0
	}
	return min(dataBytes, available/2)
}
