// frontier_bitmap.cuh — the fused engine's deduplication and its result
// layout without a sort. Bitmap h holds frontier_h: inserting a node
// (test_and_set) deduplicates it, the seeds go in through bitmap 0
// (seed_tasks), and after the kernel a bitmap's set bits in order are the
// sorted frontier and a node's row is the number of set bits before it
// (popc_words, an exclusive scan, compact_bits, place_rows).
#pragma once

#include "sample_group.cuh"
#include "task_queue.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

// test_and_set returns true if this call set u's bit in bm (first insert).
__device__ __forceinline__ bool test_and_set(uint32_t *bm, uint32_t u) {
    const uint32_t bit = 1u << (u & 31);
    uint32_t *w = bm + (u >> 5);
    // A plain L2 read first: most candidates of a dense frontier are
    // duplicates, and a read is cheaper than an atomic.
    if (__ldcg(w) & bit) return false;
    return (atomicOr(w, bit) & bit) == 0;
}

// After the fused kernel, bitmap h-1 holds exactly frontier_h (h = 1..L,
// frontier_L being the final one). Its set bits in order are the sorted
// frontier, and a node's row is the number of set bits before it: a
// popcount, an exclusive scan and a compaction replace a radix sort.

// popc_words writes the popcount of each of nw words (and 0 at nw).
__global__ void popc_words(const uint32_t *bm, unsigned long long nw, unsigned long long *cnt) {
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i <= nw;
         i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
        cnt[i] = (i < nw) ? __popc(bm[i]) : 0;
}

// compact_bits writes the ids of the set bits of L bitmaps of W words, in
// order, at out[off[i]...]: frontier_1 … frontier_L back to back.
__global__ void compact_bits(const uint32_t *bm, unsigned long long nw, unsigned long long W,
                             const unsigned long long *off, uint32_t *out) {
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < nw;
         i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
        uint32_t w = bm[i];
        if (!w) continue;
        unsigned long long o = off[i];
        const uint32_t base = static_cast<uint32_t>((i % W) * 32);
        while (w) {
            const int b = __ffs(w) - 1;
            out[o++] = base + b;
            w &= w - 1;
        }
    }
}

// seed_tasks deduplicates the seeds through bitmap 0 and queues each
// distinct one as a hop-0 task: no host sort, no device sort.
__global__ void seed_tasks(const uint32_t *seeds, unsigned long long n, uint32_t *bm0, Counters *c,
                           unsigned long long *q) {
    const int lane = threadIdx.x & 31;
    // Whole warps iterate together (the ballot needs every lane).
    for (unsigned long long base = (blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x) & ~31ull;
         base < n; base += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
        const unsigned long long i = base + lane;
        const uint32_t v = i < n ? seeds[i] : 0;
        const bool fresh = i < n && test_and_set(bm0, v);
        const unsigned m = __ballot_sync(FULL, fresh);
        if (m == 0) continue;
        const int leader = __ffs(m) - 1;
        unsigned long long b = 0;
        if (lane == leader) b = atomicAdd(&c->tail, static_cast<unsigned long long>(__popc(m)));
        b = __shfl_sync(FULL, b, leader);
        if (fresh) q[b + __popc(m & ((1u << lane) - 1u))] = v; // hop bits zero
    }
}

// place_rows moves the samples of each task from its queue slot to its row
// in frontier order (the rank of its vertex in its hop's bitmap), and its
// edge ids from eidq to edge_ids alike where they are kept (non-null). One
// thread per sample slot, so reads and writes are contiguous per row.
__global__ void place_rows(const unsigned long long *q, Counters *c, const int32_t *fanouts, int L, int kmax,
                           const int32_t *sampq, const uint32_t *bm, unsigned long long W,
                           const unsigned long long *off, int32_t *samples, const int64_t *eidq,
                           int64_t *edge_ids) {
    // |frontier_h| is the popcount of bitmap h: the kernels count no hops.
    const unsigned long long T = c->tail;
    if (blockIdx.x == 0 && threadIdx.x <= static_cast<unsigned>(L)) {
        const unsigned long long h = threadIdx.x;
        const unsigned long long m = off[(h + 1) * W] - off[h * W];
        if (h < static_cast<unsigned long long>(L)) c->hop_count[h] = m;
        else c->final_count = m;
    }
    const unsigned long long total = T * static_cast<unsigned long long>(kmax);
    for (unsigned long long x = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; x < total;
         x += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
        const unsigned long long s = x / kmax;
        const int t = static_cast<int>(x - s * kmax);
        const unsigned long long e = q[s];
        const int h = static_cast<int>(e >> 32);
        const int k = fanouts[h];
        if (t >= k) continue;
        const uint32_t v = static_cast<uint32_t>(e);
        const unsigned long long seg = static_cast<unsigned long long>(h) * W;
        const unsigned long long wi = seg + (v >> 5);
        const unsigned long long row = off[wi] - off[seg] + __popc(bm[wi] & ((1u << (v & 31)) - 1u));
        unsigned long long soff = 0;
        for (int l = 0; l < h; ++l)
            soff += (off[static_cast<unsigned long long>(l + 1) * W] - off[static_cast<unsigned long long>(l) * W]) *
                    static_cast<unsigned long long>(fanouts[l]);
        samples[soff + row * k + t] = sampq[x];
        if (edge_ids) edge_ids[soff + row * k + t] = eidq[x];
    }
}

} // namespace
