// streamsampler_gpu.cu — CUDA neighbor sampling behind the C ABI of
// streamsampler_gpu.h. See docs/GPU.md for the design and its tuning.
//
// Two engines produce the same epoch result:
//
//  * fused: one persistent kernel (PGSampler-style). Only as many blocks as
//    fit on the SMs are launched. A global queue holds (hop, vertex) tasks;
//    a block claims up to fetch_size tasks at a time (head/tail atomics),
//    samples each with a group of lanes, writes the row to a per-task slot,
//    and pushes the vertex itself and its new neighbors as hop+1 tasks,
//    deduplicated by a per-hop bitmap (atomicOr). Blocks stop when every
//    pushed task is done. Bitmap h then holds exactly frontier_h: a
//    popcount + CUB exclusive scan + compaction gives every sorted frontier
//    and each node's row (its rank in the bitmap), with no sort at all.
//  * bsp: one launch per hop over the sorted frontier, then CUB sort +
//    unique of frontier ∪ samples for the next hop (what DGL does); one
//    host synchronisation per hop to learn the next frontier's size.
//
// Random numbers follow DESIGN §3 bit for bit (rng.Sample in Go).

#include "streamsampler_gpu.h"

#include <cuda_runtime.h>
#include <cub/cub.cuh>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr unsigned FULL = 0xffffffffu;
constexpr unsigned long long SENTINEL = ~0ull;
constexpr uint32_t INVALID = 0xffffffffu;
constexpr int MAX_LAYERS = 255;
constexpr int MAX_FANOUT = 64;

// ---------------------------------------------------------------- RNG (§3)

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

// ---------------------------------------------------------------- kernels

struct DevGraph {
    const uint64_t *indptr;
    const uint32_t *indices;
    uint32_t n;
};

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

// sample_group samples one task (vertex v, fanout k) with the G lanes of a
// group; lane gl of the group owns slots t = gl + r*G, r < R. On return
// nb[r] is the neighbor id of slot t or INVALID (empty slot, or t >= k).
// Every lane of the warp must call it (shuffles and ballots span the warp);
// kloop is a warp-uniform bound >= every group's k.
template <int G, int R>
__device__ __forceinline__ void sample_group(const DevGraph &g, uint32_t v, bool has, int k,
                                             uint64_t key, bool replace, int gl, int lane,
                                             int kloop, uint32_t (&nb)[R]) {
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
    }
}

struct FusedParams {
    DevGraph g;
    const uint64_t *keys;   // per layer
    const int32_t *fanouts; // per layer
    int L, kmax, replace, fetch;
    unsigned long long *q;  // task queue: hop<<32 | vertex, SENTINEL until written
    int32_t *sampq;         // per task slot: kmax samples
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

// test_and_set returns true if this call set u's bit in bm (first insert).
__device__ __forceinline__ bool test_and_set(uint32_t *bm, uint32_t u) {
    const uint32_t bit = 1u << (u & 31);
    uint32_t *w = bm + (u >> 5);
    // A plain L2 read first: most candidates of a dense frontier are
    // duplicates, and a read is cheaper than an atomic.
    if (__ldcg(w) & bit) return false;
    return (atomicOr(w, bit) & bit) == 0;
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
            sample_group<G, R>(P.g, v, has, k, key, P.replace != 0, gl, lane, P.kmax, nb);
            const unsigned long long slot = start + i;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int t = gl + r * G;
                if (has && t < k) P.sampq[slot * P.kmax + t] = static_cast<int32_t>(nb[r]);
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

// bsp_kernel samples the n nodes of a sorted frontier with fanout k,
// writing rows in frontier order, and fills cand with frontier ∪ samples
// (empty slots become `none`, which sorts after every node id).
template <int G, int R>
__global__ void bsp_kernel(DevGraph g, const uint32_t *front, unsigned long long n, int k,
                           uint64_t key, int replace, int32_t *samples, uint32_t *cand,
                           uint32_t none) {
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
        sample_group<G, R>(g, v, has, k, key, replace != 0, gl, lane, k, nb);
        if (has) {
            if (gl == 0) cand[i] = v;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int t = gl + r * G;
                if (t < k) {
                    samples[i * k + t] = static_cast<int32_t>(nb[r]);
                    cand[n + i * k + t] = (nb[r] == INVALID) ? none : nb[r];
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
// in frontier order (the rank of its vertex in its hop's bitmap). One
// thread per sample slot, so reads and writes are contiguous per row.
__global__ void place_rows(const unsigned long long *q, Counters *c, const int32_t *fanouts, int L, int kmax,
                           const int32_t *sampq, const uint32_t *bm, unsigned long long W,
                           const unsigned long long *off, int32_t *samples) {
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
    }
}

// count_valid adds the number of non-negative entries of a to *out.
__global__ void count_valid(const int32_t *a, unsigned long long n, unsigned long long *out) {
    unsigned long long m = 0;
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
        m += a[i] >= 0;
    for (int o = 16; o > 0; o >>= 1) m += __shfl_down_sync(FULL, m, o);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(out, m);
}

// ---------------------------------------------------------------- host side

int bit_len(unsigned long long x) {
    int b = 0;
    while (x) {
        ++b;
        x >>= 1;
    }
    return b;
}

struct Error {
    int code;
    std::string msg;
};

int code_of(cudaError_t e) {
    switch (e) {
    case cudaErrorMemoryAllocation:
        return SSG_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
        return SSG_ERR_NO_DEVICE;
    default:
        return SSG_ERR_CUDA;
    }
}

// Sticky errors leave the CUDA context unusable: every later call fails.
bool sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorInvalidPc:
        return true;
    default:
        return false;
    }
}

void set_err(char *err, size_t len, const std::string &m) {
    if (!err || len == 0) return;
    const size_t n = std::min(len - 1, m.size());
    std::memcpy(err, m.data(), n);
    err[n] = 0;
}

std::string fmt(const char *f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

struct CudaFail {
    cudaError_t e;
    std::string what;
};

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) throw CudaFail{e_, #call};                            \
    } while (0)

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
    template <class T> T *as() const { return static_cast<T *>(p); }
    void release() {
        if (p) cudaFree(p);
        p = nullptr;
        cap = 0;
    }
};

} // namespace

struct ssg_ctx {
    int device = 0;
    cudaDeviceProp prop{};
    ssg_options opt{};
    uint32_t n = 0;
    uint64_t nnz = 0;
    bool uva = false;
    uint64_t *d_indptr = nullptr;
    uint32_t *d_indices = nullptr;
    void *h_pinned = nullptr; // UVA: indptr then indices
    cudaStream_t stream = nullptr;
    cudaEvent_t ev[8] = {};
    bool broken = false;
    std::string broken_msg;

    // Workspace, grown on demand and kept between calls.
    // fused: q, sampq, bitmaps, counters (+ layer keys, fanouts), keys/vals
    // (popcounts and their scan), cand (seeds), front, samples;
    // bsp: front, samples, cand, scand, fin, nsel, counters; both: temp.
    Buf q, fin, sampq, bitmaps, counters, keys, vals, front, samples, cand, scand, nsel, temp;
    Counters *h_counters = nullptr; // pinned
    void *h_stage = nullptr;         // pinned staging for uploads
    size_t h_stage_cap = 0;

    // Last result.
    int L = 0;
    std::vector<int32_t> fanouts;
    std::vector<uint64_t> counts;
    const uint32_t *final_dev = nullptr; // fused: sorted in scand; bsp: fin
    double timings[3] = {0, 0, 0};
};

namespace {

void wait_stream(ssg_ctx *c) {
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
void wait_event(ssg_ctx *c, cudaEvent_t ev) {
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

void check_launch(const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) throw CudaFail{e, what};
}

int launch_blocks(unsigned long long items, int block) {
    unsigned long long b = (items + block - 1) / block;
    if (b < 1) b = 1;
    if (b > 65535ull * 16) b = 65535ull * 16;
    return static_cast<int>(b);
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

template <int G, int R> void launch_fused_t(ssg_ctx *c, const FusedParams &P, int block, size_t smem) {
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

void launch_fused(ssg_ctx *c, const FusedParams &P, int G, int R, int block, size_t smem) {
    if (R > 1) return launch_fused_t<32, 2>(c, P, block, smem);
    switch (G) {
    case 2: return launch_fused_t<2, 1>(c, P, block, smem);
    case 4: return launch_fused_t<4, 1>(c, P, block, smem);
    case 8: return launch_fused_t<8, 1>(c, P, block, smem);
    case 16: return launch_fused_t<16, 1>(c, P, block, smem);
    default: return launch_fused_t<32, 1>(c, P, block, smem);
    }
}

template <int G, int R>
void launch_bsp_t(ssg_ctx *c, DevGraph g, const uint32_t *front, unsigned long long n, int k, uint64_t key,
                  int replace, int32_t *samples, uint32_t *cand, uint32_t none, int block) {
    const unsigned long long warps = (n * G + 31) / 32;
    bsp_kernel<G, R><<<launch_blocks(warps * 32, block), block, 0, c->stream>>>(g, front, n, k, key, replace,
                                                                                samples, cand, none);
    check_launch("bsp_kernel launch");
}

void launch_bsp(ssg_ctx *c, int G, int R, DevGraph g, const uint32_t *front, unsigned long long n, int k,
                uint64_t key, int replace, int32_t *samples, uint32_t *cand, uint32_t none, int block) {
    if (R > 1) return launch_bsp_t<32, 2>(c, g, front, n, k, key, replace, samples, cand, none, block);
    switch (G) {
    case 2: return launch_bsp_t<2, 1>(c, g, front, n, k, key, replace, samples, cand, none, block);
    case 4: return launch_bsp_t<4, 1>(c, g, front, n, k, key, replace, samples, cand, none, block);
    case 8: return launch_bsp_t<8, 1>(c, g, front, n, k, key, replace, samples, cand, none, block);
    case 16: return launch_bsp_t<16, 1>(c, g, front, n, k, key, replace, samples, cand, none, block);
    default: return launch_bsp_t<32, 1>(c, g, front, n, k, key, replace, samples, cand, none, block);
    }
}

// Threads per block: a multiple of 32 (every warp is whole), 32..1024.
int block_size(const ssg_ctx *c) {
    int b = c->opt.block_size > 0 ? c->opt.block_size : 512;
    b = (b + 31) / 32 * 32;
    return std::min(1024, std::max(32, b));
}

float elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

// check_seeds rejects a seed that is not a node (one pass, no sort: the
// engines deduplicate on the GPU).
// stage returns pinned host memory of at least bytes, kept between calls.
void *stage(ssg_ctx *c, size_t bytes) {
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
void copy_out(ssg_ctx *c, void *dst, const void *src, size_t bytes) {
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

void check_seeds(ssg_ctx *c, const uint32_t *seeds, uint64_t n) {
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
        const double next = double(cap[l]) * double(1 + fan[l]);
        cap[l + 1] = next > double(n) ? n : std::min<uint64_t>(n, cap[l] * uint64_t(1 + fan[l]));
    }
    return cap;
}

void sample_fused(ssg_ctx *c, const uint32_t *seeds, uint64_t n_seeds, uint64_t seed, uint32_t epoch, int replace) {
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
    // One H2D copy for counters, layer keys and fanouts; one for the seeds.
    const size_t pbytes = sizeof(Counters) + size_t(L) * 12;
    c->counters.need(pbytes);
    c->cand.need(n_seeds * 4 + 4);
    char *h = static_cast<char *>(stage(c, pbytes + n_seeds * 4));
    Counters *hc = reinterpret_cast<Counters *>(h);
    std::memset(hc, 0, sizeof(Counters));
    uint64_t *hkeys = reinterpret_cast<uint64_t *>(h + sizeof(Counters));
    int32_t *hfan = reinterpret_cast<int32_t *>(h + sizeof(Counters) + size_t(L) * 8);
    for (int l = 0; l < L; ++l) {
        hkeys[l] = layer_key(seed, epoch, l);
        hfan[l] = fan[l];
    }
    std::memcpy(h + pbytes, seeds, n_seeds * 4);

    CK(cudaEventRecord(c->ev[0], s));
    CK(cudaMemcpyAsync(c->counters.p, h, pbytes, cudaMemcpyHostToDevice, s));
    if (n_seeds) CK(cudaMemcpyAsync(c->cand.p, h + pbytes, n_seeds * 4, cudaMemcpyHostToDevice, s));
    CK(cudaMemsetAsync(c->q.p, 0xff, qcap * 8, s)); // every slot SENTINEL until written
    CK(cudaMemsetAsync(c->bitmaps.p, 0, nw * 4, s));
    char *dparams = c->counters.as<char>();
    Counters *dc = reinterpret_cast<Counters *>(dparams);
    const int32_t *dfan = reinterpret_cast<const int32_t *>(dparams + sizeof(Counters) + size_t(L) * 8);

    FusedParams P;
    P.g = DevGraph{c->d_indptr, c->d_indices, c->n};
    P.keys = reinterpret_cast<const uint64_t *>(dparams + sizeof(Counters));
    P.fanouts = dfan;
    P.L = L;
    P.kmax = kmax;
    P.replace = replace;
    P.fetch = c->opt.fetch_size > 0 ? c->opt.fetch_size : 256;
    P.q = c->q.as<unsigned long long>();
    P.sampq = c->sampq.as<int32_t>();
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
                                                                c->samples.as<int32_t>());
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

void sample_bsp(ssg_ctx *c, const uint32_t *seeds, uint64_t n_seeds, uint64_t seed, uint32_t epoch, int replace) {
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
    c->cand.need(ccap * 4 + 4);
    c->scand.need(ccap * 4 + 4);
    c->fin.need(cap[L] * 4 + 4);
    c->nsel.need(64);
    c->counters.need(sizeof(Counters));
    size_t tb = 0, tb2 = 0;
    CK(cub::DeviceRadixSort::SortKeys(nullptr, tb, c->cand.as<uint32_t>(), c->scand.as<uint32_t>(), (int64_t)ccap, 0,
                                      vbits, s));
    CK(cub::DeviceSelect::Unique(nullptr, tb2, c->scand.as<uint32_t>(), c->cand.as<uint32_t>(), c->nsel.as<long long>(),
                                 (int64_t)ccap, s));
    c->temp.need(std::max(tb, tb2) + 16);
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
        CK(cudaEventRecord(c->ev[1], s));
        if (nl > 0) {
            const int G = group_for(k, c->opt.group_size);
            launch_bsp(c, G, (k + G - 1) / G, DevGraph{c->d_indptr, c->d_indices, c->n},
                       c->front.as<uint32_t>() + off, nl, k, layer_key(seed, epoch, l), replace,
                       c->samples.as<int32_t>() + soff, c->cand.as<uint32_t>(), none, block);
        }
        CK(cudaEventRecord(c->ev[2], s));
        if (nc > 0) {
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
                   &c->cand, &c->scand, &c->nsel, &c->temp})
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

int ssg_create(int device, uint32_t num_nodes, const uint64_t *indptr, uint64_t num_edges, const uint32_t *indices,
               const ssg_options *opts, ssg_ctx **out, char *err, size_t err_len) {
    if (out) *out = nullptr;
    int ndev = 0;
    int rc = ssg_device_count(&ndev, err, err_len);
    if (rc != SSG_OK) return rc;
    if (device < 0 || device >= ndev) {
        set_err(err, err_len, fmt("no CUDA device %d: cudaGetDeviceCount returned %d device(s)", device, ndev));
        return SSG_ERR_NO_DEVICE;
    }
    if (!out || !indptr || (num_edges > 0 && !indices) || num_nodes >= 0x80000000u) {
        set_err(err, err_len, fmt("invalid graph: %u nodes (need < 2^31), indptr %p, indices %p", num_nodes,
                                  (const void *)indptr, (const void *)indices));
        return SSG_ERR_INVALID;
    }
    if (indptr[0] != 0 || indptr[num_nodes] != num_edges) {
        set_err(err, err_len, fmt("invalid CSR: indptr[0]=%llu and indptr[%u]=%llu, want 0 and %llu edges",
                                  (unsigned long long)indptr[0], num_nodes, (unsigned long long)indptr[num_nodes],
                                  (unsigned long long)num_edges));
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
            std::memcpy(h, indptr, pbytes);
            if (ibytes) std::memcpy(static_cast<char *>(h) + pbytes, indices, ibytes);
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
            CK(cudaMemcpy(c->d_indptr, indptr, pbytes, cudaMemcpyHostToDevice));
            if (ibytes) CK(cudaMemcpy(c->d_indices, indices, ibytes, cudaMemcpyHostToDevice));
        }
    });
    if (rc != SSG_OK) {
        free_ctx(c);
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

int ssg_sample(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t n_seeds, const int32_t *fanouts,
               int32_t n_layers, uint64_t seed, uint32_t epoch, int32_t replace, uint64_t *counts,
               uint64_t counts_cap, char *err, size_t err_len) {
    if (!c) {
        set_err(err, err_len, "nil context");
        return SSG_ERR_INVALID;
    }
    // Whatever happens below, the previous result is gone: a fetch sized
    // from the caller's old counts must not see a half-written new one.
    c->counts.clear();
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
    for (int l = 0; l < n_layers; ++l) {
        if (fanouts[l] < 1 || fanouts[l] > MAX_FANOUT) {
            set_err(err, err_len, fmt("fanout of layer %d is %d, want 1..%d", l, fanouts[l], MAX_FANOUT));
            return SSG_ERR_INVALID;
        }
    }
    const int rc = guard(c, err, err_len, [&] {
        c->L = n_layers;
        c->fanouts.assign(fanouts, fanouts + n_layers);
        check_seeds(c, seeds, n_seeds);
        if (mode == SSG_MODE_FUSED) {
            sample_fused(c, seeds, n_seeds, seed, epoch, replace);
        } else {
            sample_bsp(c, seeds, n_seeds, seed, epoch, replace);
        }
        if (counts)
            for (int l = 0; l <= n_layers; ++l) counts[l] = c->counts[l];
    });
    // sample_bsp fills counts hop by hop: a failure half-way must not leave
    // a partial result for ssg_fetch.
    if (rc != SSG_OK) c->counts.clear();
    return rc;
}

int ssg_fetch(ssg_ctx *c, uint32_t *frontiers, uint64_t frontiers_cap, int32_t *samples, uint64_t samples_cap,
              uint32_t *final_, uint64_t final_cap, char *err, size_t err_len) {
    if (!c || c->counts.empty()) {
        set_err(err, err_len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    const int L = c->L;
    uint64_t nf = 0, ns = 0;
    for (int l = 0; l < L; ++l) {
        nf += c->counts[l];
        ns += c->counts[l] * c->fanouts[l];
    }
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

int ssg_count_edges(ssg_ctx *c, uint64_t *edges, char *err, size_t err_len) {
    if (!c || c->counts.empty() || !edges) {
        set_err(err, err_len, "no result to count: call ssg_sample first");
        return SSG_ERR_INVALID;
    }
    return guard(c, err, err_len, [&] {
        uint64_t ns = 0;
        for (int l = 0; l < c->L; ++l) ns += c->counts[l] * c->fanouts[l];
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

int ssg_last_timings(ssg_ctx *c, double *out, int n) {
    if (!c || !out) return 0;
    int m = std::min(n, 3);
    for (int i = 0; i < m; ++i) out[i] = c->timings[i];
    return m;
}

} // extern "C"
