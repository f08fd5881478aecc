package host

import (
	"fmt"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/rng"
)

// SampleBlocks samples one minibatch from scratch, the way a per-minibatch
// (DGL-style) neighbor sampler does: for each hop it draws fanouts[h]
// neighbors (all of them for epoch.AllNeighbors) of every destination node with rng.Sample under key.Layer(h)
// and relabels the sources to local ids with a hash map. Nothing is shared
// between calls and no epoch is sampled first.
//
// It is the reference the epoch assembly is measured against (see
// internal/hostbench), and it obeys the same invariant as the GPU's SampleBlocks:
// for distinct seeds in frontier_0, its blocks equal
// (*epoch.Result).Sample on Reference's epoch for the same key. Unlike
// Result.Assemble it accepts any node of g as a seed. Errors wrap ErrInvalid
// (bad fanouts, a seed out of range) or epoch.ErrDuplicateSeed.
func SampleBlocks(g Adjacency, seeds []uint32, fanouts []int, key epoch.Key) (*epoch.Blocks, error) {
	if err := validateRequest(g.NumNodes(), seeds, fanouts); err != nil {
		return nil, err
	}
	b := &epoch.Blocks{Epoch: key.Epoch, Seeds: append([]uint32(nil), seeds...), Hops: make([]epoch.Hop, len(fanouts))}
	dst := b.Seeds
	var row []int32
	for h, k := range fanouts {
		if cap(row) < k {
			row = make([]int32, k)
		}
		if k != epoch.AllNeighbors {
			row = row[:k]
		}
		// A full hop's size is unknown until its rows are read: a fanout's
		// worth of room is only the first guess.
		guess := max(k, 1) + 1
		local := make(map[uint32]int32, len(dst)*guess)
		src := make([]uint32, 0, len(dst)*guess)
		for i, v := range dst {
			if _, ok := local[v]; ok {
				// Only the seeds can repeat: later dst are a previous src.
				return nil, fmt.Errorf("%w: seed %d at position %d appears earlier too", epoch.ErrDuplicateSeed, v, i)
			}
			local[v] = int32(len(src))
			src = append(src, v)
		}
		var es, ed []int32
		lkey := key.Layer(h)
		for i, v := range dst {
			nb, err := g.Neighbors(v)
			if err != nil {
				return nil, fmt.Errorf("sample blocks: hop %d node %d: %w", h+1, v, err)
			}
			if k == epoch.AllNeighbors {
				row = rng.AppendAll(row[:0], nb)
			} else {
				rng.Sample(row, nb, v, lkey, key.Replace)
			}
			for _, s := range row {
				if s < 0 {
					continue
				}
				id, ok := local[uint32(s)]
				if !ok {
					id = int32(len(src))
					local[uint32(s)] = id
					src = append(src, uint32(s))
				}
				es = append(es, id)
				ed = append(ed, int32(i))
			}
		}
		b.Hops[h] = epoch.Hop{Dst: dst, Src: src, EdgeSrc: es, EdgeDst: ed}
		dst = src
	}
	return b, nil
}
