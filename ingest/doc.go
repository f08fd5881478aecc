// Package ingest turns edge lists into chunked CSR graph directories
// (package chunkfmt) out of core, and reads the node-id lists that
// training sets come in.
//
// Inputs are text edge lists (SNAP .txt, OGB edge.csv, id_1,id_2 CSVs:
// whitespace or comma separated, #/% comments, LF or CRLF, an optional
// header on the first line), little-endian binary uint32/uint64 pairs, and
// NumPy .npy int32/int64/uint32/uint64 arrays of shape (2, E) or (E, 2) in
// C or Fortran order; any of them gzip or zstd compressed (detected by
// magic bytes).
//
// Build makes the CSR in three passes with memory O(num_nodes) plus
// bounded buffers, never O(num_edges): pass 1 parses the inputs once,
// counting degrees (and spooling the parsed edges as binary pairs when the
// input is text or compressed, so that it is parsed only once); pass 2
// scatters the edges into a memory-mapped temporary CSR file; pass 3 sorts
// each adjacency, applies dedup and the self-loop rule, and streams the
// nodes into chunkfmt.Writer.
package ingest
