// context.cuh — Context, the state behind an ssg_ctx: the graph's CSR on
// the device (or pinned for UVA), the stream and events, the workspace
// buffers that grow on demand and are kept between calls, pinned staging
// for copies, the watchdog waits, and the last result that ssg_fetch copies.
#pragma once

#include "errors.cuh"
#include "streamsampler_gpu.h"
#include "task_queue.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Buf {
    void *p = nullptr;
    size_t cap = 0;
    // need grows the buffer to at least bytes; true if it reallocated.
    bool need(size_t bytes) {
        if (bytes <= cap) return false;
        if (p) cudaFree(p);
        p = nullptr;
        cap = 0;
        size_t want = std::max<size_t>(bytes + bytes / 4, 1 << 16);
        CK(cudaMalloc(&p, want));
        cap = want;
        return true;
    }
    // grow is need that keeps the first cap bytes (copied on stream s,
    // which the old buffer's free then waits for): for results that grow
    // layer by layer, as a full layer's rows do.
    bool grow(size_t bytes, cudaStream_t s) {
        if (bytes <= cap) return false;
        void *q = nullptr;
        const size_t want = std::max<size_t>(bytes + bytes / 4, 1 << 16);
        CK(cudaMalloc(&q, want));
        if (p) {
            CK(cudaMemcpyAsync(q, p, cap, cudaMemcpyDeviceToDevice, s));
            CK(cudaStreamSynchronize(s));
            cudaFree(p);
        }
        p = q;
        cap = want;
        return true;
    }
    template <class T> T *as() const { return static_cast<T *>(p); }
    void release() {
        if (p) cudaFree(p);
        p = nullptr;
        cap = 0;
    }
};

// Context is the state behind an ssg_ctx: streamsampler_gpu.cu defines
// ssg_ctx, the type the C header names, as a Context (a type with linkage
// cannot be defined in a header from the parts of an unnamed namespace).
struct Context {
    int device = 0;
    cudaDeviceProp prop{};
    ssg_options opt{};
    uint32_t n = 0;
    uint64_t nnz = 0;
    bool uva = false;
    uint64_t *d_indptr = nullptr;
    uint32_t *d_indices = nullptr;
    void *h_pinned = nullptr; // UVA: indptr then indices
    uint32_t *h_indices = nullptr; // UVA: the indices' host view in h_pinned

    // Loading (ssg_create_empty, ssg_load_indices, ssg_load_indptr): the
    // graph is usable once ready. Indices arrive in order; `loaded` counts
    // them. Device mode: they are gathered into one half of the pinned
    // staging buffer while the other half's copy to the GPU runs (ev[6],
    // ev[7] mark each half's copy); up_first is the first edge of the half
    // being filled, up_fill its bytes so far.
    bool ready = false;
    uint64_t loaded = 0;
    uint64_t up_first = 0;
    size_t up_fill = 0;
    int up_half = 0;
    cudaStream_t stream = nullptr;
    cudaEvent_t ev[8] = {};
    bool broken = false;
    std::string broken_msg;

    // Workspace, grown on demand and kept between calls.
    // fused: q, sampq, bitmaps, counters (+ layer keys, fanouts), keys/vals
    // (popcounts and their scan), cand (seeds), front, samples;
    // bsp: front, samples, cand, scand, fin, nsel, counters; both: temp,
    // and with opt.edge_ids edges (int64 per sample; fused: eidq per task
    // slot too).
    // full_off: the full layers' row offsets (int64, counts[l]+1 a layer).
    Buf q, fin, sampq, bitmaps, counters, keys, vals, front, samples, cand, scand, nsel, temp, eidq, edges, full_off;
    // ssg_walk: the start nodes and one launch's rows (walk_engine.cuh);
    // a walk leaves the last ssg_sample result alone.
    Buf walk_starts, walk_out;
    Counters *h_counters = nullptr; // pinned
    void *h_stage = nullptr;         // pinned staging for uploads
    size_t h_stage_cap = 0;

    // Last result.
    int L = 0;
    std::vector<int32_t> fanouts;
    std::vector<uint64_t> counts;
    std::vector<uint64_t> sizes;  // sample words per layer (ssg_layer_sizes)
    uint64_t n_offsets = 0;       // entries of full_off in use
    const uint32_t *final_dev = nullptr; // fused: sorted in scand; bsp: fin
    double timings[3] = {0, 0, 0};
};

void wait_stream(Context *c) {
    // Poll rather than block so that a runaway kernel becomes an error.
    const auto t0 = std::chrono::steady_clock::now();
    const int timeout = c->opt.timeout_ms > 0 ? c->opt.timeout_ms : 60000;
    for (int spin = 0;; ++spin) {
        cudaError_t e = cudaStreamQuery(c->stream);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) throw CudaFail{e, "cudaStreamQuery (kernel execution)"};
        const auto el = std::chrono::steady_clock::now() - t0;
        if (std::chrono::duration_cast<std::chrono::milliseconds>(el).count() > timeout) {
            c->broken = true;
            c->broken_msg = fmt("GPU work did not finish within %d ms (watchdog); the context is unusable", timeout);
            throw Error{SSG_ERR_TIMEOUT, c->broken_msg};
        }
        if (spin < 20000) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
}

// wait_event is wait_stream for one event.
void wait_event(Context *c, cudaEvent_t ev) {
    const auto t0 = std::chrono::steady_clock::now();
    const int timeout = c->opt.timeout_ms > 0 ? c->opt.timeout_ms : 60000;
    for (int spin = 0;; ++spin) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) throw CudaFail{e, "cudaEventQuery (copy to host)"};
        if (std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count() >
            timeout) {
            c->broken = true;
            c->broken_msg = fmt("GPU copy did not finish within %d ms (watchdog); the context is unusable", timeout);
            throw Error{SSG_ERR_TIMEOUT, c->broken_msg};
        }
        if (spin < 20000) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
}

int launch_blocks(unsigned long long items, int block) {
    unsigned long long b = (items + block - 1) / block;
    if (b < 1) b = 1;
    if (b > 65535ull * 16) b = 65535ull * 16;
    return static_cast<int>(b);
}

// Threads per block: a multiple of 32 (every warp is whole), 32..1024.
int block_size(const Context *c) {
    int b = c->opt.block_size > 0 ? c->opt.block_size : 512;
    b = (b + 31) / 32 * 32;
    return std::min(1024, std::max(32, b));
}

float elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

// stage returns pinned host memory of at least bytes, kept between calls.
void *stage(Context *c, size_t bytes) {
    if (bytes > c->h_stage_cap) {
        if (c->h_stage) cudaFreeHost(c->h_stage);
        c->h_stage = nullptr;
        c->h_stage_cap = 0;
        const size_t want = std::max<size_t>(bytes + bytes / 4, 1 << 16);
        CK(cudaHostAlloc(&c->h_stage, want, cudaHostAllocDefault));
        c->h_stage_cap = want;
    }
    return c->h_stage;
}

// copy_out copies device memory to (pageable) host memory through two
// pinned chunks, so that the DMA runs at pinned speed and overlaps the
// host-side copy.
void copy_out(Context *c, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return;
    const size_t chunk = size_t(8) << 20;
    char *buf = static_cast<char *>(stage(c, 2 * chunk));
    const size_t nchunks = (bytes + chunk - 1) / chunk;
    auto issue = [&](size_t i) {
        const size_t off = i * chunk, n = std::min(chunk, bytes - off);
        CK(cudaMemcpyAsync(buf + (i & 1) * chunk, static_cast<const char *>(src) + off, n, cudaMemcpyDeviceToHost,
                           c->stream));
        CK(cudaEventRecord(c->ev[4 + (i & 1)], c->stream));
    };
    issue(0);
    for (size_t i = 0; i < nchunks; ++i) {
        if (i + 1 < nchunks) issue(i + 1);
        wait_event(c, c->ev[4 + (i & 1)]);
        const size_t off = i * chunk, n = std::min(chunk, bytes - off);
        std::memcpy(static_cast<char *>(dst) + off, buf + (i & 1) * chunk, n);
    }
}

// Upload staging: two halves of this many bytes (a multiple of 4).
constexpr size_t kUploadHalf = size_t(8) << 20;

// flush_upload starts the copy of the half being filled to the GPU and
// switches to the other half.
void flush_upload(Context *c) {
    if (c->up_fill == 0) return;
    char *buf = static_cast<char *>(c->h_stage) + size_t(c->up_half) * kUploadHalf;
    CK(cudaMemcpyAsync(c->d_indices + c->up_first, buf, c->up_fill, cudaMemcpyHostToDevice, c->stream));
    CK(cudaEventRecord(c->ev[6 + c->up_half], c->stream));
    c->up_first += c->up_fill / 4;
    c->up_fill = 0;
    c->up_half ^= 1;
}

// upload_indices appends n neighbor ids to the graph: straight into the
// pinned CSR (UVA), or through the pinned staging halves to the GPU, so
// that the DMA runs at pinned speed from pageable (memory-mapped) sources
// and overlaps the next memcpy. The copies may still run on return; the
// caller's array is no longer needed (the bytes are staged).
void upload_indices(Context *c, const uint32_t *src, uint64_t n) {
    if (c->uva) {
        std::memcpy(c->h_indices + c->loaded, src, n * 4);
        c->loaded += n;
        return;
    }
    char *buf = static_cast<char *>(stage(c, 2 * kUploadHalf));
    while (n > 0) {
        // A half is reused only after its previous copy has finished (an
        // event never recorded counts as finished).
        if (c->up_fill == 0) wait_event(c, c->ev[6 + c->up_half]);
        const uint64_t room = (kUploadHalf - c->up_fill) / 4;
        const uint64_t m = std::min<uint64_t>(n, room);
        std::memcpy(buf + size_t(c->up_half) * kUploadHalf + c->up_fill, src, m * 4);
        c->up_fill += m * 4;
        c->loaded += m;
        src += m;
        n -= m;
        if (c->up_fill == kUploadHalf) flush_upload(c);
    }
}

// check_seeds rejects a seed that is not a node (one pass, no sort: the
// engines deduplicate on the GPU).
void check_seeds(Context *c, const uint32_t *seeds, uint64_t n) {
    uint32_t mx = 0;
    for (uint64_t i = 0; i < n; ++i) mx = std::max(mx, seeds[i]);
    if (n && mx >= c->n) {
        uint64_t i = 0;
        while (seeds[i] < c->n) ++i;
        throw Error{SSG_ERR_INVALID,
                    fmt("seed %u (position %llu) is not a node: graph has %u nodes", seeds[i], (unsigned long long)i, c->n)};
    }
}

// Per-hop upper bounds on frontier sizes.
std::vector<uint64_t> caps_for(uint64_t n0, const std::vector<int32_t> &fan, uint64_t n) {
    std::vector<uint64_t> cap(fan.size() + 1);
    cap[0] = n0;
    for (size_t l = 0; l < fan.size(); ++l) {
        if (fan[l] == SSG_FANOUT_ALL) { // no bound below n: sized when sampled
            cap[l + 1] = n;
            continue;
        }
        const double next = double(cap[l]) * double(1 + fan[l]);
        cap[l + 1] = next > double(n) ? n : std::min<uint64_t>(n, cap[l] * uint64_t(1 + fan[l]));
    }
    return cap;
}

} // namespace
