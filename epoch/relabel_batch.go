package epoch

import (
	"slices"

	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// batchTable is the relabelling strategy whose table is sized by the
// minibatch rather than by the graph: an open-addressing hash table
// (linear probing, load at most 1/2) of packed 8-byte slots, node<<32 |
// stamp<<24 | local id. Like denseTable it is kept from hop to hop (a
// hop's dst, the previous hop's src, is in it already) and emptied in O(1)
// by bumping the stamp (8 bits; the slots are cleared when it wraps, once
// in 255 minibatches). A minibatch of a few hundred thousand nodes needs a
// few MiB whatever the number of node ids, where a dense table needs 8
// bytes for every node id of the graph.
type batchTable struct {
	slots []uint64
	shift uint     // 64 - log2(len(slots))
	stamp uint64   // 1..255
	hash  []uint32 // home slots of the block being prefetched
	sink  uint64   // what the touching loads were or'ed into
}

// batchMaxNodes is the most nodes a minibatch may have in a batchTable,
// whose slots hold local ids in 24 bits; a variable (at most 1<<24) so
// that tests can make a hop outgrow it.
var batchMaxNodes = 1 << 24

// Relabelling through the batch table takes the samples in blocks of
// batchBlock and prefetches the home slots of the block batchAhead samples
// ahead (blocks of 16, and 32 to 256 ahead, were no faster within this
// VM's noise; a load of up to 3/4 instead of 1/2, a table of half the
// size, was slower).
const batchBlock, batchAhead = 32, 64

// batchHash returns the home slot of node v in a table of 2^(64-shift)
// slots: Fibonacci hashing, whose high bits spread consecutive ids.
func batchHash(v uint32, shift uint) uint32 {
	return uint32((uint64(v) * 0x9E3779B97F4A7C15) >> (shift & 63))
}

// reserve makes room for n nodes at a load of at most 1/2, moving the
// table's nodes, src (local id = position), into a larger one if needed.
func (t *batchTable) reserve(n int, src []uint32) {
	size := 1 << 10
	for size < 2*n {
		size <<= 1
	}
	if size <= len(t.slots) {
		return
	}
	t.slots = make([]uint64, size)
	hugepages.Advise(t.slots)
	prefault(t.slots)
	t.shift = uint(64 - log2(size))
	t.stamp = 1
	mask := uint32(size - 1)
	for id, v := range src {
		i := batchHash(v, t.shift)
		for t.slots[i]>>24&0xff == t.stamp {
			i = (i + 1) & mask
		}
		t.slots[i] = uint64(v)<<32 | t.stamp<<24 | uint64(id)
	}
}

// begin empties the table at hop 0 and inserts the seeds; at later hops
// dst (the previous hop's src) is in the table already.
func (t *batchTable) begin(h int, dst []uint32) (int, bool) {
	if h > 0 {
		return -1, false
	}
	t.reserve(len(dst), nil)
	t.stamp++
	if t.stamp == 256 {
		clear(t.slots)
		t.stamp = 1
	}
	mask := uint32(len(t.slots) - 1)
	for k, v := range dst {
		i := batchHash(v, t.shift)
		for {
			e := t.slots[i]
			if e>>24&0xff != t.stamp {
				t.slots[i] = uint64(v)<<32 | t.stamp<<24 | uint64(k)
				break
			}
			if uint32(e>>32) == v {
				return k, true
			}
			i = (i + 1) & mask
		}
	}
	return -1, false
}

// relabel (see relabeler) finds or inserts each sample's node, shaped as
// denseTable.relabel for overlapping cache misses: the samples in blocks,
// the home slots of a block batchAhead samples ahead prefetched, and no
// data-dependent branch but the probe loop's, which the home slot mostly
// settles.
func (t *batchTable) relabel(src []uint32, sampled []uint32, edgeSrc []int32) ([]uint32, int) {
	n := len(src)
	src = slices.Grow(src, len(sampled))
	buf := src[:cap(src)]
	edgeSrc = edgeSrc[:len(sampled)]
	t.hash = slices.Grow(t.hash[:0], batchBlock)[:batchBlock]
	ask := func(from int) {
		part := sampled[min(from, len(sampled)):min(from+batchBlock, len(sampled))]
		for i, s := range part {
			t.hash[i] = batchHash(s, t.shift)
		}
		if len(part) > 0 {
			prefetchIdx8(&t.slots[0], t.hash[:len(part)])
		}
	}
	for j0 := 0; j0 < len(sampled); j0 += batchBlock {
		blk := sampled[j0:min(j0+batchBlock, len(sampled))]
		// Room for this block's nodes, all of them new at worst: the
		// table grows (rarely: it keeps its size from minibatch to
		// minibatch) before the block's prefetches.
		if n+len(blk) > len(t.slots)/2 {
			t.reserve(n+len(blk), buf[:n])
			if usePrefetch {
				for j := j0; j < j0+batchAhead; j += batchBlock {
					ask(j)
				}
			}
		} else if usePrefetch && j0 == 0 {
			for j := 0; j < batchAhead; j += batchBlock {
				ask(j)
			}
		}
		if usePrefetch {
			ask(j0 + batchAhead)
		} else {
			// Touching loads instead of prefetches (see gather).
			var acc uint64
			for _, s := range blk {
				acc |= t.slots[batchHash(s, t.shift)]
			}
			t.sink |= acc // keeps the loads
		}
		slots, shift, stamp := t.slots, t.shift, t.stamp<<24
		mask := uint32(len(slots) - 1)
		for jj, s := range blk {
			i := batchHash(s, shift) & mask
			e := slots[i]
			for e&(0xff<<24) == stamp && uint32(e>>32) != s {
				i = (i + 1) & mask
				e = slots[i]
			}
			id := uint32(e) & (1<<24 - 1)
			if e&(0xff<<24) != stamp { // an empty slot: a new node
				id = uint32(n)
			}
			slots[i] = uint64(s)<<32 | stamp | uint64(id)
			buf[n] = s
			edgeSrc[j0+jj] = int32(id)
			if id == uint32(n) {
				n++
			}
		}
	}
	return buf[:n], -1
}
