//go:build linux

package memavail

import "testing"

// TestCgroupRoom: the room is the tightest limit minus usage over the
// process's group and its ancestors, v1 and v2; "no limit" (v1's huge
// number, v2's "max") and unreadable files are skipped.
func TestCgroupRoom(t *testing.T) {
	const noLimit = 9223372036854771712
	cases := []struct {
		name   string
		proc   string
		files  map[string]int64
		want   int64
		wantOK bool
	}{
		{"v1 limit on the group", "4:memory:/a/b\n0::/\n", map[string]int64{
			"/cg/memory/a/b/memory.limit_in_bytes": 4 << 30, "/cg/memory/a/b/memory.usage_in_bytes": 1 << 30,
			"/cg/memory/a/memory.limit_in_bytes": noLimit, "/cg/memory/a/memory.usage_in_bytes": 3 << 30,
			"/cg/memory/memory.limit_in_bytes": noLimit, "/cg/memory/memory.usage_in_bytes": 20 << 30,
		}, 3 << 30, true},
		{"v1 tighter ancestor", "4:memory,x:/a/b\n", map[string]int64{
			"/cg/memory/a/b/memory.limit_in_bytes": 4 << 30, "/cg/memory/a/b/memory.usage_in_bytes": 1 << 30,
			"/cg/memory/a/memory.limit_in_bytes": 2 << 30, "/cg/memory/a/memory.usage_in_bytes": 3 << 30,
		}, 0, true},
		{"v2", "0::/svc\n", map[string]int64{
			"/cg/svc/memory.max": 8 << 30, "/cg/svc/memory.current": 5 << 30,
		}, 3 << 30, true},
		{"no limit", "4:memory:/a\n", map[string]int64{
			"/cg/memory/a/memory.limit_in_bytes": noLimit, "/cg/memory/a/memory.usage_in_bytes": 1 << 30,
		}, 0, false},
		{"no memory controller", "3:cpu:/a\n", map[string]int64{"/cg/memory/a/memory.limit_in_bytes": 1 << 30}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			room, ok := cgroupRoomFrom(c.proc, "/cg", func(p string) (int64, bool) {
				v, ok := c.files[p]
				return v, ok
			})
			if room != c.want || ok != c.wantOK {
				t.Fatalf("room %d, %v; want %d, %v", room, ok, c.want, c.wantOK)
			}
		})
	}
}
