package epoch

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRelabelGenerationWrap checks that no relabel table mistakes an
// entry of its last generation for one of the generation after the wrap.
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
	// The batch table's 8-bit stamp: node 7, inserted under stamp 1, must
	// be new once the stamp wraps back to 1.
	var bt batchTable
	bt.begin(0, []uint32{1})
	bt.stamp = 0
	bt.begin(0, []uint32{7})
	bt.stamp = 255
	bt.begin(0, []uint32{9})
	edgeSrc := make([]int32, 1)
	src, _ := bt.relabel([]uint32{9}, []uint32{7}, edgeSrc)
	if bt.stamp != 1 || !slices.Equal(src, []uint32{9, 7}) || edgeSrc[0] != 1 {
		t.Fatalf("batch table after the stamp wrap: stamp %d, src %v, edge source %d", bt.stamp, src, edgeSrc[0])
	}
}

// TestRankSet checks a rankSet's ranks and members against the sorted
// ids it was built from, at block boundaries and with sizes that do not
// fill the last block.
func TestRankSet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []uint32{1, 63, 64, 65, 383, 384, 385, 1000, 5000} {
		for _, density := range []int{0, 1, 10, 50, 100} {
			var ids []uint32
			for v := uint32(0); v < n; v++ {
				if r.IntN(100) < density {
					ids = append(ids, v)
				}
			}
			s := newRankSet(ids, n)
			if int64(len(s))*8 != rankSetBytes(n) || s.numIDs() < int(n) {
				t.Fatalf("n=%d: %d words, want %d bytes covering n", n, len(s), rankSetBytes(n))
			}
			for v := uint32(0); v < n; v++ {
				want, wantOK := slices.BinarySearch(ids, v)
				got, ok := s.rank(v)
				if ok != wantOK || (ok && int(got) != want) {
					t.Fatalf("n=%d density %d: rank(%d) = %d, %v; want %d, %v", n, density, v, got, ok, want, wantOK)
				}
			}
		}
	}
}
