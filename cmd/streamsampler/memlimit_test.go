package main

import "testing"

func TestGoMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		env      string
		room     int64
		inCgroup bool
		want     int64
		set      bool
	}{
		{"", 4 << 30, true, 3 << 30, true}, // three quarters of the room
		{"", 1 << 30, false, 0, false},     // no cgroup: Go's default
		{"2GiB", 4 << 30, true, 0, false},  // GOMEMLIMIT wins
		{"", 0, true, 0, false},            // a full cgroup: leave it
		{"off", 4 << 30, true, 0, false},   // GOMEMLIMIT=off too
	} {
		got, set := goMemoryLimit(c.env, c.room, c.inCgroup)
		if got != c.want || set != c.set {
			t.Errorf("goMemoryLimit(%q, %d, %v) = %d, %v; want %d, %v", c.env, c.room, c.inCgroup, got, set, c.want, c.set)
		}
	}
}

// A chunk cache held outside the heap lowers the heap's limit by its
// size, to a quarter of the limit at least; no limit stays none.
func TestLowerGoLimit(t *testing.T) {
	for _, c := range []struct{ limit, n, want int64 }{
		{3 << 30, 1 << 30, 2 << 30},
		{3 << 30, 0, 3 << 30},
		{3 << 30, 3 << 30, 3 << 28},
		{0, 1 << 30, 0},
	} {
		if got := lowerGoLimit(c.limit, c.n); got != c.want {
			t.Errorf("lowerGoLimit(%d, %d) = %d, want %d", c.limit, c.n, got, c.want)
		}
	}
}
