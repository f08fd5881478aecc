//go:build ignore

// gather_kernel_tb.cpp — C-simulation testbench for gather_kernel.
//
// What `make -C hls csim` builds with g++ and what `go test ./hls` builds
// and runs (TestGatherCSim). It checks, on blocks of known words (word j
// of the blocks is the node id (j * 7919) % num_nodes, so every expected
// value is computed from the index alone, not by the kernel's loop):
//   1. random slots, empty slots among them, against that formula;
//   2. the guards: an index at or past n_words gives -1, a word not below
//      num_nodes gives GATHER_BAD;
//   3. nothing past out[n_slots] is written, and n_slots = 0 writes
//      nothing.
// Exit status 0 and a PASS line when all agree; 1 and the first mismatch
// otherwise. (The go:build line keeps cgo from compiling this file.)

#include <cstdint>
#include <cstdio>
#include <vector>

#include "gather_kernel.h"

namespace {

const int32_t kCanary = 0x5A5A5A5A;

uint64_t lcg(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 33;
}

int fail(const char* what, uint32_t i, int32_t got, int32_t want) {
  std::printf("FAIL %s: out[%u] = %d, want %d\n", what, i, got, want);
  return 1;
}

}  // namespace

int main() {
  const uint32_t num_nodes = 100003;
  const uint64_t n_words = 4096 * 8;  // eight 16 KiB blocks
  std::vector<uint32_t> blocks(n_words);
  for (uint64_t j = 0; j < n_words; j++) blocks[j] = (uint32_t)((j * 7919) % num_nodes);

  // 1. Random slots, one in five empty.
  uint64_t seed = 42;
  const uint32_t n = 10000;
  std::vector<uint32_t> slots(n);
  std::vector<int32_t> out(n + 8, kCanary);
  for (uint32_t i = 0; i < n; i++) {
    slots[i] = lcg(seed) % 5 == 0 ? GATHER_EMPTY : (uint32_t)(lcg(seed) % n_words);
  }
  gather_kernel(blocks.data(), slots.data(), out.data(), n, n_words, num_nodes);
  for (uint32_t i = 0; i < n; i++) {
    const int32_t want = slots[i] == GATHER_EMPTY ? -1 : (int32_t)(((uint64_t)slots[i] * 7919) % num_nodes);
    if (out[i] != want) return fail("random slots", i, out[i], want);
  }
  for (uint32_t i = n; i < n + 8; i++) {
    if (out[i] != kCanary) return fail("past the slots", i, out[i], kCanary);
  }

  // 2. Guards: indices at and past the end, words that are not nodes.
  blocks[5] = num_nodes;
  blocks[6] = 0xFFFFFFFFu;
  const uint32_t guard[5] = {(uint32_t)n_words, (uint32_t)n_words + 1, 5, 6, 7};
  const int32_t want[5] = {-1, -1, GATHER_BAD, GATHER_BAD, (int32_t)((7ull * 7919) % num_nodes)};
  std::vector<int32_t> gout(6, kCanary);
  gather_kernel(blocks.data(), guard, gout.data(), 5, n_words, num_nodes);
  for (uint32_t i = 0; i < 5; i++) {
    if (gout[i] != want[i]) return fail("guards", i, gout[i], want[i]);
  }
  if (gout[5] != kCanary) return fail("guards: past the slots", 5, gout[5], kCanary);

  // 3. No slots: nothing written.
  int32_t none = kCanary;
  gather_kernel(blocks.data(), guard, &none, 0, n_words, num_nodes);
  if (none != kCanary) return fail("no slots", 0, none, kCanary);

  std::printf("PASS gather_kernel: %u random slots, 5 guards, an empty call\n", n);
  return 0;
}
