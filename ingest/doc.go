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
// Build makes the CSR in three passes within a memory budget
// (BuildOptions.Memory): pass 1 parses the inputs once, counting degrees
// (and spooling the parsed edges as binary pairs when the input is text or
// compressed, so that it is parsed only once); the degrees cut the nodes
// into partitions whose edges fit the budget (one, when all of them do);
// pass 2 reads the edges again, placing the first partition's in memory
// and appending every other partition's to its own spill file; pass 3
// takes the partitions in node order — each read back from its spill file
// in order and placed in memory — sorts each adjacency, applies dedup and
// the self-loop rule, and streams the nodes into chunkfmt.Writer. Every
// file is written and read sequentially.
package ingest
