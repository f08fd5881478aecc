// Package rng is the random-number contract that every sampling backend
// shares: the emulated device, the HLS kernel, the CUDA kernels and the
// in-memory reference all derive a node's neighbor sample from
// (seed, epoch, layer, node) with exactly these functions, so that their
// outputs are bit-identical and epochs are reproducible.
//
// The functions are a counter-based generator (SplitMix64's finaliser used
// as a hash): there is no state to carry between nodes, which is what lets
// a chunk's targets be sampled in any order, on any device, in parallel.
package rng

// LayerKeys is how many layer indices Key tells apart: the layer is
// packed into the low 8 bits of the key's counter, so layers 0..255 get
// distinct streams and layer 256 would repeat layer 0's. The limit that
// callers check is epoch.MaxLayers, which says why it is one less.
const LayerKeys = 256

// AllNeighbors is the fanout that takes every neighbor: PyG's and DGL's
// -1 (DESIGN §3, "Full neighborhoods"). A node of degree d then gives the
// d positions 0..d-1 in CSR order, nb[0..d) (the d <= k case of Sample,
// without the -1 padding), whether or not the epoch samples with
// replacement, and draws no random number. Its row is as long as the
// node's degree: callers hold such a layer as a CSR (epoch.Layer.Offsets),
// never as rows of a fixed width.
const AllNeighbors = -1

// Mix64 is SplitMix64's output function, a bijection on uint64 with full
// avalanche.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Key derives the per-layer key from the user's seed, the epoch number and
// the layer (hop) index. layer must be below LayerKeys.
func Key(seed uint64, epoch uint32, layer int) uint64 {
	return Mix64(seed) ^ Mix64(uint64(epoch)<<8|uint64(uint8(layer)))
}

// Draw returns the t-th random word for node under key.
func Draw(key uint64, node uint32, t uint32) uint64 {
	return Mix64(key ^ (uint64(node)<<32 | uint64(t)))
}

// Below maps the high 32 bits of r to [0, m) by multiply-shift (Lemire's
// method without rejection): it is cheap on every backend, including a
// 32-wide unrolled FPGA loop, and its bias is below m/2^32.
func Below(r uint64, m uint32) uint32 {
	return uint32((uint64(uint32(r>>32)) * uint64(m)) >> 32)
}

// Positions writes into out, whose length is the fanout k, the positions
// in node's adjacency (0..degree-1, in CSR order) that the sample of
// DESIGN §3 takes, slot by slot, and -1 in empty slots. It is the part of
// the definition that does not look at the neighbors: Sample's slot t is
// nb[p] for p = out[t]. Positions are what an edge id is made of (the
// adjacency's first edge + p), and unlike the neighbor they tell apart
// repeated neighbors. degree must be below 2^31.
func Positions(out []int32, degree int, node uint32, key uint64, replace bool) {
	k := len(out)
	d := degree
	if replace {
		if d == 0 {
			for t := range out {
				out[t] = -1
			}
			return
		}
		for t := range out {
			out[t] = int32(Below(Draw(key, node, uint32(t)), uint32(d)))
		}
		return
	}
	if d <= k {
		for t := 0; t < d; t++ {
			out[t] = int32(t)
		}
		for t := d; t < k; t++ {
			out[t] = -1
		}
		return
	}
	// Floyd's algorithm over positions; k is small (a fanout), so the
	// linear membership test is cheapest.
	for t := 0; t < k; t++ {
		j := uint32(d - k + t)
		p := Below(Draw(key, node, uint32(t)), j+1)
		for s := 0; s < t; s++ {
			if uint32(out[s]) == p {
				p = j
				break
			}
		}
		out[t] = int32(p)
	}
}

// AppendAll appends the sample of a full layer (fanout AllNeighbors) of a
// node with neighbors nb to dst: nb itself, in CSR order, as int32 node
// ids (positions 0..len(nb)-1). It is the definition the copy-all paths
// are tested against.
func AppendAll(dst []int32, nb []uint32) []int32 {
	for _, v := range nb {
		dst = append(dst, int32(v))
	}
	return dst
}

// Sample writes the sample of node's neighbors nb into out, whose length
// is the fanout k. It is the reference definition of DESIGN §3:
//
//   - len(nb) <= k: nb in order, then -1 in the remaining slots;
//   - without replacement: Floyd's algorithm, in the order chosen;
//   - with replacement: slot t is nb[Below(Draw(key,node,t), d)].
//
// Slot t is nb[p] for the position p that Positions gives (computed here
// in out itself, so nothing is allocated). Neighbor ids are node ids below
// 2^31 when stored in out; callers keep num_nodes below 2^31 so that -1
// stays unambiguous.
func Sample(out []int32, nb []uint32, node uint32, key uint64, replace bool) {
	Positions(out, len(nb), node, key, replace)
	for t, p := range out {
		if p >= 0 {
			out[t] = int32(nb[p])
		}
	}
}
