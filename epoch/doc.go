// Package epoch is what an epoch is: its key, its training nodes' order and
// sharding (Sampling, Shuffle, Shard), its sampling results (every layer's
// frontier and neighbor samples), and the assembly of minibatch blocks
// from them, as docs/DESIGN.md §4–5 describe. It is the leaf the samplers
// (host, gpu) produce into; persistence (epochdir, statedir) and
// scheduling (pipeline) are above it.
//
// # Results
//
// A Result of L layers holds frontier_0 (the rank's sorted unique training
// nodes), then per layer l the samples of every frontier_l node
// (len(frontier_l)·fanout_l int32, -1 padded) and frontier_{l+1} =
// NextFrontier(frontier_l, samples_l); Final is frontier_L. Result.Validate
// checks all of it.
//
// # Assembly
//
// Result.Assemble, Assembler.Assemble and pipeline.Store build, for hop h = 1..L,
// DGL to_block blocks: dst (the seeds, then the previous hop's src), src
// (dst first, then new neighbors in order of first appearance) and edges
// in local ids ordered by dst and sample slot. A node's row is found
// through an Index (a rank set per layer: a bitmap with ranks, 1.33 bits
// per node) when memory allows — the Store builds one within its budget —
// and otherwise by binary search, or, for a hop with many nodes, by
// sorting them and merging with the frontier; global ids become local ones
// through a table over every node id (up to 2^24 nodes, where the Store's
// budget holds it), a hash table sized by the minibatch (larger id spaces,
// or a smaller budget), or without an index through a per-hop hash table
// or (large hops) by sorting. Every way gives the same blocks, byte for
// byte.
//
// # Minibatch order and sharding
//
// Shuffle is a Fisher–Yates permutation driven by rng.Mix64 over a
// counter, keyed by (seed, epoch) in its own domain; Batches cuts it.
// Shard permutes the sorted unique training nodes with another such key,
// and rank r of w takes positions [r·n/w, (r+1)·n/w), returned sorted.
// All of it is a pure function of its arguments, identical on every
// platform, so every rank computes the same split without talking.
package epoch
