// test_gpu.cpp — unit test of libstreamsampler_gpu.so against a plain C++
// reference of DESIGN §3/§4 (the same algorithm as rng.Sample and
// host.Reference). Run by `make -C gpu test`, and under compute-sanitizer
// (memcheck, racecheck) by `make -C gpu sanitize` with a small graph.
//
// usage: test_gpu [nodes] [avg_degree]

#include "streamsampler_gpu.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t lkey(uint64_t seed, uint32_t epoch, int layer) {
    return mix64(seed) ^ mix64((uint64_t(epoch) << 8) | uint64_t(uint8_t(layer)));
}
static uint64_t draw(uint64_t key, uint32_t node, uint32_t t) {
    return mix64(key ^ ((uint64_t(node) << 32) | uint64_t(t)));
}
static uint32_t below(uint64_t r, uint32_t m) { return uint32_t((uint64_t(uint32_t(r >> 32)) * m) >> 32); }

// ref_sample writes node's k samples into out and their edge ids (first,
// the node's first edge, plus the position taken: rng.Positions) into eid.
static void ref_sample(int32_t *out, int64_t *eid, int k, const uint32_t *nb, uint32_t d, uint64_t first,
                       uint32_t node, uint64_t key, bool replace) {
    std::vector<int64_t> pos(k, -1);
    if (replace) {
        for (int t = 0; t < k; ++t)
            if (d > 0) pos[t] = below(draw(key, node, t), d);
    } else if (d <= uint32_t(k)) {
        for (int t = 0; t < int(d); ++t) pos[t] = t;
    } else {
        for (int t = 0; t < k; ++t) {
            uint32_t j = d - k + t;
            uint32_t p = below(draw(key, node, t), j + 1);
            for (int s = 0; s < t; ++s)
                if (pos[s] == int64_t(p)) {
                    p = j;
                    break;
                }
            pos[t] = p;
        }
    }
    for (int t = 0; t < k; ++t) {
        out[t] = pos[t] < 0 ? -1 : int32_t(nb[pos[t]]);
        eid[t] = pos[t] < 0 ? -1 : int64_t(first) + pos[t];
    }
}

// Walks (DESIGN §3, "Walks"), as walk.Reference writes them.
static uint64_t wkey(uint64_t seed, uint32_t t) { return mix64(seed) ^ mix64((uint64_t(1) << 63) | t); }
static uint32_t wcand(uint64_t key, uint32_t w, uint32_t a, uint32_t d) { return below(draw(key, w, 2 * a), d); }
static bool wdecide(uint64_t key, uint32_t w, uint32_t a, uint64_t thr) { return (draw(key, w, 2 * a + 1) >> 32) < thr; }
static uint64_t threshold(double p) {
    if (!(p > 0)) return 0;
    if (p >= 1) return uint64_t(1) << 32;
    return uint64_t(std::floor(p * 4294967296.0));
}

struct WalkSet {
    int mode; // SSG_WALK_*
    uint32_t R, L;
    uint64_t seed;
    double restart;
    bool stop;
    double p, q;
};

static std::vector<int32_t> ref_walks(const struct CSR &g, const std::vector<uint32_t> &starts, const WalkSet &ws);

static int failures = 0;
#define EXPECT(cond, ...)                                                                                      \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            ++failures;                                                                                        \
            std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
            std::fprintf(stderr, __VA_ARGS__);                                                                 \
            std::fprintf(stderr, "\n");                                                                        \
            if (failures > 20) std::exit(1);                                                                   \
        }                                                                                                      \
    } while (0)

struct CSR {
    uint32_t n;
    std::vector<uint64_t> indptr;
    std::vector<uint32_t> indices;
};

// A skewed random graph: a few hubs of high degree (Floyd path), many
// nodes of degree below the fanout, some isolated nodes.
static CSR make_graph(uint32_t n, int avg, uint64_t seed) {
    CSR g;
    g.n = n;
    g.indptr.assign(n + 1, 0);
    uint64_t s = seed;
    auto rnd = [&]() { return mix64(s++); };
    std::vector<std::vector<uint32_t>> adj(n);
    for (uint32_t v = 0; v < n; ++v) {
        uint64_t r = rnd();
        uint32_t d;
        if (r % 97 == 0) d = 0;
        else if (r % 50 == 1) d = uint32_t(avg * 20 + rnd() % (avg * 40 + 1));
        else d = uint32_t(rnd() % (2 * avg + 1));
        std::set<uint32_t> nb;
        for (uint32_t i = 0; i < d; ++i) {
            // skew towards low ids: hubs get many in-edges too
            uint64_t x = rnd();
            uint32_t u = (x & 1) ? uint32_t((x >> 1) % n) : uint32_t(((x >> 1) % n) % (n / 16 + 1));
            nb.insert(u);
        }
        adj[v].assign(nb.begin(), nb.end());
    }
    for (uint32_t v = 0; v < n; ++v) g.indptr[v + 1] = g.indptr[v] + adj[v].size();
    for (auto &a : adj) g.indices.insert(g.indices.end(), a.begin(), a.end());
    return g;
}

struct Res {
    std::vector<std::vector<uint32_t>> front;
    std::vector<std::vector<int32_t>> samp;
    std::vector<std::vector<int64_t>> eids; // edge ids; run leaves it empty unless asked
    std::vector<uint32_t> fin;
};

static Res reference(const CSR &g, std::vector<uint32_t> seeds, const std::vector<int> &fan, uint64_t seed,
                     uint32_t epoch, bool replace) {
    Res r;
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    std::vector<uint32_t> f = seeds;
    for (size_t l = 0; l < fan.size(); ++l) {
        int k = fan[l];
        uint64_t key = lkey(seed, epoch, int(l));
        std::vector<int32_t> s(f.size() * k);
        std::vector<int64_t> e(f.size() * k);
        for (size_t i = 0; i < f.size(); ++i) {
            uint32_t v = f[i];
            ref_sample(&s[i * k], &e[i * k], k, g.indices.data() + g.indptr[v],
                       uint32_t(g.indptr[v + 1] - g.indptr[v]), g.indptr[v], v, key, replace);
        }
        std::vector<uint32_t> nx = f;
        for (int32_t x : s)
            if (x >= 0) nx.push_back(uint32_t(x));
        std::sort(nx.begin(), nx.end());
        nx.erase(std::unique(nx.begin(), nx.end()), nx.end());
        r.front.push_back(f);
        r.samp.push_back(s);
        r.eids.push_back(e);
        f = nx;
    }
    r.fin = f;
    return r;
}

// node2vec's thresholds: each kind's weight over the largest (rng.Node2Vec).
static void n2v_thresholds(double p, double q, uint64_t t[3]) {
    const double m = std::max(1 / p, std::max(1.0, 1 / q));
    t[0] = threshold(1 / p / m), t[1] = threshold(1 / m), t[2] = threshold(1 / q / m);
}

static std::vector<int32_t> ref_walks(const CSR &g, const std::vector<uint32_t> &starts, const WalkSet &ws) {
    const uint64_t n = starts.size(), W = n * ws.R, row = uint64_t(ws.L) + 1;
    std::vector<int32_t> out(W * row, -1);
    uint64_t nt[3];
    n2v_thresholds(ws.p, ws.q, nt);
    const uint64_t rt = threshold(ws.restart);
    for (uint64_t w = 0; w < W; ++w) {
        int32_t *walk = &out[w * row];
        const uint32_t start = starts[w % n];
        walk[0] = int32_t(start);
        for (uint32_t t = 1; t < row; ++t) {
            const uint32_t v = uint32_t(walk[t - 1]);
            const uint32_t *nb = g.indices.data() + g.indptr[v];
            const uint32_t d = uint32_t(g.indptr[v + 1] - g.indptr[v]);
            if (d == 0) break;
            const uint64_t key = wkey(ws.seed, t);
            uint32_t next;
            if (ws.mode == SSG_WALK_PPR && wdecide(key, uint32_t(w), 0, rt)) {
                if (ws.stop) break;
                next = start;
            } else if (ws.mode == SSG_WALK_NODE2VEC && t >= 2) {
                const uint32_t u = uint32_t(walk[t - 2]);
                const uint32_t *pb = g.indices.data() + g.indptr[u], *pe = g.indices.data() + g.indptr[u + 1];
                for (uint32_t a = 0;; ++a) {
                    const uint32_t x = nb[wcand(key, uint32_t(w), a, d)];
                    const uint64_t thr = x == u ? nt[0] : std::binary_search(pb, pe, x) ? nt[1] : nt[2];
                    if (a >= 63 || wdecide(key, uint32_t(w), a, thr)) {
                        next = x;
                        break;
                    }
                }
            } else {
                next = nb[wcand(key, uint32_t(w), 0, d)];
            }
            walk[t] = int32_t(next);
        }
    }
    return out;
}

// run_walks runs ssg_walk into an array of exactly W·(L+1) words followed
// by guard words, and checks the guards.
static std::vector<int32_t> run_walks(ssg_ctx *ctx, const std::vector<uint32_t> &starts, const WalkSet &ws,
                                      double *kernel_ms) {
    char err[512];
    const uint64_t need = uint64_t(starts.size()) * ws.R * (uint64_t(ws.L) + 1);
    std::vector<int32_t> out(need + 16, int32_t(0xdeadbeefu));
    uint64_t nt[3];
    n2v_thresholds(ws.p, ws.q, nt);
    int rc = ssg_walk(ctx, ws.mode, starts.data(), starts.size(), ws.R, ws.L, ws.seed, threshold(ws.restart),
                      ws.stop ? 1 : 0, nt[0], nt[1], nt[2], out.data(), need, err, sizeof err);
    if (rc != SSG_OK) {
        std::fprintf(stderr, "ssg_walk(mode %d): %d %s\n", ws.mode, rc, err);
        std::exit(1);
    }
    for (int i = 0; i < 16; ++i)
        if (out[need + i] != int32_t(0xdeadbeefu)) {
            std::fprintf(stderr, "FAIL: ssg_walk wrote past its capacity (guard word %d)\n", i);
            std::exit(1);
        }
    out.resize(need);
    double tm[3];
    ssg_last_timings(ctx, tm, 3);
    *kernel_ms = tm[0];
    return out;
}

// walk_tests: the walk kernel against ref_walks for every mode, device and
// UVA memory, launches of one walk count and of many (SSG_WALK_CHUNK_WALKS),
// on a multigraph (neighbors repeated) with nodes without neighbors; the
// argument checks refuse, writing nothing.
static void walk_tests(const CSR &g) {
    char err[512];
    const uint32_t n = g.n;
    CSR mg;
    mg.n = n;
    mg.indptr.assign(n + 1, 0);
    for (uint32_t v = 0; v < n; ++v) {
        if (v % 31 != 3)
            for (uint64_t i = g.indptr[v]; i < g.indptr[v + 1]; ++i)
                for (uint64_t c = 0; c <= (v + i) % 3; ++c) mg.indices.push_back(g.indices[i]);
        mg.indptr[v + 1] = mg.indices.size();
    }
    std::vector<uint32_t> starts;
    for (uint32_t i = 0; i < std::min<uint32_t>(n, 20000); ++i) starts.push_back(uint32_t(mix64(i + 3) % n));
    starts.push_back(3); // no neighbors
    const WalkSet sets[] = {
        {SSG_WALK_DEEPWALK, 3, 40, 1, 0, false, 1, 1},     {SSG_WALK_PPR, 2, 30, 2, 0.3, false, 1, 1},
        {SSG_WALK_PPR, 2, 30, 3, 0.15, true, 1, 1},        {SSG_WALK_NODE2VEC, 3, 40, 4, 0, false, 0.5, 2},
        {SSG_WALK_NODE2VEC, 2, 25, 5, 0, false, 4, 0.25},  {SSG_WALK_NODE2VEC, 1, 1, 6, 0, false, 1, 1},
    };
    for (int uva = 0; uva <= 1; ++uva) {
        ssg_options opt{};
        opt.uva = uva;
        ssg_ctx *ctx = nullptr;
        int rc = ssg_create(0, n, mg.indptr.data(), mg.indices.size(), mg.indices.data(), &opt, &ctx, err, sizeof err);
        EXPECT(rc == SSG_OK, "walk create uva=%d: %s", uva, err);
        if (rc != SSG_OK) continue;
        for (const char *chunk : {"", "777"}) {
            setenv("SSG_WALK_CHUNK_WALKS", chunk, 1);
            for (const WalkSet &ws : sets) {
                double ms = 0;
                const std::vector<int32_t> got = run_walks(ctx, starts, ws, &ms), want = ref_walks(mg, starts, ws);
                uint64_t i = 0;
                while (i < want.size() && got[i] == want[i]) ++i;
                EXPECT(i == want.size(), "walks uva=%d chunk=%s mode=%d seed=%llu: walk %llu step %llu: %d, want %d",
                       uva, chunk, ws.mode, (unsigned long long)ws.seed, (unsigned long long)(i / (ws.L + 1)),
                       (unsigned long long)(i % (ws.L + 1)), i < got.size() ? got[i] : 0, i < want.size() ? want[i] : 0);
                std::printf("ok? walks uva=%d chunk=%-3s mode=%d R=%u L=%u: %zu walks, kernels %.3f ms\n", uva, chunk,
                            ws.mode, ws.R, ws.L, starts.size() * ws.R, ms);
            }
        }
        unsetenv("SSG_WALK_CHUNK_WALKS");
        // Refusals write nothing.
        std::vector<int32_t> out(2 * 6, 77);
        const uint32_t two[2] = {0, 1}, bad[2] = {0, n};
        const uint64_t one = uint64_t(1) << 32;
        struct {
            int mode;
            const uint32_t *s;
            uint32_t R, L;
            uint64_t thr, cap;
            const char *want;
        } cases[] = {
            {0, two, 1, 5, 0, 11, "out array too small"}, {3, two, 1, 5, 0, 12, "mode 3"},
            {0, two, 1, 0, 0, 12, "length 0"},             {0, two, 0, 5, 0, 12, "0 walks per node"},
            {1, two, 1, 5, one + 1, 12, "thresholds"},     {0, bad, 1, 5, 0, 12, "is not a node"},
        };
        for (auto &cs : cases) {
            rc = ssg_walk(ctx, cs.mode, cs.s, 2, cs.R, cs.L, 1, cs.thr, 0, 0, 0, 0, out.data(), cs.cap, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, cs.want) &&
                       std::all_of(out.begin(), out.end(), [](int32_t x) { return x == 77; }),
                   "walk refusal %s: rc %d %s", cs.want, rc, err);
        }
        rc = ssg_walk(ctx, 0, two, 0, 1, 5, 1, 0, 0, 0, 0, 0, nullptr, 0, err, sizeof err);
        EXPECT(rc == SSG_OK, "no starts: rc %d %s", rc, err);
        ssg_destroy(ctx);
    }
}

constexpr int GUARD = 16;
constexpr uint32_t CANARY = 0xdeadbeefu;

// run samples and fetches a result; with edges (a context created with
// opts.edge_ids) its edge ids too, through ssg_fetch_edges.
static Res run(ssg_ctx *ctx, int mode, const std::vector<uint32_t> &seeds, const std::vector<int> &fan,
               uint64_t seed, uint32_t epoch, bool replace, bool want_edges = false) {
    char err[512];
    int L = int(fan.size());
    std::vector<uint64_t> counts(L + 1);
    std::vector<int32_t> f32(fan.begin(), fan.end());
    int rc = ssg_sample(ctx, mode, seeds.data(), seeds.size(), f32.data(), L, seed, epoch, replace ? 1 : 0,
                        counts.data(), counts.size(), err, sizeof err);
    if (rc != SSG_OK) {
        std::fprintf(stderr, "ssg_sample(mode %d): %d %s\n", mode, rc, err);
        std::exit(1);
    }
    uint64_t nf = 0, ns = 0;
    for (int l = 0; l < L; ++l) {
        nf += counts[l];
        ns += counts[l] * fan[l];
    }
    // Exact capacities, then GUARD canary words the library must not touch
    // (a host-side overrun shows here, not as heap corruption later).
    std::vector<uint32_t> fr(nf + GUARD, CANARY);
    std::vector<int32_t> sa(ns + GUARD, int32_t(CANARY));
    Res r;
    r.fin.assign(counts[L] + GUARD, CANARY);
    rc = ssg_fetch(ctx, fr.data(), nf, sa.data(), ns, r.fin.data(), counts[L], err, sizeof err);
    if (rc != SSG_OK) {
        std::fprintf(stderr, "ssg_fetch: %d %s\n", rc, err);
        std::exit(1);
    }
    for (int i = 0; i < GUARD; ++i)
        EXPECT(fr[nf + i] == CANARY && sa[ns + i] == int32_t(CANARY) && r.fin[counts[L] + i] == CANARY,
               "ssg_fetch wrote past an array's capacity (guard word %d)", i);
    r.fin.resize(counts[L]);
    uint64_t edges = 0, valid = 0;
    rc = ssg_count_edges(ctx, &edges, err, sizeof err);
    for (uint64_t i = 0; i < ns; ++i) valid += sa[i] >= 0;
    EXPECT(rc == SSG_OK && edges == valid, "ssg_count_edges: rc %d, %llu edges, want %llu", rc,
           (unsigned long long)edges, (unsigned long long)valid);
    std::vector<int64_t> ea;
    if (want_edges) {
        ea.assign(ns + GUARD, int64_t(CANARY));
        rc = ssg_fetch_edges(ctx, ea.data(), ns, err, sizeof err);
        if (rc != SSG_OK) {
            std::fprintf(stderr, "ssg_fetch_edges: %d %s\n", rc, err);
            std::exit(1);
        }
        for (int i = 0; i < GUARD; ++i)
            EXPECT(ea[ns + i] == int64_t(CANARY), "ssg_fetch_edges wrote past the capacity (guard word %d)", i);
    }
    uint64_t o = 0, so = 0;
    for (int l = 0; l < L; ++l) {
        r.front.emplace_back(fr.begin() + o, fr.begin() + o + counts[l]);
        r.samp.emplace_back(sa.begin() + so, sa.begin() + so + counts[l] * fan[l]);
        if (want_edges) r.eids.emplace_back(ea.begin() + so, ea.begin() + so + counts[l] * fan[l]);
        o += counts[l];
        so += counts[l] * fan[l];
    }
    return r;
}

static void compare(const char *what, const Res &got, const Res &want) {
    EXPECT(got.front.size() == want.front.size(), "%s: layers %zu want %zu", what, got.front.size(),
           want.front.size());
    for (size_t l = 0; l < want.front.size() && l < got.front.size(); ++l) {
        EXPECT(got.front[l] == want.front[l], "%s: layer %zu frontier differs (%zu vs %zu nodes)", what, l,
               got.front[l].size(), want.front[l].size());
        if (got.samp[l] != want.samp[l]) {
            size_t i = 0;
            while (i < got.samp[l].size() && i < want.samp[l].size() && got.samp[l][i] == want.samp[l][i]) ++i;
            EXPECT(false, "%s: layer %zu samples differ first at %zu (%d vs %d)", what, l, i,
                   i < got.samp[l].size() ? got.samp[l][i] : -9, i < want.samp[l].size() ? want.samp[l][i] : -9);
        }
        if (!got.eids.empty() && got.eids[l] != want.eids[l]) {
            size_t i = 0;
            while (i < got.eids[l].size() && i < want.eids[l].size() && got.eids[l][i] == want.eids[l][i]) ++i;
            EXPECT(false, "%s: layer %zu edge ids differ first at %zu (%lld vs %lld)", what, l, i,
                   (long long)(i < got.eids[l].size() ? got.eids[l][i] : -9),
                   (long long)(i < want.eids[l].size() ? want.eids[l][i] : -9));
        }
    }
    EXPECT(got.fin == want.fin, "%s: final frontier differs (%zu vs %zu)", what, got.fin.size(), want.fin.size());
}

// A large graph, fast to build: skewed degrees, uniform neighbors.
static CSR make_big(uint32_t n, int avg) {
    CSR g;
    g.n = n;
    g.indptr.assign(n + 1, 0);
    std::vector<uint32_t> tmp;
    for (uint32_t v = 0; v < n; ++v) {
        uint64_t r = mix64(v * 7 + 1);
        uint32_t d = (r % 100 == 0) ? uint32_t(avg * 30) : uint32_t(r % (2 * avg));
        tmp.clear();
        for (uint32_t i = 0; i < d; ++i) tmp.push_back(uint32_t(mix64(r + i) % n));
        std::sort(tmp.begin(), tmp.end());
        tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
        g.indices.insert(g.indices.end(), tmp.begin(), tmp.end());
        g.indptr[v + 1] = g.indices.size();
    }
    return g;
}

// big: an epoch of products size (8% seeds, [10,10,10]) against the
// reference, both engines, three times each (catches host-side overruns
// that only large results reach).
static int big() {
    char err[512];
    const uint32_t n = 2450000;
    CSR g = make_big(n, 25);
    std::printf("big graph: %u nodes, %zu edges\n", n, g.indices.size());
    ssg_options opt{};
    ssg_ctx *ctx = nullptr;
    if (ssg_create(0, n, g.indptr.data(), g.indices.size(), g.indices.data(), &opt, &ctx, err, sizeof err) != SSG_OK) {
        std::fprintf(stderr, "ssg_create: %s\n", err);
        return 1;
    }
    std::vector<uint32_t> seeds;
    for (uint32_t v = 0; v < n; ++v)
        if (mix64(v ^ 99) % 100 < 8) seeds.push_back(v);
    std::vector<int> fan = {10, 10, 10};
    Res want = reference(g, seeds, fan, 42, 0, false);
    for (int rep = 0; rep < 3; ++rep)
        for (int mode = 0; mode <= 1; ++mode) {
            Res got = run(ctx, mode, seeds, fan, 42, 0, false);
            compare(mode ? "big bsp" : "big fused", got, want);
            double tm[3];
            ssg_last_timings(ctx, tm, 3);
            std::printf("big %s: final %zu, kernel %.3f ms post %.3f ms total %.3f ms\n", mode ? "bsp" : "fused",
                        got.fin.size(), tm[0], tm[1], tm[2]);
        }
    ssg_destroy(ctx);
    std::printf(failures ? "FAIL\n" : "PASS\n");
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "big") == 0) return big();
    uint32_t n = argc > 1 ? uint32_t(std::atoi(argv[1])) : 200000;
    int avg = argc > 2 ? std::atoi(argv[2]) : 12;
    EXPECT(ssg_abi_version() == SSG_ABI_VERSION, "abi version");
    // DESIGN §3 test vectors, on the reference used below.
    EXPECT(lkey(42, 0, 0) == 0xa759ea27d4727622ull, "key vector");
    EXPECT(draw(0xa759ea27d4727622ull, 7, 0) == 0xbd18765c7790b1e1ull, "draw vector");
    {
        std::vector<uint32_t> nb(100);
        for (int i = 0; i < 100; ++i) nb[i] = 100 + i;
        int32_t o[5];
        int64_t e[5];
        ref_sample(o, e, 5, nb.data(), 100, 1000, 7, lkey(42, 0, 0), false);
        const int32_t w[5] = {170, 193, 151, 156, 181};
        const int64_t we[5] = {1070, 1093, 1051, 1056, 1081}; // first edge 1000 + positions
        EXPECT(std::memcmp(o, w, sizeof w) == 0, "floyd vector");
        EXPECT(std::memcmp(e, we, sizeof we) == 0, "floyd positions vector");
    }

    // DESIGN §3 walk vectors (seed 42, walk 7).
    {
        const uint64_t k1 = wkey(42, 1);
        EXPECT(k1 == 0x8592ec97a10acddcull, "walkkey vector");
        EXPECT(draw(k1, 7, 0) == 0xfcbda3ddfca68128ull, "walk draw vector");
        EXPECT(wcand(k1, 7, 0, 1000) == 987 && wcand(k1, 7, 1, 1000) == 410, "candidate vectors");
        EXPECT((draw(k1, 7, 1) >> 32) == 1636014556ull, "decision word vector");
        EXPECT(threshold(0.15) == 644245094ull && !wdecide(k1, 7, 0, threshold(0.15)) &&
                   wdecide(k1, 7, 0, threshold(0.5)),
               "decide vectors");
        EXPECT(wcand(wkey(42, 2), 7, 0, 1000) == 634, "step 2 candidate vector");
        uint64_t t[3];
        n2v_thresholds(0.5, 2, t);
        EXPECT(t[0] == (uint64_t(1) << 32) && t[1] == (uint64_t(1) << 31) && t[2] == (uint64_t(1) << 30),
               "node2vec thresholds vector");
    }

    char err[512];
    int ndev = 0;
    if (ssg_device_count(&ndev, err, sizeof err) != SSG_OK) {
        std::fprintf(stderr, "%s\n", err);
        return 2;
    }
    CSR g = make_graph(n, avg, 7);
    std::printf("graph: %u nodes, %zu edges\n", n, g.indices.size());
    walk_tests(g);
    for (int uva = 0; uva <= 1; ++uva) {
        ssg_options opt{};
        opt.uva = uva;
        opt.timeout_ms = std::getenv("SSG_TIMEOUT_MS") ? std::atoi(std::getenv("SSG_TIMEOUT_MS")) : 120000;
        ssg_ctx *ctx = nullptr;
        int rc = ssg_create(0, n, g.indptr.data(), g.indices.size(), g.indices.data(), &opt, &ctx, err, sizeof err);
        if (rc != SSG_OK) {
            std::fprintf(stderr, "ssg_create: %d %s\n", rc, err);
            return 1;
        }
        char name[256];
        int32_t isuva = -1;
        ssg_info(ctx, name, sizeof name, &isuva, err, sizeof err);
        std::printf("device: %s uva=%d\n", name, isuva);
        EXPECT(isuva == uva, "uva flag");

        struct Case {
            std::vector<int> fan;
            bool replace;
            uint32_t nseeds;
        };
        std::vector<Case> cases = {{{15, 10, 5}, false, 1024}, {{10, 10, 10}, false, n / 12},
                                   {{5, 3}, true, 5000},     {{40, 1, 64}, false, 300},
                                   {{1}, false, 100},        {{25, 2}, true, 777}};
        if (uva) cases.resize(2);
        uint64_t seed = 42;
        for (auto &cs : cases) {
            std::vector<uint32_t> seeds;
            for (uint32_t i = 0; i < cs.nseeds; ++i) seeds.push_back(uint32_t(mix64(seed * 1000 + i) % n));
            seeds.push_back(seeds.empty() ? 0 : seeds[0]); // a duplicate
            Res want = reference(g, seeds, cs.fan, seed, 3, cs.replace);
            for (int mode = 0; mode <= 1; ++mode) {
                char what[128];
                std::snprintf(what, sizeof what, "uva=%d mode=%s L=%zu k0=%d replace=%d seeds=%u", uva,
                              mode ? "bsp" : "fused", cs.fan.size(), cs.fan[0], int(cs.replace), cs.nseeds);
                Res got = run(ctx, mode, seeds, cs.fan, seed, 3, cs.replace);
                compare(what, got, want);
                double tm[3];
                ssg_last_timings(ctx, tm, 3);
                std::printf("ok? %-60s final=%zu  kernel %.3f ms post %.3f ms total %.3f ms\n", what,
                            got.fin.size(), tm[0], tm[1], tm[2]);
            }
            ++seed;
        }
        // Tuning knobs must not change results.
        if (!uva) {
            for (int gs : {4, 32}) {
                for (int fetch : {32, 1024}) {
                    ssg_destroy(ctx);
                    ssg_options o2 = opt;
                    o2.group_size = gs;
                    o2.fetch_size = fetch;
                    o2.block_size = 256;
                    rc = ssg_create(0, n, g.indptr.data(), g.indices.size(), g.indices.data(), &o2, &ctx, err,
                                    sizeof err);
                    EXPECT(rc == SSG_OK, "create: %s", err);
                    std::vector<uint32_t> seeds;
                    for (uint32_t i = 0; i < 3000; ++i) seeds.push_back(uint32_t(mix64(i) % n));
                    std::vector<int> fan = {12, 7, 3};
                    Res want = reference(g, seeds, fan, 9, 1, false);
                    compare("tuned fused", run(ctx, 0, seeds, fan, 9, 1, false), want);
                    compare("tuned bsp", run(ctx, 1, seeds, fan, 9, 1, false), want);
                }
            }
        }
        // Errors are reported, not crashes.
        {
            std::vector<uint32_t> bad = {1, n + 5};
            int32_t f = 3;
            uint64_t counts[2];
            rc = ssg_sample(ctx, 0, bad.data(), bad.size(), &f, 1, 1, 0, 0, counts, 2, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "not a node"), "bad seed: rc %d %s", rc, err);
            f = 0;
            rc = ssg_sample(ctx, 0, bad.data(), 1, &f, 1, 1, 0, 0, counts, 2, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID, "fanout 0: rc %d", rc);
            std::vector<uint32_t> none;
            f = 4;
            rc = ssg_sample(ctx, 0, none.data(), 0, &f, 1, 1, 0, 0, counts, 2, err, sizeof err);
            EXPECT(rc == SSG_OK && counts[0] == 0 && counts[1] == 0, "empty seeds: rc %d %s", rc, err);
        }
        // Undersized output arrays are errors, and nothing is written.
        for (int mode = 0; mode <= 1; ++mode) {
            std::vector<uint32_t> seeds;
            for (uint32_t i = 0; i < 2000; ++i) seeds.push_back(uint32_t(mix64(i + 77) % n));
            const int32_t fan[3] = {15, 10, 5};
            uint64_t counts[4] = {CANARY, CANARY, CANARY, CANARY};
            rc = ssg_sample(ctx, mode, seeds.data(), seeds.size(), fan, 3, 5, 0, 0, counts, 3, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "counts array too small") && counts[0] == CANARY,
                   "mode %d counts_cap 3 for 3 layers: rc %d %s", mode, rc, err);
            rc = ssg_fetch(ctx, nullptr, 0, nullptr, 0, nullptr, 0, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "no result"), "fetch after a failed sample: rc %d %s",
                   rc, err);
            rc = ssg_sample(ctx, mode, seeds.data(), seeds.size(), fan, 3, 5, 0, 0, counts, 4, err, sizeof err);
            EXPECT(rc == SSG_OK, "mode %d sample: %s", mode, err);
            const uint64_t nf = counts[0] + counts[1] + counts[2];
            const uint64_t ns = counts[0] * 15 + counts[1] * 10 + counts[2] * 5, nfin = counts[3];
            std::vector<uint32_t> fr(nf, CANARY), fin(nfin, CANARY);
            std::vector<int32_t> sa(ns, int32_t(CANARY));
            struct {
                uint64_t fc, sc, nc;
                const char *name;
            } bad[3] = {{nf - 1, ns, nfin, "frontiers"}, {nf, ns - 1, nfin, "samples"}, {nf, ns, nfin - 1, "final"}};
            for (auto &b : bad) {
                rc = ssg_fetch(ctx, fr.data(), b.fc, sa.data(), b.sc, fin.data(), b.nc, err, sizeof err);
                const bool untouched = std::all_of(fr.begin(), fr.end(), [](uint32_t x) { return x == CANARY; }) &&
                                       std::all_of(sa.begin(), sa.end(), [](int32_t x) { return x == int32_t(CANARY); }) &&
                                       std::all_of(fin.begin(), fin.end(), [](uint32_t x) { return x == CANARY; });
                EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, b.name) && std::strstr(err, "too small") && untouched,
                       "mode %d undersized %s: rc %d untouched %d: %s", mode, b.name, rc, int(untouched), err);
            }
            // Arrays sized from an earlier, smaller result (a stale count).
            const int32_t small = 2;
            uint64_t c2[2];
            rc = ssg_sample(ctx, mode, seeds.data(), 10, &small, 1, 5, 0, 0, c2, 2, err, sizeof err);
            EXPECT(rc == SSG_OK, "small sample: %s", err);
            std::vector<uint32_t> sfr(c2[0]);
            rc = ssg_sample(ctx, mode, seeds.data(), seeds.size(), fan, 3, 5, 0, 0, counts, 4, err, sizeof err);
            rc = ssg_fetch(ctx, sfr.data(), sfr.size(), nullptr, 0, nullptr, 0, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "frontiers array too small"),
                   "mode %d stale counts: rc %d %s", mode, rc, err);
            rc = ssg_fetch(ctx, fr.data(), nf, sa.data(), ns, fin.data(), nfin, err, sizeof err);
            EXPECT(rc == SSG_OK && fr[0] != CANARY, "mode %d exact fetch: rc %d %s", mode, rc, err);
        }
        ssg_destroy(ctx);
    }
    // Edge ids (ABI 4) on a multigraph (every neighbor repeated up to three
    // times, so the id is not recoverable from the neighbor): both
    // engines, both modes of replacement, device and UVA memory; a
    // context without edge ids refuses ssg_fetch_edges, and an undersized
    // array is refused with nothing written.
    {
        CSR mg;
        mg.n = n;
        mg.indptr.assign(n + 1, 0);
        for (uint32_t v = 0; v < n; ++v) {
            for (uint64_t i = g.indptr[v]; i < g.indptr[v + 1]; ++i)
                for (uint64_t c = 0; c <= (v + i) % 3; ++c) mg.indices.push_back(g.indices[i]);
            mg.indptr[v + 1] = mg.indices.size();
        }
        for (int uva = 0; uva <= 1; ++uva) {
            ssg_options opt{};
            opt.uva = uva;
            opt.edge_ids = 1;
            ssg_ctx *ctx = nullptr;
            int rc = ssg_create(0, n, mg.indptr.data(), mg.indices.size(), mg.indices.data(), &opt, &ctx, err,
                                sizeof err);
            EXPECT(rc == SSG_OK, "create with edge ids uva=%d: %s", uva, err);
            if (rc != SSG_OK) continue;
            std::vector<uint32_t> seeds;
            for (uint32_t i = 0; i < 3000; ++i) seeds.push_back(uint32_t(mix64(i + 99) % n));
            for (int replace = 0; replace <= 1; ++replace) {
                const std::vector<int> fan = {15, 40, 3};
                Res want = reference(mg, seeds, fan, 21, 4, replace != 0);
                for (int mode = 0; mode <= 1; ++mode) {
                    char what[96];
                    std::snprintf(what, sizeof what, "edge ids uva=%d mode=%s replace=%d", uva,
                                  mode ? "bsp" : "fused", replace);
                    compare(what, run(ctx, mode, seeds, fan, 21, 4, replace != 0, true), want);
                    std::printf("ok? %s\n", what);
                }
            }
            // Undersized: refused, untouched.
            const int32_t f4 = 4;
            uint64_t c2[2];
            rc = ssg_sample(ctx, 0, seeds.data(), seeds.size(), &f4, 1, 1, 0, 0, c2, 2, err, sizeof err);
            EXPECT(rc == SSG_OK, "sample: %s", err);
            std::vector<int64_t> ea(c2[0] * 4, int64_t(CANARY));
            rc = ssg_fetch_edges(ctx, ea.data(), ea.size() - 1, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "too small") &&
                       std::all_of(ea.begin(), ea.end(), [](int64_t x) { return x == int64_t(CANARY); }),
                   "undersized edge ids: rc %d %s", rc, err);
            ssg_destroy(ctx);
        }
        ssg_options opt{};
        ssg_ctx *ctx = nullptr;
        int rc = ssg_create(0, n, g.indptr.data(), g.indices.size(), g.indices.data(), &opt, &ctx, err, sizeof err);
        EXPECT(rc == SSG_OK, "create: %s", err);
        if (rc == SSG_OK) {
            const int32_t f4 = 4;
            uint64_t c2[2];
            std::vector<uint32_t> seeds = {0, 1, 2};
            rc = ssg_sample(ctx, 0, seeds.data(), seeds.size(), &f4, 1, 1, 0, 0, c2, 2, err, sizeof err);
            std::vector<int64_t> ea(c2[0] * 4 + 1);
            rc = ssg_fetch_edges(ctx, ea.data(), ea.size(), err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "no edge ids"), "edge ids not kept: rc %d %s", rc, err);
            ssg_destroy(ctx);
        }
    }
    // A graph loaded piece by piece (ABI 3): uneven pieces, some larger
    // than a staging half (8 MiB), samples as the one from ssg_create; the
    // loading checks refuse misuse.
    for (int uva = 0; uva <= 1; ++uva) {
        ssg_options opt{};
        opt.uva = uva;
        ssg_ctx *ctx = nullptr;
        const uint64_t nnz = g.indices.size();
        int rc = ssg_create_empty(0, n, nnz, &opt, &ctx, err, sizeof err);
        EXPECT(rc == SSG_OK, "create_empty uva=%d: %s", uva, err);
        if (rc != SSG_OK) continue;
        const int32_t f3 = 3;
        uint64_t c2[2];
        rc = ssg_sample(ctx, 0, g.indices.data(), 1, &f3, 1, 1, 0, 0, c2, 2, err, sizeof err);
        EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "not loaded"), "sample before loading: rc %d %s", rc, err);
        rc = ssg_load_indices(ctx, 1, g.indices.data() + 1, 5, err, sizeof err);
        EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "in order"), "gap: rc %d %s", rc, err);
        rc = ssg_load_indptr(ctx, g.indptr.data(), uint64_t(n) + 1, err, sizeof err);
        EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "after all edges"), "indptr early: rc %d %s", rc, err);
        const uint64_t sizes[] = {1, 7, 4096, 3000001, 2097152, 999, 5000000};
        uint64_t off = 0;
        for (int i = 0; off < nnz; ++i) {
            const uint64_t m = std::min<uint64_t>(sizes[i % 7], nnz - off);
            rc = ssg_load_indices(ctx, off, g.indices.data() + off, m, err, sizeof err);
            EXPECT(rc == SSG_OK, "load [%llu,+%llu): %s", (unsigned long long)off, (unsigned long long)m, err);
            off += m;
        }
        rc = ssg_load_indices(ctx, nnz, g.indices.data(), 1, err, sizeof err);
        EXPECT(rc == SSG_ERR_INVALID, "past num_edges: rc %d %s", rc, err);
        std::vector<uint64_t> bad = g.indptr;
        bad[n] = nnz - 1;
        rc = ssg_load_indptr(ctx, bad.data(), uint64_t(n) + 1, err, sizeof err);
        EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "invalid CSR"), "indptr end: rc %d %s", rc, err);
        if (n > 2) {
            bad = g.indptr;
            bad[1] = bad[2] + 1;
            rc = ssg_load_indptr(ctx, bad.data(), uint64_t(n) + 1, err, sizeof err);
            EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "invalid CSR"), "indptr decreasing: rc %d %s", rc, err);
        }
        rc = ssg_load_indptr(ctx, g.indptr.data(), uint64_t(n) + 1, err, sizeof err);
        EXPECT(rc == SSG_OK, "indptr: %s", err);
        std::vector<uint32_t> seeds;
        for (uint32_t i = 0; i < 4000; ++i) seeds.push_back(uint32_t(mix64(i + 5) % n));
        const std::vector<int> fan = {15, 10, 5};
        Res want = reference(g, seeds, fan, 11, 2, false);
        for (int mode = 0; mode <= 1; ++mode) {
            char what[96];
            std::snprintf(what, sizeof what, "streamed uva=%d mode=%s", uva, mode ? "bsp" : "fused");
            compare(what, run(ctx, mode, seeds, fan, 11, 2, false), want);
            std::printf("ok? %s\n", what);
        }
        rc = ssg_load_indices(ctx, 0, g.indices.data(), 1, err, sizeof err);
        EXPECT(rc == SSG_ERR_INVALID && std::strstr(err, "complete"), "load after indptr: rc %d %s", rc, err);
        ssg_destroy(ctx);
    }
    if (failures) {
        std::printf("FAIL: %d failures\n", failures);
        return 1;
    }
    std::printf("PASS\n");
    return 0;
}
