// Package epoch holds one epoch's sampling results (every layer's frontier
// and neighbor samples), persists them, assembles minibatches into blocks
// from them, orders and shards the training nodes, and keeps two epochs
// resident (the current one that minibatches read and the next one being
// prepared), as docs/DESIGN.md §4–5 describe.
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
// Result.Sample, Assembler.Sample and Store.Sample build, for hop h = 1..L,
// DGL to_block blocks: dst (the seeds, then the previous hop's src), src
// (dst first, then new neighbors in order of first appearance) and edges
// in local ids ordered by dst and sample slot. A node's row is found
// through a dense Index (4 bytes per node per layer) when memory allows —
// the Store builds one within its budget — and otherwise by binary search,
// or, for a hop with many nodes, by sorting them and merging with the
// frontier; global ids become local ones through a dense table, a hash
// table, or (large hops without an index) by sorting.
//
// # Epoch directory (format version 2)
//
// Write creates a directory, typically STATE/epoch-N, holding
//
//	manifest.json         format "streamsampler-epoch", version, seed, epoch,
//	                      replace, fanouts, identity (graph fingerprint,
//	                      training set, rank, world size), per array: name,
//	                      file, dtype, length (elements), compression,
//	                      crc32c; and a checksum over all of it
//	frontier-<l>.u32      frontier_l, l = 0..L, little-endian uint32
//	samples-<l>.i32       samples_l, l = 0..L-1, little-endian int32
//
// with a ".zst" suffix on the array files when compressed with zstd. The
// CRC-32C (Castagnoli) is over the raw little-endian bytes. The directory
// is built under a hidden temporary name and renamed into place after
// every file is synced, so a directory under its final name is complete;
// that rename is the epoch's commit point. Read checks every field, length
// and checksum and the invariants.
//
// # State directory
//
// State manages STATE: config.json (written before the first epoch),
// epoch-N directories and CURRENT (the served epoch), each with a
// checksum. State.Open checks that the parts agree and lists what
// interrupted runs left, which State.Clean removes. State.Advance moves
// CURRENT to the oldest prepared epoch after it and deletes older ones.
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
