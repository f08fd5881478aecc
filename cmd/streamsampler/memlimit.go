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
// page cache the group is charged for. Without it the collector lets the
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

// setGoMemoryLimit applies goMemoryLimit to this process.
func setGoMemoryLimit() {
	room, ok := memavail.CgroupRoom()
	if limit, ok := goMemoryLimit(os.Getenv("GOMEMLIMIT"), room, ok); ok {
		debug.SetMemoryLimit(limit)
	}
}
