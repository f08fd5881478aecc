package rng

import (
	"math/bits"
	"sort"
)

// negDomain marks the counters of negative-sampling keys: sampling keys
// mix epoch<<8|layer (below 2^40) and walk keys 1<<63|step, so 1<<62|epoch
// is a third, disjoint set of mix64 inputs (DESIGN §3, "Negatives").
const negDomain = 1 << 62

// NegKey is epoch e's negative-sampling key: every negative of the epoch
// is drawn from it, whatever its minibatch, rank or backend.
func NegKey(seed uint64, epoch uint32) uint64 {
	return Mix64(seed) ^ Mix64(negDomain|uint64(epoch))
}

// Negatives draws the negative endpoints of link prediction (DESIGN §3,
// "Negatives"): the t-th negative of positive edge i (i its position in
// the training edge set, so that neither shuffling nor sharding changes
// it) takes counter 2t for its source and 2t+1 for its destination:
//
//	src(i, t) = below(draw(key, i, 2t), N)
//	dst(i, t) = below(draw(key, i, 2t+1), N)               uniform
//	dst(i, t) = v with indptr[v] <= r < indptr[v+1],
//	            r = (draw(key, i, 2t+1) · E) >> 64          by in-degree
//
// Sources are always uniform; destinations are uniform over the N nodes,
// or, with Indptr, proportional to in-degree (the stored CSR holds
// in-edges, so node v's row length is its in-degree: each of the E stored
// edges is equally likely, and its destination is taken). Collisions with
// true edges are kept, as PyG and DGL keep them.
type Negatives struct {
	Key      uint64
	NumNodes uint32
	// Indptr, if not nil, is the stored CSR's row offsets (NumNodes+1
	// entries, Indptr[NumNodes] = E > 0): destinations by in-degree.
	Indptr []uint64
}

// Src returns the source of positive i's t-th negative (binary mode).
func (n Negatives) Src(i, t uint32) uint32 {
	return Below(Draw(n.Key, i, 2*t), n.NumNodes)
}

// Dst returns the destination of positive i's t-th negative.
func (n Negatives) Dst(i, t uint32) uint32 {
	r := Draw(n.Key, i, 2*t+1)
	if n.Indptr == nil {
		return Below(r, n.NumNodes)
	}
	return ByDegree(n.Indptr, r)
}

// ByDegree maps the random word r to a node with probability in-degree/E
// (E = indptr[len-1] > 0): r scaled to an edge position e in [0, E) by a
// 64×64-bit multiply (its bias below E/2^64), then the node whose row
// holds e, by binary search (the inverse CDF of the degrees). A node
// without in-edges is never taken.
func ByDegree(indptr []uint64, r uint64) uint32 {
	n := len(indptr) - 1
	e, _ := bits.Mul64(r, indptr[n])
	return uint32(sort.Search(n, func(v int) bool { return indptr[v+1] > e }))
}
