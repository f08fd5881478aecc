// rng.cuh — the counter-based random numbers of DESIGN §3, bit for bit
// the Go reference's (rng.Sample): a sample is a pure function of
// (seed, epoch, layer, node, slot), on the host and on the device alike.
//
// Like every header of csrc/, this one is included by streamsampler_gpu.cu
// alone: the library is one translation unit, and its internals live in
// an unnamed namespace so that the .so exports only the C ABI.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace {

// The most layers a request may have (epoch.MaxLayers): layer_key keeps
// eight bits of the layer.
constexpr int MAX_LAYERS = 255;

__host__ __device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__host__ __device__ __forceinline__ uint64_t layer_key(uint64_t seed, uint32_t epoch, int layer) {
    return mix64(seed) ^ mix64((uint64_t(epoch) << 8) | uint64_t(uint8_t(layer)));
}

__host__ __device__ __forceinline__ uint64_t draw(uint64_t key, uint32_t node, uint32_t t) {
    return mix64(key ^ ((uint64_t(node) << 32) | uint64_t(t)));
}

__host__ __device__ __forceinline__ uint32_t below(uint64_t r, uint32_t m) {
    return uint32_t((uint64_t(uint32_t(r >> 32)) * uint64_t(m)) >> 32);
}

// Walks (DESIGN §3, "Walks"; rng/walk.go): the walk id takes the node's
// place in draw, and step t's key is never a sampling key (bit 63).

// The most node2vec attempts per step (rng.MaxAttempts): the last
// candidate is taken whatever its decision.
constexpr uint32_t WALK_MAX_ATTEMPTS = 64;

__host__ __device__ __forceinline__ uint64_t walk_key(uint64_t seed, uint32_t step) {
    return mix64(seed) ^ mix64((uint64_t(1) << 63) | uint64_t(step));
}

// walk_candidate is the position in the current node's adjacency (degree
// d >= 1) of walk w's a-th candidate: rng.Candidate.
__host__ __device__ __forceinline__ uint32_t walk_candidate(uint64_t key, uint32_t w, uint32_t a, uint32_t d) {
    return below(draw(key, w, 2 * a), d);
}

// walk_decide is walk w's decision a against an integer threshold in
// [0, 2^32] from the host (rng.Threshold): rng.Decide.
__host__ __device__ __forceinline__ bool walk_decide(uint64_t key, uint32_t w, uint32_t a, uint64_t threshold) {
    return (draw(key, w, 2 * a + 1) >> 32) < threshold;
}

} // namespace
