#!/usr/bin/env python3
"""GPU random-walk benchmark (issue 14): the walk kernel of
libstreamsampler_gpu.so (ssg_walk) against a vectorized PyTorch walker on
the same GPU and graph, and against the random-gather limit measured in the
same run.

Needs a CUDA GPU, PyTorch and libstreamsampler_gpu.so (make -C gpu):

    python3 bench/gpu_walks.py --lib gpu/build/libstreamsampler_gpu.so [--json out.json]

The graph is R-MAT as in bench/gpu_bench.py (a=.57 b=.19 c=.19, symmetrized,
deduplicated, no self-loops, ids permuted), generated here on the GPU:
scale 22 (4.19M nodes) and 32 directed edges a node by default. Every node
starts --walks-per-node walks (10) of --length steps (80): W = 41.9M walks.

Measured, each a median:
  ours     ssg_walk's kernels (CUDA events; the rows stay on the GPU until
           copied) and the whole call (kernels + copies of the rows into a
           host array, W*(L+1)*4 bytes);
  torch    a vectorized walker, one batch of W walks advanced a step at a time
           with torch ops, rows left on the GPU: uniform col[rowptr[v] +
           floor(rand*deg)]; node2vec by rejection sampling per step (up to 64
           attempts over the walks still pending, the neighbor test a
           searchsorted in the sorted (row*n + col) keys of the CSR);
  gather   W random int32 gathers from the CSR's indices in one torch
           kernel: the gather limit is the walks/s if a step cost one such
           gather (a uniform step needs one indptr and one indices read).
Ratios and PASS/FAIL against the targets (ours >= 10x torch, uniform and
node2vec; ours on kernel time, rows on the GPU like torch's) are printed
last. A sample of our walks is checked against a Python rendering of
DESIGN §3 and every step of it against the graph's edges.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench as gb  # noqa: E402  (the library's ctypes, R-MAT, medians)

WALK_DEEPWALK, WALK_PPR, WALK_NODE2VEC = 0, 1, 2
M64 = (1 << 64) - 1


def threshold(prob):
    """rng.Threshold: floor(prob*2^32) clamped to [0, 2^32], in float64."""
    if not prob > 0:
        return 0
    if prob >= 1:
        return 1 << 32
    return int(math.floor(prob * 4294967296.0))


def node2vec_thresholds(p, q):
    """rng.Node2Vec: (Return, Near, Far), each weight over the largest."""
    m = max(1 / p, 1.0, 1 / q)
    return threshold(1 / p / m), threshold(1 / m), threshold(1 / q / m)


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def draw(key, w, t):
    return mix64(key ^ ((w << 32) | t))


def below(r, m):
    return ((r >> 32) * m) >> 32


def reference_walk(indptr, indices, start, w, length, seed, mode, n2v):
    """One walk of DESIGN §3 (walk.Reference's rows), in plain Python."""
    row = [start]
    for t in range(1, length + 1):
        v = row[-1]
        b, e = int(indptr[v]), int(indptr[v + 1])
        d = e - b
        if d == 0:
            break
        key = mix64(seed) ^ mix64((1 << 63) | t)
        if mode == WALK_NODE2VEC and t >= 2:
            u = row[-2]
            pb, pe = int(indptr[u]), int(indptr[u + 1])
            for a in range(64):
                x = int(indices[b + below(draw(key, w, 2 * a), d)])
                if x == u:
                    thr = n2v[0]
                else:
                    k = int(np.searchsorted(indices[pb:pe], x))
                    thr = n2v[1] if k < pe - pb and int(indices[pb + k]) == x else n2v[2]
                if a == 63 or (draw(key, w, 2 * a + 1) >> 32) < thr:
                    break
            row.append(x)
        else:
            row.append(int(indices[b + below(draw(key, w, 0), d)]))
    return row + [-1] * (length + 1 - len(row))


def torch_uniform(indptr, indices, starts, R, L, gen):
    """DeepWalk, vectorized: all W walks one step at a time; rows [W, L+1] on the GPU."""
    cur = starts.repeat(R)
    W, nnz = cur.numel(), indices.numel()
    out = torch.empty((L + 1, W), dtype=torch.int32, device=cur.device)
    out[0] = cur
    alive = torch.ones(W, dtype=torch.bool, device=cur.device)
    for t in range(1, L + 1):
        b = indptr[cur]
        d = indptr[cur + 1] - b
        alive &= d > 0
        pos = (torch.rand(W, device=cur.device, generator=gen) * d).long()
        nxt = indices[(b + pos).clamp_(max=nnz - 1)].long()
        cur = torch.where(alive, nxt, cur)
        out[t] = torch.where(alive, cur, -1)
    return out.t()


def torch_node2vec(indptr, indices, keys, starts, R, L, p, q, gen):
    """node2vec, vectorized per step: rejection sampling over the walks still
    pending (up to 64 attempts, the last taken), x near u iff u*n+x is among
    the CSR's sorted keys (searchsorted)."""
    dev = starts.device
    n, nnz = indptr.numel() - 1, indices.numel()
    m = max(1 / p, 1.0, 1 / q)
    w_ret, w_near, w_far = 1 / p / m, 1 / m, 1 / q / m
    cur = starts.repeat(R)
    W = cur.numel()
    out = torch.empty((L + 1, W), dtype=torch.int32, device=dev)
    out[0] = cur
    alive = torch.ones(W, dtype=torch.bool, device=dev)
    prev = cur
    for t in range(1, L + 1):
        b = indptr[cur]
        d = indptr[cur + 1] - b
        alive &= d > 0
        if t == 1:
            pos = (torch.rand(W, device=dev, generator=gen) * d).long()
            nxt = indices[(b + pos).clamp_(max=nnz - 1)].long()
        else:
            nxt = cur.clone()
            idx = alive.nonzero().squeeze(1)
            for a in range(64):
                if idx.numel() == 0:
                    break
                bb, dd, u = b[idx], d[idx], prev[idx]
                x = indices[(bb + (torch.rand(idx.numel(), device=dev, generator=gen) * dd).long())
                            .clamp_(max=nnz - 1)].long()
                k = u * n + x
                at = torch.searchsorted(keys, k).clamp_(max=nnz - 1)
                near = keys[at] == k
                prob = torch.where(x == u, w_ret, torch.where(near, w_near, w_far))
                acc = torch.rand(idx.numel(), device=dev, generator=gen) < prob
                if a == 63:
                    acc[:] = True
                nxt[idx[acc]] = x[acc]
                idx = idx[~acc]
        prev = cur
        cur = torch.where(alive, nxt, cur)
        out[t] = torch.where(alive, cur, -1)
    return out.t()


def cuda_ms(fn, reps, warm=1):
    """Median of reps timings of fn() in ms (CUDA events around it)."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1))
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("STREAMSAMPLER_GPU_LIB", "gpu/build/libstreamsampler_gpu.so"))
    ap.add_argument("--scale", type=int, default=22, help="R-MAT scale: 2^scale nodes")
    ap.add_argument("--edge-factor", type=int, default=32, help="directed edges a node after symmetrization")
    ap.add_argument("--walks-per-node", type=int, default=10)
    ap.add_argument("--length", type=int, default=80)
    ap.add_argument("--p", type=float, default=0.5)
    ap.add_argument("--q", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--torch-reps", type=int, default=3)
    ap.add_argument("--uva", action="store_true", help="CSR in pinned host memory (read over UVA)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"device: {name}   date: {date}   torch {torch.__version__}", flush=True)
    res = {"device": name, "date": date, "args": vars(args)}

    t0 = time.time()
    n = 1 << args.scale
    indptr_t, indices_t = gb.rmat_graph(n, n * args.edge_factor, 12345, dev)
    nnz = indices_t.numel()
    deg = indptr_t[1:] - indptr_t[:-1]
    print(f"R-MAT scale {args.scale}: {n} nodes, {nnz} directed edges, max degree {int(deg.max())}, "
          f"{int((deg == 0).sum())} without neighbors, built in {time.time() - t0:.1f} s", flush=True)
    res.update(nodes=n, edges=nnz)
    indptr = indptr_t.cpu().numpy().astype(np.uint64)
    indices = indices_t.cpu().numpy().view(np.uint32)
    # node2vec's neighbor test in torch: the CSR's (row*n + col) keys, sorted.
    keys_t = torch.repeat_interleave(torch.arange(n, device=dev), deg) * n + indices_t.long()

    lib = gb.Lib(args.lib)
    ctx = lib.create(indptr, indices, uva=int(args.uva))
    R, L = args.walks_per_node, args.length
    starts = np.arange(n, dtype=np.uint32)
    starts_t = torch.arange(n, device=dev)
    W = n * R
    res.update(walks=W, length=L)
    n2v = node2vec_thresholds(args.p, args.q)
    out = np.empty(W * (L + 1), np.int32)  # reused: first-touch page faults only in the warm-up
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    print(f"{W} walks ({R} per node) of {L} steps; rows {W * (L + 1) * 4 / 2**30:.1f} GiB; "
          f"node2vec p={args.p} q={args.q} thresholds {n2v}", flush=True)

    # ---- gather limit: W random int32 gathers from indices, one kernel
    gidx = torch.randint(0, nnz, (W,), device=dev, generator=gen)
    gms = cuda_ms(lambda: indices_t[gidx], 7, warm=2)
    gathers_per_s = W / (gms / 1e3)
    del gidx
    print(f"random gather: {W} x 4 B from {nnz} in {gms:.2f} ms = {gathers_per_s / 1e9:.2f} G gathers/s "
          f"-> limit {gathers_per_s / L / 1e6:.1f} M walks/s at one gather a step", flush=True)
    res["gather_per_s"] = gathers_per_s

    modes = {}
    for label, mode in (("uniform", WALK_DEEPWALK), ("node2vec", WALK_NODE2VEC)):
        kern, call = [], []
        for i in range(args.reps + 1):
            t1 = time.perf_counter()
            rows = lib.walk(ctx, mode, starts, R, L, seed=42, n2v=n2v, out=out)
            wall = (time.perf_counter() - t1) * 1e3
            if i > 0:  # the first call touches the host array's pages
                kern.append(lib.timings(ctx)[0])
                call.append(wall)
        k_ms, c_ms = statistics.median(kern), statistics.median(call)
        steps = int((rows[:, 1:] >= 0).sum())
        # Checks: rows against the Python rendering of DESIGN §3, every step an edge.
        ids = np.random.default_rng(3).choice(W, 48, replace=False)
        same = all(list(rows[w]) == reference_walk(indptr, indices, int(starts[w % n]), int(w), L, 42, mode, n2v)
                   for w in ids)
        sub = torch.from_numpy(rows[: min(W, 1 << 20)].astype(np.int64)).to(dev)
        a, b = sub[:, :-1], sub[:, 1:]
        ok = b >= 0
        k = a[ok] * n + b[ok]
        at = torch.searchsorted(keys_t, k).clamp_(max=nnz - 1)
        edges_ok = bool((keys_t[at] == k).all())
        del sub, a, b, ok, k, at
        if mode == WALK_DEEPWALK:
            tms = cuda_ms(lambda: torch_uniform(indptr_t, indices_t, starts_t, R, L, gen), args.torch_reps)
        else:
            tms = cuda_ms(lambda: torch_node2vec(indptr_t, indices_t, keys_t, starts_t, R, L, args.p, args.q, gen),
                          args.torch_reps)
        torch.cuda.empty_cache()
        row = dict(kernel_ms=k_ms, call_ms=c_ms, torch_ms=tms, steps=steps, matches_reference=same,
                   steps_are_edges=edges_ok, walks_per_s=W / (k_ms / 1e3), call_walks_per_s=W / (c_ms / 1e3),
                   torch_walks_per_s=W / (tms / 1e3), vs_torch=tms / k_ms, call_vs_torch=tms / c_ms,
                   of_gather_limit=(W * L / (k_ms / 1e3)) / gathers_per_s)
        modes[label] = row
        print(f"{label:8s}: ours {k_ms:.1f} ms kernels = {row['walks_per_s'] / 1e6:.1f} M walks/s "
              f"({steps / (k_ms / 1e3) / 1e9:.2f} G steps/s), whole call {c_ms:.1f} ms with the rows copied "
              f"to the host ({W * (L + 1) * 4 / 2**30 / (c_ms / 1e3):.1f} GiB/s); torch {tms:.1f} ms = "
              f"{row['torch_walks_per_s'] / 1e6:.2f} M walks/s; same as the reference on 48 walks: {same}; "
              f"steps are edges: {edges_ok}", flush=True)
    res["modes"] = modes
    lib.l.ssg_destroy(ctx)

    print(f"\nsummary ({name}, {date}; medians; {W} walks of {L} steps, R-MAT scale {args.scale})")
    checks = []
    for label in ("uniform", "node2vec"):
        r = modes[label]
        checks += [
            (f"{label}: ours/torch (kernels; rows on the GPU)", r["vs_torch"], 10.0),
            (f"{label}: ours/torch (whole call, rows copied to host)", r["call_vs_torch"], None),
            (f"{label}: ours as a fraction of the gather limit", r["of_gather_limit"], None),
        ]
    for label, val, target in checks:
        verdict = "" if target is None else ("PASS" if val >= target else "FAIL") + f" (target >= {target})"
        print(f"  {label:56s} {val:8.3f}  {verdict}")
    ok = all(modes[m]["matches_reference"] and modes[m]["steps_are_edges"] for m in modes)
    print(f"  walks match the reference and follow edges: {'PASS' if ok else 'FAIL'}")
    res["checks"] = [dict(name=l, value=v, target=t) for l, v, t in checks]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    # The exit status is the verdict: a missed target fails the benchmark
    # as a wrong walk does.
    missed = [label for label, val, target in checks if target is not None and not val >= target]
    if missed:
        print("FAIL: " + "; ".join(missed), flush=True)
    return 0 if ok and not missed else 1


if __name__ == "__main__":
    sys.exit(main())
