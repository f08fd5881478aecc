package pipeline

import (
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
)

// TestIndexOptions: a relabel table over every node id for each
// concurrent assembler only where they all fit the budget beside the
// index; past 2^24 node ids none is ever asked for (RelabelTableBytes 0).
func TestIndexOptions(t *testing.T) {
	const n = 1 << 22 // 32 MiB a table
	table := epoch.RelabelTableBytes(n)
	if table != 8*n {
		t.Fatalf("RelabelTableBytes(%d) = %d, want %d", n, table, 8*n)
	}
	for _, tc := range []struct {
		ix         int64
		assemblers int
		budget     int64
		avail      int64 // memavail.Available; 0: unknown
		without    bool
	}{
		{1 << 20, 2, 512 << 20, 0, false},
		{1 << 20, 16, 512 << 20, 0, true}, // 16 tables of 32 MiB and the index: over 512 MiB
		{1 << 20, 15, 512 << 20, 0, false},
		{1 << 20, 15, 512 << 20, 4 << 30, false},
		{1 << 20, 15, 512 << 20, 1 << 30, true}, // a quarter of 1 GiB: 8 tables at most
		{1 << 20, 7, 512 << 20, 1 << 30, false},
		{1 << 20, 2, 512 << 20, 1 << 28, true}, // 64 MiB of room: not even two
		{0, 0, table, 0, false},                // no goroutine counts as one
		{1, 1, table, 0, true},
	} {
		got := len(indexOptions(tc.ix, n, tc.assemblers, tc.budget, tc.avail)) > 0
		if got != tc.without {
			t.Errorf("index %d, %d assemblers, budget %d: without tables %v, want %v", tc.ix, tc.assemblers, tc.budget, got, tc.without)
		}
	}
	// Past 2^24 ids assemblers never hold one: nothing to turn off.
	if opts := indexOptions(1<<20, 1<<25, 64, 512<<20, 1<<30); len(opts) != 0 {
		t.Error("past 2^24 ids: tables turned off, though none is ever made there")
	}
}
