//go:build ignore

// sample_kernel_tb.cpp — C-simulation testbench for sample_kernel.
//
// What `make -C hls csim` builds with g++, what `go test ./hls` builds and
// runs (TestCSim), and what vitis_hls runs as csim (add this file with
// -tb and testdata/golden_kernel.bin as its -argv). It checks:
//   1. the DESIGN §3 test vectors, hard-coded here;
//   2. the kernel's guards (targets outside the chunk, fanout 0 or above
//      MAX_FANOUT) and that nothing past the result rows is written;
//   3. every case of the golden file generated from the Go reference
//      (rng.Sample, rng.Positions) by `go test ./hls -run Golden -update`,
//      the cases with edge indices (argument 7) in both of the kernel's
//      forms (contiguous and sample_kernel_split).
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

// Same as the kernel's, for the key/draw vectors only.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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
int run(const char* name, const std::vector<uint32_t>& chunk, const std::vector<uint32_t>& targets,
        uint32_t fanout, uint64_t key, uint32_t replace, const std::vector<int32_t>& want,
        uint32_t edges = 0) {
  std::vector<int32_t> out(want.size() + 16, kCanary);
  static const uint32_t none = 0;
  const uint32_t* tp = targets.empty() ? &none : targets.data();
  sample_kernel(chunk.data(), out.data(), tp, (uint32_t)targets.size(), fanout, key, replace, edges);
  if (edges) {
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
  const char magic[] = "SKGOLD2\n";
  if (r.buf.size() < 8 || std::memcmp(r.buf.data(), magic, 8) != 0) {
    std::printf("FAIL %s: not a golden file\n", path);
    return -1;
  }
  r.pos = 8;
  const uint32_t cases = r.u32();
  int fails = 0;
  for (uint32_t c = 0; c < cases && r.ok; c++) {
    const uint32_t fanout = r.u32(), replace = r.u32(), edges = r.u32();
    const uint64_t key = r.u64();
    const uint32_t words = r.u32(), n_targets = r.u32();
    std::vector<uint32_t> chunk(words), targets(n_targets);
    std::vector<int32_t> want((size_t)n_targets * fanout * (edges ? 2 : 1));
    for (auto& w : chunk) w = r.u32();
    for (auto& t : targets) t = r.u32();
    for (auto& w : want) w = (int32_t)r.u32();
    if (!r.ok) break;
    char name[64];
    std::snprintf(name, sizeof name, "golden case %u (fanout %u replace %u edges %u)", c, fanout,
                  replace, edges);
    fails += run(name, chunk, targets, fanout, key, replace, want, edges);
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
  int fails = design_vectors() + guards();
  int n_cases = 0;
  const int g = golden(path, &n_cases);
  if (g < 0) return 1;
  fails += g;
  if (fails != 0) {
    std::printf("FAIL: %d check(s) failed\n", fails);
    return 1;
  }
  std::printf("PASS: design vectors, guards and %d golden cases match the Go reference\n", n_cases);
  return 0;
}
