//go:build cgo

// gather_kernel.cpp — the random-read sampler's gather kernel, written for
// Vitis HLS (the same one-source, three-builds arrangement as
// sample_kernel.cpp: v++ for the FPGA, g++ for the C-simulation testbench
// gather_kernel_tb.cpp, cgo for package hls, which the emulated path of
// package randread runs).
//
// On a SmartSSD the random-read sampler reads only the blocks of
// edges.chunks that hold the neighbors it chose, peer to peer from the SSD
// into the FPGA's DDR, and the kernel gathers the chosen words from them:
// the host never sees the blocks, only the samples come back.
//
// Structure: one loop over the slots, pipelined at II=1. Each iteration
// reads its slot index (a burst on gmem1), reads that word of the blocks
// (a random read on gmem0; many in flight, since iterations are
// independent) and writes the sample (a burst on gmem2). No division, no
// loop-carried state.

#include "gather_kernel.h"

extern "C" void gather_kernel(const uint32_t* blocks, const uint32_t* slots, int32_t* out,
                              uint32_t n_slots, uint64_t n_words, uint32_t num_nodes) {
#pragma HLS INTERFACE m_axi port = blocks offset = slave bundle = gmem0 max_read_burst_length = 2 num_read_outstanding = 64
#pragma HLS INTERFACE m_axi port = slots offset = slave bundle = gmem1 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = out offset = slave bundle = gmem2 max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = blocks bundle = control
#pragma HLS INTERFACE s_axilite port = slots bundle = control
#pragma HLS INTERFACE s_axilite port = out bundle = control
#pragma HLS INTERFACE s_axilite port = n_slots bundle = control
#pragma HLS INTERFACE s_axilite port = n_words bundle = control
#pragma HLS INTERFACE s_axilite port = num_nodes bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control
gather:
  for (uint32_t i = 0; i < n_slots; i++) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 65536
    const uint32_t s = slots[i];
    int32_t v = -1;
    if (s != GATHER_EMPTY && (uint64_t)s < n_words) {
      const uint32_t w = blocks[s];
      v = w < num_nodes ? (int32_t)w : GATHER_BAD;
    }
    out[i] = v;
  }
}
