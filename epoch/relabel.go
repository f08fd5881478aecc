package epoch

// relabeler gives the nodes of one hop their local ids, the last step of
// the hop: the destinations dst keep their positions (0..len(dst)-1), and
// each gathered sample's node gets the id of its first appearance, in dst
// or else among the samples after len(dst). Four strategies, chosen per
// hop by relabelerFor:
//   - denseTable (relabel_dense.go): an array over all node ids, with an
//     index that allows it;
//   - batchTable (relabel_batch.go): a hash table sized by the minibatch,
//     with an index that does not;
//   - localTable (relabel_hash.go): an open-addressing hash table, for
//     small hops without an index;
//   - sortRelabel (relabel_sort.go): radix sorting and merging, for large
//     hops without an index, whose hash table would be far bigger
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

// relabelerFor returns the relabelling strategy for hop h, which starts
// from numKnown nodes and relabels up to numEdges samples, configured for
// it. With an index, a table kept from hop to hop: over every node id
// where the index allows it (denseTable: one memory access per sample),
// otherwise sized by the minibatch (batchTable), while the minibatch's
// nodes fit its 24-bit local ids. Without an index, or past that, a
// strategy that starts each hop afresh: by sorting from sortRelabelMin
// candidate edges, and through the hash table below.
func (a *Assembler) relabelerFor(h, numKnown, numEdges int) relabeler {
	if ix := a.ix; ix != nil && ix.rank != nil {
		if ix.table {
			a.dense.numNodes = ix.numNodes
			return &a.dense
		}
		// The batch table holds the minibatch's nodes from hop 0 on; once a
		// hop could outgrow it, the later hops start afresh too.
		a.inBatch = (h == 0 || a.inBatch) && numKnown+numEdges <= batchMaxNodes
		if a.inBatch {
			return &a.batch
		}
	}
	if numEdges >= sortRelabelMin {
		a.bySort.dstByID = &a.dstByID
		return &a.bySort
	}
	a.hash.expect = min(numKnown+numEdges, len(a.r.Final))
	return &a.hash
}
