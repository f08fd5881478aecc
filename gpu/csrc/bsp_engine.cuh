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

// full_degrees writes each frontier node's degree to deg[0..n) and 0 to
// deg[n], so that their exclusive scan is the full layer's row offsets,
// its last entry the layer's size.
__global__ void full_degrees(DevGraph g, const uint32_t *front, unsigned long long n, long long *deg) {
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i <= n;
         i += stride)
        deg[i] = i < n ? static_cast<long long>(g.indptr[front[i] + 1] - g.indptr[front[i]]) : 0;
}

// full_rows copies a full layer's rows, a thread per neighbor (a hub's row
// is spread over the grid like any other): neighbor e belongs to the last
// row i whose offset is at most e (a binary search, which skips the empty
// rows before it), and is that node's (e - off[i])-th neighbor in CSR
// order. It marks the neighbors in the bitmap bm or, without one, puts
// them in cand after the frontier's n nodes.
__global__ void full_rows(DevGraph g, const uint32_t *front, unsigned long long n, const long long *off,
                          unsigned long long total, int32_t *samples, int64_t *edge_ids, uint32_t *cand,
                          uint32_t *bm) {
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long e = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
         e += stride) {
        unsigned long long lo = 0, hi = n; // the answer is in [lo, hi)
        while (hi - lo > 1) {
            const unsigned long long mid = lo + (hi - lo) / 2;
            if (static_cast<unsigned long long>(off[mid]) <= e) lo = mid;
            else hi = mid;
        }
        const uint64_t p = g.indptr[front[lo]] + (e - static_cast<unsigned long long>(off[lo]));
        const uint32_t nb = g.indices[p];
        samples[e] = static_cast<int32_t>(nb);
        if (edge_ids) edge_ids[e] = static_cast<int64_t>(p);
        if (bm) test_and_set(bm, nb);
        else cand[n + e] = nb;
    }
}

// mark_nodes sets the bits of nodes v[0..n) in bm.
__global__ void mark_nodes(const uint32_t *v, unsigned long long n, uint32_t *bm) {
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        test_and_set(bm, v[i]);
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

// bsp_temp grows c->temp for the CUB passes over nc candidates, and over
// the W+1 bitmap words or a full layer's nl+1 degrees: the sort, the
// unique and the scans.
void bsp_temp(Context *c, uint64_t nc, uint64_t W, uint64_t nl, int vbits) {
    size_t tb = 0, tb2 = 0, tb3 = 0, tb4 = 0;
    cudaStream_t s = c->stream;
    CK(cub::DeviceRadixSort::SortKeys(nullptr, tb, c->cand.as<uint32_t>(), c->scand.as<uint32_t>(), (int64_t)nc, 0,
                                      vbits, s));
    CK(cub::DeviceSelect::Unique(nullptr, tb2, c->scand.as<uint32_t>(), c->cand.as<uint32_t>(), c->nsel.as<long long>(),
                                 (int64_t)nc, s));
    CK(cub::DeviceScan::ExclusiveSum(nullptr, tb3, c->keys.as<unsigned long long>(),
                                     c->vals.as<unsigned long long>(), (int64_t)(W + 1), s));
    CK(cub::DeviceScan::ExclusiveSum(nullptr, tb4, c->full_off.as<long long>(), c->full_off.as<long long>(),
                                     (int64_t)(nl + 1), s));
    c->temp.need(std::max({tb, tb2, tb3, tb4}) + 16);
}

// full_layer samples a full layer (SSG_FANOUT_ALL) of the nl nodes at
// front: their degrees' exclusive scan into c->full_off after the earlier
// full layers' offsets (its last entry, the layer's size, read back: the
// rows' buffers grow to it, keeping the earlier layers), then the rows at
// samples + soff (and edge ids), marking frontier and neighbors in bm or
// cand. It returns the layer's size.
uint64_t full_layer(Context *c, const uint32_t *front, uint64_t nl, uint64_t soff, uint32_t *bm, int vbits,
                    uint64_t W, int block) {
    cudaStream_t s = c->stream;
    const DevGraph g{c->d_indptr, c->d_indices, c->n};
    c->full_off.grow((c->n_offsets + nl + 1) * 8, s);
    long long *off = c->full_off.as<long long>() + c->n_offsets;
    bsp_temp(c, nl, W, nl, vbits);
    full_degrees<<<launch_blocks(nl + 1, block), block, 0, s>>>(g, front, nl, off);
    check_launch("full_degrees launch");
    size_t tb = c->temp.cap;
    CK(cub::DeviceScan::ExclusiveSum(c->temp.p, tb, off, off, (int64_t)(nl + 1), s));
    CK(cudaMemcpyAsync(c->h_counters, off + nl, 8, cudaMemcpyDeviceToHost, s));
    wait_stream(c); // the rows' size sizes their buffers
    const uint64_t total = c->h_counters->head;
    c->n_offsets += nl + 1;
    c->samples.grow((soff + total) * 4 + 4, s);
    if (c->opt.edge_ids) c->edges.grow((soff + total) * 8 + 8, s);
    if (bm) {
        mark_nodes<<<launch_blocks(nl, block), block, 0, s>>>(front, nl, bm);
        check_launch("mark_nodes launch");
    } else {
        c->cand.need((nl + total) * 4 + 4);
        c->scand.need((nl + total) * 4 + 4);
        CK(cudaMemcpyAsync(c->cand.p, front, nl * 4, cudaMemcpyDeviceToDevice, s));
    }
    if (total > 0) {
        full_rows<<<launch_blocks(total, block), block, 0, s>>>(g, front, nl, off, total,
                                                                c->samples.as<int32_t>() + soff,
                                                                c->opt.edge_ids ? c->edges.as<int64_t>() + soff : nullptr,
                                                                c->cand.as<uint32_t>(), bm);
        check_launch("full_rows launch");
    }
    return total;
}

void sample_bsp(Context *c, const uint32_t *seeds, uint64_t n_seeds, const uint64_t *keys, int replace) {
    const int L = c->L;
    const auto &fan = c->fanouts;
    const auto cap = caps_for(std::min<uint64_t>(n_seeds, c->n), fan, c->n);
    // The layers before the first full one are sized from their bounds
    // up front; a full layer's size is known only once its degrees are
    // summed, so from it on the buffers grow layer by layer.
    int sized = 0;
    while (sized < L && fan[sized] != SSG_FANOUT_ALL) ++sized;
    uint64_t fcap_all = 0, scap = 0, ccap = 0;
    for (int l = 0; l < sized; ++l) {
        fcap_all += cap[l];
        scap += cap[l] * fan[l];
        ccap = std::max<uint64_t>(ccap, cap[l] * (1 + fan[l]));
    }
    if (sized < L) fcap_all += cap[sized];
    ccap = std::max<uint64_t>(ccap, n_seeds);
    cudaStream_t s = c->stream;
    const uint32_t none = c->n; // sorts after every node id
    const int vbits = std::max(1, bit_len(c->n));
    c->front.need(fcap_all * 4 + 4);
    c->samples.need(scap * 4 + 4);
    if (c->opt.edge_ids) c->edges.need(scap * 8 + 8);
    c->cand.need(ccap * 4 + 4);
    c->scand.need(ccap * 4 + 4);
    if (sized == L) c->fin.need(cap[L] * 4 + 4);
    c->nsel.need(64);
    c->counters.need(sizeof(Counters));
    const uint64_t W = (uint64_t(c->n) + 31) / 32; // words of a node bitmap
    c->bitmaps.need(W * 4 + 4);
    c->keys.need((W + 1) * 8); // popcounts, then their exclusive scan in vals
    c->vals.need((W + 1) * 8);
    c->full_off.need(64);
    c->n_offsets = 0;
    bsp_temp(c, ccap, W, 0, vbits);
    size_t tb = 0;
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
    c->sizes.assign(L, 0);
    for (int l = 0; l < L; ++l) {
        const uint64_t nl = c->counts[l];
        const int k = fan[l];
        const bool full = k == SSG_FANOUT_ALL;
        if (l >= sized) {
            // Past a full layer: this layer's frontier is known now.
            // Room for its rows (a full layer grows its own), its
            // candidates and the next frontier.
            const uint64_t next_cap = std::min<uint64_t>(c->n, full ? c->n : nl * (1 + k));
            c->front.grow((off + nl + (l + 1 < L ? next_cap : 0)) * 4 + 4, s);
            if (l + 1 == L) c->fin.need(next_cap * 4 + 4);
            if (!full) {
                c->samples.grow((soff + nl * k) * 4 + 4, s);
                if (c->opt.edge_ids) c->edges.grow((soff + nl * k) * 8 + 8, s);
                c->cand.need(nl * (1 + k) * 4 + 4);
                c->scand.need(nl * (1 + k) * 4 + 4);
                bsp_temp(c, nl * (1 + k), W, 0, vbits);
            }
        }
        // A full layer's candidates are its frontier and its rows; the
        // bitmap is chosen on the frontier and the graph's mean degree
        // (its rows' size is not known yet).
        const uint64_t nc = full ? nl + (c->n ? nl * (c->nnz / c->n) : 0) : nl * (1 + k);
        const bool by_bitmap = nc > 0 && W <= bitmap_words_per_candidate * nc;
        uint32_t *bm = by_bitmap ? c->bitmaps.as<uint32_t>() : nullptr;
        if (by_bitmap) CK(cudaMemsetAsync(bm, 0, W * 4, s));
        CK(cudaEventRecord(c->ev[1], s));
        uint64_t rows = nl * (full ? 0 : k);
        if (full) {
            rows = full_layer(c, c->front.as<uint32_t>() + off, nl, soff, bm, vbits, W, block);
            if (!by_bitmap) bsp_temp(c, nl + rows, W, 0, vbits);
        }
        // After full_layer, whose growth may have moved the frontiers.
        uint32_t *next = (l + 1 < L) ? c->front.as<uint32_t>() + off + nl : c->fin.as<uint32_t>();
        const uint64_t ncand = full ? nl + rows : nc;
        if (!full && nl > 0) {
            const int G = group_for(k, c->opt.group_size);
            launch_bsp(c, G, (k + G - 1) / G, DevGraph{c->d_indptr, c->d_indices, c->n},
                       c->front.as<uint32_t>() + off, nl, k, keys[l], replace,
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
        } else if (ncand > 0) {
            tb = c->temp.cap;
            CK(cub::DeviceRadixSort::SortKeys(c->temp.p, tb, c->cand.as<uint32_t>(), c->scand.as<uint32_t>(),
                                              (int64_t)ncand, 0, vbits, s));
            tb = c->temp.cap;
            CK(cub::DeviceSelect::Unique(c->temp.p, tb, c->scand.as<uint32_t>(), next, c->nsel.as<long long>(),
                                         (int64_t)ncand, s));
            drop_none<<<1, 1, 0, s>>>(next, c->nsel.as<long long>(), none,
                                      c->counters.as<unsigned long long>());
            check_launch("drop_none launch");
            CK(cudaMemcpyAsync(c->h_counters, c->counters.p, 8, cudaMemcpyDeviceToHost, s));
        } else {
            c->h_counters->head = 0;
        }
        wait_stream(c); // BSP: the host needs the next frontier's size
        kern_ms += elapsed(c->ev[1], c->ev[2]);
        c->counts[l + 1] = (ncand > 0) ? c->h_counters->head : 0;
        c->sizes[l] = rows;
        off += nl;
        soff += rows;
    }
    CK(cudaEventRecord(c->ev[3], s));
    wait_stream(c);
    c->final_dev = c->fin.as<uint32_t>();
    c->timings[0] = kern_ms;
    c->timings[2] = elapsed(c->ev[0], c->ev[3]);
    c->timings[1] = c->timings[2] - kern_ms;
}

} // namespace
