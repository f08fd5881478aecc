// gather_kernel.h — interface of the random-read sampler's gather kernel.
//
// The same declarations serve Vitis HLS, the plain g++ C-simulation
// testbench (gather_kernel_tb.cpp) and cgo (package hls). Keep this
// header C-compatible: cgo parses it as C.
#ifndef STREAMSAMPLER_GATHER_KERNEL_H
#define STREAMSAMPLER_GATHER_KERNEL_H

#include <stdint.h>

// GATHER_EMPTY in slots marks an empty sample slot (it gives -1).
#define GATHER_EMPTY 0xFFFFFFFFu

// GATHER_BAD is the output of a slot whose word is not a node id (not
// below num_nodes): the kernel cannot report errors, the host turns it
// into one naming the node and the word.
#define GATHER_BAD (-2)

#ifdef __cplusplus
extern "C" {
#endif

// gather_kernel gathers the chosen neighbor words of one sampling layer
// from the blocks of edges.chunks that the host read, peer to peer, into
// device memory (docs/DESIGN.md §4c, docs/KERNEL.md). The argument order
// is the XRT contract (0 blocks, 1 slots, 2 out, 3 n_slots, 4 n_words,
// 5 num_nodes).
//
//   blocks  n_words uint32 LE: the blocks read, back to back
//   slots   n_slots uint32: for each sample slot, the index in blocks of
//           the word holding its neighbor, or GATHER_EMPTY
//   out     n_slots int32: blocks[slots[i]]; -1 for GATHER_EMPTY or an
//           index not below n_words (the host never sends one); GATHER_BAD
//           for a word not below num_nodes
//
// The host has drawn the positions (rng.Positions) and turned each into a
// word of a block: all the kernel does is the random reads of those
// words, pipelined, one slot per cycle.
void gather_kernel(const uint32_t* blocks, const uint32_t* slots, int32_t* out, uint32_t n_slots,
                   uint64_t n_words, uint32_t num_nodes);

#ifdef __cplusplus
}
#endif

#endif  // STREAMSAMPLER_GATHER_KERNEL_H
