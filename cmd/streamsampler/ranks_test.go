package main

import "testing"

func TestRankDevice(t *testing.T) {
	for _, c := range []struct {
		local, visible string
		want           int
	}{
		{"", "", 0},
		{"1", "", 1},
		{"3", "0,1,2,3", 3},
		{"1", "5", 0},   // one device per rank: it is device 0
		{"3", "4,5", 1}, // fewer visible than ranks: shared
	} {
		t.Setenv("LOCAL_RANK", c.local)
		t.Setenv("CUDA_VISIBLE_DEVICES", c.visible)
		if got, err := rankDevice(); err != nil || got != c.want {
			t.Errorf("LOCAL_RANK=%q CUDA_VISIBLE_DEVICES=%q: %d %v, want %d", c.local, c.visible, got, err, c.want)
		}
	}
	t.Setenv("LOCAL_RANK", "x")
	if _, err := rankDevice(); err == nil {
		t.Error("LOCAL_RANK=x accepted")
	}
}

func TestCPUShare(t *testing.T) {
	for _, c := range []struct {
		env, world string
		ncpu, want int
		ok         bool
	}{
		{"", "2", 16, 8, true},
		{"", "3", 16, 5, true},
		{"", "32", 16, 1, true},
		{"", "1", 16, 0, false},
		{"", "", 16, 0, false},
		{"4", "2", 16, 0, false}, // GOMAXPROCS set: the user's
	} {
		if got, ok := cpuShare(c.env, c.world, c.ncpu); got != c.want || ok != c.ok {
			t.Errorf("%+v: %d %v", c, got, ok)
		}
	}
}
