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
// A target outside the chunk, a node with off_{i+1} < off_i, or a fanout
// above MAX_FANOUT gives a row of -1 (the kernel cannot report errors; the
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
