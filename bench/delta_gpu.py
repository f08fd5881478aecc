#!/usr/bin/env python3
"""Host→device traffic of the Python loader's delta mode against sending
every minibatch's x whole (issue 12, deliverable 6's GPU line).

    python3 bench/delta_gpu.py --binary bin/streamsampler --chunkify bin/chunkify \\
        --workdir /tmp/delta-bench [--scale 20] [--device cuda] [--json out.json]

Generates an R-MAT graph (chunkify generate rmat, edge factor 16,
symmetrized) with seeded features (chunkify generate features: --dim 128
float32) packed into it, and a seeded 10% training set; then serves it
with --features, once in the sampler's order and once with --reorder
match, and moves one epoch's x to the device three ways, each minibatch
in turn (the order rotating), untimed warm-up first:

  pageable  torch.from_numpy(x).to(device): what to_pyg(batch, device=) does
  full      DeltaTransfer(delta=False): x whole through pinned memory
  delta     DeltaTransfer(): the rows the previous minibatch lacked plus
            an int32 index, assembled on the device

Each mode's time is the wall time of its call between two
synchronizations of the device (host packing, matching and the copies
included; the server's delivery excluded). Every delta x is compared with
full's (torch.equal): a mismatch fails the run. Prints a table and
writes JSON: per order and mode, host→device bytes and seconds per
epoch, the shared fraction and the ratios delta/full. Needs torch; runs
on the CPU too (--device cpu) for a check without a GPU.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from streamsampler import DeltaStats, DeltaTransfer, LocalServer  # noqa: E402


def sh(*args):
    subprocess.run([str(a) for a in args], check=True)


def prepare(a):
    """The graph directory (features packed in) and the training file,
    made once per work dir and scale."""
    graph = os.path.join(a.workdir, "g-s%d-d%d-%s" % (a.scale, a.dim, a.dtype))
    if not os.path.exists(os.path.join(graph, "features.json")):
        edges = os.path.join(a.workdir, "rmat.bin32")
        feat = os.path.join(a.workdir, "feat.npy")
        sh(a.chunkify, "generate", "rmat", "--scale", a.scale, "--edge-factor", a.edge_factor, "--seed", a.seed,
           "-o", edges, "-q")
        sh(a.chunkify, "build", edges, "-o", graph, "--symmetrize", "--force", "-q")
        os.remove(edges)
        sh(a.chunkify, "generate", "features", "--graph", graph, "--dim", a.dim, "--dtype", a.dtype,
           "--seed", a.seed, "-o", feat, "-q")
        sh(a.chunkify, "features", feat, "-o", graph, "-q")
        os.remove(feat)
    n = 1 << a.scale
    k = max(1, int(n * a.fraction))
    train = os.path.join(a.workdir, "train-s%d-f%g.npy" % (a.scale, a.fraction))
    if not os.path.exists(train):
        # bench/scale_train.py's ids: a seeded permutation's first k, sorted.
        ids = np.random.default_rng(7).permutation(np.arange(n, dtype=np.uint32))[:k]
        ids.sort()
        np.save(train, ids.astype("<u4"), allow_pickle=False)
    return graph, train


class Timer:
    """Wall seconds between synchronizations of the device."""

    def __init__(self, torch, device):
        self.sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        self.seconds = 0.0

    def run(self, fn):
        self.sync()
        t0 = time.perf_counter()
        out = fn()
        self.sync()
        self.seconds += time.perf_counter() - t0
        return out


def measure(torch, device, batches, num_nodes=0):
    """Moves each (n_id, x) of ``batches`` to ``device`` three ways (the
    order rotating), checks they agree, and returns the figures."""
    full = DeltaTransfer(device, delta=False)
    delta = DeltaTransfer(device, num_nodes=num_nodes)
    timers = {m: Timer(torch, device) for m in ("pageable", "full", "delta")}
    pageable = DeltaStats()
    modes = {
        "pageable": lambda ids, x: torch.from_numpy(x).to(device),
        "full": full,
        "delta": delta,
    }
    count = first_rows = 0
    for i, (ids, x) in enumerate(batches):
        if i == 0:  # warm-up: CUDA context, pinned buffers, allocator
            first_rows = len(x)
            for m in modes.values():
                m(ids, x)
            for h in (full, delta):
                h.reset()
                h.stats, h.per_epoch = DeltaStats(), {}
        names = list(modes)
        names = names[i % 3:] + names[:i % 3]
        got = {}
        for name in names:
            got[name] = timers[name].run(lambda: modes[name](ids, x))
        if not torch.equal(got["delta"], got["full"]) or not torch.equal(got["full"], got["pageable"]):
            raise SystemExit("minibatch %d: the delta x differs from the whole x" % i)
        rb = x.shape[1] * x.dtype.itemsize
        pageable.add(DeltaStats(1, len(x), len(x), len(x) * rb, 0, len(x) * rb))
        count += 1
    st = delta.stats
    # shared_fraction: rows kept on the device over all rows (what the
    # delta saves); shared_after_first: over the rows after the first
    # minibatch, the server's figure (run --json's shared_after).
    after = st.rows - first_rows
    res = {"batches": count, "rows": st.rows, "shared_fraction": st.shared_fraction,
           "shared_after_first": (st.rows - st.rows_sent) / after if after else 0.0, "modes": {}}
    for name, st in (("pageable", pageable), ("full", full.stats), ("delta", delta.stats)):
        sec = timers[name].seconds
        res["modes"][name] = {"h2d_bytes": st.bytes_sent, "row_bytes": st.row_bytes_sent,
                              "index_bytes": st.index_bytes_sent, "seconds": sec,
                              "gbps_effective": st.full_bytes / sec / 1e9 if sec else None,
                              "plan_seconds": st.plan_seconds}
    m = res["modes"]
    res["delta_over_full_bytes"] = m["delta"]["h2d_bytes"] / m["full"]["h2d_bytes"] if m["full"]["h2d_bytes"] else None
    res["delta_over_full_seconds"] = m["delta"]["seconds"] / m["full"]["seconds"] if m["full"]["seconds"] else None
    res["delta_over_pageable_seconds"] = (m["delta"]["seconds"] / m["pageable"]["seconds"]
                                          if m["pageable"]["seconds"] else None)
    return res


def served(a, graph, train, order):
    """One epoch's (n_id, x) from a server with --features, in ``order``
    (none or match); x copied into this process's memory, untimed."""
    extra = ["--features", "--feature-cache", a.feature_cache]
    if order == "match":
        extra += ["--reorder", "match"]
    fanouts = [int(f) for f in a.fanouts.split(",")]
    # prepare_at=1: the next epoch is sampled only after this one, not on
    # every core while the transfers are timed.
    srv = LocalServer(graph, train, fanouts, a.batch, seed=a.seed, binary=a.binary, prepare_at=1.0,
                      extra_args=extra).start()
    try:
        with srv.client(shared_rows=True) as c:
            for i, b in enumerate(c.batches(advance=False)):
                if a.max_batches and i >= a.max_batches:
                    break
                if b.x is None:
                    raise SystemExit("the server sent no rows: is %s packed with chunkify features?" % graph)
                yield b.n_id, np.array(b.x)
    finally:
        srv.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--binary", required=True, help="the streamsampler executable")
    p.add_argument("--chunkify", required=True, help="the chunkify executable")
    p.add_argument("--workdir", required=True, help="where the graph and features go (kept for reuse)")
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "int8", "uint8"])
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--fraction", type=float, default=0.1, help="training nodes, a fraction of all")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--feature-cache", default="1GiB", help="serve --feature-cache")
    p.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many (0: all)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    import torch
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    os.makedirs(a.workdir, exist_ok=True)
    graph, train = prepare(a)
    out = {"scale": a.scale, "edge_factor": a.edge_factor, "dim": a.dim, "dtype": a.dtype, "fanouts": a.fanouts,
           "batch": a.batch, "fraction": a.fraction, "seed": a.seed, "device": str(device),
           "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "torch": torch.__version__, "orders": []}
    print("%-6s %-9s %14s %10s %9s %8s" % ("order", "mode", "H2D bytes", "seconds", "GB/s eff", "shared"))
    print("(GB/s eff: the epoch's x bytes over the mode's seconds)")
    for order in ("none", "match"):
        r = {"order": order}
        r.update(measure(torch, device, served(a, graph, train, order), num_nodes=1 << a.scale))
        out["orders"].append(r)
        for name, m in r["modes"].items():
            print("%-6s %-9s %14d %10.4f %9.2f %8.3f" % (order, name, m["h2d_bytes"], m["seconds"],
                                                        m["gbps_effective"] or 0, r["shared_fraction"]))
        print("%-6s delta/full: bytes %.3f, time %.3f (delta/pageable time %.3f), %d minibatches, all equal"
              % (order, r["delta_over_full_bytes"], r["delta_over_full_seconds"], r["delta_over_pageable_seconds"],
                 r["batches"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
