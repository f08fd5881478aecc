/* fakelib.c — stand-ins for libstreamsampler_gpu.so used by the Go tests
 * on machines without CUDA (CI). Built by the tests with the system C
 * compiler:
 *   -DFAKE_NOSYM     exports none of the ABI (a wrong library);
 *   -DFAKE_NODEVICE  the ABI, but no CUDA device (as on a GPU-less host);
 *   (default)        the ABI over a plain CPU sampler of DESIGN §3/§4, so
 *                    that the Go marshalling (counts, fetch, errors) is
 *                    tested against host.Reference without a GPU.
 * Seed 0xdead makes ssg_sample and ssg_walk fail the way a CUDA launch
 * failure does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FAKE_NOSYM
int not_the_ssg_abi(void) { return 0; }
#else
#include "streamsampler_gpu.h"

static void set_err(char *err, size_t len, const char *m) {
    if (err && len) snprintf(err, len, "%s", m);
}

int ssg_abi_version(void) { return SSG_ABI_VERSION; }

int ssg_device_count(int *count, char *err, size_t len) {
#ifdef FAKE_NODEVICE
    *count = 0;
    set_err(err, len, "no CUDA device: cudaGetDeviceCount returned 100 (cudaErrorNoDevice: no CUDA-capable device is detected)");
    return SSG_ERR_NO_DEVICE;
#else
    *count = 1;
    (void)err, (void)len;
    return SSG_OK;
#endif
}

struct ssg_ctx {
    uint32_t n;
    uint64_t nnz, loaded;
    int ready;
    uint64_t *indptr;
    uint32_t *indices;
    int L;
    int32_t fan[256];
    uint64_t counts[257];
    uint64_t sizes[256]; /* sample words per layer (ssg_layer_sizes) */
    int64_t *offs;       /* the full layers' row offsets, layer after layer */
    uint64_t n_offs;
    uint32_t *front, *fin;
    int32_t *samp;
    int edge_ids; /* ssg_options.edge_ids */
    int64_t *eids;
};

int ssg_create_empty(int device, uint32_t n, uint64_t nnz, const ssg_options *o, ssg_ctx **out, char *err,
                     size_t len) {
    int cnt;
    int rc = ssg_device_count(&cnt, err, len);
    (void)o;
    if (rc) return rc;
    if (device != 0) {
        set_err(err, len, "no CUDA device 1");
        return SSG_ERR_NO_DEVICE;
    }
    ssg_ctx *c = calloc(1, sizeof *c);
    c->L = -1; /* no result yet */
    c->edge_ids = o && o->edge_ids;
    c->n = n;
    c->nnz = nnz;
    c->indptr = malloc(((uint64_t)n + 1) * 8);
    c->indices = malloc(nnz * 4 + 4);
    *out = c;
    return SSG_OK;
}

/* The loading checks of the CUDA library, in the same order. */
int ssg_load_indices(ssg_ctx *c, uint64_t first, const uint32_t *idx, uint64_t count, char *err, size_t len) {
    char m[256];
    if (!c || (count > 0 && !idx)) {
        set_err(err, len, "invalid load: nil context or indices");
        return SSG_ERR_INVALID;
    }
    if (c->ready) {
        set_err(err, len, "invalid load: the graph is complete (ssg_load_indptr was called)");
        return SSG_ERR_INVALID;
    }
    if (first != c->loaded || count > c->nnz - c->loaded) {
        snprintf(m, sizeof m, "invalid load: indices [%llu,%llu) but the next edge is %llu of %llu (indices come in order)",
                 (unsigned long long)first, (unsigned long long)(first + count), (unsigned long long)c->loaded,
                 (unsigned long long)c->nnz);
        set_err(err, len, m);
        return SSG_ERR_INVALID;
    }
    if (count) memcpy(c->indices + c->loaded, idx, count * 4);
    c->loaded += count;
    return SSG_OK;
}

int ssg_load_indptr(ssg_ctx *c, const uint64_t *indptr, uint64_t count, char *err, size_t len) {
    if (!c || !indptr || c->ready) {
        set_err(err, len, "invalid load: nil context or indptr, or the graph is complete");
        return SSG_ERR_INVALID;
    }
    if (count != (uint64_t)c->n + 1 || c->loaded != c->nnz) {
        set_err(err, len, "invalid load: indptr of the wrong size, or not after all edges");
        return SSG_ERR_INVALID;
    }
    if (indptr[0] != 0 || indptr[c->n] != c->nnz) {
        set_err(err, len, "invalid CSR: indptr must start at 0 and end at num_edges");
        return SSG_ERR_INVALID;
    }
    for (uint32_t v = 0; v < c->n; v++)
        if (indptr[v + 1] < indptr[v]) {
            set_err(err, len, "invalid CSR: indptr decreases");
            return SSG_ERR_INVALID;
        }
    memcpy(c->indptr, indptr, count * 8);
    c->ready = 1;
    return SSG_OK;
}

void ssg_destroy(ssg_ctx *c);

int ssg_create(int device, uint32_t n, const uint64_t *indptr, uint64_t nnz, const uint32_t *indices,
               const ssg_options *o, ssg_ctx **out, char *err, size_t len) {
    ssg_ctx *c = NULL;
    int rc = ssg_create_empty(device, n, nnz, o, &c, err, len);
    if (rc == SSG_OK) rc = ssg_load_indices(c, 0, indices, nnz, err, len);
    if (rc == SSG_OK) rc = ssg_load_indptr(c, indptr, (uint64_t)n + 1, err, len);
    if (rc != SSG_OK) {
        ssg_destroy(c);
        return rc;
    }
    *out = c;
    return SSG_OK;
}

void ssg_destroy(ssg_ctx *c) {
    if (!c) return;
    free(c->indptr), free(c->indices), free(c->front), free(c->fin), free(c->samp), free(c->eids), free(c->offs);
    free(c);
}

int ssg_info(ssg_ctx *c, char *name, size_t nlen, int32_t *uva, char *err, size_t len) {
    (void)c, (void)err, (void)len;
    set_err(name, nlen, "fake CPU device");
    *uva = 0;
    return SSG_OK;
}

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t below(uint64_t r, uint32_t m) { return (uint32_t)(((uint64_t)(uint32_t)(r >> 32) * m) >> 32); }
static int cmpu(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}
static uint64_t uniq(uint32_t *a, uint64_t n) {
    qsort(a, n, 4, cmpu);
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (m == 0 || a[i] != a[m - 1]) a[m++] = a[i];
    return m;
}

/* sample_keys is ssg_sample and ssg_sample_keyed: layer l's key is
 * keys[l], or (keys NULL) key(seed, epoch, l). */
static int sample_keys(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t ns, const int32_t *fan, int32_t L,
                       const uint64_t *keys, uint64_t seed, uint32_t epoch, int32_t replace, uint64_t *counts,
                       uint64_t counts_cap, char *err, size_t len) {
    (void)mode;
    c->L = -1; /* no result until this call succeeds (as the CUDA library) */
    if (!c->ready) {
        set_err(err, len, "graph not loaded: ssg_load_indptr has not completed it");
        return SSG_ERR_INVALID;
    }
    if (counts && counts_cap < (uint64_t)L + 1) {
        set_err(err, len, "counts array too small");
        return SSG_ERR_INVALID;
    }
    /* Seed 0xdead fails, given as a seed or as its epoch-0 layer-0 key. */
    if (seed == 0xdead || (keys && L > 0 && keys[0] == (mix64(0xdead) ^ mix64(0)))) {
        set_err(err, len, "CUDA error cudaErrorLaunchFailure (unspecified launch failure) in fused_kernel launch");
        return SSG_ERR_CUDA;
    }
    uint32_t *f = malloc(ns * 4 + 4);
    memcpy(f, seeds, ns * 4);
    uint64_t n = uniq(f, ns);
    for (uint64_t i = 0; i < n; i++)
        if (f[i] >= c->n) {
            set_err(err, len, "seed is not a node");
            free(f);
            return SSG_ERR_INVALID;
        }
    for (int l = 0; l < L; l++)
        if (fan[l] != SSG_FANOUT_ALL && (fan[l] < 1 || fan[l] > 64)) {
            set_err(err, len, "fanout out of range");
            free(f);
            return SSG_ERR_INVALID;
        }
    free(c->front), free(c->samp), free(c->fin), free(c->eids), free(c->offs);
    c->offs = NULL, c->n_offs = 0;
    c->L = L;
    memcpy(c->fan, fan, L * 4);
    uint64_t fcap = 0, scap = 0;
    /* frontiers grow at most to n nodes */
    c->front = NULL, c->samp = NULL, c->eids = NULL;
    for (int l = 0; l < L; l++) {
        uint64_t k = fan[l];
        c->counts[l] = n;
        c->front = realloc(c->front, (fcap + n) * 4 + 4);
        memcpy(c->front + fcap, f, n * 4);
        if (fan[l] == SSG_FANOUT_ALL) { /* every neighbor, CSR order: rows through offs */
            uint64_t total = 0;
            c->offs = realloc(c->offs, (c->n_offs + n + 1) * 8);
            int64_t *o = c->offs + c->n_offs;
            for (uint64_t i = 0; i < n; i++) o[i] = (int64_t)total, total += c->indptr[f[i] + 1] - c->indptr[f[i]];
            o[n] = (int64_t)total;
            c->n_offs += n + 1;
            c->samp = realloc(c->samp, (scap + total) * 4 + 4);
            c->eids = realloc(c->eids, (scap + total) * 8 + 8);
            uint32_t *nx = malloc((n + total) * 4 + 4);
            memcpy(nx, f, n * 4);
            for (uint64_t i = 0; i < n; i++)
                for (uint64_t p = c->indptr[f[i]]; p < c->indptr[f[i] + 1]; p++) {
                    uint64_t e = (uint64_t)o[i] + (p - c->indptr[f[i]]);
                    c->samp[scap + e] = (int32_t)c->indices[p];
                    c->eids[scap + e] = (int64_t)p;
                    nx[n + e] = c->indices[p];
                }
            c->sizes[l] = total;
            fcap += n;
            scap += total;
            free(f);
            f = nx;
            n = uniq(f, n + total);
            continue;
        }
        c->sizes[l] = n * k;
        c->samp = realloc(c->samp, (scap + n * k) * 4 + 4);
        c->eids = realloc(c->eids, (scap + n * k) * 8 + 8);
        int32_t *s = c->samp + scap;
        int64_t *e = c->eids + scap;
        uint64_t key = keys ? keys[l] : mix64(seed) ^ mix64(((uint64_t)epoch << 8) | (uint8_t)l);
        uint32_t *nx = malloc((n + n * k) * 4 + 4);
        uint64_t m = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t v = f[i];
            const uint32_t *nb = c->indices + c->indptr[v];
            uint32_t d = (uint32_t)(c->indptr[v + 1] - c->indptr[v]);
            int32_t *o = s + i * k; /* positions first, then the neighbors at them */
            nx[m++] = v;
            for (uint32_t t = 0; t < k; t++) {
                uint64_t r = mix64(key ^ (((uint64_t)v << 32) | t));
                if (replace) {
                    o[t] = d ? (int32_t)below(r, d) : -1;
                } else if (d <= k) {
                    o[t] = t < d ? (int32_t)t : -1;
                } else {
                    uint32_t j = d - (uint32_t)k + t, p = below(r, j + 1);
                    for (uint32_t q = 0; q < t; q++)
                        if ((uint32_t)o[q] == p) {
                            p = j;
                            break;
                        }
                    o[t] = (int32_t)p;
                }
            }
            for (uint32_t t = 0; t < k; t++) {
                e[i * k + t] = o[t] < 0 ? -1 : (int64_t)(c->indptr[v] + (uint64_t)o[t]);
                if (o[t] >= 0) o[t] = (int32_t)nb[o[t]];
            }
            for (uint32_t t = 0; t < k; t++)
                if (o[t] >= 0) nx[m++] = (uint32_t)o[t];
        }
        fcap += n;
        scap += n * k;
        free(f);
        f = nx;
        n = uniq(f, m);
    }
    c->counts[L] = n;
    c->fin = f;
    for (int l = 0; l <= L; l++) counts[l] = c->counts[l];
    return SSG_OK;
}

int ssg_sample(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t ns, const int32_t *fan, int32_t L,
               uint64_t seed, uint32_t epoch, int32_t replace, uint64_t *counts, uint64_t counts_cap, char *err,
               size_t len) {
    return sample_keys(c, mode, seeds, ns, fan, L, NULL, seed, epoch, replace, counts, counts_cap, err, len);
}

int ssg_sample_keyed(ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t ns, const int32_t *fan, int32_t L,
                     const uint64_t *keys, int32_t replace, uint64_t *counts, uint64_t counts_cap, char *err,
                     size_t len) {
    if (!keys) {
        c->L = -1;
        set_err(err, len, "invalid request: no layer keys");
        return SSG_ERR_INVALID;
    }
    return sample_keys(c, mode, seeds, ns, fan, L, keys, 0, 0, replace, counts, counts_cap, err, len);
}

int ssg_fetch(ssg_ctx *c, uint32_t *fr, uint64_t fr_cap, int32_t *sa, uint64_t sa_cap, uint32_t *fin,
              uint64_t fin_cap, char *err, size_t len) {
    char m[256];
    uint64_t nf = 0, ns = 0;
    if (c->L < 0) {
        set_err(err, len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    for (int l = 0; l < c->L; l++) nf += c->counts[l], ns += c->sizes[l];
    /* The capacity checks of the CUDA library, word for word. */
    const char *name = NULL;
    uint64_t need = 0, cap = 0;
    if (fr && fr_cap < nf) name = "frontiers", need = nf, cap = fr_cap;
    else if (sa && sa_cap < ns) name = "samples", need = ns, cap = sa_cap;
    else if (fin && fin_cap < c->counts[c->L]) name = "final", need = c->counts[c->L], cap = fin_cap;
    if (name) {
        snprintf(m, sizeof m, "%s array too small: the last ssg_sample's result needs %llu elements, capacity %llu",
                 name, (unsigned long long)need, (unsigned long long)cap);
        set_err(err, len, m);
        return SSG_ERR_INVALID;
    }
    if (fr) memcpy(fr, c->front, nf * 4);
    if (sa) memcpy(sa, c->samp, ns * 4);
    if (fin) memcpy(fin, c->fin, c->counts[c->L] * 4);
    return SSG_OK;
}

int ssg_fetch_edges(ssg_ctx *c, int64_t *eids, uint64_t cap, char *err, size_t len) {
    char m[256];
    uint64_t ns = 0;
    if (c->L < 0) {
        set_err(err, len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    if (!c->edge_ids) {
        set_err(err, len, "no edge ids: the context was created without ssg_options.edge_ids");
        return SSG_ERR_INVALID;
    }
    for (int l = 0; l < c->L; l++) ns += c->sizes[l];
    if (ns > 0 && (!eids || cap < ns)) {
        snprintf(m, sizeof m, "edge_ids array too small: the last ssg_sample's result needs %llu elements, capacity %llu",
                 (unsigned long long)ns, (unsigned long long)(eids ? cap : 0));
        set_err(err, len, m);
        return SSG_ERR_INVALID;
    }
    if (ns) memcpy(eids, c->eids, ns * 8);
    return SSG_OK;
}

int ssg_layer_sizes(ssg_ctx *c, uint64_t *sizes, uint64_t cap, char *err, size_t len) {
    if (c->L < 0) {
        set_err(err, len, "no result: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    if (!sizes || cap < (uint64_t)c->L) {
        set_err(err, len, "sizes array too small");
        return SSG_ERR_INVALID;
    }
    memcpy(sizes, c->sizes, (size_t)c->L * 8);
    return SSG_OK;
}

int ssg_fetch_offsets(ssg_ctx *c, int64_t *offs, uint64_t cap, char *err, size_t len) {
    if (c->L < 0) {
        set_err(err, len, "no result to fetch: call ssg_sample first (a failed ssg_sample leaves none)");
        return SSG_ERR_INVALID;
    }
    if (c->n_offs > 0 && (!offs || cap < c->n_offs)) {
        set_err(err, len, "offsets array too small");
        return SSG_ERR_INVALID;
    }
    if (c->n_offs) memcpy(offs, c->offs, c->n_offs * 8);
    return SSG_OK;
}

int ssg_count_edges(ssg_ctx *c, uint64_t *edges, char *err, size_t len) {
    uint64_t ns = 0, m = 0;
    if (c->L < 0) {
        set_err(err, len, "no result to count: call ssg_sample first");
        return SSG_ERR_INVALID;
    }
    for (int l = 0; l < c->L; l++) ns += c->sizes[l];
    for (uint64_t i = 0; i < ns; i++) m += c->samp[i] >= 0;
    *edges = m;
    return SSG_OK;
}

/* Walks: DESIGN §3 "Walks" as walk.Reference writes it, step by
 * step, with the checks of the CUDA library. */
static uint64_t wdraw(uint64_t key, uint32_t w, uint32_t t) { return mix64(key ^ (((uint64_t)w << 32) | t)); }
static int wdecide(uint64_t key, uint32_t w, uint32_t a, uint64_t thr) { return (wdraw(key, w, 2 * a + 1) >> 32) < thr; }
static int is_neighbor(const uint32_t *adj, uint64_t d, uint32_t x) {
    uint64_t lo = 0, hi = d;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (adj[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < d && adj[lo] == x;
}

int ssg_walk(ssg_ctx *c, int32_t mode, const uint32_t *starts, uint64_t n_starts, uint32_t R, uint32_t L,
             uint64_t seed, uint64_t restart, int32_t stop, uint64_t t_ret, uint64_t t_near, uint64_t t_far,
             int32_t *out, uint64_t out_cap, char *err, size_t len) {
    char m[256];
    const uint64_t one = (uint64_t)1 << 32;
    if (!c || !c->ready) {
        set_err(err, len, "graph not loaded: ssg_load_indptr has not completed it");
        return SSG_ERR_INVALID;
    }
    if (mode < SSG_WALK_DEEPWALK || mode > SSG_WALK_NODE2VEC) {
        snprintf(m, sizeof m, "invalid walk: mode %d, want 0 (deepwalk), 1 (ppr) or 2 (node2vec)", mode);
        set_err(err, len, m);
        return SSG_ERR_INVALID;
    }
    if (L < 1 || R < 1 || (n_starts && !starts)) {
        snprintf(m, sizeof m, "invalid walk: length %u and %u walks per node (want >= 1 each)", L, R);
        set_err(err, len, m);
        return SSG_ERR_INVALID;
    }
    if (restart > one || t_ret > one || t_near > one || t_far > one || n_starts > 0xffffffffull / R) {
        set_err(err, len, "invalid walk: thresholds over 2^32, or over 2^32-1 walks");
        return SSG_ERR_INVALID;
    }
    uint64_t W = n_starts * R, row = (uint64_t)L + 1, need = W * row;
    if (need && (!out || out_cap < need)) {
        snprintf(m, sizeof m, "out array too small: %llu walks of %llu nodes need %llu elements, capacity %llu",
                 (unsigned long long)W, (unsigned long long)row, (unsigned long long)need,
                 (unsigned long long)(out ? out_cap : 0));
        set_err(err, len, m);
        return SSG_ERR_INVALID;
    }
    for (uint64_t i = 0; i < n_starts; i++)
        if (starts[i] >= c->n) {
            snprintf(m, sizeof m, "start %u (position %llu) is not a node: graph has %u nodes", starts[i],
                     (unsigned long long)i, c->n);
            set_err(err, len, m);
            return SSG_ERR_INVALID;
        }
    if (seed == 0xdead) {
        set_err(err, len, "CUDA error cudaErrorLaunchFailure (unspecified launch failure) in walk_kernel launch");
        return SSG_ERR_CUDA;
    }
    for (uint64_t w = 0; w < W; w++) {
        int32_t *walk = out + w * row;
        uint32_t start = starts[w % n_starts];
        walk[0] = (int32_t)start;
        uint64_t t = 1;
        for (; t < row; t++) {
            uint32_t v = (uint32_t)walk[t - 1];
            const uint32_t *nb = c->indices + c->indptr[v];
            uint32_t d = (uint32_t)(c->indptr[v + 1] - c->indptr[v]), next;
            if (d == 0) break;
            uint64_t key = mix64(seed) ^ mix64(((uint64_t)1 << 63) | t);
            if (mode == SSG_WALK_PPR && wdecide(key, (uint32_t)w, 0, restart)) {
                if (stop) break;
                next = start;
            } else if (mode == SSG_WALK_NODE2VEC && t >= 2) {
                uint32_t u = (uint32_t)walk[t - 2];
                const uint32_t *prev = c->indices + c->indptr[u];
                uint64_t pd = c->indptr[u + 1] - c->indptr[u];
                for (uint32_t a = 0;; a++) {
                    uint32_t x = nb[below(wdraw(key, (uint32_t)w, 2 * a), d)];
                    uint64_t thr = x == u ? t_ret : is_neighbor(prev, pd, x) ? t_near : t_far;
                    if (a >= 63 || wdecide(key, (uint32_t)w, a, thr)) {
                        next = x;
                        break;
                    }
                }
            } else {
                next = nb[below(wdraw(key, (uint32_t)w, 0), d)];
            }
            walk[t] = (int32_t)next;
        }
        for (; t < row; t++) walk[t] = -1;
    }
    return SSG_OK;
}

int ssg_last_timings(ssg_ctx *c, double *out, int n) {
    (void)c;
    for (int i = 0; i < n && i < 3; i++) out[i] = 0;
    return n < 3 ? n : 3;
}
#endif
