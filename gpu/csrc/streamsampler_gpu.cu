// streamsampler_gpu.cu — the C ABI of streamsampler_gpu.h over the CUDA
// engines. See docs/GPU.md for the design and its tuning.
//
// The library is this one translation unit; its parts are headers by
// concept:
//
//   rng.cuh              DESIGN §3's random numbers (rng.Sample in Go)
//   sample_group.cuh     the group sampler both engines run per task
//   fused_engine.cuh     the fused engine: one persistent multi-hop kernel
//   frontier_bitmap.cuh  its bitmap dedup and sort-free result layout
//   task_queue.cuh       its task queue's counters
//   bsp_engine.cuh       the BSP engine: a launch and a sort+unique per hop
//   walk_engine.cuh      random walks: one kernel, a thread per walk
//   context.cuh          what an ssg_ctx holds: graph, workspace, staging,
//                        the watchdog waits
//   errors.cuh           CUDA and library errors, turned into SSG_* here
//
// Two engines produce the same epoch result; random numbers follow
// DESIGN §3 bit for bit.

#include "streamsampler_gpu.h"

#include "bsp_engine.cuh"
#include "context.cuh"
#include "errors.cuh"
#include "fused_engine.cuh"
#include "sample_group.cuh"
#include "walk_engine.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

// count_valid adds the number of non-negative entries of a to *out.
__global__ void count_valid(const int32_t *a, unsigned long long n, unsigned long long *out) {
    unsigned long long m = 0;
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
        m += a[i] >= 0;
    for (int o = 16; o > 0; o >>= 1) m += __shfl_down_sync(FULL, m, o);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(out, m);
}

} // namespace

// The opaque context of the C ABI.
struct ssg_ctx : Context {};

namespace {

template <class F> int guard(ssg_ctx *c, char *err, size_t err_len, F &&f) {
    if (c && c->broken) {
        set_err(err, err_len, "GPU context unusable after an earlier error: " + c->broken_msg);
        return SSG_ERR_BROKEN;
    }
    try {
        if (c) CK(cudaSetDevice(c->device));
        f();
        return SSG_OK;
    } catch (const CudaFail &x) {
        std::string m = fmt("CUDA error %s (%s) in %s", cudaGetErrorName(x.e), cudaGetErrorString(x.e),
                            x.what.c_str());
        if (c && sticky(x.e)) {
            c->broken = true;
            c->broken_msg = m;
        }
        set_err(err, err_len, m);
        return code_of(x.e);
    } catch (const Error &x) {
        set_err(err, err_len, x.msg);
        return x.code;
    } catch (const std::bad_alloc &) {
        set_err(err, err_len, "host out of memory");
        return SSG_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &x) {
        set_err(err, err_len, x.what());
        return SSG_ERR_CUDA;
    }
}

void free_ctx(ssg_ctx *c) {
    cudaSetDevice(c->device);
    if (c->stream) cudaStreamSynchronize(c->stream);
    for (Buf *b : {&c->q, &c->fin, &c->sampq, &c->bitmaps, &c->counters, &c->keys, &c->vals, &c->front, &c->samples,
                   &c->cand, &c->scand, &c->nsel, &c->temp, &c->eidq, &c->edges, &c->walk_starts, &c->walk_out})
        b->release();
    if (c->h_pinned) {
        cudaFreeHost(c->h_pinned);
    } else {
        if (c->d_indptr) cudaFree(c->d_indptr);
        if (c->d_indices) cudaFree(c->d_indices);
    }
    if (c->h_counters) cudaFreeHost(c->h_counters);
    if (c->h_stage) cudaFreeHost(c->h_stage);
    for (auto &e : c->ev)
        if (e) cudaEventDestroy(e);
    if (c->stream) cudaStreamDestroy(c->stream);
    delete c;
}

} // namespace

extern "C" {

int ssg_abi_version(void) { return SSG_ABI_VERSION; }

int ssg_device_count(int *count, char *err, size_t err_len) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (count) *count = (e == cudaSuccess) ? n : 0;
    if (e != cudaSuccess) {
        set_err(err, err_len, fmt("no CUDA device: cudaGetDeviceCount returned %d (%s: %s)", int(e),
                                  cudaGetErrorName(e), cudaGetErrorString(e)));
        return SSG_ERR_NO_DEVICE;
    }
    if (n == 0) {
        set_err(err, err_len, "no CUDA device: cudaGetDeviceCount returned 0 devices");
        return SSG_ERR_NO_DEVICE;
    }
    return SSG_OK;
}

int ssg_create_empty(int device, uint32_t num_nodes, uint64_t num_edges, const ssg_options *opts, ssg_ctx **out,
                     char *err, size_t err_len) {
    if (out) *out = nullptr;
    int ndev = 0;
    int rc = ssg_device_count(&ndev, err, err_len);
    if (rc != SSG_OK) return rc;
    if (device < 0 || device >= ndev) {
        set_err(err, err_len, fmt("no CUDA device %d: cudaGetDeviceCount returned %d device(s)", device, ndev));
        return SSG_ERR_NO_DEVICE;
    }
    if (!out || num_nodes >= 0x80000000u) {
        set_err(err, err_len, fmt("invalid graph: %u nodes (need < 2^31), out %p", num_nodes, (const void *)out));
        return SSG_ERR_INVALID;
    }
    ssg_ctx *c = new ssg_ctx();
    c->device = device;
    if (opts) c->opt = *opts;
    c->n = num_nodes;
    c->nnz = num_edges;
    rc = guard(c, err, err_len, [&] {
        CK(cudaGetDeviceProperties(&c->prop, device));
        CK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
        for (auto &e : c->ev) CK(cudaEventCreate(&e));
        CK(cudaHostAlloc(reinterpret_cast<void **>(&c->h_counters), sizeof(Counters), cudaHostAllocDefault));
        const size_t pbytes = (size_t(num_nodes) + 1) * 8;
        const size_t ibytes = size_t(num_edges) * 4;
        size_t free_b = 0, total_b = 0;
        CK(cudaMemGetInfo(&free_b, &total_b));
        // Keep room for the sampling workspace (queue, bitmaps, results).
        const size_t reserve = std::max<size_t>(size_t(1) << 30, total_b / 20);
        if (c->opt.uva) {
            void *h = nullptr;
            cudaError_t e = cudaHostAlloc(&h, pbytes + ibytes + 8, cudaHostAllocMapped);
            if (e != cudaSuccess)
                throw Error{SSG_ERR_OUT_OF_MEMORY,
                            fmt("--gpu-uva: cannot pin %.2f GiB of host memory for the CSR: %s",
                                double(pbytes + ibytes) / (1 << 30), cudaGetErrorString(e))};
            c->h_pinned = h;
            c->h_indices = reinterpret_cast<uint32_t *>(static_cast<char *>(h) + pbytes);
            void *dp = nullptr;
            CK(cudaHostGetDevicePointer(&dp, h, 0));
            c->d_indptr = static_cast<uint64_t *>(dp);
            c->d_indices = reinterpret_cast<uint32_t *>(static_cast<char *>(dp) + pbytes);
            c->uva = true;
        } else {
            if (pbytes + ibytes + reserve > free_b)
                throw Error{SSG_ERR_OUT_OF_MEMORY,
                            fmt("graph CSR needs %.2f GiB of GPU memory (+%.2f GiB workspace) but device %d (%s) has "
                                "%.2f GiB free: use --gpu-uva to keep it in pinned host memory",
                                double(pbytes + ibytes) / (1 << 30), double(reserve) / (1 << 30), device,
                                c->prop.name, double(free_b) / (1 << 30))};
            CK(cudaMalloc(&c->d_indptr, pbytes));
            CK(cudaMalloc(&c->d_indices, std::max<size_t>(ibytes, 4)));
        }
    });
    if (rc != SSG_OK) {
        free_ctx(c);
        return rc;
    }
    *out = c;
    return SSG_OK;
}

int ssg_load_indices(ssg_ctx *c, uint64_t first_edge, const uint32_t *indices, uint64_t count, char *err,
                     size_t err_len) {
    if (!c || (count > 0 && !indices)) {
        set_err(err, err_len, "invalid load: nil context or indices");
        return SSG_ERR_INVALID;
    }
    if (c->ready) {
        set_err(err, err_len, "invalid load: the graph is complete (ssg_load_indptr was called)");
        return SSG_ERR_INVALID;
    }
    if (first_edge != c->loaded || count > c->nnz - c->loaded) {
        set_err(err, err_len,
                fmt("invalid load: indices [%llu,%llu) but the next edge is %llu of %llu (indices come in order)",
                    (unsigned long long)first_edge, (unsigned long long)(first_edge + count),
                    (unsigned long long)c->loaded, (unsigned long long)c->nnz));
        return SSG_ERR_INVALID;
    }
    return guard(c, err, err_len, [&] { upload_indices(c, indices, count); });
}

int ssg_load_indptr(ssg_ctx *c, const uint64_t *indptr, uint64_t count, char *err, size_t err_len) {
    if (!c || !indptr || c->ready) {
        set_err(err, err_len, "invalid load: nil context or indptr, or the graph is complete");
        return SSG_ERR_INVALID;
    }
    const uint32_t n = c->n;
    if (count != uint64_t(n) + 1 || c->loaded != c->nnz) {
        set_err(err, err_len, fmt("invalid load: indptr of %llu entries after %llu of %llu edges, want %llu entries "
                                  "after all edges",
                                  (unsigned long long)count, (unsigned long long)c->loaded,
                                  (unsigned long long)c->nnz, (unsigned long long)n + 1));
        return SSG_ERR_INVALID;
    }
    if (indptr[0] != 0 || indptr[n] != c->nnz) {
        set_err(err, err_len, fmt("invalid CSR: indptr[0]=%llu and indptr[%u]=%llu, want 0 and %llu edges",
                                  (unsigned long long)indptr[0], n, (unsigned long long)indptr[n],
                                  (unsigned long long)c->nnz));
        return SSG_ERR_INVALID;
    }
    for (uint32_t v = 0; v < n; ++v) {
        if (indptr[v + 1] < indptr[v]) {
            set_err(err, err_len, fmt("invalid CSR: indptr[%u]=%llu < indptr[%u]=%llu", v + 1,
                                      (unsigned long long)indptr[v + 1], v, (unsigned long long)indptr[v]));
            return SSG_ERR_INVALID;
        }
    }
    return guard(c, err, err_len, [&] {
        const size_t pbytes = (size_t(n) + 1) * 8;
        if (c->uva) {
            std::memcpy(c->h_pinned, indptr, pbytes);
        } else {
            flush_upload(c);
            CK(cudaMemcpyAsync(c->d_indptr, indptr, pbytes, cudaMemcpyHostToDevice, c->stream));
            wait_stream(c);
        }
        c->ready = true;
    });
}

int ssg_create(int device, uint32_t num_nodes, const uint64_t *indptr, uint64_t num_edges, const uint32_t *indices,
               const ssg_options *opts, ssg_ctx **out, char *err, size_t err_len) {
    if (out) *out = nullptr;
    if (!out || !indptr || (num_edges > 0 && !indices)) {
        set_err(err, err_len, fmt("invalid graph: %u nodes (need < 2^31), indptr %p, indices %p", num_nodes,
                                  (const void *)indptr, (const void *)indices));
        return SSG_ERR_INVALID;
    }
    ssg_ctx *c = nullptr;
    int rc = ssg_create_empty(device, num_nodes, num_edges, opts, &c, err, err_len);
    if (rc == SSG_OK) rc = ssg_load_indices(c, 0, indices, num_edges, err, err_len);
    if (rc == SSG_OK) rc = ssg_load_indptr(c, indptr, uint64_t(num_nodes) + 1, err, err_len);
    if (rc != SSG_OK) {
        ssg_destroy(c);
        return rc;
    }
    *out = c;
    return SSG_OK;
}

void ssg_destroy(ssg_ctx *ctx) {
    if (ctx) free_ctx(ctx);
}

int ssg_info(ssg_ctx *c, char *name, size_t name_len, int32_t *uva, char *err, size_t err_len) {
    if (!c) {
        set_err(err, err_len, "nil context");
        return SSG_ERR_INVALID;
    }
    set_err(name, name_len, c->prop.name);
    if (uva) *uva = c->uva ? 1 : 0;
    return SSG_OK;
}

// sample_with_keys is ssg_sample and ssg_sample_keyed: layer l's key is
// keys[l] (nullptr: layer_key(seed, epoch, l)).
static int sample_with_keys(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t n_seeds,
                            const int32_t *fanouts, int32_t n_layers, const uint64_t *keys, uint64_t seed,
                            uint32_t epoch, int32_t replace, uint64_t *counts, uint64_t counts_cap, char *err,
                            size_t err_len) {
    if (!c) {
        set_err(err, err_len, "nil context");
        return SSG_ERR_INVALID;
    }
    // Whatever happens below, the previous result is gone: a fetch sized
    // from the caller's old counts must not see a half-written new one.
    c->counts.clear();
    if (!c->ready) {
        set_err(err, err_len, "graph not loaded: ssg_load_indptr has not completed it");
        return SSG_ERR_INVALID;
    }
    if (n_layers < 1 || n_layers > MAX_LAYERS || !fanouts || (n_seeds > 0 && !seeds) ||
        (mode != SSG_MODE_FUSED && mode != SSG_MODE_BSP)) {
        set_err(err, err_len, fmt("invalid request: %d layers (want 1..%d), mode %d", n_layers, MAX_LAYERS, mode));
        return SSG_ERR_INVALID;
    }
    if (counts && counts_cap < uint64_t(n_layers) + 1) {
        set_err(err, err_len, fmt("counts array too small: %d layers need %d counts, capacity %llu", n_layers,
                                  n_layers + 1, (unsigned long long)counts_cap));
        return SSG_ERR_INVALID;
    }
    bool full = false;
    for (int l = 0; l < n_layers; ++l) {
        full = full || fanouts[l] == SSG_FANOUT_ALL;
        if (fanouts[l] != SSG_FANOUT_ALL && (fanouts[l] < 1 || fanouts[l] > MAX_FANOUT)) {
            set_err(err, err_len,
                    fmt("fanout of layer %d is %d, want 1..%d or %d (every neighbor)", l, fanouts[l], MAX_FANOUT,
                        SSG_FANOUT_ALL));
            return SSG_ERR_INVALID;
        }
    }
    std::vector<uint64_t> lkeys(n_layers);
    for (int l = 0; l < n_layers; ++l) lkeys[l] = keys ? keys[l] : layer_key(seed, epoch, l);
    const int rc = guard(c, err, err_len, [&] {
        c->L = n_layers;
        c->fanouts.assign(fanouts, fanouts + n_layers);
        c->n_offsets = 0;
        check_seeds(c, seeds, n_seeds);
        // The fused engine's task slots hold a fixed fanout: an epoch with
        // a full layer runs on the BSP engine (ssg_sample's comment).
        if (mode == SSG_MODE_FUSED && !full) {
            sample_fused(c, seeds, n_seeds, lkeys.data(), replace);
            c->sizes.assign(n_layers, 0);
            for (int l = 0; l < n_layers; ++l) c->sizes[l] = c->counts[l] * uint64_t(fanouts[l]);
        } else {
            sample_bsp(c, seeds, n_seeds, lkeys.data(), replace);
        }
        if (counts)
            for (int l = 0; l <= n_layers; ++l) counts[l] = c->counts[l];
    });
    // sample_bsp fills counts hop by hop: a failure half-way must not leave
    // a partial result for ssg_fetch.
    if (rc != SSG_OK) c->counts.clear();
    return rc;
}

int ssg_sample(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t n_seeds, const int32_t *fanouts,
               int32_t n_layers, uint64_t seed, uint32_t epoch, int32_t replace, uint64_t *counts,
               uint64_t counts_cap, char *err, size_t err_len) {
    return sample_with_keys(c, mode, seeds, n_seeds, fanouts, n_layers, nullptr, seed, epoch, replace, counts,
                            counts_cap, err, err_len);
}

int ssg_sample_keyed(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t n_seeds, const int32_t *fanouts,
                     int32_t n_layers, const uint64_t *keys, int32_t replace, uint64_t *counts, uint64_t counts_cap,
                     char *err, size_t err_len) {
    if (!keys) {
        if (c) c->counts.clear();
        set_err(err, err_len, "invalid request: no layer keys");
        return SSG_ERR_INVALID;
    }
    return sample_with_keys(c, mode, seeds, n_seeds, fanouts, n_layers, keys, 0, 0, replace, counts, counts_cap, err,
                            err_len);
}

// sample_words is the last result's sample words, all layers together.
static uint64_t sample_words(const Context *c) {
    uint64_t ns = 0;
    for (uint64_t w : c->sizes) ns += w;
    return ns;
}

int ssg_layer_sizes(ssg_ctx *c, uint64_t *sizes, uint64_t sizes_cap, char *err, size_t err_len) {
    if (!c || c->counts.empty()) {
        set_err(err, err_len, "no result: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    if (!sizes || sizes_cap < uint64_t(c->L)) {
        set_err(err, err_len,
                fmt("sizes array too small: the last ssg_sample has %d layers, capacity %llu", c->L,
                    (unsigned long long)(sizes ? sizes_cap : 0)));
        return SSG_ERR_INVALID;
    }
    for (int l = 0; l < c->L; ++l) sizes[l] = c->sizes[l];
    return SSG_OK;
}

int ssg_fetch_offsets(ssg_ctx *c, int64_t *offsets, uint64_t offsets_cap, char *err, size_t err_len) {
    if (!c || c->counts.empty()) {
        set_err(err, err_len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    const uint64_t need = c->n_offsets;
    if (need > 0 && (!offsets || offsets_cap < need)) {
        set_err(err, err_len,
                fmt("offsets array too small: the last ssg_sample's full layers need %llu elements, capacity %llu",
                    (unsigned long long)need, (unsigned long long)(offsets ? offsets_cap : 0)));
        return SSG_ERR_INVALID;
    }
    return guard(c, err, err_len, [&] {
        if (need) copy_out(c, offsets, c->full_off.p, need * 8);
    });
}

int ssg_fetch(ssg_ctx *c, uint32_t *frontiers, uint64_t frontiers_cap, int32_t *samples, uint64_t samples_cap,
              uint32_t *final_, uint64_t final_cap, char *err, size_t err_len) {
    if (!c || c->counts.empty()) {
        set_err(err, err_len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    const int L = c->L;
    uint64_t nf = 0;
    for (int l = 0; l < L; ++l) nf += c->counts[l];
    const uint64_t ns = sample_words(c);
    // Check every array before writing any: the sizes come from this
    // context's last ssg_sample, which need not be the call the caller
    // sized its arrays from.
    struct {
        const void *p;
        uint64_t need, cap;
        const char *name;
    } outs[3] = {{frontiers, nf, frontiers_cap, "frontiers"},
                 {samples, ns, samples_cap, "samples"},
                 {final_, c->counts[L], final_cap, "final"}};
    for (const auto &o : outs) {
        if (o.p && o.cap < o.need) {
            set_err(err, err_len,
                    fmt("%s array too small: the last ssg_sample's result needs %llu elements, capacity %llu", o.name,
                        (unsigned long long)o.need, (unsigned long long)o.cap));
            return SSG_ERR_INVALID;
        }
    }
    return guard(c, err, err_len, [&] {
        if (frontiers) copy_out(c, frontiers, c->front.p, nf * 4);
        if (samples) copy_out(c, samples, c->samples.p, ns * 4);
        if (final_) copy_out(c, final_, c->final_dev, c->counts[L] * 4);
    });
}

int ssg_fetch_edges(ssg_ctx *c, int64_t *edge_ids, uint64_t edge_ids_cap, char *err, size_t err_len) {
    if (!c || c->counts.empty()) {
        set_err(err, err_len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    if (!c->opt.edge_ids) {
        set_err(err, err_len, "no edge ids: the context was created without ssg_options.edge_ids");
        return SSG_ERR_INVALID;
    }
    const uint64_t ns = sample_words(c);
    if (ns > 0 && (!edge_ids || edge_ids_cap < ns)) {
        set_err(err, err_len,
                fmt("edge_ids array too small: the last ssg_sample's result needs %llu elements, capacity %llu",
                    (unsigned long long)ns, (unsigned long long)(edge_ids ? edge_ids_cap : 0)));
        return SSG_ERR_INVALID;
    }
    return guard(c, err, err_len, [&] {
        if (ns) copy_out(c, edge_ids, c->edges.p, ns * 8);
    });
}

int ssg_count_edges(ssg_ctx *c, uint64_t *edges, char *err, size_t err_len) {
    if (!c || c->counts.empty() || !edges) {
        set_err(err, err_len, "no result to count: call ssg_sample first");
        return SSG_ERR_INVALID;
    }
    return guard(c, err, err_len, [&] {
        const uint64_t ns = sample_words(c);
        c->nsel.need(64);
        CK(cudaMemsetAsync(c->nsel.p, 0, 8, c->stream));
        if (ns) {
            count_valid<<<c->prop.multiProcessorCount * 8, 256, 0, c->stream>>>(c->samples.as<int32_t>(), ns,
                                                                               c->nsel.as<unsigned long long>());
            check_launch("count_valid launch");
        }
        CK(cudaMemcpyAsync(c->h_counters, c->nsel.p, 8, cudaMemcpyDeviceToHost, c->stream));
        wait_stream(c);
        *edges = c->h_counters->head;
    });
}

int ssg_walk(ssg_ctx *c, int32_t mode, const uint32_t *starts, uint64_t n_starts, uint32_t walks_per_node,
             uint32_t length, uint64_t seed, uint64_t restart_threshold, int32_t stop_at_restart, uint64_t t_return,
             uint64_t t_near, uint64_t t_far, int32_t *out, uint64_t out_cap, char *err, size_t err_len) {
    if (!c) {
        set_err(err, err_len, "nil context");
        return SSG_ERR_INVALID;
    }
    if (!c->ready) {
        set_err(err, err_len, "graph not loaded: ssg_load_indptr has not completed it");
        return SSG_ERR_INVALID;
    }
    if (mode != SSG_WALK_DEEPWALK && mode != SSG_WALK_PPR && mode != SSG_WALK_NODE2VEC) {
        set_err(err, err_len, fmt("invalid walk: mode %d, want %d (deepwalk), %d (ppr) or %d (node2vec)", mode,
                                  SSG_WALK_DEEPWALK, SSG_WALK_PPR, SSG_WALK_NODE2VEC));
        return SSG_ERR_INVALID;
    }
    if (length < 1 || walks_per_node < 1 || (n_starts > 0 && !starts)) {
        set_err(err, err_len, fmt("invalid walk: length %u and %u walks per node (want >= 1 each), starts %p",
                                  length, walks_per_node, (const void *)starts));
        return SSG_ERR_INVALID;
    }
    const uint64_t one = uint64_t(1) << 32;
    if (restart_threshold > one || t_return > one || t_near > one || t_far > one) {
        set_err(err, err_len,
                fmt("invalid walk: thresholds restart %llu, return %llu, near %llu, far %llu: want 0..2^32",
                    (unsigned long long)restart_threshold, (unsigned long long)t_return,
                    (unsigned long long)t_near, (unsigned long long)t_far));
        return SSG_ERR_INVALID;
    }
    // W < 2^32 (walk ids are uint32), so W·(L+1) < 2^64.
    if (n_starts > 0xffffffffull / walks_per_node) {
        set_err(err, err_len, fmt("invalid walk: %llu starts x %u walks per node is over %llu walks",
                                  (unsigned long long)n_starts, walks_per_node, 0xffffffffull));
        return SSG_ERR_INVALID;
    }
    const uint64_t W = n_starts * walks_per_node, need = W * (uint64_t(length) + 1);
    if (need > 0 && (!out || out_cap < need)) {
        set_err(err, err_len,
                fmt("out array too small: %llu walks of %llu nodes need %llu elements, capacity %llu",
                    (unsigned long long)W, (unsigned long long)length + 1, (unsigned long long)need,
                    (unsigned long long)(out ? out_cap : 0)));
        return SSG_ERR_INVALID;
    }
    for (uint64_t i = 0; i < n_starts; ++i) {
        if (starts[i] >= c->n) {
            set_err(err, err_len, fmt("start %u (position %llu) is not a node: graph has %u nodes", starts[i],
                                      (unsigned long long)i, c->n));
            return SSG_ERR_INVALID;
        }
    }
    return guard(c, err, err_len, [&] {
        WalkArgs a{};
        a.n_starts = uint32_t(n_starts);
        a.length = length;
        a.seed = seed;
        a.mode = mode;
        a.stop_at_restart = stop_at_restart;
        a.restart = restart_threshold;
        a.t_return = t_return;
        a.t_near = t_near;
        a.t_far = t_far;
        walk_gpu(c, a, starts, n_starts, W, out);
    });
}

int ssg_last_timings(ssg_ctx *c, double *out, int n) {
    if (!c || !out) return 0;
    int m = std::min(n, 3);
    for (int i = 0; i < m; ++i) out[i] = c->timings[i];
    return m;
}

} // extern "C"
