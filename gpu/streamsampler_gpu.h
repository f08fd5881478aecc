/*
 * streamsampler_gpu.h — the C ABI of libstreamsampler_gpu.so, the CUDA
 * neighbor-sampling engine of streamsampler (package gpu).
 *
 * The Go package loads this library at run time (dlopen/dlsym), so a Go
 * binary builds and runs anywhere; only `--backend gpu` needs the library
 * and a CUDA device. The Python benchmark calls the same functions through
 * ctypes.
 *
 * Every function that can fail returns an SSG_* status and, on failure,
 * writes a NUL-terminated message into err[0..err_len) (err may be NULL).
 *
 * Every caller-provided output array comes with its capacity in elements;
 * a call whose result does not fit fails with SSG_ERR_INVALID, naming the
 * array, the size needed and the capacity given, and writes nothing into
 * any of its output arrays. The library never sizes a write from its own
 * state alone.
 * A context is not thread-safe: callers serialise calls on one context.
 *
 * Sampling is bit-identical to the Go reference (rng.Sample, DESIGN §3):
 * samples are a pure function of (seed, epoch, layer, node).
 */
#ifndef STREAMSAMPLER_GPU_H
#define STREAMSAMPLER_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of the functions or structs below. */
/* 2: capacities on ssg_sample's counts and ssg_fetch's arrays;
 * 3: a graph loaded piece by piece (ssg_create_empty, ssg_load_indices,
 *    ssg_load_indptr);
 * 4: edge ids (ssg_options.edge_ids, ssg_fetch_edges);
 * 5: random walks (ssg_walk);
 * 6: full layers (fanout SSG_FANOUT_ALL; ssg_layer_sizes, ssg_fetch_offsets);
 * 7: layer keys given (ssg_sample_keyed) */
#define SSG_ABI_VERSION 7

/* The fanout of a layer that takes every neighbor of each frontier node,
 * in CSR order (DESIGN §3, "Full neighborhoods"; epoch.AllNeighbors). */
#define SSG_FANOUT_ALL (-1)

/* Status codes, defined here only: the Go package reads them through cgo
 * (lib_cgo.go's statusCodes maps each to its error; header_cgo_test.go
 * checks that every code has its row). */
enum {
    SSG_OK = 0,
    SSG_ERR_CUDA = 1,          /* any other CUDA error (launch failure, ...) */
    SSG_ERR_NO_DEVICE = 2,     /* no CUDA device / driver, or device index out of range */
    SSG_ERR_OUT_OF_MEMORY = 3, /* GPU (or pinned host) memory exhausted */
    SSG_ERR_INVALID = 4,       /* bad arguments (seed not a node, fanout, ...) */
    SSG_ERR_TIMEOUT = 5,       /* a kernel ran past the watchdog; the context is unusable */
    SSG_ERR_BROKEN = 6         /* an earlier sticky CUDA error made the context unusable */
};

/* Sampling engines (gpu.Fused and gpu.BSP; header_test.go ties them). */
enum {
    SSG_MODE_FUSED = 0, /* one persistent multi-hop kernel with a global task queue */
    SSG_MODE_BSP = 1    /* one launch per hop, CUB sort+unique between hops (DGL-style) */
};

/* Walk modes of ssg_walk (walk.Mode; header_test.go ties them). */
enum {
    SSG_WALK_DEEPWALK = 0, /* uniform over the current node's adjacency */
    SSG_WALK_PPR = 1,      /* personalized PageRank: restart to the start on decision 0 */
    SSG_WALK_NODE2VEC = 2  /* node2vec: rejection sampling against the previous node's adjacency */
};

/* Tuning and placement; zero fields take the defaults. */
typedef struct ssg_options {
    int32_t uva;           /* 1: keep the CSR in pinned host memory, read over UVA */
    int32_t block_size;    /* threads per block of the sampling kernels (default 512) */
    int32_t fetch_size;    /* tasks a fused block claims per iteration (default 256) */
    int32_t group_size;    /* lanes per task: 0 = next power of two >= fanout (max 32) */
    int32_t blocks_per_sm; /* cap on resident fused blocks per SM (0 = occupancy maximum) */
    int32_t timeout_ms;    /* watchdog on every stream wait (default 60000) */
    int32_t edge_ids;      /* 1: ssg_sample also keeps each sample's edge id (ssg_fetch_edges) */
} ssg_options;

typedef struct ssg_ctx ssg_ctx;

/* SSG_ABI_VERSION of the library. */
int ssg_abi_version(void);

/* Number of CUDA devices (SSG_ERR_NO_DEVICE, with cudaGetDeviceCount's
 * error, when there is no driver or no device). */
int ssg_device_count(int *count, char *err, size_t err_len);

/* Creates a context on `device` holding the CSR graph: the neighbors of
 * node v are indices[indptr[v] .. indptr[v+1]), sorted ascending.
 * num_nodes < 2^31. The arrays are copied; the caller may free them. */
int ssg_create(int device, uint32_t num_nodes, const uint64_t *indptr,
               uint64_t num_edges, const uint32_t *indices,
               const ssg_options *opts, ssg_ctx **out, char *err, size_t err_len);

/* Loading a graph piece by piece, so that the caller never holds its whole
 * CSR (it can pass each chunk of a memory-mapped file as it checks it):
 *
 *   ssg_create_empty   allocates the CSR of num_nodes nodes and num_edges
 *                      edges on `device` (or pinned host memory with
 *                      opts->uva), with ssg_create's memory check;
 *   ssg_load_indices   appends indices[0..count) as edges
 *                      [first_edge, first_edge + count): pieces come in
 *                      order, so first_edge must be the number of edges
 *                      loaded so far, and the total may not pass num_edges;
 *   ssg_load_indptr    completes the graph once all num_edges indices are
 *                      loaded: indptr has count = num_nodes + 1 entries,
 *                      starts at 0, ends at num_edges, never decreases.
 *
 * The caller's arrays are copied (or staged) before each call returns.
 * Until ssg_load_indptr succeeds, ssg_sample fails with SSG_ERR_INVALID;
 * a context whose loading failed is only good for ssg_destroy. ssg_create
 * is these three calls in one. */
int ssg_create_empty(int device, uint32_t num_nodes, uint64_t num_edges,
                     const ssg_options *opts, ssg_ctx **out, char *err, size_t err_len);
int ssg_load_indices(ssg_ctx *ctx, uint64_t first_edge, const uint32_t *indices,
                     uint64_t count, char *err, size_t err_len);
int ssg_load_indptr(ssg_ctx *ctx, const uint64_t *indptr, uint64_t count,
                    char *err, size_t err_len);

/* Frees the context and everything it holds. NULL is a no-op. */
void ssg_destroy(ssg_ctx *ctx);

/* Writes the device's name (NUL-terminated, truncated to name_len - 1
 * bytes) and whether the CSR lives in host memory. */
int ssg_info(ssg_ctx *ctx, char *name, size_t name_len, int32_t *uva,
             char *err, size_t err_len);

/* Samples n_layers layers from the seeds (duplicates allowed; they are made
 * sorted unique): layer l samples fanouts[l] neighbors of every node of
 * frontier_l with key(seed, epoch, l); frontier_{l+1} = sorted unique
 * (frontier_l ∪ valid samples_l). On return the result is complete on the
 * device and counts[0..n_layers] hold |frontier_0| … |frontier_L|
 * (counts[n_layers] is the final frontier). Fetch it with ssg_fetch.
 * counts may be NULL; otherwise counts_cap must be >= n_layers + 1, checked
 * before any work. A failed call leaves no result: ssg_fetch then fails.
 *
 * A fanout is 1..64 or SSG_FANOUT_ALL: that layer's rows are every
 * neighbor of each frontier node, variable-length (ssg_layer_sizes,
 * ssg_fetch_offsets), without random draws. An epoch with such a layer
 * runs on the BSP engine whatever the mode: the fused engine's task slots
 * hold a fixed fanout. */
int ssg_sample(ssg_ctx *ctx, int32_t mode, const uint32_t *seeds, uint64_t n_seeds,
               const int32_t *fanouts, int32_t n_layers, uint64_t seed,
               uint32_t epoch, int32_t replace, uint64_t *counts, uint64_t counts_cap,
               char *err, size_t err_len);

/* ssg_sample with each layer's key given: layer l samples with keys[l]
 * (n_layers of them) instead of key(seed, epoch, l), e.g. a relation's
 * key of a heterogeneous epoch (DESIGN §3, "Relations"). Everything else
 * is ssg_sample's, and its result is fetched the same way. */
int ssg_sample_keyed(ssg_ctx *ctx, int32_t mode, const uint32_t *seeds, uint64_t n_seeds,
                     const int32_t *fanouts, int32_t n_layers, const uint64_t *keys, int32_t replace,
                     uint64_t *counts, uint64_t counts_cap, char *err, size_t err_len);

/* Copies the last ssg_sample result to host memory: frontiers = all
 * layers' frontiers concatenated (sum counts[0..L-1] words), samples = all
 * layers' sample rows concatenated (the sum of ssg_layer_sizes words, -1 for
 * an empty slot), final = counts[L] words. Any pointer may be NULL to skip.
 * The *_cap arguments are the arrays' capacities in elements: if any
 * non-NULL array is smaller than its part of the result, the call fails
 * with SSG_ERR_INVALID before copying anything. */
int ssg_fetch(ssg_ctx *ctx, uint32_t *frontiers, uint64_t frontiers_cap,
              int32_t *samples, uint64_t samples_cap,
              uint32_t *final_, uint64_t final_cap, char *err, size_t err_len);

/* Copies the edge ids of the last ssg_sample of a context created with
 * opts->edge_ids: one int64 per sample, in ssg_fetch's samples order, the
 * sample's position in the stored CSR (indptr[node] + the position chosen
 * in node's adjacency, rng.Positions), -1 exactly at an empty slot.
 * edge_ids_cap is the array's capacity in elements; the call fails with
 * SSG_ERR_INVALID (copying nothing) if it is smaller than the result, if
 * there is no result, or if the context keeps no edge ids. */
int ssg_fetch_edges(ssg_ctx *ctx, int64_t *edge_ids, uint64_t edge_ids_cap, char *err, size_t err_len);

/* The sample words of each layer of the last ssg_sample, in ssg_fetch's
 * order: counts[l] * fanouts[l] for a sampled layer, the sum of the
 * frontier's degrees for a full layer (SSG_FANOUT_ALL). sizes_cap must be
 * >= n_layers. */
int ssg_layer_sizes(ssg_ctx *ctx, uint64_t *sizes, uint64_t sizes_cap, char *err, size_t err_len);

/* Copies the row offsets of the last ssg_sample's full layers, layer after
 * layer: counts[l] + 1 entries for each layer l whose fanout is
 * SSG_FANOUT_ALL, from 0 to its size (ssg_layer_sizes), so that row i of
 * the layer is its samples [offsets[i], offsets[i+1]) within the layer's
 * part of ssg_fetch's samples (and of ssg_fetch_edges' edge ids, which are
 * indptr[node] + j for the row's j-th neighbor). A result without full
 * layers has none (offsets may then be NULL). offsets_cap is the array's
 * capacity in elements, checked before anything is copied. */
int ssg_fetch_offsets(ssg_ctx *ctx, int64_t *offsets, uint64_t offsets_cap, char *err, size_t err_len);

/* Counts the valid (non-negative) samples of the last ssg_sample, on the
 * GPU (the sampled edges of the epoch). */
int ssg_count_edges(ssg_ctx *ctx, uint64_t *edges, char *err, size_t err_len);

/* Random walks (DESIGN §3, "Walks"), bit-identical to walk.Reference:
 * W = walks_per_node · n_starts walks, walk w = r·n_starts + i starting at
 * starts[i], each `length` steps. out receives W rows of length + 1 int32,
 * row-major: row w is [starts[i], v_1, …, v_length], -1 after the walk
 * ends (a node without neighbors; ppr's first restart with
 * stop_at_restart). out_cap is out's capacity in elements; a call whose
 * W·(length+1) does not fit fails with SSG_ERR_INVALID before any work.
 *
 * The decisions' thresholds come from the host (rng.Threshold,
 * rng.Node2Vec: floor(prob·2^32), each in 0..2^32), so no floating point
 * on the device decides a walk: restart_threshold for SSG_WALK_PPR (a
 * restart jumps back to the start, or with stop_at_restart ends the walk);
 * t_return, t_near, t_far for SSG_WALK_NODE2VEC (up to 64 attempts a step,
 * the last taken anyway). A mode ignores the other modes' thresholds.
 *
 * One kernel runs whole walks, a thread per walk, over the graph where it
 * lives (device memory, or pinned host memory with opts->uva); launches
 * take at most 512 MiB of rows each, and each launch's rows are copied to
 * out before the next. walks_per_node >= 1, length >= 1, W < 2^32, every
 * start a node. A walk leaves the last ssg_sample's result (ssg_fetch)
 * alone; ssg_last_timings then gives the walk kernels' time, the copies,
 * and the whole call. */
int ssg_walk(ssg_ctx *ctx, int32_t mode, const uint32_t *starts, uint64_t n_starts,
             uint32_t walks_per_node, uint32_t length, uint64_t seed, uint64_t restart_threshold,
             int32_t stop_at_restart, uint64_t t_return, uint64_t t_near, uint64_t t_far,
             int32_t *out, uint64_t out_cap, char *err, size_t err_len);

/* Timings of the last ssg_sample in milliseconds, measured with CUDA events:
 * out[0] sampling kernel(s), out[1] sort/gather (fused) or sort/unique
 * (bsp), out[2] whole call; after ssg_walk: walk kernels, copies to out,
 * whole call. Writes min(n, 3) values (n is out's capacity)
 * and returns that number. */
int ssg_last_timings(ssg_ctx *ctx, double *out, int n);

#ifdef __cplusplus
}
#endif

#endif /* STREAMSAMPLER_GPU_H */
