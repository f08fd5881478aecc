package epoch

// gather writes the valid samples of the given rows of a layer's samples
// (fanout slots a row) to sampled, in row and slot order, with the index of
// each one's row in rows to edgeDst (the edge's local destination id), and
// returns how many it wrote. sampled and edgeDst must hold
// len(rows)*fanout+1.
//
// The rows are at random places in an array far bigger than the caches,
// and copying a row of fanout slots takes too many instructions for the
// CPU to reach the next rows' misses on its own. So the rows are taken in
// blocks, and the next block's lines (both ends of each row, which may
// straddle two lines) are requested before the current block is copied:
// with prefetch instructions where there are (prefetch_amd64.s), otherwise
// by loading the current block's lines in a tight loop first. The copy is
// branch-free: every slot is written, and j moves past valid ones only
// (padding is scattered unpredictably). On BenchmarkSample/rmat2M/dense
// the touching loads made assembly 1.2× faster; prefetch instructions,
// here and in relabel, 1.7× faster again.
func (a *Assembler) gather(sampled []uint32, edgeDst []int32, layerSamples []int32, rows []int32, fanout int) int {
	j := 0
	if fanout < 1 || len(layerSamples) == 0 { // an unvalidated Result
		return 0
	}
	bs := gatherTouch
	if usePrefetch {
		bs = gatherPrefetch
		prefetchRows(&layerSamples[0], rows[:min(bs, len(rows))], fanout)
	}
	for i0 := 0; i0 < len(rows); i0 += bs {
		blk := rows[i0:min(i0+bs, len(rows))]
		if usePrefetch {
			if next := i0 + bs; next < len(rows) {
				prefetchRows(&layerSamples[0], rows[next:min(next+bs, len(rows))], fanout)
			}
		} else {
			var acc int32
			for _, row := range blk {
				acc |= layerSamples[int(row)*fanout] | layerSamples[int(row)*fanout+fanout-1]
			}
			a.sink |= uint64(acc) // keeps the loads
		}
		for ii, row := range blk {
			i := int32(i0 + ii)
			for _, s := range layerSamples[int(row)*fanout : int(row)*fanout+fanout] {
				sampled[j] = uint32(s)
				edgeDst[j] = i
				j += int(^uint32(s) >> 31)
			}
		}
	}
	return j
}

// Rows (gather) and samples (relabel) taken per block: with prefetch
// instructions, the next block is requested while this one is worked on
// (16 and 32 measured best among 8 to 128); with touching loads, the block
// is loaded first.
const (
	gatherPrefetch  = 16
	gatherTouch     = 32
	relabelPrefetch = 32
	relabelTouch    = 64
	rowsPrefetch    = 32 // rankRows
)

// usePrefetch selects prefetch instructions over touching loads; a
// variable so that tests cover both ways where there are prefetches.
var usePrefetch = havePrefetch

// gatherEdgeIDs appends the edge ids of the valid samples of the given
// rows to dst, in gather's order (row, then slot), and returns it. It
// runs after gather, whose rows are then in cache.
func gatherEdgeIDs(dst []int64, layerSamples []int32, layerEdgeIDs []int64, rows []int32, fanout int) []int64 {
	for _, row := range rows {
		lo := int(row) * fanout
		for t, s := range layerSamples[lo : lo+fanout] {
			if s >= 0 {
				dst = append(dst, layerEdgeIDs[lo+t])
			}
		}
	}
	return dst
}

// fullEdges is the number of samples the given rows of a full layer hold:
// the sum of their lengths, which sizes gatherFull's output.
func fullEdges(offsets []int64, rows []int32) int {
	n := 0
	for _, row := range rows {
		n += int(offsets[row+1] - offsets[row])
	}
	return n
}

// gatherFull is gather for a full layer (Layer.Offsets): every sample of
// each row is an edge (a full layer has no empty slot), so a row is one
// copy of its span, however long. sampled and edgeDst must hold
// fullEdges(offsets, rows). Rows of a full layer are mostly longer than a
// fixed fanout's, and each starts a sequential copy the hardware
// prefetcher follows, so the software prefetching of gather is not used.
func gatherFull(sampled []uint32, edgeDst []int32, layerSamples []int32, offsets []int64, rows []int32) int {
	j := 0
	for i, row := range rows {
		lo, hi := offsets[row], offsets[row+1]
		for _, s := range layerSamples[lo:hi] {
			sampled[j] = uint32(s)
			edgeDst[j] = int32(i)
			j++
		}
	}
	return j
}

// gatherFullEdgeIDs is gatherEdgeIDs for a full layer: the edge ids of
// each row's whole span, in gatherFull's order.
func gatherFullEdgeIDs(dst []int64, layerEdgeIDs []int64, offsets []int64, rows []int32) []int64 {
	for _, row := range rows {
		dst = append(dst, layerEdgeIDs[offsets[row]:offsets[row+1]]...)
	}
	return dst
}
