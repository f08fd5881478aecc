// task_queue.cuh — the counters of the fused engine's global task queue.
// Queue slots hold (hop << 32) | vertex words, SENTINEL until written.
#pragma once

#include "rng.cuh"

#include <cuda_runtime.h>

namespace {

constexpr unsigned long long SENTINEL = ~0ull;

// Counters of the fused kernel's queue. hop_count[h] (|frontier_h|) and
// final_count (|frontier_L|) are filled after the kernel from the bitmaps'
// popcounts; the BSP engine uses head to bring a count to the host.
// The queue counters sit on separate 128-byte lines: idle blocks poll
// head/tail/done while producers hammer tail with atomics.
struct Counters {
    alignas(128) unsigned long long head;
    alignas(128) unsigned long long tail;
    alignas(128) unsigned long long done;
    alignas(128) unsigned long long final_count;
    alignas(128) unsigned long long hop_count[MAX_LAYERS + 1];
};

__device__ __forceinline__ unsigned long long vload(const unsigned long long *p) {
    return *reinterpret_cast<const volatile unsigned long long *>(p);
}

} // namespace
