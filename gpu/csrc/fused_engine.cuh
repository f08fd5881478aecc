// fused_engine.cuh — the fused engine (SSG_MODE_FUSED, the default): one
// persistent kernel (PGSampler-style) samples every hop. Only as many
// blocks as fit on the SMs are launched. A global queue holds (hop, vertex)
// tasks; a block claims up to fetch_size tasks at a time (head/tail
// atomics), samples each with a group of lanes, writes the row to a
// per-task slot, and pushes the vertex itself and its new neighbors as
// hop+1 tasks, deduplicated by a per-hop bitmap (atomicOr). Blocks stop
// when every pushed task is done. Bitmap h then holds exactly frontier_h:
// a popcount + CUB exclusive scan + compaction gives every sorted frontier
// and each node's row (its rank in the bitmap), with no sort at all
// (frontier_bitmap.cuh). docs/GPU.md, "The fused engine", has the details
// and the tuning.
#pragma once

#include "context.cuh"
#include "errors.cuh"
#include "frontier_bitmap.cuh"
#include "rng.cuh"
#include "sample_group.cuh"
#include "task_queue.cuh"

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

// FusedParamBlock is what sample_fused uploads in one copy before the
// kernels run: the queue counters, zeroed, and each layer's key and
// fanout (the first L entries are used). The kernels read the keys and
// fanouts through FusedParams; the counters come back after the kernel.
struct FusedParamBlock {
    Counters counters;
    uint64_t keys[MAX_LAYERS];
    int32_t fanouts[MAX_LAYERS];
};

// FusedParams is the fused kernel's argument.
struct FusedParams {
    DevGraph g;
    const uint64_t *keys;   // per layer
    const int32_t *fanouts; // per layer
    int L, kmax, replace, fetch;
    unsigned long long *q;  // task queue: hop<<32 | vertex, SENTINEL until written
    int32_t *sampq;         // per task slot: kmax samples
    int64_t *eidq;          // per task slot: kmax edge ids (nullptr: not kept)
    uint32_t *bitmaps;      // L bitmaps (hops 1..L), bm_words words each
    size_t bm_words;
    Counters *c;
};

// push_warp appends the fresh vertices of the warp to the queue as hop-nh
// tasks, one atomic per distinct hop among the warp's lanes.
__device__ __forceinline__ void push_warp(const FusedParams &P, bool fresh, int nh, uint32_t u,
                                          int lane) {
    const unsigned want = __ballot_sync(FULL, fresh);
    if (want == 0) return; // warp-uniform
    // Usually every fresh lane of the warp pushes the same hop: one ballot
    // tells, and __match_any_sync (slower) is only needed when they differ.
    const int first = __ffs(want) - 1;
    const int nh0 = __shfl_sync(FULL, nh, first);
    unsigned peers;
    if (__all_sync(FULL, !fresh || nh == nh0)) {
        peers = want;
    } else {
        peers = __match_any_sync(FULL, fresh ? nh : -1);
    }
    const int leader = __ffs(peers) - 1;
    unsigned long long base = 0;
    if (fresh && lane == leader) base = atomicAdd(&P.c->tail, static_cast<unsigned long long>(__popc(peers)));
    base = __shfl_sync(FULL, base, leader);
    if (fresh) {
        const unsigned rank = __popc(peers & ((1u << lane) - 1u));
        P.q[base + rank] = (static_cast<unsigned long long>(nh) << 32) | u;
    }
}

template <int G, int R>
__global__ void fused_kernel(FusedParams P) {
    extern __shared__ unsigned long long s_tasks[];
    __shared__ unsigned long long s_start;
    __shared__ int s_n;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    constexpr int TPW = 32 / G;
    const int gl = lane & (G - 1);
    const int sub = lane / G;

    // Thread 0's claimed range [cur, end) of queue slots. Claims are one
    // atomicAdd on head (no CAS retry loop: under contention a CAS admits
    // about one winner per L2 round trip). A range may run past tail; its
    // slots are processed as producers fill them, and a block whose range
    // is all unfilled stops once every pushed task is done.
    unsigned long long cur = 0, end = 0;
    const unsigned long long step = static_cast<unsigned long long>(nwarps * TPW);
    for (;;) {
        if (threadIdx.x == 0) {
            int n = 0;
            unsigned sleep = 32;
            for (;;) {
                if (cur == end) {
                    // An even share of what is queued, at least one step of
                    // the block's warps and at most fetch: a minibatch's few
                    // seeds are spread over all blocks.
                    const unsigned long long head = vload(&P.c->head);
                    const unsigned long long tail = vload(&P.c->tail);
                    unsigned long long want = step;
                    if (tail > head) {
                        const unsigned long long share = (tail - head + gridDim.x - 1) / gridDim.x;
                        if (share > want) want = share;
                    }
                    if (want > static_cast<unsigned long long>(P.fetch)) want = P.fetch;
                    cur = atomicAdd(&P.c->head, want);
                    end = cur + want;
                }
                const unsigned long long tail = vload(&P.c->tail);
                if (tail > cur) {
                    n = static_cast<int>((tail < end ? tail : end) - cur);
                    break;
                }
                // Done when every pushed task is finished: done is read
                // before tail and done <= tail always, so equality means no
                // task was in flight, and none can be pushed any more.
                __threadfence();
                const unsigned long long done = vload(&P.c->done);
                __threadfence();
                if (done == vload(&P.c->tail)) {
                    n = -1;
                    break;
                }
                __nanosleep(sleep);
                if (sleep < 256) sleep <<= 1;
            }
            s_n = n;
            s_start = cur;
            if (n > 0) cur += n;
        }
        __syncthreads();
        const int n = s_n;
        if (n < 0) return;
        const unsigned long long start = s_start;
        // A claimed slot below tail may not be written yet (its producer
        // took the index and is about to store): wait for it.
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            volatile unsigned long long *qp = P.q + start + i;
            unsigned long long x;
            while ((x = *qp) == SENTINEL) __nanosleep(20);
            s_tasks[i] = x;
        }
        __syncthreads();
        for (int base = warp * TPW; base < n; base += nwarps * TPW) {
            const int i = base + sub;
            const bool has = i < n;
            const unsigned long long task = has ? s_tasks[i] : 0ull;
            const uint32_t v = static_cast<uint32_t>(task);
            const int hop = static_cast<int>(task >> 32);
            const int k = has ? P.fanouts[hop] : 0;
            const uint64_t key = has ? P.keys[hop] : 0;
            uint32_t nb[R];
            int64_t eid[R];
            sample_group<G, R>(P.g, v, has, k, key, P.replace != 0, gl, lane, P.kmax, nb, eid);
            const unsigned long long slot = start + i;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int t = gl + r * G;
                if (has && t < k) {
                    P.sampq[slot * P.kmax + t] = static_cast<int32_t>(nb[r]);
                    if (P.eidq) P.eidq[slot * P.kmax + t] = eid[r];
                }
            }
            const int nh = hop + 1;
            uint32_t *bm = P.bitmaps + static_cast<size_t>(has ? nh - 1 : 0) * P.bm_words;
#pragma unroll
            for (int r = 0; r <= R; ++r) {
                bool cand;
                uint32_t u;
                if (r < R) {
                    const int t = gl + r * G;
                    u = nb[r];
                    cand = has && t < k && u != INVALID;
                } else {
                    u = v; // the destination stays in the next frontier (§4)
                    cand = has && gl == 0;
                }
                // Hop L has no tasks: its bitmap alone is the final frontier.
                const bool fresh = cand && test_and_set(bm, u);
                push_warp(P, fresh && nh < P.L, nh, u, lane);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(&P.c->done, static_cast<unsigned long long>(n));
        }
    }
}

template <int G, int R> void launch_fused_t(Context *c, const FusedParams &P, int block, size_t smem) {
    auto kern = fused_kernel<G, R>;
    if (smem > 48 * 1024) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, block, smem));
    if (per_sm < 1) throw Error{SSG_ERR_INVALID, fmt("fused kernel: block size %d with %zu bytes of shared memory does not fit an SM", block, smem)};
    if (c->opt.blocks_per_sm > 0 && c->opt.blocks_per_sm < per_sm) per_sm = c->opt.blocks_per_sm;
    // Every block must be resident at once: blocks spin on the shared queue.
    kern<<<per_sm * c->prop.multiProcessorCount, block, smem, c->stream>>>(P);
    check_launch("fused_kernel launch");
}

void launch_fused(Context *c, const FusedParams &P, int G, int R, int block, size_t smem) {
    if (R > 1) return launch_fused_t<32, 2>(c, P, block, smem);
    switch (G) {
    case 2: return launch_fused_t<2, 1>(c, P, block, smem);
    case 4: return launch_fused_t<4, 1>(c, P, block, smem);
    case 8: return launch_fused_t<8, 1>(c, P, block, smem);
    case 16: return launch_fused_t<16, 1>(c, P, block, smem);
    default: return launch_fused_t<32, 1>(c, P, block, smem);
    }
}

void sample_fused(Context *c, const uint32_t *seeds, uint64_t n_seeds, const uint64_t *keys, int replace) {
    const int L = c->L;
    const auto &fan = c->fanouts;
    const int kmax = *std::max_element(fan.begin(), fan.end());
    const auto cap = caps_for(std::min<uint64_t>(n_seeds, c->n), fan, c->n);
    uint64_t qcap = 0, scap = 0, fcap = 0;
    for (int l = 0; l < L; ++l) {
        qcap += cap[l];
        scap += cap[l] * fan[l];
    }
    for (int l = 0; l <= L; ++l) fcap += cap[l];
    const uint64_t W = (uint64_t(c->n) + 31) / 32;
    const uint64_t nw = uint64_t(L + 1) * W; // bitmap h holds frontier_h, h = 0..L
    cudaStream_t s = c->stream;

    c->q.need(qcap * 8 + 8);
    c->sampq.need(qcap * kmax * 4 + 4);
    c->bitmaps.need(nw * 4 + 4);
    c->keys.need((nw + 1) * 8); // popcounts, then their exclusive scan in vals
    c->vals.need((nw + 1) * 8);
    c->front.need(fcap * 4 + 4); // frontier_0 … frontier_L back to back
    c->samples.need(scap * 4 + 4);
    if (c->opt.edge_ids) {
        c->eidq.need(qcap * kmax * 8 + 8);
        c->edges.need(scap * 8 + 8);
    }
    // One H2D copy for the parameter block; one for the seeds, staged after it.
    c->counters.need(sizeof(FusedParamBlock));
    c->cand.need(n_seeds * 4 + 4);
    char *h = static_cast<char *>(stage(c, sizeof(FusedParamBlock) + n_seeds * 4));
    FusedParamBlock *hp = reinterpret_cast<FusedParamBlock *>(h);
    std::memset(hp, 0, sizeof(FusedParamBlock));
    for (int l = 0; l < L; ++l) {
        hp->keys[l] = keys[l];
        hp->fanouts[l] = fan[l];
    }
    char *hseeds = h + sizeof(FusedParamBlock);
    std::memcpy(hseeds, seeds, n_seeds * 4);
    Counters *hc = &hp->counters;

    CK(cudaEventRecord(c->ev[0], s));
    CK(cudaMemcpyAsync(c->counters.p, hp, sizeof(FusedParamBlock), cudaMemcpyHostToDevice, s));
    if (n_seeds) CK(cudaMemcpyAsync(c->cand.p, hseeds, n_seeds * 4, cudaMemcpyHostToDevice, s));
    CK(cudaMemsetAsync(c->q.p, 0xff, qcap * 8, s)); // every slot SENTINEL until written
    CK(cudaMemsetAsync(c->bitmaps.p, 0, nw * 4, s));
    // The device copy's fields (the host never dereferences it).
    char *dparams = c->counters.as<char>();
    Counters *dc = reinterpret_cast<Counters *>(dparams + offsetof(FusedParamBlock, counters));
    const int32_t *dfan = reinterpret_cast<const int32_t *>(dparams + offsetof(FusedParamBlock, fanouts));

    FusedParams P;
    P.g = DevGraph{c->d_indptr, c->d_indices, c->n};
    P.keys = reinterpret_cast<const uint64_t *>(dparams + offsetof(FusedParamBlock, keys));
    P.fanouts = dfan;
    P.L = L;
    P.kmax = kmax;
    P.replace = replace;
    P.fetch = c->opt.fetch_size > 0 ? c->opt.fetch_size : 256;
    P.q = c->q.as<unsigned long long>();
    P.sampq = c->sampq.as<int32_t>();
    P.eidq = c->opt.edge_ids ? c->eidq.as<int64_t>() : nullptr;
    P.bitmaps = c->bitmaps.as<uint32_t>() + W; // the kernel pushes into bitmaps 1..L
    P.bm_words = W;
    P.c = dc;
    const int G = group_for(kmax, c->opt.group_size);
    const int R = (kmax + G - 1) / G;
    const int block = block_size(c);
    const int b256 = 256;
    if (n_seeds) {
        seed_tasks<<<launch_blocks(n_seeds, b256), b256, 0, s>>>(c->cand.as<uint32_t>(), n_seeds,
                                                                 c->bitmaps.as<uint32_t>(), dc, P.q);
        check_launch("seed_tasks launch");
    }
    CK(cudaEventRecord(c->ev[1], s));
    if (n_seeds) launch_fused(c, P, G, R, block, size_t(P.fetch) * 8);
    CK(cudaEventRecord(c->ev[2], s));

    // Frontiers from the bitmaps, rows into frontier order; no host sync.
    unsigned long long *cnt = c->keys.as<unsigned long long>();
    unsigned long long *off = c->vals.as<unsigned long long>();
    popc_words<<<launch_blocks(nw + 1, b256), b256, 0, s>>>(c->bitmaps.as<uint32_t>(), nw, cnt);
    check_launch("popc_words launch");
    size_t tb = 0;
    CK(cub::DeviceScan::ExclusiveSum(nullptr, tb, cnt, off, (int64_t)(nw + 1), s));
    c->temp.need(tb + 16);
    tb = c->temp.cap;
    CK(cub::DeviceScan::ExclusiveSum(c->temp.p, tb, cnt, off, (int64_t)(nw + 1), s));
    uint32_t *front = c->front.as<uint32_t>();
    compact_bits<<<launch_blocks(nw, b256), b256, 0, s>>>(c->bitmaps.as<uint32_t>(), nw, W, off, front);
    check_launch("compact_bits launch");
    place_rows<<<c->prop.multiProcessorCount * 16, b256, 0, s>>>(P.q, dc, dfan, L, kmax, P.sampq,
                                                                c->bitmaps.as<uint32_t>(), W, off,
                                                                c->samples.as<int32_t>(), P.eidq,
                                                                c->opt.edge_ids ? c->edges.as<int64_t>() : nullptr);
    check_launch("place_rows launch");
    const size_t cbytes = offsetof(Counters, hop_count) + sizeof(unsigned long long) * (L + 1);
    CK(cudaMemcpyAsync(hc, dc, cbytes, cudaMemcpyDeviceToHost, s));
    CK(cudaEventRecord(c->ev[3], s));
    wait_stream(c);

    const uint64_t T = hc->tail;
    if (hc->done != T)
        throw Error{SSG_ERR_CUDA, fmt("fused kernel ended with %llu of %llu tasks done", hc->done, (unsigned long long)T)};
    c->counts.assign(L + 1, 0);
    uint64_t nf = 0;
    for (int l = 0; l < L; ++l) {
        c->counts[l] = hc->hop_count[l];
        nf += c->counts[l];
    }
    c->counts[L] = hc->final_count;
    if (nf != T) throw Error{SSG_ERR_CUDA, fmt("fused kernel: %llu tasks but %llu frontier nodes", (unsigned long long)T, (unsigned long long)nf)};
    c->final_dev = front + nf; // compact_bits put frontier_L after frontier_{L-1}
    c->timings[0] = elapsed(c->ev[1], c->ev[2]);
    c->timings[1] = elapsed(c->ev[2], c->ev[3]);
    c->timings[2] = elapsed(c->ev[0], c->ev[3]);
}

} // namespace
