package featplan

import "testing"

func TestAutoCacheBytes(t *testing.T) {
	for _, c := range []struct {
		data, avail, want int64
	}{
		{51 << 20, 8 << 30, 51 << 20},   // the store fits: all of it
		{2 << 30, 768 << 20, 384 << 20}, // out of core in a cgroup: half of the room
		{1 << 30, 2 << 30, 1 << 30},     // exactly half
		{1 << 30, 0, 0},                 // memory unknown: no cache
		{0, 1 << 30, 0},                 // no rows
	} {
		if got := AutoCacheBytes(c.data, c.avail); got != c.want {
			t.Errorf("AutoCacheBytes(%d, %d) = %d, want %d", c.data, c.avail, got, c.want)
		}
	}
}
