package epoch

// relabeler gives the nodes of one hop their local ids, the last step of
// the hop: the destinations dst keep their positions (0..len(dst)-1), and
// each gathered sample's node gets the id of its first appearance, in dst
// or else among the samples after len(dst). Three strategies, chosen per
// hop by relabelerFor:
//   - denseTable (relabel_dense.go): an array over all node ids, with a
//     dense index;
//   - localTable (relabel_hash.go): an open-addressing hash table, for
//     small hops without a dense index;
//   - sortRelabel (relabel_sort.go): radix sorting and merging, for large
//     hops without a dense index, whose hash table would be far bigger
//     than the caches.
type relabeler interface {
	// begin starts hop h (from 0) with its destinations dst, distinct
	// seeds at hop 0 and the previous hop's src after. It returns the index
	// in dst of the first node it refuses, and whether that node repeats
	// an earlier one (otherwise it is beyond the node ids the strategy
	// holds), or -1.
	begin(h int, dst []uint32) (bad int, repeated bool)
	// relabel sets edgeSrc[j] to the local id of node sampled[j], appends
	// the nodes not in src yet to src (which holds dst) in order of first
	// appearance, and returns src. bad is the first j whose node is beyond
	// the node ids the strategy holds, or -1; src and edgeSrc are then
	// partly written.
	relabel(src, sampled []uint32, edgeSrc []int32) (_ []uint32, bad int)
}

// relabelerFor returns the relabelling strategy for a hop that starts from
// numKnown nodes and relabels up to numEdges samples, configured for it:
// with a dense index
// the dense table (a node id is known to be below the index's size, and
// one memory access per sample beats hash probes), otherwise by sorting
// from sortRelabelMin candidate edges, and through the hash table below.
func (a *Assembler) relabelerFor(numKnown, numEdges int) relabeler {
	switch {
	case a.ix != nil && a.ix.dense != nil:
		a.dense.numNodes = len(a.ix.dense[0])
		return &a.dense
	case numEdges >= sortRelabelMin:
		a.bySort.dstByID = &a.dstByID
		return &a.bySort
	default:
		a.hash.expect = min(numKnown+numEdges, len(a.r.Final))
		return &a.hash
	}
}
