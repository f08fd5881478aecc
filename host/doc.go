// Package host is the streaming sampler: it samples a whole epoch, layer by
// layer, by streaming the chunks of a graph directory that hold frontier
// nodes into one or more sampling devices (the emulated SmartSSD by default,
// real SmartSSDs through XRT under the `xrt` build tag), and merges the
// per-chunk results back into frontier order. With Options.RandomReads it
// decides per chunk and layer whether to stream the chunk or to sample its
// targets by random reads of the disk blocks holding their chosen
// neighbors (package randread), by a cost model over the disk's rates
// (DESIGN §4d); the samples are the same either way.
//
// It also holds the in-memory reference sampler (Reference), a plain
// implementation of DESIGN §4 over an adjacency held in memory. Every
// backend's output is tested for exact equality against it. SampleBlocks
// is its per-minibatch counterpart: one batch's blocks sampled from
// scratch, DGL-style, the peer the epoch assembly is measured against
// (internal/hostbench, behind `streamsampler bench`).
//
// The Sampler also streams random walks through the same devices, a pass
// per step (Sampler.WalksInto, DESIGN §5b): it is a walk.Walker, and its
// walks are walk.Reference's.
package host
