package epoch

import (
	"math/bits"
	"slices"

	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// rankSet is a sorted set of node ids (a layer's frontier) as a bitmap
// with ranks beside it, so that a node's position in the frontier is one
// cache line and one popcount: 64-byte blocks of 384 ids, each two header
// words and six bitmap words. The header holds the number of members in
// earlier blocks (32 bits) and, in 16-bit lanes 2+w for w = 0..5, the
// members in the block's words before word w. It takes 1.33 bits per
// node id, 24 times less than a dense []int32 index, so that it stays in
// cache where that one does not: 5.6 MB a layer at 2^25 nodes.
type rankSet []uint64

// rankBlockIDs is the number of ids a rankSet block covers.
const rankBlockIDs = 6 * 64

// newRankSet returns the rankSet of sorted unique ids, all below numNodes.
func newRankSet(ids []uint32, numNodes uint32) rankSet {
	nb := (int(numNodes) + rankBlockIDs - 1) / rankBlockIDs
	s := make(rankSet, 8*nb)
	hugepages.Advise(s) // read at random, like the relabel table
	for _, v := range ids {
		b, off := v/rankBlockIDs, v%rankBlockIDs
		s[8*b+2+off/64] |= 1 << (off % 64)
	}
	n := uint64(0)
	for b := 0; b < nb; b++ {
		blk := s[8*b : 8*b+8]
		hdr := [2]uint64{n}
		c := uint64(0)
		for w, x := range blk[2:] {
			lane := 2 + w
			hdr[lane/4] |= c << (16 * (lane % 4))
			c += uint64(bits.OnesCount64(x))
		}
		blk[0], blk[1] = hdr[0], hdr[1]
		n += c
	}
	return s
}

// rankSetBytes is the size of a rankSet over numNodes ids.
func rankSetBytes(numNodes uint32) int64 {
	return (int64(numNodes) + rankBlockIDs - 1) / rankBlockIDs * 64
}

// rank returns v's position among the set's ids, and whether v is one; v
// must be below numIDs.
func (s rankSet) rank(v uint32) (int32, bool) {
	b, off := v/rankBlockIDs, v%rankBlockIDs
	blk := (*[8]uint64)(s[8*b : 8*b+8])
	w, bit := off/64, off%64
	lane := 2 + w
	before := blk[lane/4] >> (16 * (lane % 4)) & 0xffff
	x := blk[2+w]
	n := uint32(blk[0]) + uint32(before) + uint32(bits.OnesCount64(x&(1<<bit-1)))
	return int32(n), x>>bit&1 != 0
}

// numIDs returns the ids the set covers (a multiple of the block).
func (s rankSet) numIDs() int { return len(s) / 8 * rankBlockIDs }

// rankRows appends the position of each dst node in the frontier of s to
// rows and returns it, with blk (reused: the word offsets of the next
// rowsPrefetch nodes' blocks, which it prefetches, as gather does, while
// the current ones are ranked); bad is the index in dst of the first node
// missing from the frontier, or -1.
func rankRows(rows []int32, s rankSet, dst []uint32, blk []uint32) ([]int32, []uint32, int) {
	pf := usePrefetch && len(s) > 0
	lim := uint32(s.numIDs())
	blk = slices.Grow(blk[:0], rowsPrefetch)[:rowsPrefetch]
	ask := func(part []uint32) {
		for i, v := range part {
			blk[i] = v / rankBlockIDs * 8
		}
		prefetchIdx8(&s[0], blk[:len(part)])
	}
	if pf {
		ask(dst[:min(rowsPrefetch, len(dst))])
	}
	for i0 := 0; i0 < len(dst); i0 += rowsPrefetch {
		if next := i0 + rowsPrefetch; pf && next < len(dst) {
			ask(dst[next:min(next+rowsPrefetch, len(dst))])
		}
		for ii, v := range dst[i0:min(i0+rowsPrefetch, len(dst))] {
			if v >= lim {
				return rows, blk, i0 + ii
			}
			r, ok := s.rank(v)
			if !ok {
				return rows, blk, i0 + ii
			}
			rows = append(rows, r)
		}
	}
	return rows, blk, -1
}
