//go:build cgo

// gather_floor.c — the memory floor the kernel is benchmarked against
// (bench_test.go); not part of the kernel. Per target: its two offsets,
// then min(d, k) reads of its adjacency (positions from a cheap LCG and a
// multiply-shift when d > k) and the row written — the traffic any
// sampler must do, with as little computation as possible. Written in C so
// that the floor is not slowed by bounds checks.

#include <stdint.h>

void gather_floor(const uint32_t* chunk, const uint32_t* targets, uint32_t n, int32_t* out,
                  uint32_t k, uint64_t x) {
  const uint32_t start = chunk[1];
  for (uint32_t r = 0; r < n; r++) {
    const uint32_t idx = targets[r] - start;
    const uint32_t b = chunk[2 + idx], d = chunk[3 + idx] - b;
    int32_t* row = out + (uint64_t)r * k;
    if (d <= k) {
      for (uint32_t i = 0; i < k; i++) row[i] = i < d ? (int32_t)chunk[b + i] : -1;
      continue;
    }
    for (uint32_t i = 0; i < k; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      row[i] = (int32_t)chunk[b + (uint32_t)(((x >> 32) * d) >> 32)];
    }
  }
}
