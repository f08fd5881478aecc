#!/usr/bin/env python3
"""The heterogeneous loader's device= and pin_memory on a GPU: HeteroData
minibatches on the device, or pinned, before the model asks. Prints PASS
or FAIL per check and exits non-zero on any FAIL.

    # on a machine with Go, in a checkout:  make build   (bin/streamsampler, bin/chunkify)
    python3 python/examples/hetero_device_check.py --binary bin/streamsampler \\
        --chunkify bin/chunkify --graph /tmp/ss-hetero-device/graph [--json out.json]

``--graph DIR`` is used as it is when it holds a heterogeneous graph with
a feature store for every node type; otherwise one is generated there
first: chunkify generate hetero (MAG240M-like: paper, author,
institution; --edges in all, --add-reverse), then per type a feature
matrix (chunkify generate features: paper --dim float32 with 16 label
classes, author --dim/2, institution --dim/4) packed with chunkify
features --node-type.

Checks (each loader on a server of its own, the same --seed; the
reference is the same loader with device=None, pin_memory=False):

1. **arrive** / **equal**: streamsampler.pyg.NeighborLoader over the
   directory with device="cuda", for the training stream (shuffle=True)
   and a split (shuffle=False): every tensor of every HeteroData is on
   the GPU, and equals the reference's, for --check-epochs epochs;
2. **pinned**: with device=None (pin_memory's default) every tensor is
   pinned (tensor.pin_memory() is the tensor itself), the minibatches
   equal the reference's, and PyG's PrefetchLoader over the loader gives
   them on the GPU.

Then the time per epoch of a heterogeneous GraphSAGE (a Linear per node
type to --hidden, two HeteroConv layers of SAGEConv per edge type,
cross-entropy on the paper seeds, Adam) over the training papers, one
warm-up epoch then --epochs timed, for: ``sync`` (pin_memory=False,
batch.to(device) in the loop: what a script did before), ``pinned``
(the default: pinned, batch.to(device, non_blocking=True)),
``prefetchloader`` (PyG's PrefetchLoader over the default loader) and
``device`` (device="cuda"); with the time the loop waited for the next
minibatch; ``loader``: the default loader iterated without a model,
the rate the loader alone keeps; and ``model``: the steps alone, over
one epoch's minibatches held on the GPU (the floor: the epoch of a
loader that never keeps the GPU waiting). Needs torch_geometric (its HeteroData,
HeteroConv, SAGEConv).
"""

import argparse
import json
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/: streamsampler

import torch  # noqa: E402

from device_prefetch_check import (FAILED, check_pinned_against, first_difference, flat,  # noqa: E402
                                   prefetch_loader_class, report, sh, timed_epochs)

TYPES_DIM = {"paper": 1, "author": 2, "institution": 4}  # --dim divided by this


def hetero_json(g):
    with open(os.path.join(g, "hetero.json")) as f:
        return json.load(f)


def prepare(a):
    """The graph directory (generated unless every type has a store) and
    its node counts."""
    g = a.graph
    ready = os.path.exists(os.path.join(g, "hetero.json")) and all(
        os.path.exists(os.path.join(g, "features", t, "features.json")) for t in TYPES_DIM)
    if not ready:
        work = os.path.dirname(os.path.abspath(g))
        os.makedirs(work, exist_ok=True)
        t = time.time()
        sh(a.chunkify, "generate", "hetero", "--edges", a.edges, "--seed", a.seed, "--add-reverse",
           "--chunk-size", a.chunk_size, "-o", g, "--force", "-q")
        counts = {nt["name"]: nt["count"] for nt in hetero_json(g)["node_types"]}
        for typ, div in TYPES_DIM.items():
            feat, labels = os.path.join(work, typ + ".npy"), os.path.join(work, typ + "-labels.npy")
            extra = ["--classes", 16, "--labels", labels] if typ == "paper" else []
            sh(a.chunkify, "generate", "features", "--num-nodes", counts[typ], "--dim", max(1, a.dim // div),
               "--seed", a.seed, *extra, "-o", feat, "-q")
            sh(a.chunkify, "features", feat, "-o", g, "--node-type", typ, "--force", "-q",
               *(["--labels", labels] if extra else []))
            os.remove(feat)
            if extra:
                os.remove(labels)
        print("generated %s in %.1f s" % (g, time.time() - t), flush=True)
    counts = {nt["name"]: nt["count"] for nt in hetero_json(g)["node_types"]}
    return g, counts


def make(a, graph, nodes, shuffle, tag, **kw):
    """streamsampler.pyg.NeighborLoader on a server of its own (``tag``
    makes its server arguments differ; they mean nothing here)."""
    from streamsampler.pyg import NeighborLoader
    lo = NeighborLoader(graph, [int(f) for f in a.fanouts.split(",")], input_nodes=("paper", nodes),
                        batch_size=a.batch, shuffle=shuffle, seed=a.seed, binary=a.binary,
                        server_args=["--max-inflight", "%dMiB" % (a.max_inflight + tag)] + a.server_args.split(),
                        **kw)
    if a.depth:
        lo.depth = a.depth
    return lo


def compare(dev, ref, epochs, device_type):
    """(minibatches, tensors off the device, first difference) over
    ``epochs`` epochs of two loaders."""
    count, off, diff = 0, [], None
    for epoch in range(epochs):
        want_it = iter(ref)
        for got in dev:
            for k, t in flat(got):
                if device_type is not None and torch.is_tensor(t) and t.device.type != device_type:
                    off.append("%s on %s" % (k, t.device))
            d = first_difference(got, next(want_it))
            if d and diff is None:
                diff = "epoch %d minibatch %d: %s" % (epoch, count, d)
            count += 1
        if next(want_it, None) is not None:
            diff = diff or "epoch %d: the reference has more minibatches" % epoch
    return count, off, diff


def check_device(a, graph, train, val, device):
    """Check 1."""
    for i, (name, nodes, shuffle) in enumerate((("train", train, True), ("split", val, False))):
        dev = make(a, graph, nodes, shuffle, 2 * i, device=device)
        ref = make(a, graph, nodes, shuffle, 2 * i + 1, pin_memory=False)
        try:
            count, off, diff = compare(dev, ref, a.check_epochs, device.type)
            report("arrive " + name, not off and count > 0,
                   "%d minibatches, every tensor on %s" % (count, device.type) if not off else off[0])
            report("equal " + name, diff is None and count > 0,
                   diff or "%d minibatches over %d epochs equal the reference's" % (count, a.check_epochs))
        finally:
            dev.close()
            ref.close()


def check_pinned(a, graph, nodes, device):
    """Check 2 (device_prefetch_check's check 5, over HeteroData)."""
    if device.type != "cuda":
        print("SKIP pinned           (no GPU: nothing is pinned)")
        return
    lo = make(a, graph, nodes, True, 10)
    ref = make(a, graph, nodes, True, 11, pin_memory=False)
    try:
        check_pinned_against(lo, ref, device)
    finally:
        lo.close()
        ref.close()


class HeteroSage(torch.nn.Module):
    """A Linear per node type to ``hidden``, then two HeteroConv layers of
    SAGEConv (mean) per edge type, summed per destination type."""

    def __init__(self, dims, edge_types, hidden, classes):
        super().__init__()
        from torch_geometric.nn import HeteroConv, SAGEConv
        self.inp = torch.nn.ModuleDict({t: torch.nn.Linear(d, hidden) for t, d in dims.items()})
        self.conv1 = HeteroConv({et: SAGEConv(hidden, hidden) for et in edge_types}, aggr="sum")
        self.conv2 = HeteroConv({et: SAGEConv(hidden, classes) for et in edge_types}, aggr="sum")

    def forward(self, x_dict, edge_index_dict):
        h = {t: torch.relu(self.inp[t](x.float())) for t, x in x_dict.items()}
        h = {t: torch.relu(v) for t, v in self.conv1(h, edge_index_dict).items()}
        return self.conv2(h, edge_index_dict)["paper"]


def run_mode(mode, a, graph, nodes, device):
    PrefetchLoader, _ = prefetch_loader_class()
    kw = {"sync": dict(pin_memory=False), "pinned": {}, "prefetchloader": {}, "device": dict(device=device),
          "loader": {}, "model": dict(device=device)}[mode]
    lo = make(a, graph, nodes, True, 40 + len(mode), prefetch=a.prefetch if mode == "device" else None, **kw)
    it = PrefetchLoader(lo, device) if mode == "prefetchloader" else lo
    if mode == "model":
        it = list(lo)  # one epoch's minibatches, held on the device: the model's time alone
    torch.manual_seed(0)
    model, opt = None, None

    def step(batch):
        nonlocal model, opt
        if mode == "loader":
            return
        batch = batch.to(device, non_blocking=mode != "sync")  # a no-op where it is on the device
        if model is None:
            dims = {t: batch[t].x.shape[1] for t in batch.node_types}
            model = HeteroSage(dims, batch.edge_types, a.hidden, 16).to(device)
            opt = torch.optim.Adam(model.parameters(), lr=0.003)
        bs = batch["paper"].batch_size
        opt.zero_grad()
        out = model(batch.x_dict, batch.edge_index_dict)[:bs]
        loss = torch.nn.functional.cross_entropy(out, batch["paper"].y[:bs] % 16)
        loss.backward()
        opt.step()

    try:
        epochs = timed_epochs(it, a.epochs, device, step)
        return {"mode": mode, "epochs": epochs,
                "seconds_per_epoch": float(np.median([e["seconds"] for e in epochs])),
                "wait_per_epoch": float(np.median([e["wait_seconds"] for e in epochs])),
                "steps": epochs[0]["steps"]}
    finally:
        lo.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--binary", required=True, help="the streamsampler executable (make build: bin/streamsampler)")
    p.add_argument("--chunkify", required=True, help="the chunkify executable (make build: bin/chunkify)")
    p.add_argument("--graph", required=True, help="heterogeneous graph directory with stores; generated if absent")
    p.add_argument("--edges", type=int, default=20_000_000, help="edges when generating (before --add-reverse)")
    p.add_argument("--chunk-size", default="16MiB", help="chunk size when generating")
    p.add_argument("--dim", type=int, default=128, help="paper's feature dimension when generating")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fanouts", default="10,5", help="every edge type's, hop 1 first (default 10,5)")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--fraction", type=float, default=0.05, help="training papers for the timing (default 0.05)")
    p.add_argument("--check-fraction", type=float, default=0.005, help="papers of the checks (default 0.005)")
    p.add_argument("--check-epochs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per mode, after one warm-up")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--modes", default="model,sync,pinned,prefetchloader,device,loader")
    p.add_argument("--max-inflight", type=int, default=256,
                   help="every server's --max-inflight, in MiB (default 256, serve's; a few MiB are added to tell "
                        "the loaders' servers apart)")
    p.add_argument("--server-args", default="", help="more streamsampler serve flags, e.g. '--feature-cache 0'")
    p.add_argument("--depth", type=int, default=0, help="requests in flight per loader (0: the loader's default)")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (a dry run without a GPU)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    a.binary, a.chunkify = os.path.abspath(a.binary), os.path.abspath(a.chunkify)
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("FAIL cuda             torch.cuda.is_available() is False (use --device cpu for a dry run)")
        return 1
    import torch_geometric
    print("torch %s, torch_geometric %s, %s" % (torch.__version__, torch_geometric.__version__,
                                               torch.cuda.get_device_name() if device.type == "cuda" else "cpu"),
          flush=True)
    graph, counts = prepare(a)
    perm = np.random.default_rng(7).permutation(counts["paper"])
    train = np.sort(perm[:max(1, int(counts["paper"] * a.fraction))])
    check = np.sort(perm[:max(1, int(counts["paper"] * a.check_fraction))])
    val = perm[-max(1, int(counts["paper"] * a.check_fraction)):]  # given order: a split keeps it
    print("graph %s: %s; %d training papers, %d checked; fanouts %s, batch %d"
          % (graph, counts, len(train), len(check), a.fanouts, a.batch), flush=True)

    for fn, args in ((check_device, (check, val)), (check_pinned, (check,))):
        try:
            fn(a, graph, *args, device)
        except Exception:  # a check that cannot run fails; the others still run
            traceback.print_exc()
            report(fn.__name__, False, "raised (traceback above)")

    results = []
    print("\n%-15s %10s %10s %8s  (medians per epoch: wall, waiting for the next minibatch; %d timed epochs)"
          % ("mode", "s/epoch", "wait s", "steps", a.epochs), flush=True)
    for mode in a.modes.split(","):
        if mode in ("prefetchloader", "pinned", "model") and device.type != "cuda":
            continue
        try:
            r = run_mode(mode, a, graph, train, device)
        except Exception:
            traceback.print_exc()
            report("time " + mode, False, "raised (traceback above)")
            continue
        results.append(r)
        print("%-15s %10.3f %10.3f %8d" % (mode, r["seconds_per_epoch"], r["wait_per_epoch"], r["steps"]), flush=True)
    by = {r["mode"]: r["seconds_per_epoch"] for r in results}
    for m in ("pinned", "prefetchloader", "device"):
        if "sync" in by and m in by:
            print("%s / sync: %.2f" % (m, by[m] / by["sync"]))
    if "model" in by:
        print("the model's share of each epoch (model / mode): %s" % ", ".join(
            "%s %.0f%%" % (m, 100 * by["model"] / t) for m, t in by.items() if m not in ("model", "loader")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                       "torch": torch.__version__, "torch_geometric": torch_geometric.__version__, "graph": graph,
                       "counts": counts, "fanouts": a.fanouts, "batch": a.batch, "train": len(train),
                       "failed": FAILED, "modes": results}, f, indent=1)
    print("\n%s" % ("FAIL: " + ", ".join(FAILED) if FAILED else "PASS: every check"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
