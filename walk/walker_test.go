package walk

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestInMemory: the in-memory Walker writes Reference's rows over
// whatever out held, in every mode; refuses a bad request with
// ErrInvalid, writing nothing; stops with the context's error when
// cancelled; and reports its engine and no passes.
func TestInMemory(t *testing.T) {
	g := randomRepeatsCSR(700, 5, 6)
	starts := randomSeeds(g.NumNodes(), 150, 2)
	var w Walker = InMemory{Graph: g}
	ctx := context.Background()
	for _, tc := range walkModes {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Length, c.WalksPerNode = 7, 3
			want, err := Reference(g, starts, c)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]int32, c.OutputLen(len(starts)))
			for i := range out {
				out[i] = 12345
			}
			st, err := w.WalksInto(ctx, starts, c, out)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, want) {
				t.Fatal("InMemory's walks differ from Reference's")
			}
			if st == nil || st.Engine != EngineMemory || len(st.Passes) != 0 || st.HostTime() != 0 {
				t.Fatalf("stats %+v: want engine %q and no passes", st, EngineMemory)
			}
		})
	}
	c := Config{Length: 3, WalksPerNode: 2}
	for _, tc := range []struct {
		name   string
		starts []uint32
		c      Config
		out    int
	}{
		{"length 0", starts, Config{WalksPerNode: 1}, len(starts)},
		{"start beyond", []uint32{1, 700}, c, c.OutputLen(2)},
		{"output short", starts, c, c.OutputLen(len(starts)) - 1},
		{"output long", starts, c, c.OutputLen(len(starts)) + 1},
	} {
		out := make([]int32, tc.out)
		for i := range out {
			out[i] = 77
		}
		if _, err := w.WalksInto(ctx, tc.starts, tc.c, out); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
		if slices.ContainsFunc(out, func(v int32) bool { return v != 77 }) {
			t.Errorf("%s: a refused request wrote into the output", tc.name)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.WalksInto(cctx, starts, c, make([]int32, c.OutputLen(len(starts)))); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestStatsAddPass: the totals are the passes' sums, and the host's time
// is the wall time outside them (0 without passes).
func TestStatsAddPass(t *testing.T) {
	st := &Stats{Engine: "emu", Devices: 2, Wall: time.Second}
	if st.HostTime() != 0 {
		t.Fatalf("no passes: host time %v, want 0", st.HostTime())
	}
	for _, p := range []Pass{
		{Step: 1, Candidates: 1, Targets: 10, ChunksRead: 3, ChunksReused: 1, BytesRead: 300, ReadTime: 10, KernelTime: 20, SyncTime: 5, Wall: 100 * time.Millisecond},
		{Step: 2, Membership: true, Targets: 4, ChunksRead: 2, ChunksSkipped: 5, BytesRead: 200, ReadTime: 7, Wall: 50 * time.Millisecond},
	} {
		st.AddPass(p)
	}
	want := Stats{Engine: "emu", Devices: 2, ChunksRead: 5, ChunksReused: 1, BytesRead: 500, ReadTime: 17, KernelTime: 20, SyncTime: 5, PassTime: 150 * time.Millisecond, Wall: time.Second}
	got := *st
	got.Passes = nil
	if !reflect.DeepEqual(got, want) || len(st.Passes) != 2 {
		t.Fatalf("stats %+v, want %+v and 2 passes", got, want)
	}
	if h := st.HostTime(); h != 850*time.Millisecond {
		t.Fatalf("host time %v, want 850ms", h)
	}
}
