// walk_engine.cuh — random walks (DESIGN §3, "Walks"; walk.Reference):
// one kernel runs every step of a walk, a thread per walk.
//
// A thread per walk, not a warp per walk: a walk's steps are a chain of
// dependent random reads (indptr[v], then one neighbor), so a single walk
// has no parallelism to share among lanes; what hides the memory latency
// is many independent walks in flight, and a thread per walk puts the most
// of them in flight. The one place where lanes could help, node2vec's
// binary search in the previous node's adjacency, is rare (a candidate
// whose decision word settles it needs none) and is log2(degree) reads.
//
// The walk's row is written as it goes: step t of neighbouring threads'
// walks lands (L+1)·4 bytes apart, and the next steps fill the same 32-byte
// sectors, which L2 (write-back) merges before they reach memory.
#pragma once

#include "context.cuh"
#include "errors.cuh"
#include "rng.cuh"
#include "sample_group.cuh"
#include "streamsampler_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

// WalkArgs is one launch: walks first .. first+count-1 of the set, rows
// into out (count rows of length+1 words).
struct WalkArgs {
    const uint32_t *starts; // device copy of the start nodes
    uint32_t n_starts;
    uint32_t length; // steps L
    uint64_t first;  // walk id of row 0 of out
    uint64_t count;  // walks in this launch
    uint64_t seed;
    int32_t mode;
    int32_t stop_at_restart;
    uint64_t restart; // PPR: threshold of the restart decision
    uint64_t t_return, t_near, t_far; // node2vec: acceptance thresholds by kind
    int32_t *out;
};

// is_neighbor reports whether x is in the sorted adj[0..d) (repeats
// allowed): a lower bound, then a look (walk.IsNeighbor).
__device__ __forceinline__ bool is_neighbor(const uint32_t *__restrict__ adj, uint64_t d, uint32_t x) {
    uint64_t lo = 0, hi = d;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (adj[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < d && adj[lo] == x;
}

// walk_kernel runs every step of its walks. One loop iteration is one
// attempt (a deepwalk or PPR step is one attempt; node2vec's may take up
// to WALK_MAX_ATTEMPTS), not one step: with a loop of steps around a loop
// of attempts, a warp would wait at every step for its lane with the most
// rejections (the maximum of 32 geometric counts, about three times their
// mean at node2vec's usual acceptance rates), where flat, a lane goes on
// to its next step at once and the warp waits only for the lane with the
// most attempts over the whole walk.
__global__ void __launch_bounds__(1024) walk_kernel(DevGraph g, WalkArgs a) {
    const uint64_t L = a.length;
    const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
    const uint64_t lo_t = a.t_near < a.t_far ? a.t_near : a.t_far;
    const uint64_t hi_t = a.t_near < a.t_far ? a.t_far : a.t_near;
    for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.count; i += stride) {
        const uint32_t w = uint32_t(a.first + i);
        const uint32_t start = a.starts[w % a.n_starts];
        int32_t *row = a.out + i * (L + 1);
        row[0] = int32_t(start);
        uint32_t v = start, u = 0;   // current and previous node
        uint64_t ub = 0, ud = 0;     // the previous node's adjacency: first edge, degree
        uint64_t b = 0, d64 = 0;     // the current node's
        uint64_t key = 0;
        uint32_t at = 0;             // the attempt within step t
        bool fresh = true;           // step t has not started
        uint64_t t = 1;
        for (;;) {
            if (fresh) {
                if (t > L) break;
                b = g.indptr[v];
                d64 = g.indptr[v + 1] - b;
                if (d64 == 0) break; // a node without neighbors ends the walk, in every mode
                key = walk_key(a.seed, uint32_t(t)); // two mix64: nothing next to the reads
                at = 0;
                fresh = false;
            }
            const uint32_t d = uint32_t(d64); // a uint32 degree, as rng.Candidate takes it
            uint32_t next;
            bool done = true;
            if (a.mode == SSG_WALK_PPR && walk_decide(key, w, 0, a.restart)) {
                if (a.stop_at_restart) break;
                next = start;
            } else if (a.mode == SSG_WALK_NODE2VEC && t >= 2) {
                next = g.indices[b + walk_candidate(key, w, at, d)];
                if (at < WALK_MAX_ATTEMPTS - 1) { // the last candidate is taken anyway
                    const uint64_t word = draw(key, w, 2 * at + 1) >> 32;
                    if (next == u) {
                        done = word < a.t_return;
                    } else if (word < lo_t || word >= hi_t) {
                        done = word < lo_t; // settled whether next is near u or not: no search
                    } else {
                        done = word < (is_neighbor(g.indices + ub, ud, next) ? a.t_near : a.t_far);
                    }
                }
                at++;
            } else {
                next = g.indices[b + walk_candidate(key, w, 0, d)];
            }
            if (done) {
                u = v;
                ub = b;
                ud = d64;
                v = next;
                row[t] = int32_t(next);
                ++t;
                fresh = true;
            }
        }
        for (; t <= L; ++t) row[t] = -1;
    }
}

// Walk output per launch: rows of at most this many bytes in all (one row
// at least), so that device memory for the result stays bounded however
// many walks a call asks for. SSG_WALK_CHUNK_WALKS (walks per launch)
// overrides it, for the tests of the chunking.
constexpr size_t kWalkChunkBytes = size_t(512) << 20;

uint64_t walk_chunk(uint64_t row_words) {
    if (const char *e = std::getenv("SSG_WALK_CHUNK_WALKS")) {
        const long long v = std::atoll(e);
        if (v > 0) return uint64_t(v);
    }
    return std::max<uint64_t>(1, kWalkChunkBytes / (row_words * 4));
}

// walk_gpu runs the walk set in launches of walk_chunk walks: starts to
// the device once, then per launch the kernel and the copy of its rows
// into out (W·(L+1) words, checked by the caller). timings: kernels, the
// rest (copies), the whole call.
void walk_gpu(Context *c, const WalkArgs &proto, const uint32_t *starts, uint64_t n_starts, uint64_t W,
              int32_t *out) {
    const auto t0 = std::chrono::steady_clock::now();
    const cudaStream_t s = c->stream;
    const uint64_t row = uint64_t(proto.length) + 1;
    double kern_ms = 0;
    if (W > 0) {
        // From pageable memory: the call returns once starts is staged
        // (the staging halves stay small however many starts there are).
        c->walk_starts.need(n_starts * 4);
        CK(cudaMemcpyAsync(c->walk_starts.p, starts, n_starts * 4, cudaMemcpyHostToDevice, s));
        const uint64_t chunk = std::min(W, walk_chunk(row));
        c->walk_out.need(chunk * row * 4);
        const int block = std::min(block_size(c), 256);
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, walk_kernel, block, 0));
        const uint64_t resident = uint64_t(std::max(per_sm, 1)) * c->prop.multiProcessorCount;
        for (uint64_t first = 0; first < W; first += chunk) {
            WalkArgs a = proto;
            a.starts = c->walk_starts.as<uint32_t>();
            a.first = first;
            a.count = std::min(chunk, W - first);
            a.out = c->walk_out.as<int32_t>();
            const uint64_t blocks = std::min<uint64_t>((a.count + block - 1) / block, resident * 4);
            CK(cudaEventRecord(c->ev[1], s));
            walk_kernel<<<unsigned(blocks), block, 0, s>>>(DevGraph{c->d_indptr, c->d_indices, c->n}, a);
            check_launch("walk_kernel launch");
            CK(cudaEventRecord(c->ev[2], s));
            wait_stream(c);
            kern_ms += elapsed(c->ev[1], c->ev[2]);
            copy_out(c, out + first * row, c->walk_out.p, a.count * row * 4);
        }
    }
    c->timings[0] = kern_ms;
    c->timings[2] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    c->timings[1] = c->timings[2] - kern_ms;
}

} // namespace
