package epoch

import "testing"

// TestRelabelGenerationWrap checks that neither relabel table mistakes an
// entry of generation 2^32-1 for one of the generation after the wrap.
func TestRelabelGenerationWrap(t *testing.T) {
	// Generation wrap-around of the hash table.
	var lt localTable
	lt.reset(10)
	lt.gen = ^uint32(0)
	lt.insert(7, 1)
	lt.reset(10)
	if _, fresh := lt.insert(7, 2); !fresh {
		t.Fatal("stale entry survived a generation wrap")
	}
	var dt denseTable
	dt.reset(10)
	dt.gen = ^uint32(0)
	dt.insert(7, 1)
	dt.reset(10)
	if _, fresh := dt.insert(7, 2); !fresh {
		t.Fatal("stale dense entry survived a generation wrap")
	}
}
