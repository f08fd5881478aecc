// sample_group.cuh — the group sampler both engines share: a task (one
// node of a frontier, fanout k) is sampled by a group of G lanes of a warp,
// one draw per lane and slot, Floyd's algorithm resolved across the group
// with shuffles and ballots (docs/GPU.md, "Sampling").
#pragma once

#include "rng.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

// FULL is the mask of a whole warp, for the *_sync intrinsics.
constexpr unsigned FULL = 0xffffffffu;
// INVALID marks an empty sample slot (stored as -1 in the results).
constexpr uint32_t INVALID = 0xffffffffu;
// The largest fanout: a group has at most 32 lanes and a lane at most two
// slots (R <= 2).
constexpr int MAX_FANOUT = 64;

// DevGraph is the CSR as the kernels see it (device memory, or pinned host
// memory through UVA).
struct DevGraph {
    const uint64_t *indptr;
    const uint32_t *indices;
    uint32_t n;
};

// sample_group samples one task (vertex v, fanout k) with the G lanes of a
// group; lane gl of the group owns slots t = gl + r*G, r < R. On return
// nb[r] is the neighbor id of slot t or INVALID (empty slot, or t >= k),
// and eid[r] its edge id, indptr[v] + the chosen position (rng.Positions),
// or -1 where nb[r] is INVALID.
// Every lane of the warp must call it (shuffles and ballots span the warp);
// kloop is a warp-uniform bound >= every group's k.
template <int G, int R>
__device__ __forceinline__ void sample_group(const DevGraph &g, uint32_t v, bool has, int k,
                                             uint64_t key, bool replace, int gl, int lane,
                                             int kloop, uint32_t (&nb)[R], int64_t (&eid)[R]) {
    uint64_t beg = 0;
    uint32_t d = 0;
    if (has) {
        beg = g.indptr[v];
        d = uint32_t(g.indptr[v + 1] - beg);
    }
    const bool floyd = has && !replace && d > uint32_t(k);
    uint32_t c[R], jv[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint32_t t = uint32_t(gl + r * G);
        c[r] = INVALID;
        jv[r] = 0;
        if (has && t < uint32_t(k)) {
            if (replace) {
                if (d > 0) c[r] = below(draw(key, v, t), d);
            } else if (!floyd) {
                if (t < d) c[r] = t;
            } else {
                jv[r] = d - uint32_t(k) + t;
                c[r] = below(draw(key, v, t), jv[r] + 1);
            }
        }
    }
    // Floyd: slot t keeps p_t unless an earlier slot already chose it, then
    // takes j_t (never chosen before: earlier choices are <= j_s < j_t).
    // Slots resolve in order; each step broadcasts p_t and ballots.
    for (int t = 1; t < kloop; ++t) {
        const int owner = t & (G - 1);
        const int rr = t / G;
        uint32_t mine = c[0];
        if (R > 1 && rr > 0) mine = c[R - 1];
        const uint32_t pt = __shfl_sync(FULL, mine, owner, G);
        bool hit = false;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int s = gl + r * G;
            if (floyd && s < t && c[r] == pt) hit = true;
        }
        const unsigned b = __ballot_sync(FULL, hit);
        unsigned gm;
        if constexpr (G == 32) {
            gm = b;
        } else {
            gm = (b >> (lane & ~(G - 1))) & ((1u << G) - 1u);
        }
        if (floyd && t < k && gl == owner && gm != 0) {
            if (rr == 0) {
                c[0] = jv[0];
            } else {
                c[R - 1] = jv[R - 1];
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
        nb[r] = (c[r] != INVALID) ? g.indices[beg + c[r]] : INVALID;
        eid[r] = (c[r] != INVALID) ? static_cast<int64_t>(beg + c[r]) : -1;
    }
}

// Choose lanes per task: a power of two >= k (so one draw per lane), at
// most 32; fanouts up to 64 use two slots per lane.
int group_for(int k, int want) {
    int g = want;
    if (g <= 0) {
        g = 2;
        while (g < k && g < 32) g <<= 1;
    }
    if (g != 2 && g != 4 && g != 8 && g != 16 && g != 32) g = 32;
    while (g < 32 && (k + g - 1) / g > 1) g <<= 1;
    return g;
}

} // namespace
