package main

import (
	"os"
	"runtime/debug"

	"github.com/streamsampler/streamsampler/internal/memavail"
)

// goMemoryLimit is the soft limit streamsampler gives the Go heap inside a
// memory cgroup, unless GOMEMLIMIT (env) sets one: three quarters of the
// room the tightest cgroup leaves at start, the rest for what the Go
// runtime does not count — the devices' chunk buffers (mappings) and the
// page cache the group is charged for; a chunk cache larger than those
// buffers lowers it by the difference (reserveGoMemory). Without it the collector lets the
// heap grow to twice what is live, which an epoch with features (node
// sets, plan, cache) turns into an OOM kill: scale 22 with a 512 MiB
// feature cache peaked at 2.58 GB of RSS by default and 1.60 GB with a
// 1200 MiB limit.
func goMemoryLimit(env string, room int64, inCgroup bool) (int64, bool) {
	if env != "" || !inCgroup || room <= 0 {
		return 0, false
	}
	return room / 4 * 3, true
}

// goLimit is the soft limit setGoMemoryLimit gave the Go heap (0: none).
var goLimit int64

// setGoMemoryLimit applies goMemoryLimit to this process.
func setGoMemoryLimit() {
	room, ok := memavail.CgroupRoom()
	if limit, ok := goMemoryLimit(os.Getenv("GOMEMLIMIT"), room, ok); ok {
		goLimit = limit
		debug.SetMemoryLimit(limit)
	}
}

// lowerGoLimit is the heap's soft limit once n more bytes are held
// outside it: limit less n, but never below a quarter of limit (a limit
// the live heap exceeds makes the collector run without pause). 0 stays
// 0 (no limit set).
func lowerGoLimit(limit, n int64) int64 {
	if limit <= 0 || n <= 0 {
		return limit
	}
	return max(limit-n, limit/4)
}

// reserveGoMemory lowers the soft limit setGoMemoryLimit gave the heap
// by n bytes the process holds outside it (the chunk cache's entries
// beyond the two chunk buffers per device that the limit's last quarter
// was already meant for), so that the heap and the cache together stay
// in the cgroup's room. A GOMEMLIMIT the user set is left alone.
func reserveGoMemory(n int64) {
	if l := lowerGoLimit(goLimit, n); l != goLimit {
		goLimit = l
		debug.SetMemoryLimit(l)
	}
}
