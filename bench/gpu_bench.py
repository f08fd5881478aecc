#!/usr/bin/env python3
"""GPU sampling benchmark: fused persistent kernel vs per-hop BSP kernel vs a
plain PyTorch sampler, on a products-sized R-MAT graph, all in one run.

Needs a CUDA GPU, PyTorch and libstreamsampler_gpu.so (make -C gpu):

    python3 bench/gpu_bench.py --lib gpu/build/libstreamsampler_gpu.so [--json out.json]

The graph is generated here on the GPU: R-MAT (a=.57 b=.19 c=.19, fixed
seed) on 2.45M nodes, symmetrized, deduplicated, self-loops dropped, ~124M
directed edges, node ids randomly permuted. Training nodes: a fixed random
8% of the nodes. Every figure is a median; ratios and PASS/FAIL against the
targets of issue 6 are printed last.
"""
import argparse
import ctypes as C
import datetime
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

SSG_OK = 0


class Opts(C.Structure):
    _fields_ = [(n, C.c_int32) for n in
                ("uva", "block_size", "fetch_size", "group_size", "blocks_per_sm", "timeout_ms", "edge_ids")]


class Lib:
    def __init__(self, path):
        self.l = C.CDLL(path)
        l = self.l
        l.ssg_create.argtypes = [C.c_int, C.c_uint32, C.c_void_p, C.c_uint64, C.c_void_p, C.POINTER(Opts),
                                 C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]
        l.ssg_destroy.argtypes = [C.c_void_p]
        # ABI 2: every output array is passed with its capacity (elements);
        # ABI 3 adds loading piece by piece (this script uses ssg_create);
        # ABI 4 adds ssg_options.edge_ids (left 0 here) and ssg_fetch_edges;
        # ABI 5 adds ssg_walk (bench/gpu_walks.py).
        l.ssg_abi_version.argtypes = []
        if l.ssg_abi_version() != 7:
            raise RuntimeError(f"{path}: ABI version {l.ssg_abi_version()}, this script needs 7: rebuild it")
        l.ssg_sample.argtypes = [C.c_void_p, C.c_int32, C.c_void_p, C.c_uint64, C.c_void_p, C.c_int32, C.c_uint64,
                                 C.c_uint32, C.c_int32, C.c_void_p, C.c_uint64, C.c_char_p, C.c_size_t]
        l.ssg_fetch.argtypes = [C.c_void_p, C.c_void_p, C.c_uint64, C.c_void_p, C.c_uint64, C.c_void_p, C.c_uint64,
                                C.c_char_p, C.c_size_t]
        l.ssg_count_edges.argtypes = [C.c_void_p, C.c_void_p, C.c_char_p, C.c_size_t]
        l.ssg_last_timings.argtypes = [C.c_void_p, C.POINTER(C.c_double), C.c_int]
        l.ssg_walk.argtypes = [C.c_void_p, C.c_int32, C.c_void_p, C.c_uint64, C.c_uint32, C.c_uint32, C.c_uint64,
                               C.c_uint64, C.c_int32, C.c_uint64, C.c_uint64, C.c_uint64, C.c_void_p, C.c_uint64,
                               C.c_char_p, C.c_size_t]
        self.err = C.create_string_buffer(1024)

    def check(self, rc, what):
        if rc != SSG_OK:
            raise RuntimeError(f"{what}: status {rc}: {self.err.value.decode()}")

    def create(self, indptr, indices, **kw):
        o = Opts(**{k: v for k, v in kw.items()})
        o.timeout_ms = 120000
        ctx = C.c_void_p()
        self.check(self.l.ssg_create(0, len(indptr) - 1, indptr.ctypes.data, len(indices), indices.ctypes.data,
                                     C.byref(o), C.byref(ctx), self.err, 1024), "ssg_create")
        return ctx

    def sample(self, ctx, mode, seeds, fanouts, seed=42, epoch=0, replace=0):
        f = np.ascontiguousarray(fanouts, dtype=np.int32)
        seeds = np.ascontiguousarray(seeds, dtype=np.uint32)
        counts = np.zeros(len(fanouts) + 1, dtype=np.uint64)
        self.check(self.l.ssg_sample(ctx, mode, seeds.ctypes.data, len(seeds), f.ctypes.data, len(f), seed, epoch,
                                     replace, counts.ctypes.data, counts.size, self.err, 1024), "ssg_sample")
        return counts

    def fetch(self, ctx, counts, fanouts):
        L = len(fanouts)
        nf = int(sum(counts[:L]))
        ns = int(sum(int(counts[l]) * fanouts[l] for l in range(L)))
        fr = np.empty(nf, np.uint32)
        sa = np.empty(ns, np.int32)
        fi = np.empty(int(counts[L]), np.uint32)
        self.check(self.l.ssg_fetch(ctx, fr.ctypes.data, fr.size, sa.ctypes.data, sa.size, fi.ctypes.data, fi.size,
                                    self.err, 1024), "fetch")
        return fr, sa, fi

    def fetch_rc(self, ctx, fr, sa, fi):
        """ssg_fetch's status into the given arrays (capacities = their sizes)."""
        return self.l.ssg_fetch(ctx, fr.ctypes.data, fr.size, sa.ctypes.data, sa.size, fi.ctypes.data, fi.size,
                                self.err, 1024)

    def count_edges(self, ctx):
        e = np.zeros(1, np.uint64)
        self.check(self.l.ssg_count_edges(ctx, e.ctypes.data, self.err, 1024), "ssg_count_edges")
        return int(e[0])

    def walk(self, ctx, mode, starts, walks_per_node, length, seed=1, restart=0, stop=0, n2v=(0, 0, 0), out=None):
        """ssg_walk: W = walks_per_node*len(starts) rows of length+1 int32 (-1 padded), as walk.Reference.
        Thresholds are integers (threshold(), node2vec_thresholds()); out may be a preallocated int32 array."""
        starts = np.ascontiguousarray(starts, dtype=np.uint32)
        need = len(starts) * walks_per_node * (length + 1)
        if out is None:
            out = np.empty(need, np.int32)
        self.check(self.l.ssg_walk(ctx, mode, starts.ctypes.data, len(starts), walks_per_node, length, seed, restart,
                                   stop, n2v[0], n2v[1], n2v[2], out.ctypes.data, out.size, self.err, 1024),
                   "ssg_walk")
        return out[:need].reshape(-1, length + 1)

    def timings(self, ctx):
        t = (C.c_double * 3)()
        self.l.ssg_last_timings(ctx, t, 3)
        return list(t)


def rmat_graph(n, target_directed, seed, dev):
    """Symmetric R-MAT CSR (indptr int64, indices int32) generated on the GPU."""
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    scale = int(np.ceil(np.log2(n)))
    a, b, c = 0.57, 0.19, 0.19
    keys = torch.empty(0, dtype=torch.int64, device=dev)
    batch = 16_000_000
    while keys.numel() < target_directed:
        u = torch.zeros(batch, dtype=torch.int64, device=dev)
        v = torch.zeros(batch, dtype=torch.int64, device=dev)
        for bit in range(scale):
            r = torch.rand(batch, generator=g, device=dev)
            ub = (r >= a + b).long()                    # quadrants c, d: row bit set
            vb = ((r >= a) & (r < a + b)) | (r >= a + b + c)  # quadrants b, d: column bit set
            u |= ub << bit
            v |= vb.long() << bit
        ok = (u < n) & (v < n) & (u != v)
        u, v = u[ok], v[ok]
        keys = torch.unique(torch.cat([keys, u * n + v, v * n + u]))
    keys = keys[:target_directed] if keys.numel() > target_directed * 1.02 else keys
    # Random relabelling so that hubs are not clustered at low ids.
    perm = torch.randperm(n, generator=g, device=dev)
    u, v = perm[keys // n], perm[keys % n]
    keys = torch.unique(torch.cat([u * n + v, v * n + u]))  # keep it symmetric after truncation
    u, v = keys // n, keys % n
    deg = torch.bincount(u, minlength=n)
    indptr = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    indptr[1:] = torch.cumsum(deg, 0)
    return indptr, v.to(torch.int32)


def torch_sampler(indptr, indices, seeds, fanouts, gen):
    """Per hop: Floyd without replacement vectorized over the frontier with
    torch ops, then torch.unique — how a PyTorch user would write it."""
    F = torch.unique(seeds)
    nnz = indices.numel()
    out = []
    for k in fanouts:
        start = indptr[F]
        d = indptr[F + 1] - start
        n = F.numel()
        C_ = torch.empty((n, k), dtype=torch.int64, device=F.device)
        for t in range(k):
            j = d - k + t
            p = (torch.rand(n, device=F.device, generator=gen) * (j + 1).clamp(min=1)).long()
            if t > 0:
                hit = (C_[:, :t] == p[:, None]).any(1)
                p = torch.where(hit, j, p)
            C_[:, t] = p
        tt = torch.arange(k, device=F.device)
        big = (d > k)[:, None]
        C_ = torch.where(big, C_, tt.expand(n, k))
        valid = big | (tt[None, :] < d[:, None])
        nb = indices[(start[:, None] + C_).clamp(max=nnz - 1)].long()
        nb = torch.where(valid, nb, -1)
        out.append((F, nb))
        F = torch.unique(torch.cat([F, nb[valid]]))
    return out, F


def median_ms(fn, reps, warm=3):
    for _ in range(warm):
        fn(0)
    ts = []
    for i in range(reps):
        t0 = time.perf_counter()
        fn(i)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("STREAMSAMPLER_GPU_LIB", "gpu/build/libstreamsampler_gpu.so"))
    ap.add_argument("--nodes", type=int, default=2_450_000)
    ap.add_argument("--edges", type=int, default=124_000_000, help="directed edges after symmetrization")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--tune", action="store_true", help="sweep fetch/block/group sizes")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"device: {name}   date: {date}   torch {torch.__version__}", flush=True)
    res = {"device": name, "date": date}

    t0 = time.time()
    indptr_t, indices_t = rmat_graph(args.nodes, args.edges, 12345, dev)
    n, nnz = args.nodes, indices_t.numel()
    print(f"R-MAT graph: {n} nodes, {nnz} directed edges, max degree {int((indptr_t[1:]-indptr_t[:-1]).max())}, "
          f"built in {time.time()-t0:.1f} s", flush=True)
    res.update(nodes=n, edges=nnz)
    indptr = indptr_t.cpu().numpy().astype(np.uint64)
    indices = indices_t.cpu().numpy().view(np.uint32)

    lib = Lib(args.lib)
    ctx = lib.create(indptr, indices)
    rs = np.random.default_rng(7)
    train = np.sort(rs.choice(n, size=int(0.08 * n), replace=False)).astype(np.uint32)
    train_t = torch.from_numpy(train.astype(np.int64)).to(dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)

    # Sanity: both engines agree on a batch (the Go tests check exactness vs the reference).
    bt = train[rs.permutation(len(train))[:1024]]
    c1 = lib.sample(ctx, 0, bt, [15, 10, 5]); r1 = lib.fetch(ctx, c1, [15, 10, 5])
    c2 = lib.sample(ctx, 1, bt, [15, 10, 5]); r2 = lib.fetch(ctx, c2, [15, 10, 5])
    same = all(np.array_equal(a, b) for a, b in zip(r1, r2)) and np.array_equal(c1, c2)
    print(f"fused == bsp on a batch: {same}", flush=True)
    res["fused_equals_bsp"] = bool(same)
    # Arrays one element short (here: sized from an older, smaller result)
    # must be refused with nothing written, never overrun.
    small = lib.sample(ctx, 0, bt[:8], [2])
    lib.sample(ctx, 0, bt, [15, 10, 5])
    fr = np.full(int(small[0]), 0xdeadbeef, np.uint32)
    rc = lib.fetch_rc(ctx, fr, np.empty(0, np.int32), np.empty(0, np.uint32))
    refused = rc == 4 and bool((fr == 0xdeadbeef).all()) and b"too small" in lib.err.value
    print(f"undersized fetch refused, nothing written: {refused} ({lib.err.value.decode()})", flush=True)
    res["undersized_fetch_refused"] = refused

    # ---- per-minibatch
    mb = {}
    for bs, fan in ((1024, [15, 10, 5]), (8192, [10, 10, 10])):
        perm = rs.permutation(len(train))
        batches = [np.ascontiguousarray(train[perm[(i * bs) % (len(train) - bs):][:bs]]) for i in range(args.reps + 5)]
        tb = [torch.from_numpy(b.astype(np.int64)).to(dev) for b in batches]
        row = {}
        for mode, label in ((0, "fused"), (1, "bsp")):
            gpu_ms = []

            def run(i, mode=mode):
                lib.sample(ctx, mode, batches[i], fan, seed=42, epoch=i)
                gpu_ms.append(lib.timings(ctx)[2])
            row[label], _ = median_ms(run, args.reps)
            row[label + "_gpu_event_ms"] = statistics.median(gpu_ms[3:])
        c = lib.sample(ctx, 0, batches[0], fan)
        row["final_nodes"] = int(c[-1])
        row["fetch_ms"], _ = median_ms(lambda i: lib.fetch(ctx, c, fan), 5)

        def trun(i):
            torch_sampler(indptr_t, indices_t, tb[i], fan, gen)
            torch.cuda.synchronize()
        row["torch"], _ = median_ms(trun, min(args.reps, 20))
        mb[f"{bs}x{fan}"] = row
        print(f"batch {bs:5d} {fan}: fused {row['fused']:.3f} ms  bsp {row['bsp']:.3f} ms  torch {row['torch']:.3f} ms"
              f"  (GPU events: fused {row['fused_gpu_event_ms']:.3f}, bsp {row['bsp_gpu_event_ms']:.3f}; "
              f"final frontier {row['final_nodes']}, D2H fetch {row['fetch_ms']:.3f} ms)", flush=True)
    res["minibatch"] = mb

    # ---- tuning sweep
    if args.tune:
        tune = []
        for block in (256, 512, 1024):
            for fetch in (64, 256, 1024):
                for group in (0, 32):
                    cx = lib.create(indptr, indices, block_size=block, fetch_size=fetch, group_size=group)
                    b1 = np.ascontiguousarray(train[:1024])
                    m1, _ = median_ms(lambda i: lib.sample(cx, 0, b1, [15, 10, 5], epoch=i), 15)
                    me, _ = median_ms(lambda i: lib.sample(cx, 0, train, [10, 10, 10], epoch=i), 3, warm=1)
                    ke = lib.timings(cx)[0]
                    lib.l.ssg_destroy(cx)
                    tune.append(dict(block=block, fetch=fetch, group=group, mb1024_ms=m1, epoch_ms=me, epoch_kernel_ms=ke))
                    print(f"tune block {block:4d} fetch {fetch:4d} group {group or 'auto':>4}: batch1024 {m1:.3f} ms, "
                          f"epoch {me:.2f} ms (kernel {ke:.2f})", flush=True)
        res["tune"] = tune

    # ---- epoch mode: all training nodes, [10,10,10]
    fan = [10, 10, 10]
    ep = {}
    for mode, label in ((0, "fused"), (1, "bsp")):
        counts = lib.sample(ctx, mode, train, fan, seed=42, epoch=0)
        edges = lib.count_edges(ctx)
        ms, _ = median_ms(lambda i: lib.sample(ctx, mode, train, fan, seed=42, epoch=0), 7, warm=1)
        t = lib.timings(ctx)
        ep[label] = dict(ms=ms, edges=edges, tasks=int(sum(counts[:3])), final=int(counts[3]),
                         edges_per_s=edges / (ms / 1e3), kernel_ms=t[0], post_ms=t[1], gpu_ms=t[2],
                         kernel_edges_per_s=edges / (t[0] / 1e3))
        print(f"epoch {label:5s}: {ms:.2f} ms for {edges} sampled edges = {edges/ms/1e6:.2f} G edges/s "
              f"(kernel {t[0]:.2f} ms = {edges/t[0]/1e6:.2f} G/s, post {t[1]:.2f} ms; "
              f"frontiers {list(map(int, counts))})", flush=True)
    # reference limit: random 4-byte gathers from the indices array
    M = 64 << 20
    idx = torch.randint(0, nnz, (M,), device=dev, generator=gen)
    ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gts = []
    for _ in range(7):
        ev0.record(); _g = indices_t[idx]; ev1.record(); torch.cuda.synchronize()
        gts.append(ev0.elapsed_time(ev1))
    gms = statistics.median(gts[1:])
    ep["gather_per_s"] = M / (gms / 1e3)
    print(f"random gather: {M} x 4 B from {nnz} in {gms:.2f} ms = {M/gms/1e6:.2f} G gathers/s", flush=True)
    res["epoch"] = ep

    # ---- summary
    r1 = mb["1024x[15, 10, 5]"]
    r8 = mb["8192x[10, 10, 10]"]
    checks = [
        ("fused/bsp speedup, batch 1024 [15,10,5]", r1["bsp"] / r1["fused"], 1.5),
        ("fused/bsp speedup, batch 8192 [10,10,10]", r8["bsp"] / r8["fused"], 1.5),
        ("fused/torch speedup, batch 1024 [15,10,5]", r1["torch"] / r1["fused"], 10.0),
        ("fused/torch speedup, batch 8192 [10,10,10]", r8["torch"] / r8["fused"], None),
        ("epoch fused G sampled edges/s (whole call)", ep["fused"]["edges_per_s"] / 1e9, 5.0),
        ("epoch bsp G sampled edges/s (whole call)", ep["bsp"]["edges_per_s"] / 1e9, None),
        ("epoch fused edges/s / random gathers/s", ep["fused"]["edges_per_s"] / ep["gather_per_s"], None),
    ]
    print(f"\nsummary ({name}, {date}; medians)")
    for label, val, target in checks:
        verdict = "" if target is None else ("PASS" if val >= target else "FAIL") + f" (target >= {target})"
        print(f"  {label:48s} {val:8.2f}  {verdict}")
    res["checks"] = [dict(name=l, value=v, target=t) for l, v, t in checks]
    # Before the JSON (it copies ~250 MB to the host): both engines' epochs
    # are equal, so that the JSON records it and a difference fails the run.
    got = {}
    for mode, label in ((0, "fused"), (1, "bsp")):
        counts = lib.sample(ctx, mode, train, fan, seed=42, epoch=0)
        t0 = time.perf_counter()
        got[label] = (counts,) + lib.fetch(ctx, counts, fan)
        print(f"epoch {label} D2H fetch: {(time.perf_counter()-t0)*1e3:.1f} ms", flush=True)
    epoch_same = all(np.array_equal(x, y) for x, y in zip(got["fused"], got["bsp"]))
    print(f"fused == bsp on the epoch: {epoch_same}", flush=True)
    res["fused_equals_bsp_epoch"] = bool(epoch_same)
    lib.l.ssg_destroy(ctx)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    # The exit status is the verdict: a target missed or the engines
    # disagreeing (on the batch or the epoch) fails the benchmark.
    failed = [label for label, val, target in checks if target is not None and not val >= target]
    if not res["fused_equals_bsp"]:
        failed.append("fused == bsp on a batch")
    if not epoch_same:
        failed.append("fused == bsp on the epoch")
    if failed:
        print("FAIL: " + "; ".join(failed), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
