// Package chunkfmt is the on-disk graph format of streamsampler: a graph
// directory holding edges.chunks (fixed-size CSR chunks), chunks.info (the
// start node of each chunk) and manifest.json (counts, options and a CRC-32C
// per chunk, written last and atomically).
//
// A graph is written once, node by node, with a Writer; it is read with a
// Reader over any io.ReaderAt, or memory-mapped with Open. Index splits a
// sorted frontier of node ids into per-chunk pieces by binary search, which
// is how the sampler decides which chunks an epoch's layer has to stream.
// Verify checks every invariant of a directory and names the first defect.
//
// The format itself is documented for other implementations in
// docs/FORMAT.md at the repository root.
package chunkfmt
