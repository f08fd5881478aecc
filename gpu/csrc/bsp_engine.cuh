// bsp_engine.cuh — the BSP engine (SSG_MODE_BSP), the baseline of what
// DGL does on a GPU: one launch per hop over the sorted frontier (the same
// group sampler, rows written in frontier order), then the next hop's
// frontier, frontier ∪ samples sorted and unique, and one host
// synchronisation per hop to learn its size. The next frontier comes from
// a bitmap of the nodes (marked by the sampling kernel; popcount, scan and
// compaction, as the fused engine's frontiers) where the bitmap's words are
// few against the candidates, else from a CUB sort + unique of them.
// docs/GPU.md, "The BSP engine".
#pragma once

#include "context.cuh"
#include "errors.cuh"
#include "frontier_bitmap.cuh"
#include "rng.cuh"
#include "sample_group.cuh"

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

// bsp_kernel samples the n nodes of a sorted frontier with fanout k,
// writing rows in frontier order, and marks frontier ∪ samples in the
// bitmap bm or, without one (nullptr), fills cand with them (empty slots
// become `none`, which sorts after every node id). With edge_ids
// (nullptr: not kept) each sample's edge id goes there too.
template <int G, int R>
__global__ void bsp_kernel(DevGraph g, const uint32_t *front, unsigned long long n, int k,
                           uint64_t key, int replace, int32_t *samples, int64_t *edge_ids,
                           uint32_t *cand, uint32_t none, uint32_t *bm) {
    const int lane = threadIdx.x & 31;
    constexpr int TPW = 32 / G;
    const int gl = lane & (G - 1);
    const int sub = lane / G;
    const unsigned long long gwarp = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const unsigned long long nwarps = (static_cast<unsigned long long>(gridDim.x) * blockDim.x) >> 5;
    for (unsigned long long base = gwarp * TPW; base < n; base += nwarps * TPW) {
        const unsigned long long i = base + sub;
        const bool has = i < n;
        const uint32_t v = has ? front[i] : 0;
        uint32_t nb[R];
        int64_t eid[R];
        sample_group<G, R>(g, v, has, k, key, replace != 0, gl, lane, k, nb, eid);
        if (has) {
            if (gl == 0) {
                if (bm) test_and_set(bm, v);
                else cand[i] = v;
            }
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int t = gl + r * G;
                if (t < k) {
                    samples[i * k + t] = static_cast<int32_t>(nb[r]);
                    if (edge_ids) edge_ids[i * k + t] = eid[r];
                    if (bm) {
                        if (nb[r] != INVALID) test_and_set(bm, nb[r]);
                    } else {
                        cand[n + i * k + t] = (nb[r] == INVALID) ? none : nb[r];
                    }
                }
            }
        }
    }
}

// drop_none removes the trailing `none` that unique leaves when a layer
// had empty slots, writing the count to *out.
__global__ void drop_none(const uint32_t *u, const long long *n, uint32_t none, unsigned long long *out) {
    long long m = *n;
    if (m > 0 && u[m - 1] == none) --m;
    *out = static_cast<unsigned long long>(m);
}

// bit_len is the number of bits of x (the radix sort's key width).
int bit_len(unsigned long long x) {
    int b = 0;
    while (x) {
        ++b;
        x >>= 1;
    }
    return b;
}

template <int G, int R>
void launch_bsp_t(Context *c, DevGraph g, const uint32_t *front, unsigned long long n, int k, uint64_t key,
                  int replace, int32_t *samples, int64_t *edge_ids, uint32_t *cand, uint32_t none, uint32_t *bm,
                  int block) {
    const unsigned long long warps = (n * G + 31) / 32;
    bsp_kernel<G, R><<<launch_blocks(warps * 32, block), block, 0, c->stream>>>(g, front, n, k, key, replace,
                                                                                samples, edge_ids, cand, none, bm);
    check_launch("bsp_kernel launch");
}

void launch_bsp(Context *c, int G, int R, DevGraph g, const uint32_t *front, unsigned long long n, int k,
                uint64_t key, int replace, int32_t *samples, int64_t *edge_ids, uint32_t *cand, uint32_t none,
                uint32_t *bm, int block) {
    if (R > 1)
        return launch_bsp_t<32, 2>(c, g, front, n, k, key, replace, samples, edge_ids, cand, none, bm, block);
    switch (G) {
    case 2: return launch_bsp_t<2, 1>(c, g, front, n, k, key, replace, samples, edge_ids, cand, none, bm, block);
    case 4: return launch_bsp_t<4, 1>(c, g, front, n, k, key, replace, samples, edge_ids, cand, none, bm, block);
    case 8: return launch_bsp_t<8, 1>(c, g, front, n, k, key, replace, samples, edge_ids, cand, none, bm, block);
    case 16: return launch_bsp_t<16, 1>(c, g, front, n, k, key, replace, samples, edge_ids, cand, none, bm, block);
    default: return launch_bsp_t<32, 1>(c, g, front, n, k, key, replace, samples, edge_ids, cand, none, bm, block);
    }
}

// bitmap_words_per_candidate: the next frontier comes from a bitmap of the
// nodes when its words are at most this many per candidate (frontier ∪
// samples): three passes over the words (popcount, scan, compaction) and a
// clear against a radix sort and a unique over the candidates.
constexpr uint64_t bitmap_words_per_candidate = 8;

void sample_bsp(Context *c, const uint32_t *seeds, uint64_t n_seeds, uint64_t seed, uint32_t epoch, int replace) {
    const int L = c->L;
    const auto &fan = c->fanouts;
    const auto cap = caps_for(std::min<uint64_t>(n_seeds, c->n), fan, c->n);
    uint64_t fcap_all = 0, scap = 0, ccap = 0;
    for (int l = 0; l < L; ++l) {
        fcap_all += cap[l];
        scap += cap[l] * fan[l];
        ccap = std::max<uint64_t>(ccap, cap[l] * (1 + fan[l]));
    }
    ccap = std::max<uint64_t>(ccap, n_seeds);
    cudaStream_t s = c->stream;
    const uint32_t none = c->n; // sorts after every node id
    const int vbits = std::max(1, bit_len(c->n));
    c->front.need(fcap_all * 4 + 4);
    c->samples.need(scap * 4 + 4);
    if (c->opt.edge_ids) c->edges.need(scap * 8 + 8);
    c->cand.need(ccap * 4 + 4);
    c->scand.need(ccap * 4 + 4);
    c->fin.need(cap[L] * 4 + 4);
    c->nsel.need(64);
    c->counters.need(sizeof(Counters));
    const uint64_t W = (uint64_t(c->n) + 31) / 32; // words of a node bitmap
    c->bitmaps.need(W * 4 + 4);
    c->keys.need((W + 1) * 8); // popcounts, then their exclusive scan in vals
    c->vals.need((W + 1) * 8);
    size_t tb = 0, tb2 = 0, tb3 = 0;
    CK(cub::DeviceRadixSort::SortKeys(nullptr, tb, c->cand.as<uint32_t>(), c->scand.as<uint32_t>(), (int64_t)ccap, 0,
                                      vbits, s));
    CK(cub::DeviceSelect::Unique(nullptr, tb2, c->scand.as<uint32_t>(), c->cand.as<uint32_t>(), c->nsel.as<long long>(),
                                 (int64_t)ccap, s));
    CK(cub::DeviceScan::ExclusiveSum(nullptr, tb3, c->keys.as<unsigned long long>(),
                                     c->vals.as<unsigned long long>(), (int64_t)(W + 1), s));
    c->temp.need(std::max({tb, tb2, tb3}) + 16);
    const int block = block_size(c);

    uint32_t *hs = static_cast<uint32_t *>(stage(c, n_seeds * 4 + 4));
    std::memcpy(hs, seeds, n_seeds * 4);
    CK(cudaEventRecord(c->ev[0], s));
    c->counts.assign(L + 1, 0);
    // frontier_0: sort + unique of the seeds on the GPU, as DGL does.
    if (n_seeds) {
        CK(cudaMemcpyAsync(c->cand.p, hs, n_seeds * 4, cudaMemcpyHostToDevice, s));
        tb = c->temp.cap;
        CK(cub::DeviceRadixSort::SortKeys(c->temp.p, tb, c->cand.as<uint32_t>(), c->scand.as<uint32_t>(),
                                          (int64_t)n_seeds, 0, vbits, s));
        tb = c->temp.cap;
        CK(cub::DeviceSelect::Unique(c->temp.p, tb, c->scand.as<uint32_t>(), c->front.as<uint32_t>(),
                                     c->nsel.as<long long>(), (int64_t)n_seeds, s));
        CK(cudaMemcpyAsync(c->h_counters, c->nsel.p, 8, cudaMemcpyDeviceToHost, s));
        wait_stream(c);
        c->counts[0] = c->h_counters->head;
    }
    uint64_t off = 0, soff = 0;
    float kern_ms = 0;
    for (int l = 0; l < L; ++l) {
        const uint64_t nl = c->counts[l];
        const int k = fan[l];
        const uint64_t nc = nl * (1 + k);
        uint32_t *next = (l + 1 < L) ? c->front.as<uint32_t>() + off + nl : c->fin.as<uint32_t>();
        const bool by_bitmap = nc > 0 && W <= bitmap_words_per_candidate * nc;
        uint32_t *bm = by_bitmap ? c->bitmaps.as<uint32_t>() : nullptr;
        if (by_bitmap) CK(cudaMemsetAsync(bm, 0, W * 4, s));
        CK(cudaEventRecord(c->ev[1], s));
        if (nl > 0) {
            const int G = group_for(k, c->opt.group_size);
            launch_bsp(c, G, (k + G - 1) / G, DevGraph{c->d_indptr, c->d_indices, c->n},
                       c->front.as<uint32_t>() + off, nl, k, layer_key(seed, epoch, l), replace,
                       c->samples.as<int32_t>() + soff,
                       c->opt.edge_ids ? c->edges.as<int64_t>() + soff : nullptr, c->cand.as<uint32_t>(), none,
                       bm, block);
        }
        CK(cudaEventRecord(c->ev[2], s));
        if (by_bitmap) {
            // The set bits in order are the sorted, unique next frontier;
            // the scan's last entry is its size.
            const int b256 = 256;
            unsigned long long *cnt = c->keys.as<unsigned long long>();
            unsigned long long *woff = c->vals.as<unsigned long long>();
            popc_words<<<launch_blocks(W + 1, b256), b256, 0, s>>>(bm, W, cnt);
            check_launch("popc_words launch");
            tb = c->temp.cap;
            CK(cub::DeviceScan::ExclusiveSum(c->temp.p, tb, cnt, woff, (int64_t)(W + 1), s));
            compact_bits<<<launch_blocks(W, b256), b256, 0, s>>>(bm, W, W, woff, next);
            check_launch("compact_bits launch");
            CK(cudaMemcpyAsync(c->h_counters, woff + W, 8, cudaMemcpyDeviceToHost, s));
        } else if (nc > 0) {
            tb = c->temp.cap;
            CK(cub::DeviceRadixSort::SortKeys(c->temp.p, tb, c->cand.as<uint32_t>(), c->scand.as<uint32_t>(),
                                              (int64_t)nc, 0, vbits, s));
            tb = c->temp.cap;
            CK(cub::DeviceSelect::Unique(c->temp.p, tb, c->scand.as<uint32_t>(), next, c->nsel.as<long long>(),
                                         (int64_t)nc, s));
            drop_none<<<1, 1, 0, s>>>(next, c->nsel.as<long long>(), none,
                                      c->counters.as<unsigned long long>());
            check_launch("drop_none launch");
            CK(cudaMemcpyAsync(c->h_counters, c->counters.p, 8, cudaMemcpyDeviceToHost, s));
        } else {
            c->h_counters->head = 0;
        }
        wait_stream(c); // BSP: the host needs the next frontier's size
        kern_ms += elapsed(c->ev[1], c->ev[2]);
        c->counts[l + 1] = (nc > 0) ? c->h_counters->head : 0;
        off += nl;
        soff += nl * k;
    }
    CK(cudaEventRecord(c->ev[3], s));
    wait_stream(c);
    c->final_dev = c->fin.as<uint32_t>();
    c->timings[0] = kern_ms;
    c->timings[2] = elapsed(c->ev[0], c->ev[3]);
    c->timings[1] = c->timings[2] - kern_ms;
}

} // namespace
