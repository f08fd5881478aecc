//go:build cgo

// sample_kernel.cpp — the neighbor-sampling kernel, written for Vitis HLS.
//
// One source, three builds: v++ synthesizes it for the SmartSSD's FPGA,
// g++ compiles it for the C-simulation testbench (sample_kernel_tb.cpp),
// and cgo compiles it into package hls so that the emulated device runs the
// very code the FPGA runs. Plain g++ ignores the pragmas; nothing here needs
// Vitis headers. (The go:build line above only keeps `CGO_ENABLED=0 go
// build` from rejecting a C++ file in a package without cgo.)
//
// The sampling rule and the random numbers are docs/DESIGN.md §3; rng.Sample
// in Go is the definition every output is tested against bit for bit. The
// walk-step mode (walk != 0) computes the candidates of a random-walk step
// (DESIGN §3 "Walks", rng.Candidate): the same three phases, with the walk
// id where sampling has the node, and no Floyd test.
//
// Structure, and why it suits HLS scheduling:
//
//   targets are taken in groups of SAMPLE_LANES (32). Per group:
//     1. fetch   — read 32 targets (a burst on gmem2) and their two offsets
//                  (random reads on gmem0); pipelined, II=1. Lanes that
//                  need random draws (d > k without replacement, d > 0
//                  with) are packed into the first n_rand draw slots.
//     2. draw    — for slot t = 0..fanout-1, all draw slots at once
//                  (UNROLL): one mix64, one multiply-shift, Floyd's
//                  membership test against the slot's MAX_FANOUT chosen
//                  positions held in registers (ARRAY_PARTITION complete),
//                  so the test is 64 parallel comparators and an OR tree,
//                  not a loop. Pipelined over t; no memory traffic at all.
//                  The RNG is counter-based, so lanes share no state.
//     3. gather  — for each lane and slot, one random read of the chosen
//                  neighbor (gmem0) and one sequential write (gmem1,
//                  bursts); lanes with d <= k (no replacement) copy their
//                  list here. Pipelined, II=1, so reads from many lanes are
//                  in flight together and DDR latency is hidden; this is
//                  where the kernel spends its cycles, one slot per cycle.
//
//   Walk-step mode changes only what is drawn: the fetch phase also reads
//   the group's 32 walk ids (a second burst on gmem2, from the words after
//   the n_targets nodes), every non-empty lane draws, and slot t of walk w
//   is below(draw(key, w, 2*(a0+t)), d): the with-replacement datapath with
//   the walk id in place of the node and an even counter. No membership
//   test, so its draw phase is the simpler one.
//
//   Every inner loop has a constant bound or a tripcount, there is no
//   division anywhere (below() is a 32×32→64 multiply and a shift), and
//   the only loop-carried state is the chosen-position registers of Floyd's
//   algorithm. Packing the draw slots keeps the datapaths of copy-only
//   lanes idle on the FPGA and, on a CPU, keeps the draw loop free of
//   per-lane branches on the sampling mode; the CPU then overlaps the
//   gather's independent loads just as outstanding AXI reads do.

#include "sample_kernel.h"

namespace {

// kNone marks an empty slot in the position registers; it becomes -1.
const uint32_t kNone = 0xFFFFFFFFu;

// mix64 is SplitMix64's finaliser (DESIGN §3). Two 64×64 multiplies mod
// 2^64: plain uint64_t arithmetic, which HLS maps onto DSP cascades.
inline uint64_t mix64(uint64_t z) {
#pragma HLS INLINE
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// below maps the high 32 bits of r to [0, m) by multiply-shift.
inline uint32_t below(uint64_t r, uint32_t m) {
#pragma HLS INLINE
  return (uint32_t)(((uint64_t)(uint32_t)(r >> 32) * (uint64_t)m) >> 32);
}

}  // namespace

// sample_rows is the kernel's body: samples into result and, when
// want_edges, each slot's chunk-local edge index into eresult (same rows
// and slots). sample_kernel places eresult right after the samples;
// sample_kernel_split (host builds) anywhere.
//
// walking is the walk-step mode with first attempt a0: walks holds one walk
// id per target (node), and slot t of target r is its candidate a0 + t;
// replace is ignored. walks is not read when sampling.
static inline void sample_rows(const uint32_t* chunk, int32_t* result, int32_t* eresult,
                               bool want_edges,
                               const uint32_t* targets, const uint32_t* walks,
                               uint32_t n_targets, uint32_t fanout,
                               uint64_t key, uint32_t replace, bool walking, uint32_t a0) {
#pragma HLS INLINE
  if (n_targets == 0 || fanout == 0) return;

  if (fanout > MAX_FANOUT) {
    // Not representable in the position registers: every slot is empty.
    // The host never asks for this; the kernel still writes exactly the
    // n_targets × fanout words it owns.
    const uint64_t total = (uint64_t)n_targets * fanout;
  fill:
    for (uint64_t i = 0; i < total; i++) {
#pragma HLS PIPELINE II = 1
      result[i] = -1;
      if (want_edges) eresult[i] = -1;
    }
    return;
  }

  const uint32_t n_nodes = chunk[0];
  const uint32_t start = chunk[1];
  // The chunk's first neighbor word (chunkfmt's HeaderWords): a chosen
  // word's index minus this is its chunk-local edge index.
  const uint32_t first = 3 + n_nodes;
  // A walk step draws like sampling with replacement: every non-empty lane,
  // every slot independently uniform.
  const bool rep = walking || replace != 0;
  // Draw counter of slot t: t when sampling, 2*(a0 + t) = 2*a0 + 2*t in a
  // walk step (the candidates' even draws; uint32 arithmetic, as rng's).
  const uint32_t ctr0 = walking ? 2 * a0 : 0;

  // Per-lane state, all in registers. Lanes whose sample needs random
  // draws (Floyd lanes, d > k; or every non-empty lane with replacement)
  // are also packed into the first n_rand "draw slots", so that the draw
  // loop only spends work (on a CPU) and only activates datapaths (on the
  // FPGA) where there is something to draw.
  uint32_t base[SAMPLE_LANES];
  uint32_t deg[SAMPLE_LANES];
  bool live[SAMPLE_LANES];
  uint32_t slot[SAMPLE_LANES];  // lane -> draw slot, kNone if it draws nothing
  uint32_t rnode[SAMPLE_LANES];  // the draws' id: the node, or the walk id
  uint32_t wid[SAMPLE_LANES];    // walk step: the group's walk ids
  uint32_t rbase[SAMPLE_LANES];
  uint32_t rdeg[SAMPLE_LANES];
  uint32_t pos[SAMPLE_LANES][MAX_FANOUT];
#pragma HLS ARRAY_PARTITION variable = base complete
#pragma HLS ARRAY_PARTITION variable = deg complete
#pragma HLS ARRAY_PARTITION variable = live complete
#pragma HLS ARRAY_PARTITION variable = slot complete
#pragma HLS ARRAY_PARTITION variable = rnode complete
#pragma HLS ARRAY_PARTITION variable = wid complete
#pragma HLS ARRAY_PARTITION variable = rbase complete
#pragma HLS ARRAY_PARTITION variable = rdeg complete
#pragma HLS ARRAY_PARTITION variable = pos complete dim = 0

  const uint32_t n_groups = n_targets / SAMPLE_LANES + (n_targets % SAMPLE_LANES != 0);

groups:
  for (uint32_t gi = 0; gi < n_groups; gi++) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 32768
    const uint64_t g = (uint64_t)gi * SAMPLE_LANES;
    const uint32_t left = (uint32_t)(n_targets - g);
    const uint32_t n = left < SAMPLE_LANES ? left : SAMPLE_LANES;

    // 1a. walk step: the group's walk ids, a burst of its own on gmem2
    // (the fetch loop below reads the nodes; two reads of one bundle in one
    // II=1 iteration would halve its rate).
    if (walking) {
    walkids:
      for (uint32_t l = 0; l < SAMPLE_LANES; l++) {
#pragma HLS PIPELINE II = 1
        wid[l] = l < n ? walks[g + l] : 0;
      }
    }

    // 1. fetch: target ids and their degrees. idx is computed unsigned, so
    // a target below start wraps to a huge idx and fails the same test as
    // one past the end: the offsets are never read for it.
    uint32_t n_rand = 0;
  fetch:
    for (uint32_t l = 0; l < SAMPLE_LANES; l++) {
#pragma HLS PIPELINE II = 1
      bool ok = false;
      uint32_t v = 0, b = 0, e = 0;
      if (l < n) {
        v = targets[g + l];
        const uint32_t idx = v - start;
        if (idx < n_nodes) {
          b = chunk[2 + (uint64_t)idx];
          e = chunk[3 + (uint64_t)idx];
          ok = e >= b;
        }
      }
      const uint32_t d = ok ? e - b : 0;
      base[l] = b;
      deg[l] = d;
      live[l] = ok;
      const bool draws = ok && (rep ? d != 0 : d > fanout);
      slot[l] = draws ? n_rand : kNone;
      if (draws) {
        rnode[n_rand] = walking ? wid[l] : v;
        rbase[n_rand] = b;
        rdeg[n_rand] = d;
        n_rand++;
      }
    }

    // 2. draw: choose positions slot by slot, all draw slots in parallel.
  draw:
    for (uint32_t t = 0; t < fanout; t++) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
#pragma HLS PIPELINE II = 1
    lanes:
      for (uint32_t i = 0; i < SAMPLE_LANES; i++) {
#pragma HLS UNROLL
        // Draw slots past n_rand are idle (constant bound, exit = enable).
        if (i >= n_rand) break;
        const uint32_t d = rdeg[i];
        const uint32_t ctr = ctr0 + (walking ? t << 1 : t);
        const uint64_t r = mix64(key ^ ((uint64_t)rnode[i] << 32 | ctr));
        uint32_t p;
        if (rep) {
          // With replacement, or a walk step's candidates: independent
          // uniform positions.
          p = below(r, d);
        } else {
          // Floyd's algorithm: p uniform in [0, j]; if p was chosen
          // before, take j instead (j itself cannot have been chosen,
          // every earlier step drew from a smaller range).
          const uint32_t j = d - fanout + t;
          p = below(r, j + 1);
          // Membership test against the t positions chosen so far: a
          // constant-bound loop (so HLS can unroll it completely into
          // MAX_FANOUT comparators on partitioned registers) whose exit at
          // s == t is, unrolled, just the mask of the slots not yet
          // written; on a CPU it stops after t compares.
          bool hit = false;
        seen:
          for (uint32_t s = 0; s < MAX_FANOUT; s++) {
#pragma HLS UNROLL
            if (s == t) break;
            hit |= pos[i][s] == p;
          }
          if (hit) p = j;
        }
        pos[i][t] = p;
#ifndef __SYNTHESIS__
        // CPU only (C simulation, cgo): start the gather's load now, so
        // that its latency overlaps the rest of this phase as the FPGA's
        // outstanding AXI reads would. No effect on results.
        __builtin_prefetch(&chunk[(uint64_t)rbase[i] + p]);
#endif
      }
    }

    // 3. gather: positions to neighbor ids, rows written in target order.
    // Lanes that draw nothing copy their list (d <= k, without
    // replacement) and pad with -1.
  gather:
    for (uint32_t l = 0; l < n; l++) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 32
      int32_t* row = result + (g + l) * fanout;
      int32_t* erow = want_edges ? eresult + (g + l) * fanout : row;
      const uint32_t sl = slot[l];
      const uint32_t d = deg[l];
      const bool copy = live[l] && !rep;
    slots:
      for (uint32_t t = 0; t < fanout; t++) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
#pragma HLS PIPELINE II = 1
        uint32_t p = kNone;
        if (sl != kNone) {
          p = pos[sl][t];
        } else if (copy && t < d) {
          p = t;
        }
        row[t] = p == kNone ? -1 : (int32_t)chunk[(uint64_t)base[l] + p];
        // The edge index is the word index just read, less the header:
        // no extra read, one more sequential write on gmem1.
        if (want_edges) erow[t] = p == kNone ? -1 : (int32_t)(base[l] + p - first);
      }
    }
  }
}

// copy_all is the copy-all mode (FANOUT_ALL; the layout is in
// sample_kernel.h): each target's adjacency from its offsets, copied word
// by word into out until capacity words are written. No random numbers,
// no registers per lane: one sequential read burst per adjacency on gmem0
// (unlike sampling's random reads) and one write burst on gmem1, II=1.
// The only data-dependent exit is the buffer filling up, which ends the
// launch at a known (stop, resume) point for the host to go on from.
static inline void copy_all(const uint32_t* chunk, int32_t* status, int32_t* counts,
                            int32_t* out, int32_t* eout, bool want_edges,
                            const uint32_t* targets, uint32_t n_targets, uint32_t capacity,
                            uint32_t skip) {
#pragma HLS INLINE
  const uint32_t n_nodes = chunk[0];
  const uint32_t start = chunk[1];
  const uint32_t first = 3 + n_nodes;
  uint64_t w = 0;             // neighbors written so far
  uint64_t stop = n_targets;  // the first target not finished
  uint32_t resume = 0;
rows:
  for (uint32_t r = 0; r < n_targets; r++) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 1048576
    const uint32_t v = targets[r];
    // Unsigned, as in sampling: a target below start wraps and fails.
    const uint32_t idx = v - start;
    uint32_t b = 0, d = 0;
    if (idx < n_nodes) {
      b = chunk[2 + (uint64_t)idx];
      const uint32_t e = chunk[3 + (uint64_t)idx];
      d = e >= b ? e - b : 0;
    }
    // Only the first target can be one a previous launch stopped in.
    const uint32_t p0 = r == 0 ? (skip < d ? skip : d) : 0;
    const uint32_t left = d - p0;
    const uint64_t room = (uint64_t)capacity - w;
    const uint32_t take = (uint64_t)left <= room ? left : (uint32_t)room;
  copy:
    for (uint32_t i = 0; i < take; i++) {
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 64
#pragma HLS PIPELINE II = 1
      const uint32_t word = b + p0 + i;
      out[w + i] = (int32_t)chunk[word];
      if (want_edges) eout[w + i] = (int32_t)(word - first);
    }
    counts[r] = (int32_t)take;
    w += take;
    if (take < left) {
      stop = r;
      resume = p0 + take;
      break;
    }
  }
  // Targets past the stop were not reached: their counts are 0, so the
  // host may read the counts whole.
zero:
  for (uint64_t r = stop + 1; r < n_targets; r++) {
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 1048576
#pragma HLS PIPELINE II = 1
    counts[r] = 0;
  }
  status[0] = (int32_t)stop;
  status[1] = (int32_t)resume;
}

extern "C" void sample_kernel(const uint32_t* chunk, int32_t* result, const uint32_t* targets,
                              uint32_t n_targets, uint32_t fanout, uint64_t key, uint32_t replace,
                              uint32_t edges, uint32_t walk) {
// Three AXI masters on separate bundles so that the random chunk reads, the
// result bursts and the target bursts never queue behind one another. The
// depths only size C/RTL co-simulation buffers (512 MiB chunk, 1 Mi targets
// of fanout 64, or 512 Ki walkers' nodes and walk ids).
#pragma HLS INTERFACE m_axi port = chunk offset = slave bundle = gmem0 depth = 134217728 num_read_outstanding = 64 max_read_burst_length = 2
#pragma HLS INTERFACE m_axi port = result offset = slave bundle = gmem1 depth = 67108864 max_write_burst_length = 64
#pragma HLS INTERFACE m_axi port = targets offset = slave bundle = gmem2 depth = 1048576 max_read_burst_length = 32
#pragma HLS INTERFACE s_axilite port = chunk bundle = control
#pragma HLS INTERFACE s_axilite port = result bundle = control
#pragma HLS INTERFACE s_axilite port = targets bundle = control
#pragma HLS INTERFACE s_axilite port = n_targets bundle = control
#pragma HLS INTERFACE s_axilite port = fanout bundle = control
#pragma HLS INTERFACE s_axilite port = key bundle = control
#pragma HLS INTERFACE s_axilite port = replace bundle = control
#pragma HLS INTERFACE s_axilite port = edges bundle = control
#pragma HLS INTERFACE s_axilite port = walk bundle = control
#pragma HLS INTERFACE s_axilite port = return bundle = control

  if (fanout == FANOUT_ALL) {
    // Copy-all: key is (capacity << 32) | skip; status, counts, the
    // neighbors and their edge indices share the result buffer.
    const uint32_t capacity = (uint32_t)(key >> 32);
    int32_t* counts = result + ALL_STATUS_WORDS;
    int32_t* out = counts + n_targets;
    copy_all(chunk, result, counts, out, out + capacity, edges != 0, targets, n_targets, capacity,
             (uint32_t)key);
    return;
  }
  // With edges, the edge indices follow the n_targets × fanout samples in
  // the same buffer (one AXI master, one BO on the host).
  // In a walk step the walk ids follow the n_targets nodes in targets.
  sample_rows(chunk, result, result + (uint64_t)n_targets * fanout, edges != 0, targets,
              targets + n_targets, n_targets, fanout, key, replace, walk != 0, walk - 1);
}

#ifndef __SYNTHESIS__
extern "C" void sample_kernel_split(const uint32_t* chunk, int32_t* result, int32_t* eresult,
                                    const uint32_t* targets, uint32_t n_targets, uint32_t fanout,
                                    uint64_t key, uint32_t replace) {
  sample_rows(chunk, result, eresult, eresult != nullptr, targets, nullptr, n_targets, fanout, key,
              replace, false, 0);
}

extern "C" void sample_all_split(const uint32_t* chunk, int32_t* status, int32_t* counts,
                                 int32_t* out, int32_t* eout, const uint32_t* targets,
                                 uint32_t n_targets, uint32_t capacity, uint32_t skip) {
  copy_all(chunk, status, counts, out, eout, eout != nullptr, targets, n_targets, capacity, skip);
}

extern "C" void walk_kernel_split(const uint32_t* chunk, int32_t* result, int32_t* eresult,
                                  const uint32_t* nodes, const uint32_t* walks, uint32_t n_targets,
                                  uint32_t fanout, uint64_t key, uint32_t attempt0) {
  sample_rows(chunk, result, eresult, eresult != nullptr, nodes, walks, n_targets, fanout, key, 0,
              true, attempt0);
}
#endif
