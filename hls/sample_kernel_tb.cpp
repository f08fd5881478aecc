//go:build ignore

// sample_kernel_tb.cpp — C-simulation testbench for sample_kernel.
//
// What `make -C hls csim` builds with g++, what `go test ./hls` builds and
// runs (TestCSim), and what vitis_hls runs as csim (add this file with
// -tb and testdata/golden_kernel.bin as its -argv). It checks:
//   1. the DESIGN §3 test vectors, hard-coded here;
//   2. the kernel's guards (targets outside the chunk, fanout 0 or above
//      MAX_FANOUT) and that nothing past the result rows is written;
//   3. the walk-step mode (argument 8): the DESIGN §3 walk vectors, its
//      guards, and random walkers against walk_ref, a C++ rendering of the
//      contract (candidate(key, w, a, d) = below(draw(key, w, 2a), d));
//   4. the copy-all mode (fanout FANOUT_ALL, every neighbor): the DESIGN
//      §3 vector, rows cut by the capacity and resumed, targets outside
//      the chunk, random chunks launch after launch against all_ref;
//   5. every case of the golden file generated from the Go reference
//      (rng.Sample, rng.Positions, rng.Candidate) by `go test ./hls -run
//      Golden -update`, the cases with edge indices (argument 7) in both of
//      the kernel's forms (contiguous and sample_kernel_split), the walk
//      cases in both of theirs (contiguous and walk_kernel_split).
// Exit status 0 and a PASS line when all agree; 1 and the first mismatch of
// each failing case otherwise. (The go:build line keeps cgo from compiling
// this file into package hls.)

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sample_kernel.h"

namespace {

const int32_t kCanary = 0x5A5A5A5A;

// Same as the kernel's, for the key/draw vectors and walk_ref.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The walk contract of DESIGN §3, written out independently of the
// kernel's lanes and phases.
uint64_t walk_key(uint64_t seed, uint32_t step) {
  return mix64(seed) ^ mix64((1ull << 63) | step);
}
uint64_t draw(uint64_t key, uint32_t id, uint32_t t) {
  return mix64(key ^ ((uint64_t)id << 32 | t));
}
uint32_t below(uint64_t r, uint32_t m) { return (uint32_t)(((r >> 32) * m) >> 32); }
uint32_t candidate(uint64_t key, uint32_t w, uint32_t a, uint32_t d) {
  return below(draw(key, w, 2 * a), d);
}

// walk_ref is the walk-step mode's expected result buffer for walkers
// (nodes[r], walks[r]) in a valid chunk: k candidates per walker, -1 for a
// node without neighbors, then (with edges) their chunk-local edge indices.
std::vector<int32_t> walk_ref(const std::vector<uint32_t>& chunk,
                              const std::vector<uint32_t>& nodes,
                              const std::vector<uint32_t>& walks, uint32_t k, uint64_t key,
                              uint32_t a0, bool edges) {
  const size_t n = nodes.size();
  std::vector<int32_t> out(n * k * (edges ? 2 : 1), -1);
  const uint32_t first = 3 + chunk[0];
  for (size_t r = 0; r < n; r++) {
    const uint32_t i = nodes[r] - chunk[1];
    const uint32_t b = chunk[2 + i], d = chunk[3 + i] - b;
    for (uint32_t t = 0; d != 0 && t < k; t++) {
      const uint32_t w = b + candidate(key, walks[r], a0 + t, d);
      out[r * k + t] = (int32_t)chunk[w];
      if (edges) out[n * k + r * k + t] = (int32_t)(w - first);
    }
  }
  return out;
}

std::vector<uint32_t> build_chunk(uint32_t start, const std::vector<std::vector<uint32_t>>& adj,
                                  size_t pad) {
  std::vector<uint32_t> c;
  c.push_back((uint32_t)adj.size());
  c.push_back(start);
  uint32_t off = (uint32_t)(3 + adj.size());
  for (const auto& a : adj) {
    c.push_back(off);
    off += (uint32_t)a.size();
  }
  c.push_back(off);
  for (const auto& a : adj) c.insert(c.end(), a.begin(), a.end());
  c.insert(c.end(), pad, 0);
  return c;
}

// run calls the kernel with result rows followed by canary words and
// checks both the rows and the canaries; it prints the first mismatch.
// With edges, want holds the samples and then the edge indices, and the
// kernel is also run in its split form (sample_kernel_split), which must
// write the same two halves into two arrays.
//
// With walk != 0 (the walk-step mode, argument 8) targets holds the nodes
// and then as many walk ids, as the kernel's targets buffer does, and the
// kernel is also run in its split form (walk_kernel_split, nodes and walk
// ids apart), with and without edge indices.
int run(const char* name, const std::vector<uint32_t>& chunk, const std::vector<uint32_t>& targets,
        uint32_t fanout, uint64_t key, uint32_t replace, const std::vector<int32_t>& want,
        uint32_t edges = 0, uint32_t walk = 0) {
  std::vector<int32_t> out(want.size() + 16, kCanary);
  static const uint32_t none = 0;
  const uint32_t* tp = targets.empty() ? &none : targets.data();
  const uint32_t n = (uint32_t)(walk ? targets.size() / 2 : targets.size());
  sample_kernel(chunk.data(), out.data(), tp, n, fanout, key, replace, edges, walk);
  if (walk) {
    // Split form: nodes and walk ids in two arrays, samples and edge
    // indices (or no edge output) in two arrays.
    const size_t half = edges ? want.size() / 2 : want.size();
    std::vector<uint32_t> nodes(tp, tp + n), walks(tp + n, tp + 2 * n);
    nodes.push_back(0);
    walks.push_back(0);
    std::vector<int32_t> s(half + 16, kCanary), e(half + 16, kCanary);
    walk_kernel_split(chunk.data(), s.data(), edges ? e.data() : nullptr, nodes.data(),
                      walks.data(), n, fanout, key, walk - 1);
    for (size_t i = 0; i < half + 16; i++) {
      const int32_t ws = i < half ? want[i] : kCanary;
      const int32_t we = edges && i < half ? want[half + i] : kCanary;
      if (s[i] != ws || e[i] != we) {
        std::printf("FAIL %s (walk split): word %zu: got %d/%d, want %d/%d\n", name, i, s[i], e[i],
                    ws, we);
        return 1;
      }
    }
  } else if (edges) {
    const size_t half = want.size() / 2;
    std::vector<int32_t> s(half + 16, kCanary), e(half + 16, kCanary);
    sample_kernel_split(chunk.data(), s.data(), e.data(), tp, (uint32_t)targets.size(), fanout,
                        key, replace);
    for (size_t i = 0; i < half + 16; i++) {
      const int32_t ws = i < half ? want[i] : kCanary, we = i < half ? want[half + i] : kCanary;
      if (s[i] != ws || e[i] != we) {
        std::printf("FAIL %s (split): word %zu: got %d/%d, want %d/%d\n", name, i, s[i], e[i], ws,
                    we);
        return 1;
      }
    }
  }
  const size_t rows = edges ? want.size() / 2 : want.size();
  for (size_t i = 0; i < out.size(); i++) {
    const int32_t w = i < want.size() ? want[i] : kCanary;
    if (out[i] != w) {
      if (i < want.size() && fanout != 0) {
        const size_t j = i % rows;
        std::printf("FAIL %s: %s row %zu (target %u) slot %zu: got %d, want %d\n", name,
                    i < rows ? "sample" : "edge index", j / fanout, targets[j / fanout],
                    j % fanout, out[i], w);
      } else {
        std::printf("FAIL %s: wrote %d past the result (word %zu)\n", name, out[i], i);
      }
      return 1;
    }
  }
  return 0;
}

int design_vectors() {
  int fails = 0;
  const uint64_t key = mix64(42) ^ mix64(0);  // key(seed 42, epoch 0, layer 0)
  if (key != 0xa759ea27d4727622ull) {
    std::printf("FAIL key(42,0,0) = %#llx\n", (unsigned long long)key);
    fails++;
  }
  const uint64_t r = mix64(key ^ (7ull << 32));
  if (r != 0xbd18765c7790b1e1ull || (((r >> 32) * 1000) >> 32) != 738) {
    std::printf("FAIL draw(key,7,0) = %#llx\n", (unsigned long long)r);
    fails++;
  }
  std::vector<uint32_t> nb;
  for (uint32_t v = 100; v < 200; v++) nb.push_back(v);
  // Nodes 5..9: node 7 has 100..199, node 8 has [3 9].
  const auto chunk = build_chunk(5, {{}, {1}, nb, {3, 9}, {}}, 7);
  fails += run("design/floyd", chunk, {7}, 5, key, 0, {170, 193, 151, 156, 181});
  fails += run("design/replace", chunk, {7}, 5, key, 1, {173, 196, 152, 157, 181});
  fails += run("design/short", chunk, {8}, 4, key, 0, {3, 9, -1, -1});
  fails += run("design/empty-replace", chunk, {9}, 3, key, 1, {-1, -1, -1});
  // Edge indices (chunk-local: node 7's first edge is 1, node 8's 101).
  fails += run("design/floyd-edges", chunk, {7}, 5, key, 0,
               {170, 193, 151, 156, 181, 71, 94, 52, 57, 82}, 1);
  fails += run("design/replace-edges", chunk, {7}, 5, key, 1,
               {173, 196, 152, 157, 181, 74, 97, 53, 58, 82}, 1);
  fails += run("design/short-edges", chunk, {8, 9}, 4, key, 0,
               {3, 9, -1, -1, -1, -1, -1, -1, 101, 102, -1, -1, -1, -1, -1, -1}, 1);
  return fails;
}

int guards() {
  int fails = 0;
  const auto chunk = build_chunk(10, {{1, 2}, {3}, {4, 5, 6}}, 0);  // nodes 10..12
  fails += run("guard/outside", chunk, {9, 10, 13, 0x80000000u}, 2, 1, 0,
               {-1, -1, 1, 2, -1, -1, -1, -1});
  fails += run("guard/fanout0", chunk, {10}, 0, 1, 0, {});
  fails += run("guard/fanout-too-big", chunk, {10}, MAX_FANOUT + 1, 1, 0,
               std::vector<int32_t>(MAX_FANOUT + 1, -1));
  fails += run("guard/no-targets", chunk, {}, 4, 1, 0, {});
  fails += run("guard/outside-edges", chunk, {9, 10, 13}, 2, 1, 0,
               {-1, -1, 1, 2, -1, -1, -1, -1, 0, 1, -1, -1}, 1);
  fails += run("guard/fanout-too-big-edges", chunk, {10}, MAX_FANOUT + 1, 1, 0,
               std::vector<int32_t>(2 * (MAX_FANOUT + 1), -1), 1);
  return fails;
}

std::vector<int32_t> concat2(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// concat returns a's words followed by b's (a walk step's targets buffer).
std::vector<uint32_t> concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The DESIGN §3 walk vectors, through the kernel's walk-step mode.
int walk_vectors() {
  int fails = 0;
  const uint64_t key1 = walk_key(42, 1), key2 = walk_key(42, 2);
  if (key1 != 0x8592ec97a10acddcull || draw(key1, 7, 0) != 0xfcbda3ddfca68128ull ||
      candidate(key1, 7, 0, 1000) != 987 || candidate(key1, 7, 1, 1000) != 410 ||
      candidate(key2, 7, 0, 1000) != 634) {
    std::printf("FAIL walk vectors of DESIGN §3: walkkey(42, 1) = %#llx\n",
                (unsigned long long)key1);
    fails++;
  }
  std::vector<uint32_t> nb;
  for (uint32_t v = 1000; v < 2000; v++) nb.push_back(v);
  // Nodes 5..9: node 7 has 1000..1999 (first edge 1), node 8 [3 9], node
  // 9 none.
  const auto chunk = build_chunk(5, {{}, {1}, nb, {3, 9}, {}}, 5);
  fails += run("walk/design", chunk, {7, 7}, 2, key1, 0, {1987, 1410}, 0, 1);
  fails += run("walk/design-a1", chunk, {7, 7}, 1, key1, 0, {1410}, 0, 2);
  fails += run("walk/design-step2", chunk, {7, 7}, 1, key2, 1, {1634}, 0, 1);
  fails += run("walk/design-edges", chunk, {7, 7}, 2, key1, 0, {1987, 1410, 988, 411}, 1, 1);
  // Several walkers, one without neighbors; replace is ignored.
  const std::vector<uint32_t> nodes = {7, 9, 8, 7, 6}, walks = {7, 3, 7, 8, 0};
  for (uint32_t rep = 0; rep < 2; rep++) {
    fails += run("walk/rows", chunk, concat(nodes, walks), 3, key1, rep,
                 walk_ref(chunk, nodes, walks, 3, key1, 0, false), 0, 1);
    fails += run("walk/rows-edges", chunk, concat(nodes, walks), 3, key2, rep,
                 walk_ref(chunk, nodes, walks, 3, key2, 4, true), 1, 5);
  }
  return fails;
}

// The walk-step mode's guards: a node outside the chunk gets a row of -1,
// a fanout above MAX_FANOUT -1 everywhere, nothing is written past the
// result.
int walk_guards() {
  int fails = 0;
  const auto chunk = build_chunk(10, {{1, 2}, {3}, {4, 5, 6}}, 0);  // nodes 10..12
  const uint64_t key = walk_key(1, 1);
  const std::vector<uint32_t> in = {10, 12};
  auto want = walk_ref(chunk, in, {5, 6}, 2, key, 0, true);
  // Rows of nodes 9, 10, 13, 12, 2^31: only 10 and 12 are in the chunk.
  std::vector<int32_t> rows(10, -1), eidx(10, -1);
  for (int t = 0; t < 2; t++) {
    rows[2 + t] = want[t], rows[6 + t] = want[2 + t];
    eidx[2 + t] = want[4 + t], eidx[6 + t] = want[6 + t];
  }
  const auto targets = concat({9, 10, 13, 12, 0x80000000u}, {4, 5, 0, 6, 1});
  fails += run("walk-guard/outside", chunk, targets, 2, key, 0, rows, 0, 1);
  fails += run("walk-guard/outside-edges", chunk, targets, 2, key, 0, concat2(rows, eidx), 1, 1);
  fails += run("walk-guard/fanout0", chunk, {10, 1}, 0, key, 0, {}, 0, 1);
  fails += run("walk-guard/fanout-too-big", chunk, {10, 1}, MAX_FANOUT + 1, key, 0,
               std::vector<int32_t>(MAX_FANOUT + 1, -1), 0, 1);
  fails += run("walk-guard/fanout-too-big-edges", chunk, {10, 1}, MAX_FANOUT + 1, key, 0,
               std::vector<int32_t>(2 * (MAX_FANOUT + 1), -1), 1, 1);
  fails += run("walk-guard/no-walkers", chunk, {}, 4, key, 0, {}, 0, 1);
  return fails;
}

// Random walkers on random chunks against walk_ref: walker counts on and
// off the 32 lanes, every degree from 0 up, fanouts 1..MAX_FANOUT, first
// attempts up to 2^32 - 2 (the counter 2a wraps as rng's uint32 does).
int walk_random() {
  int fails = 0;
  uint64_t s = 0x3a1c;
  auto next = [&s]() { return mix64(s += 0x9E3779B97F4A7C15ull); };
  for (int it = 0; it < 300 && fails == 0; it++) {
    const uint32_t n_nodes = 1 + (uint32_t)(next() % 200);
    const uint32_t start = (uint32_t)(next() % (1u << 31));
    std::vector<std::vector<uint32_t>> adj(n_nodes);
    static const uint32_t caps[] = {1, 4, 40, 300};
    const uint32_t cap = caps[next() % 4];
    for (auto& a : adj) {
      const uint32_t d = (uint32_t)(next() % (cap + 1));
      for (uint32_t j = 0; j < d; j++) a.push_back((uint32_t)(next() >> 33));
    }
    const auto chunk = build_chunk(start, adj, (size_t)(next() % 3));
    const uint32_t n = (uint32_t)(next() % 150);
    std::vector<uint32_t> nodes(n), walks(n);
    for (uint32_t r = 0; r < n; r++) {
      nodes[r] = start + (uint32_t)(next() % n_nodes);
      walks[r] = (uint32_t)next();
    }
    const uint32_t k = 1 + (uint32_t)(next() % MAX_FANOUT);
    const uint32_t a0 = it % 7 == 6 ? 0xFFFFFFFEu - (uint32_t)(next() % 64) : (uint32_t)(next() % 64);
    const uint64_t key = walk_key(next(), 1 + (uint32_t)(next() % 80));
    const uint32_t edges = (uint32_t)(it & 1);
    char name[64];
    std::snprintf(name, sizeof name, "walk-random %d (k %u a0 %u edges %u)", it, k, a0, edges);
    fails += run(name, chunk, concat(nodes, walks), k, key, (uint32_t)(it % 3 == 0),
                 walk_ref(chunk, nodes, walks, k, key, a0, edges != 0), edges, a0 + 1);
  }
  return fails;
}

// all_ref is the copy-all mode's expected result buffer (sample_kernel.h:
// status, counts, neighbors, edge indices), written out from the
// contract (DESIGN §3, "Full neighborhoods": nb[0..d) in CSR order)
// independently of the kernel's loop: the rows from position skip of the
// first target on, cut where capacity neighbors are written. Words the
// kernel must not write (neighbor and edge slots past the last written)
// hold kCanary; a target outside the chunk has no neighbors.
std::vector<int32_t> all_ref(const std::vector<uint32_t>& chunk,
                             const std::vector<uint32_t>& targets, uint32_t capacity,
                             uint32_t skip, bool edges) {
  const size_t n = targets.size();
  std::vector<int32_t> out(ALL_STATUS_WORDS + n + capacity * (edges ? 2 : 1), kCanary);
  std::vector<int32_t> flat, eflat;
  std::vector<int32_t> counts(n, 0);
  uint32_t stop = (uint32_t)n, resume = 0;
  for (size_t r = 0; r < n && stop == n; r++) {
    const uint32_t i = targets[r] - chunk[1];
    uint32_t b = 0, d = 0;
    if (i < chunk[0]) b = chunk[2 + i], d = chunk[3 + i] - b;
    for (uint32_t p = r == 0 ? skip : 0; p < d; p++) {
      if (flat.size() == capacity) {
        stop = (uint32_t)r, resume = p;
        break;
      }
      flat.push_back((int32_t)chunk[b + p]);
      eflat.push_back((int32_t)(b + p - (3 + chunk[0])));
      counts[r]++;
    }
  }
  out[0] = (int32_t)stop, out[1] = (int32_t)resume;
  for (size_t r = 0; r < n; r++) out[ALL_STATUS_WORDS + r] = counts[r];
  for (size_t j = 0; j < flat.size(); j++) {
    out[ALL_STATUS_WORDS + n + j] = flat[j];
    if (edges) out[ALL_STATUS_WORDS + n + capacity + j] = eflat[j];
  }
  return out;
}

// run_all runs one copy-all launch (fanout FANOUT_ALL, key (capacity <<
// 32) | skip) through the kernel's top and its split form
// (sample_all_split) and checks the buffer against want (all_ref), and
// that nothing past it is written. It returns 1 on a mismatch.
int run_all(const char* name, const std::vector<uint32_t>& chunk,
            const std::vector<uint32_t>& targets, uint32_t capacity, uint32_t skip, bool edges,
            const std::vector<int32_t>& want) {
  std::vector<int32_t> buf(want.size() + 16, kCanary);
  static const uint32_t none = 0;
  const uint32_t* tp = targets.empty() ? &none : targets.data();
  const uint32_t n = (uint32_t)targets.size();
  sample_kernel(chunk.data(), buf.data(), tp, n, FANOUT_ALL, (uint64_t)capacity << 32 | skip, 0,
                edges ? 1 : 0, 0);
  for (size_t i = 0; i < buf.size(); i++) {
    const int32_t w = i < want.size() ? want[i] : kCanary;
    if (buf[i] != w) {
      std::printf("FAIL %s: word %zu of the copy-all result: got %d, want %d\n", name, i, buf[i], w);
      return 1;
    }
  }
  // The split form writes the same parts into separate arrays.
  std::vector<int32_t> st(2 + 4, kCanary), cn(n + 4, kCanary), out(capacity + 4, kCanary),
      eo(capacity + 4, kCanary);
  sample_all_split(chunk.data(), st.data(), cn.data(), out.data(), edges ? eo.data() : nullptr, tp,
                   n, capacity, skip);
  for (size_t i = 0; i < st.size() + cn.size() + out.size() + eo.size(); i++) {
    int32_t got, w;
    if (i < st.size()) {
      got = st[i], w = i < (size_t)ALL_STATUS_WORDS ? want[i] : kCanary;
    } else if (i < st.size() + cn.size()) {
      const size_t j = i - st.size();
      got = cn[j], w = j < n ? want[ALL_STATUS_WORDS + j] : kCanary;
    } else if (i < st.size() + cn.size() + out.size()) {
      const size_t j = i - st.size() - cn.size();
      got = out[j], w = j < capacity ? want[ALL_STATUS_WORDS + n + j] : kCanary;
    } else {
      const size_t j = i - st.size() - cn.size() - out.size();
      got = eo[j], w = edges && j < capacity ? want[ALL_STATUS_WORDS + n + capacity + j] : kCanary;
    }
    if (got != w) {
      std::printf("FAIL %s (split): word %zu: got %d, want %d\n", name, i, got, w);
      return 1;
    }
  }
  return 0;
}

// The copy-all mode (fanout -1): the DESIGN §3 vector (nb = [3 9] gives
// [3 9], positions 0 1), a row cut by the capacity and resumed, targets
// outside the chunk (no neighbors), then random chunks whose targets are
// taken launch after launch, each from where the last stopped, until
// all are done: the concatenation must be every target's whole adjacency,
// in CSR order, with its edge indices.
int all_mode() {
  int fails = 0;
  std::vector<uint32_t> nb;
  for (uint32_t v = 100; v < 200; v++) nb.push_back(v);
  const auto chunk = build_chunk(5, {{}, {1}, nb, {3, 9}, {}}, 7);  // nodes 5..9
  fails += run_all("all/design", chunk, {8}, 4, 0, false, {1, 0, 2, 3, 9, kCanary, kCanary});
  fails += run_all("all/design-edges", chunk, {8, 9}, 2, 0, true,
                   {2, 0, 2, 0, 3, 9, 101, 102});
  fails += run_all("all/cut", chunk, {6, 7, 8}, 30, 0, true, all_ref(chunk, {6, 7, 8}, 30, 0, true));
  fails += run_all("all/resume", chunk, {7, 8}, 80, 30, false, all_ref(chunk, {7, 8}, 80, 30, false));
  // Node 8 fills the buffer; 5 and 9 (no neighbors) are finished, 6 is
  // where the next launch starts.
  fails += run_all("all/full-buffer", chunk, {8, 5, 9, 6}, 2, 0, false,
                   {3, 0, 2, 0, 0, 0, 3, 9});
  fails += run_all("all/outside", chunk, {4, 8, 10, 0x80000000u}, 8, 0, true,
                   all_ref(chunk, {4, 8, 10, 0x80000000u}, 8, 0, true));
  fails += run_all("all/no-targets", chunk, {}, 4, 0, false, all_ref(chunk, {}, 4, 0, false));
  if (fails) return fails;

  uint64_t s = 0xa11;
  auto next = [&s]() { return mix64(s += 0x9E3779B97F4A7C15ull); };
  for (int it = 0; it < 200 && fails == 0; it++) {
    const uint32_t n_nodes = 1 + (uint32_t)(next() % 120);
    const uint32_t start = (uint32_t)(next() % (1u << 31));
    std::vector<std::vector<uint32_t>> adj(n_nodes);
    static const uint32_t caps[] = {0, 3, 40, 700};
    const uint32_t dmax = caps[next() % 4];
    for (auto& a : adj) {
      const uint32_t d = (uint32_t)(next() % (dmax + 1));
      for (uint32_t j = 0; j < d; j++) a.push_back((uint32_t)(next() >> 33));
    }
    const auto chunk = build_chunk(start, adj, (size_t)(next() % 3));
    const uint32_t n = (uint32_t)(next() % 90);
    std::vector<uint32_t> targets(n);
    for (auto& t : targets) t = start + (uint32_t)(next() % n_nodes);
    const uint32_t capacity = 1 + (uint32_t)(next() % 97);
    const bool edges = (it & 1) != 0;
    // Launch after launch, as the host does.
    std::vector<int32_t> flat, eflat;
    size_t r = 0;
    uint32_t skip = 0;
    int launches = 0;
    while (r < n && fails == 0) {
      const std::vector<uint32_t> part(targets.begin() + (long)r, targets.end());
      char name[80];
      std::snprintf(name, sizeof name, "all-random %d launch %d (capacity %u)", it, launches,
                    capacity);
      const auto want = all_ref(chunk, part, capacity, skip, edges);
      fails += run_all(name, chunk, part, capacity, skip, edges, want);
      const size_t m = part.size();
      size_t words = 0;
      for (size_t j = 0; j < m; j++) words += (size_t)want[ALL_STATUS_WORDS + j];
      for (size_t j = 0; j < words; j++) {
        flat.push_back(want[ALL_STATUS_WORDS + m + j]);
        if (edges) eflat.push_back(want[ALL_STATUS_WORDS + m + capacity + j]);
      }
      const uint32_t stop = (uint32_t)want[0];
      if (stop == m) {
        r = n;
      } else {
        r += stop;
        skip = (uint32_t)want[1];
      }
      if (++launches > 100000) {
        std::printf("FAIL all-random %d: no progress\n", it);
        return fails + 1;
      }
    }
    // The launches together: every target's whole row, in order.
    size_t j = 0;
    for (uint32_t t : targets) {
      const uint32_t i = t - start;
      const uint32_t b = chunk[2 + i], d = chunk[3 + i] - b;
      for (uint32_t p = 0; p < d && fails == 0; p++, j++) {
        if (j >= flat.size() || flat[j] != (int32_t)chunk[b + p] ||
            (edges && eflat[j] != (int32_t)(b + p - (3 + n_nodes)))) {
          std::printf("FAIL all-random %d: target %u position %u is not neighbor %zu of the launches\n",
                      it, t, p, j);
          fails++;
        }
      }
    }
    if (fails == 0 && j != flat.size()) {
      std::printf("FAIL all-random %d: %zu neighbors written, the targets have %zu\n", it,
                  flat.size(), j);
      fails++;
    }
  }
  return fails;
}

// Little-endian reader over the golden file.
struct Reader {
  std::vector<unsigned char> buf;
  size_t pos = 0;
  bool ok = true;
  uint32_t u32() {
    if (pos + 4 > buf.size()) {
      ok = false;
      return 0;
    }
    uint32_t v = (uint32_t)buf[pos] | (uint32_t)buf[pos + 1] << 8 | (uint32_t)buf[pos + 2] << 16 |
                 (uint32_t)buf[pos + 3] << 24;
    pos += 4;
    return v;
  }
  uint64_t u64() {
    const uint64_t lo = u32();
    return lo | (uint64_t)u32() << 32;
  }
};

// golden returns the number of failing cases, or -1 if the file is
// unreadable or malformed.
int golden(const char* path, int* n_cases) {
  FILE* f = std::fopen(path, "rb");
  if (!f) {
    std::printf("FAIL cannot open golden file %s\n", path);
    return -1;
  }
  Reader r;
  unsigned char tmp[1 << 16];
  size_t n;
  while ((n = std::fread(tmp, 1, sizeof tmp, f)) > 0) r.buf.insert(r.buf.end(), tmp, tmp + n);
  std::fclose(f);
  const char magic[] = "SKGOLD3\n";
  if (r.buf.size() < 8 || std::memcmp(r.buf.data(), magic, 8) != 0) {
    std::printf("FAIL %s: not a golden file\n", path);
    return -1;
  }
  r.pos = 8;
  const uint32_t cases = r.u32();
  int fails = 0;
  for (uint32_t c = 0; c < cases && r.ok; c++) {
    const uint32_t fanout = r.u32(), replace = r.u32(), edges = r.u32(), walk = r.u32();
    const uint64_t key = r.u64();
    const uint32_t words = r.u32(), n_targets = r.u32();
    std::vector<uint32_t> chunk(words), targets((size_t)n_targets * (walk ? 2 : 1));
    std::vector<int32_t> want((size_t)n_targets * fanout * (edges ? 2 : 1));
    for (auto& w : chunk) w = r.u32();
    for (auto& t : targets) t = r.u32();
    for (auto& w : want) w = (int32_t)r.u32();
    if (!r.ok) break;
    char name[96];
    std::snprintf(name, sizeof name, "golden case %u (fanout %u replace %u edges %u walk %u)", c,
                  fanout, replace, edges, walk);
    fails += run(name, chunk, targets, fanout, key, replace, want, edges, walk);
  }
  if (!r.ok || r.pos != r.buf.size()) {
    std::printf("FAIL %s: truncated or trailing bytes\n", path);
    return -1;
  }
  *n_cases = (int)cases;
  return fails;
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "testdata/golden_kernel.bin";
  int fails =
      design_vectors() + guards() + walk_vectors() + walk_guards() + walk_random() + all_mode();
  int n_cases = 0;
  const int g = golden(path, &n_cases);
  if (g < 0) return 1;
  fails += g;
  if (fails != 0) {
    std::printf("FAIL: %d check(s) failed\n", fails);
    return 1;
  }
  std::printf(
      "PASS: design vectors, guards, walk vectors, walk guards, 300 random walk steps, the "
      "copy-all mode (vectors, guards, 200 random chunks launch after launch) and %d golden "
      "cases match the Go reference\n",
      n_cases);
  return 0;
}
