package epoch

import (
	"slices"

	"github.com/streamsampler/streamsampler/internal/radix"
)

// sortRelabelMin is the number of candidate edges in a hop (len(dst) ×
// fanout) from which Sample, without an index, relabels by sorting.
// A variable so that tests can force either method.
var sortRelabelMin = 1 << 15

// sortRelabel is the relabelling strategy for large hops without a dense
// index: sorting instead of hashing. (node, j) pairs of the samples,
// sorted by node (stably, so each run of a node starts at its first
// appearance), are merged with the sorted dst; the runs of new nodes are
// then sorted by first appearance to get their local ids. Every pass is
// sequential or a scatter of independent writes, where a hash table of a
// large hop would take a cache miss per sample.
type sortRelabel struct {
	dstByID   *dstOrder // the hop's dst sorted by node id, shared with mergeRows
	dstSorted []uint64  // dstByID's result for this hop (begin)
	// Scratch, reused: (node<<32 | j) for each sample j, and
	// (first appearance<<32 | start of the node's run) for each new node;
	// each with the radix sort's second buffer.
	pairs, pairsTmp       []uint64
	newNodes, newNodesTmp []uint64
}

// begin sorts dst; at hop 0 it looks there for a repeated seed, and
// reports the one whose repeat comes first in dst (as the hash table
// would). At later hops dst, the previous hop's src, is distinct by
// construction.
func (s *sortRelabel) begin(h int, dst []uint32) (int, bool) {
	s.dstSorted = s.dstByID.sorted(dst)
	if h > 0 {
		return -1, false
	}
	bad := -1
	// Equal nodes are adjacent and in dst order: the later of each pair
	// is a repeat.
	for i := 1; i < len(s.dstSorted); i++ {
		if s.dstSorted[i]>>32 == s.dstSorted[i-1]>>32 {
			if at := int(uint32(s.dstSorted[i])); bad < 0 || at < bad {
				bad = at
			}
		}
	}
	return bad, bad >= 0
}

// relabel: see relabeler and sortRelabel.
func (s *sortRelabel) relabel(src, sampled []uint32, edgeSrc []int32) ([]uint32, int) {
	m := len(sampled)
	s.pairs = slices.Grow(s.pairs[:0], m)[:m]
	s.pairsTmp = slices.Grow(s.pairsTmp[:0], m)[:m]
	for j, v := range sampled {
		s.pairs[j] = uint64(v)<<32 | uint64(j)
	}
	byNode := radix.ByHigh32(s.pairs, s.pairsTmp)
	dstSorted := s.dstSorted
	newNodes := s.newNodes[:0]
	k := 0 // position in dstSorted
	for run := 0; run < m; {
		v := uint32(byNode[run] >> 32)
		end := run + 1
		for end < m && uint32(byNode[end]>>32) == v {
			end++
		}
		for k < len(dstSorted) && uint32(dstSorted[k]>>32) < v {
			k++
		}
		if k < len(dstSorted) && uint32(dstSorted[k]>>32) == v {
			loc := int32(uint32(dstSorted[k]))
			for _, e := range byNode[run:end] {
				edgeSrc[uint32(e)] = loc
			}
		} else {
			newNodes = append(newNodes, byNode[run]<<32|uint64(run))
		}
		run = end
	}
	tmp := slices.Grow(s.newNodesTmp[:0], len(newNodes))[:len(newNodes)]
	byFirst := radix.ByHigh32(newNodes, tmp)
	s.newNodes, s.newNodesTmp = newNodes, tmp
	base := int32(len(src))
	for rank, e := range byFirst {
		run := int(uint32(e))
		v := uint32(byNode[run] >> 32)
		src = append(src, v)
		loc := base + int32(rank)
		for ; run < m && uint32(byNode[run]>>32) == v; run++ {
			edgeSrc[uint32(byNode[run])] = loc
		}
	}
	return src, -1
}
