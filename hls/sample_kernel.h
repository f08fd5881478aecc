// sample_kernel.h — interface of the neighbor-sampling kernel.
//
// The same declarations serve three builds: Vitis HLS (synthesis and
// C simulation), plain g++ (the csim testbench) and cgo (package hls).
// Keep this header C-compatible: cgo parses it as C.
#ifndef STREAMSAMPLER_SAMPLE_KERNEL_H
#define STREAMSAMPLER_SAMPLE_KERNEL_H

#include <stdint.h>

// MAX_FANOUT bounds the fanout k. Fixed-size per-lane arrays of this many
// positions hold Floyd's chosen set, so it sizes registers on the FPGA; the
// Go package checks that hls.MaxFanout equals it.
#define MAX_FANOUT 64

// SAMPLE_LANES is how many targets the kernel samples side by side. Lanes
// are independent (the RNG is counter-based), so on the FPGA they are 32
// copies of the draw/Floyd datapath.
#define SAMPLE_LANES 32

// FANOUT_ALL as the fanout argument selects the copy-all mode: fanout -1,
// every neighbor of every target in CSR order (docs/DESIGN.md §3, "Full
// neighborhoods"). Its rows are as long as the targets' degrees, so the
// result buffer is laid out as a CSR instead of n_targets × fanout:
//
//   result[0]              stop: the first target not finished (n_targets
//                          when all are)
//   result[1]              resume: the position in targets[stop]'s
//                          adjacency to go on from (0 when all are done)
//   result[2 .. 2+n)       count[r]: the neighbors of targets[r] written by
//                          this launch (0 past stop)
//   result[2+n .. 2+n+cap) the neighbors, row after row, flat
//   with edges != 0, result[2+n+cap .. 2+n+2cap): each one's chunk-local
//                          edge index (as in sampling)
//
// where key carries (capacity << 32) | skip (no random number is drawn,
// so the key is free): capacity (below 2^31: the counts are int32)
// bounds the neighbors one launch writes (the host sizes it by its result
// buffer), and targets[0]'s adjacency is
// copied from position skip on (a row a previous launch stopped in).
// A launch stops where the next neighbor would not fit; the host launches
// again from targets[stop] with skip = resume, so a row of any length
// (a hub of 10^6 neighbors or 10^9) streams through a fixed buffer.
// replace and walk are ignored (a full neighborhood is the same with and
// without replacement).
#define FANOUT_ALL 0xFFFFFFFFu

// ALL_STATUS_WORDS is the words before the counts in copy-all mode.
#define ALL_STATUS_WORDS 2

#ifdef __cplusplus
extern "C" {
#endif

// sample_kernel samples fanout neighbors for each of n_targets nodes of one
// chunk, as defined in docs/DESIGN.md §3. The argument order is the XRT
// contract (0 chunk, 1 result, 2 targets, 3 n_targets, 4 fanout, 5 key,
// 6 replace, 7 edges, 8 walk).
//
//   chunk   [n_nodes][start_node][off_0 … off_n_nodes][neighbors…], uint32 LE
//   result  n_targets × fanout int32, row r for targets[r], -1 = empty slot;
//           with edges != 0 followed by another n_targets × fanout int32:
//           each slot's chunk-local edge index (the chosen neighbor word's
//           index less the 3 + n_nodes header words), -1 = empty slot
//   targets node ids, each in [start_node, start_node+n_nodes); in a walk
//           step followed by n_targets walk ids (2 × n_targets words)
//   walk    0: sampling (as above). Otherwise a walk step (DESIGN §3
//           "Walks") with first attempt a0 = walk - 1: key is the step's
//           rng.WalkKey, replace is ignored, and slot t of row r (node v
//           of degree d, walk id w) is nb[below(draw(key, w, 2*(a0+t)), d)]
//           (rng.Candidate), -1 in every slot when d == 0; edge indices as
//           in sampling.
//
// fanout FANOUT_ALL is the copy-all mode (below). A target outside the
// chunk, a node with off_{i+1} < off_i, or another fanout above
// MAX_FANOUT gives a row of -1 (in copy-all mode, a count of 0) (the kernel cannot report errors; the
// host validates first). Offsets are trusted to lie inside the chunk: the
// kernel is not told the chunk's length.
void sample_kernel(const uint32_t* chunk, int32_t* result, const uint32_t* targets,
                   uint32_t n_targets, uint32_t fanout, uint64_t key, uint32_t replace,
                   uint32_t edges, uint32_t walk);

// sample_kernel_split is the same kernel with the edge indices written to
// eresult (n_targets × fanout int32) instead of after the samples, or not
// at all when eresult is NULL. Host builds only (cgo, the testbench): it
// lets the emulator give each compute unit a share of separate sample and
// edge arrays. Not a synthesis top.
void sample_kernel_split(const uint32_t* chunk, int32_t* result, int32_t* eresult,
                         const uint32_t* targets, uint32_t n_targets, uint32_t fanout,
                         uint64_t key, uint32_t replace);

// sample_all_split is the copy-all mode (fanout FANOUT_ALL) with its
// parts in separate arrays: status (2 words: stop, resume), counts
// (n_targets), out (capacity neighbors) and eout (capacity edge indices,
// or none when it is NULL). Host builds only, as sample_kernel_split.
void sample_all_split(const uint32_t* chunk, int32_t* status, int32_t* counts, int32_t* out,
                      int32_t* eout, const uint32_t* targets, uint32_t n_targets,
                      uint32_t capacity, uint32_t skip);

// walk_kernel_split is the walk-step mode (sample_kernel with walk =
// attempt0 + 1, for any attempt0) with the nodes and walk ids in separate
// arrays and the edge indices in eresult (or none when it is NULL). Host
// builds only, as sample_kernel_split.
void walk_kernel_split(const uint32_t* chunk, int32_t* result, int32_t* eresult,
                       const uint32_t* nodes, const uint32_t* walks, uint32_t n_targets,
                       uint32_t fanout, uint64_t key, uint32_t attempt0);

#ifdef __cplusplus
}
#endif

#endif  // STREAMSAMPLER_SAMPLE_KERNEL_H
