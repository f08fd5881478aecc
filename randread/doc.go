// Package randread is the random-read sampler (issue 25, item 3): it
// samples any seeds at any time, without a prepared epoch and without
// streaming whole chunks, by reading only the disk blocks of edges.chunks
// that hold the chosen neighbors.
//
// The host keeps the graph's row offsets, 8 bytes per node (indptr, the
// global CSR offsets), built once by Open from each chunk's header (the
// n_nodes+1 offset words at the start of every chunk, docs/FORMAT.md):
// one sequential read of 4·(3+n_nodes) bytes per chunk, 4 bytes per node
// in all. For each layer it draws the positions of every frontier node's
// sample with the random-number contract (rng.Positions, DESIGN §3),
// turns each into the byte of its neighbor word in edges.chunks, and
// reads the distinct aligned blocks that hold them (Options.BlockSize)
// with many reads in flight: O_DIRECT through Linux AIO (internal/aio), or
// a pool of pread goroutines (Options.IO). Blocks read for one layer are
// kept for the request's later layers, whose frontiers contain the earlier
// ones (DESIGN §4), so a node's adjacency blocks are read once per request.
//
// With Options.Kernel the SmartSSD path runs on the emulated device: each
// layer's blocks are read into a peer-to-peer buffer object and the HLS
// gather kernel (hls/gather_kernel.cpp, xrt.GatherKernel) gathers the
// chosen words there.
//
// A sample is therefore the streamed sample for the same (seed, epoch,
// layer, node), bit for bit, edge ids included: the Result equals
// host.Reference's and host.Sampler's for the same seeds, and the Blocks
// assembled from it equal those of any epoch whose training nodes
// include the seeds (a node's sample is a function of the key, the layer
// and the node only).
//
// What is checked: at Open, the manifest, chunks.info, the file's size and
// every chunk's header (its node count and start node, off_0 = 3+n_nodes,
// offsets that never decrease and end at bytes_used/4); on every read,
// each neighbor id gathered (below num_nodes). A chunk's CRC-32C covers
// the whole chunk and cannot be checked from a few of its blocks: a
// changed neighbor word that is still a node id is not detected here
// (chunkify verify, or the streaming sampler, checks them).
package randread
