package rng

// relationDomain marks relation terms: sampling keys mix (epoch<<8 | layer)
// < 2^40 and walk keys mix 2^63 | step, so relation terms mix 2^62 | rel
// (bit 62 set, bit 63 clear): no Mix64 input is shared with either, and
// since Mix64 is a bijection no relation term equals a layer or walk term.
// That is what keeps a relation key from degenerating: were RelationTerm(r)
// equal to the Mix64 term of the key it is XORed into, the two would cancel
// and every layer of that relation would use Mix64(seed) alone.
const relationDomain = 1 << 62

// RelationTerm is the term that relation rel (its index in the
// heterogeneous schema's order, DESIGN §3 "Relations") XORs into a layer
// key: 0 for relation 0, so that a homogeneous graph, the one-relation
// case, keeps its keys and every sample it had; Mix64(2^62 | rel) for
// every other relation.
func RelationTerm(rel uint32) uint64 {
	if rel == 0 {
		return 0
	}
	return Mix64(relationDomain | uint64(rel))
}

// RelationKey is the key of layer (hop layer+1) of relation rel in the
// epoch: Key(seed, epoch, layer) ^ RelationTerm(rel). A node's sample in a
// relation is DESIGN §3's sample under this key, so it is a pure function
// of (seed, epoch, layer, rel, node), and relations sample independently of
// each other. layer must be below LayerKeys.
func RelationKey(seed uint64, epoch uint32, layer int, rel uint32) uint64 {
	return Key(seed, epoch, layer) ^ RelationTerm(rel)
}
