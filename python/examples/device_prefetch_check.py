#!/usr/bin/env python3
"""The loaders' device= on a GPU (issue 23, item 2): minibatches on the
device before the model asks. Prints PASS or FAIL per check and exits
non-zero on any FAIL.

    # on a machine with Go, in a checkout:  make build   (bin/streamsampler, bin/chunkify)
    python3 python/examples/device_prefetch_check.py --binary bin/streamsampler \\
        --chunkify bin/chunkify --graph /tmp/ss-prefetch/graph [--json prefetch.json]

``--graph DIR`` is used as it is when it holds a graph with a feature
store; otherwise one is generated there first (chunkify generate rmat
--scale, --edge-factor; build --symmetrize; generate features --dim
128 float32 with --classes 16 labels; features), which takes a minute at
scale 20. Go is not needed: the two executables are given.

Checks (each loader on a server of its own, the same --seed; the
reference is the same loader with device=None, pin_memory=False):

1. **arrive**: on streamsampler.pyg.NeighborLoader, streamsampler.dgl.DataLoader
   and the low-level Loader (a transform giving a dict of tensors), with
   device="cuda", every tensor of every minibatch is on the GPU;
2. **equal**: those minibatches equal the reference's, element for
   element, for --check-epochs epochs (NeighborLoader also with
   delta=True, and with device_features=False: the rows from the
   server rather than gathered from the store held on the device);
   **device table**: with device_features' default the store was held on
   the GPU and no row came from the server;
3. **slow consumer**: a consumer that sleeps between steps, queues a
   long kernel (torch.cuda._sleep) on its stream before reading each
   minibatch and drops the minibatch at once, while long kernels are
   also queued on the loader's copy stream now and then: every
   minibatch's digest (exact, computed on the GPU in the step) equals the
   reference's, so no page-locked slot was packed again and no device
   buffer was reused before its reader ran;
4. **registered**: the server's shared-rows buffers were registered with
   CUDA and the rows copied from them directly (no staging copy);
5. **pinned**: with device=None the minibatch's tensors are pinned, so
   tensor.pin_memory() is the tensor itself, and PyG's PrefetchLoader
   over the loader gives the reference's minibatches.

Then the time per epoch of a GraphSAGE-like model step (plain torch:
two mean-aggregation layers, cross-entropy, Adam) over the training
set, one warm-up epoch then --epochs timed, for: ``sync`` (device=None,
pin_memory=False, batch.to(device) in the loop: what a script did
before), ``prefetchloader`` (device=None, pinned, in PyG's
PrefetchLoader), ``device`` (device="cuda", prefetch=2: the feature
store held on the GPU, device_features' default where it fits),
``device-rows`` (the same with device_features=False: the rows from the
server with each minibatch) and ``device+delta`` (delta=True); with the time the loop waited for the
next minibatch and the transfer's counters.

torch_geometric and dgl are used where importable; otherwise the checks
run through the stand-ins of python/tests/fakes.py (Data, create_block)
and a copy of PrefetchLoader's algorithm, and say so. --device cpu runs
the same on the CPU (no GPU checks), for a dry run.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/: streamsampler and tests.fakes

import torch  # noqa: E402

import streamsampler  # noqa: E402
from streamsampler.featstore import FeatureStore  # noqa: E402

FAILED = []


def report(name, ok, detail=""):
    print("%-4s %-16s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    if not ok:
        FAILED.append(name)


def sh(*args):
    subprocess.run([str(a) for a in args], check=True)


def prepare(a):
    """The graph directory (generated when it has no feature store) and
    the training and check nodes."""
    g = a.graph
    if not os.path.exists(os.path.join(g, "features.json")):
        work = os.path.dirname(os.path.abspath(g))
        os.makedirs(work, exist_ok=True)
        edges, feat, labels = (os.path.join(work, n) for n in ("rmat.bin32", "feat.npy", "labels.npy"))
        t = time.time()
        sh(a.chunkify, "generate", "rmat", "--scale", a.scale, "--edge-factor", a.edge_factor, "--seed", a.seed,
           "-o", edges, "-q")
        sh(a.chunkify, "build", edges, "-o", g, "--symmetrize", "--force", "-q")
        os.remove(edges)
        sh(a.chunkify, "generate", "features", "--graph", g, "--dim", a.dim, "--classes", 16, "--labels", labels,
           "--seed", a.seed, "-o", feat, "-q")
        sh(a.chunkify, "features", feat, "-o", g, "--labels", labels, "-q")
        os.remove(feat)
        os.remove(labels)
        print("generated %s in %.1f s" % (g, time.time() - t), flush=True)
    n = int(streamsampler.graph.read_manifest(g)["num_nodes"])
    perm = np.random.default_rng(7).permutation(n)
    train = np.sort(perm[:max(1, int(n * a.fraction))])
    check = np.sort(perm[:max(1, int(n * a.check_fraction))])
    return g, n, train, check


# -- the frameworks, or stand-ins ------------------------------------------

def frameworks(a):
    """Installs the stand-ins for what is not importable; returns a line
    that says which are real."""
    from tests import fakes
    said = []
    for name, fake in (("torch_geometric", fakes.fake_pyg), ("dgl", fakes.fake_dgl)):
        try:
            __import__(name + (".data" if name == "torch_geometric" else ""))
            said.append("%s: installed" % name)
        except ImportError:
            sys.modules.update(fake())
            said.append("%s: not importable, the stand-in of python/tests/fakes.py" % name)
    return "; ".join(said)


def prefetch_loader_class():
    """PyG's PrefetchLoader, or a copy of its algorithm (pin_memory, then
    .to(device, non_blocking=True) on a stream of its own, the consumer's
    stream waiting for it) where torch_geometric has none."""
    try:
        from torch_geometric.loader import PrefetchLoader
        return PrefetchLoader, "torch_geometric.loader.PrefetchLoader"
    except ImportError:
        pass

    class PrefetchLoader:
        def __init__(self, loader, device):
            self.loader, self.device = loader, torch.device(device)

        def move(self, b):
            if self.device.type != "cuda":
                return b
            return b.pin_memory().to(self.device, non_blocking=True)

        def __iter__(self):
            stream = torch.cuda.Stream() if self.device.type == "cuda" else None
            first, batch = True, None
            for nxt in self.loader:
                if stream is not None:
                    with torch.cuda.stream(stream):
                        nxt = self.move(nxt)
                if not first:
                    yield batch
                first = False
                if stream is not None:
                    torch.cuda.current_stream().wait_stream(stream)
                batch = nxt
            if not first:
                yield batch

        def __len__(self):
            return len(self.loader)

    return PrefetchLoader, "a copy of PrefetchLoader's algorithm (torch_geometric has none)"


# -- minibatches as flat lists of (name, value) ------------------------------

def flat(obj, prefix=""):
    """Every tensor and plain value of a minibatch, by path, in order."""
    out = []
    if torch.is_tensor(obj):
        out.append((prefix, obj))
    elif isinstance(obj, dict):
        for k in sorted(obj, key=str):
            out += flat(obj[k], "%s.%s" % (prefix, k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += flat(v, "%s[%d]" % (prefix, i))
    elif hasattr(obj, "stores"):  # a PyG Data
        d = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj._store)
        out += flat(d, prefix)
    elif hasattr(obj, "srcdata"):  # a DGL block
        e = obj.edges() if callable(obj.edges) else obj.edges
        d = {"src": e[0], "dst": e[1]}
        for name in ("srcdata", "dstdata", "edata"):
            m = getattr(obj, name)
            for k in list(m.keys()):
                d["%s.%s" % (name, k)] = m[k]
        out += flat(d, prefix)
    elif isinstance(obj, (int, float, str, bool)) or obj is None:
        out.append((prefix, obj))
    return out


def first_difference(got, want):
    """Where two minibatches differ (None: nowhere)."""
    fg, fw = flat(got), flat(want)
    if [k for k, _ in fg] != [k for k, _ in fw]:
        return "fields %s vs %s" % ([k for k, _ in fg], [k for k, _ in fw])
    for (k, g), (_, w) in zip(fg, fw):
        if torch.is_tensor(g) != torch.is_tensor(w):
            return "%s: a tensor on one side only" % k
        if torch.is_tensor(g):
            if g.dtype != w.dtype or g.shape != w.shape or not torch.equal(g.cpu(), w.cpu()):
                return "%s: %s %s vs %s %s" % (k, g.dtype, tuple(g.shape), w.dtype, tuple(w.shape))
        elif g != w:
            return "%s: %r vs %r" % (k, g, w)
    return None


_weights = {}


def digest(t):
    """An exact, order-sensitive digest of a tensor's bytes: (sum, weighted
    sum) in int64 over its bytes, computed where the tensor is."""
    b = t.detach().contiguous().reshape(-1).view(torch.uint8).long()
    w = _weights.get((b.numel(), b.device))
    if w is None:
        w = (torch.arange(b.numel(), device=b.device) % 65521) + 1
        _weights[(b.numel(), b.device)] = w
    return torch.stack([b.sum(), (b * w).sum()])


def digests(obj):
    return torch.stack([digest(t) for _, t in flat(obj) if torch.is_tensor(t) and t.numel()]).reshape(-1)


# -- the loaders -------------------------------------------------------------

def make(kind, a, graph, nodes, seed, tag, **kw):
    """A loader of ``kind`` on a server of its own (``tag`` makes its
    server arguments differ; they mean nothing here)."""
    fanouts = [int(f) for f in a.fanouts.split(",")]
    common = dict(binary=a.binary, server_args=["--max-inflight", "%dMiB" % (1024 + tag)])
    if kind == "pyg":
        from streamsampler.pyg import NeighborLoader
        return NeighborLoader(graph, fanouts, input_nodes=nodes, batch_size=a.batch, shuffle=True, seed=seed,
                              **common, **kw)
    if kind == "dgl":
        from streamsampler.dgl import DataLoader, NeighborSampler
        return DataLoader(graph, nodes, NeighborSampler(fanouts[::-1]), batch_size=a.batch, shuffle=True,
                          seed=seed, **common, **kw)
    return ClientLoader(a, graph, nodes, fanouts, seed, **kw)


class ClientLoader(streamsampler.Loader):
    """The low-level Loader over a server of its own (LocalServer,
    --features; the client with shared rows where it is on a device), its
    transform a dict of tensors."""

    def __init__(self, a, graph, nodes, fanouts, seed, **kw):
        self.srv = streamsampler.LocalServer(graph, nodes, fanouts, a.batch, seed=seed, binary=a.binary,
                                             extra_args=["--features"]).start()
        client = self.srv.client(shared_rows=kw.get("device") is not None)
        super().__init__(client, transform=self.tensors, **kw)

    @staticmethod
    def tensors(b):
        return {"n_id": torch.from_numpy(b.n_id.astype(np.int64)), "x": torch.from_numpy(b.x),
                "y": None if b.y is None else torch.from_numpy(b.y.astype(np.int64)),
                "edges": [torch.from_numpy(h.edge_src) for h in b.hops]}

    def close(self):
        self.client.close()
        self.srv.stop()


def check_equal(a, graph, nodes, device):
    """Checks 1, 2 and 4 for the three loaders (and NeighborLoader with
    delta=True)."""
    cases = [("pyg", {}), ("pyg", {"device_features": False}), ("pyg", {"delta": True}), ("dgl", {}),
             ("dgl", {"device_features": False}), ("tensors", {})]
    for i, (kind, extra) in enumerate(cases):
        name = kind + ("+delta" if "delta" in extra else "+rows" if "device_features" in extra else "")
        dev = make(kind, a, graph, nodes, a.seed + i, 2 * i, device=device, **extra)
        ref = make(kind, a, graph, nodes, a.seed + i, 2 * i + 1, pin_memory=False)
        try:
            count, off_device, diff = 0, [], None
            for epoch in range(a.check_epochs):
                want_it = iter(ref)
                for got in dev:
                    want = next(want_it)
                    for k, t in flat(got):
                        if torch.is_tensor(t) and t.device.type != device.type:
                            off_device.append("%s on %s" % (k, t.device))
                    d = first_difference(got, want)
                    if d and diff is None:
                        diff = "epoch %d minibatch %d: %s" % (epoch, count, d)
                    count += 1
                if next(want_it, None) is not None:
                    diff = diff or "epoch %d: the reference has more minibatches" % epoch
            report("arrive " + name, not off_device and count > 0,
                   "%d minibatches, every tensor on %s" % (count, device) if not off_device else off_device[0])
            report("equal " + name, diff is None, diff or "%d minibatches over %d epochs equal the reference's"
                   % (count, a.check_epochs))
            st = dev.transfer.stats
            if device.type == "cuda" and kind != "tensors" and not extra:
                report("device table " + name, bool(dev.device_features) and dev.table() is not None
                       and st.bytes_direct == 0,
                       "the store on the device (%.1f MB), %.1f MB of ids and edges staged, no rows from the server"
                       % (dev.table().nbytes / 1e6 if dev.table() is not None else 0, st.bytes_staged / 1e6))
            if device.type == "cuda" and kind == "tensors":
                reg = dev.transfer.registrar
                n = reg.registered if reg is not None else 0
                errors = reg.errors if reg is not None else ["no registrar (no shared rows?)"]
                report("registered", n > 0 and st.bytes_direct > 0,
                       "%d shared buffers registered, %.1f MB of rows copied directly, %.1f MB staged%s"
                       % (n, st.bytes_direct / 1e6, st.bytes_staged / 1e6,
                          "; errors: %s" % errors[:2] if errors else ""))
        finally:
            dev.close()
            ref.close()


def check_slow(a, graph, nodes, device):
    """Check 3."""
    cuda = device.type == "cuda"
    ref = make("pyg", a, graph, nodes, a.seed, 20, pin_memory=False)
    dev = make("pyg", a, graph, nodes, a.seed, 21, device=device, prefetch=a.prefetch)
    try:
        want, got = [], []
        for epoch in range(2):
            want += [digests(b) for b in ref]
            for i, batch in enumerate(dev):
                if cuda:
                    torch.cuda._sleep(a.sleep_cycles)  # the step's stream lags behind the copies
                    if i % 4 == 1:
                        with torch.cuda.stream(dev.transfer.stream):  # and the copies now and then
                            torch.cuda._sleep(a.sleep_cycles)
                got.append(digests(batch))  # queued on the step's stream, behind the sleep
                del batch  # dropped before its reader ran: record_stream keeps its memory
                time.sleep(a.slow_ms / 1000)
        if cuda:
            torch.cuda.synchronize()
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if not torch.equal(g.cpu(), w)]
        st = dev.transfer.stats
        report("slow consumer", len(got) == len(want) and not bad,
               "%d minibatches, %d differ%s; %d waits for a slot's copies, %d pinned buffers allocated"
               % (len(got), len(bad), " (first: %d)" % bad[0] if bad else "", st.slot_waits,
                  st.pinned_allocations))
    finally:
        dev.close()
        ref.close()


def check_pinned(a, graph, nodes, device):
    """Check 5."""
    if device.type != "cuda":
        print("SKIP pinned           (no GPU: nothing is pinned)")
        return
    lo = make("pyg", a, graph, nodes, a.seed, 30)  # device=None, pinned by default
    ref = make("pyg", a, graph, nodes, a.seed, 31, pin_memory=False)
    try:
        check_pinned_against(lo, ref, device)
    finally:
        lo.close()
        ref.close()


def check_pinned_against(lo, ref, device):
    """Check 5 of loader ``lo`` (device=None, pinned by default) against
    ``ref`` (the same, pin_memory=False): an epoch as ``lo`` gives it,
    then one through PyG's PrefetchLoader."""
    PrefetchLoader, which = prefetch_loader_class()
    unpinned, diff, n = [], None, 0
    want_it = iter(ref)
    for b in lo:  # epoch 1: as the loader gives them
        for k, t in flat(b):
            if torch.is_tensor(t) and t.numel() and not (t.is_pinned() and
                                                         t.pin_memory().data_ptr() == t.data_ptr()):
                unpinned.append(k)
        d = first_difference(b, next(want_it))
        diff = diff or (d and "epoch 1 minibatch %d: %s" % (n, d))
        n += 1
    report("pinned", not unpinned and diff is None and n > 0,
           diff or ("%d minibatches, every tensor pinned (pin_memory() a no-op), equal to the reference's" % n
                    if not unpinned else "not pinned: %s" % sorted(set(unpinned))[:4]))
    diff, n = None, 0
    want_it = iter(ref)
    for got in PrefetchLoader(lo, device):  # epoch 2: through PrefetchLoader
        if any(torch.is_tensor(t) and t.device.type != "cuda" for _, t in flat(got)):
            diff = diff or "minibatch %d: a tensor not on the GPU" % n
        d = first_difference(got, next(want_it))
        diff = diff or (d and "epoch 2 minibatch %d: %s" % (n, d))
        n += 1
    report("prefetchloader", diff is None and n > 0, diff or "%d minibatches through %s equal the reference's"
           % (n, which))


# -- timing ------------------------------------------------------------------

class Sage(torch.nn.Module):
    """Two mean-aggregation layers (GraphSAGE's mean) in plain torch."""

    def __init__(self, dim, hidden, classes):
        super().__init__()
        self.l1, self.r1 = torch.nn.Linear(dim, hidden), torch.nn.Linear(dim, hidden)
        self.l2, self.r2 = torch.nn.Linear(hidden, classes), torch.nn.Linear(hidden, classes)

    @staticmethod
    def mean(h, edge_index):
        src, dst = edge_index
        out = torch.zeros_like(h).index_add_(0, dst, h[src])
        deg = torch.zeros(h.shape[0], device=h.device).index_add_(0, dst, torch.ones_like(dst, dtype=h.dtype))
        return out / deg.clamp(min=1).unsqueeze(1)

    def forward(self, x, edge_index):
        h = torch.relu(self.l1(self.mean(x, edge_index)) + self.r1(x))
        return self.l2(self.mean(h, edge_index)) + self.r2(h)


def timed_epochs(it, epochs, device, step):
    """One warm-up epoch, then ``epochs`` timed, over iterable ``it``, each
    minibatch given to ``step``: per timed epoch its wall (the device
    synchronized at both ends), the time spent waiting for the next
    minibatch, and the steps."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    out = []
    for epoch in range(1 + epochs):
        sync()
        t0, wait, steps = time.perf_counter(), 0.0, 0
        batches = iter(it)
        while True:
            w0 = time.perf_counter()
            batch = next(batches, None)
            wait += time.perf_counter() - w0
            if batch is None:
                break
            step(batch)
            steps += 1
        sync()
        if epoch:
            out.append({"seconds": time.perf_counter() - t0, "wait_seconds": wait, "steps": steps})
    return out


def run_mode(mode, a, graph, nodes, device, dim):
    PrefetchLoader, _ = prefetch_loader_class()
    kw = {"sync": dict(pin_memory=False), "prefetchloader": {}, "device": dict(device=device),
          "device-rows": dict(device=device, device_features=False),
          "device+delta": dict(device=device, delta=True)}[mode]
    lo = make("pyg", a, graph, nodes, a.seed, 40 + len(mode), prefetch=a.prefetch if "device" in mode else None, **kw)
    it = PrefetchLoader(lo, device) if mode == "prefetchloader" else lo
    torch.manual_seed(0)
    model = Sage(dim, a.hidden, 16).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)

    def step(batch):
        batch = batch.to(device)  # a no-op where the minibatch is on the device
        bs = batch.batch_size
        y = getattr(batch, "y", None)
        y = torch.zeros(bs, dtype=torch.long, device=device) if y is None else y[:bs] % 16
        opt.zero_grad()
        out = model(batch.x.float(), batch.edge_index)[:bs]
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()

    try:
        epochs = timed_epochs(it, a.epochs, device, step)
        st = lo.transfer.stats if lo.transfer is not None else None
        return {"mode": mode, "epochs": epochs,
                "seconds_per_epoch": float(np.mean([e["seconds"] for e in epochs])),
                "wait_per_epoch": float(np.mean([e["wait_seconds"] for e in epochs])),
                "steps": epochs[0]["steps"], "stats": st.__dict__.copy() if st is not None else None}
    finally:
        lo.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--binary", required=True, help="the streamsampler executable (make build: bin/streamsampler)")
    p.add_argument("--chunkify", required=True, help="the chunkify executable (make build: bin/chunkify)")
    p.add_argument("--graph", required=True, help="graph directory with a feature store; generated if absent")
    p.add_argument("--scale", type=int, default=20, help="R-MAT scale when generating (default 20: 1M nodes)")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--dim", type=int, default=128, help="feature dimension when generating")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fanouts", default="10,5", help="hop 1 first (default 10,5)")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--fraction", type=float, default=0.1, help="training nodes for the timing (default 0.1)")
    p.add_argument("--check-fraction", type=float, default=0.01, help="nodes of the checks (default 0.01)")
    p.add_argument("--check-epochs", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per mode, after one warm-up")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--slow-ms", type=float, default=10.0, help="the slow consumer's sleep per step")
    p.add_argument("--sleep-cycles", type=int, default=50_000_000,
                   help="torch.cuda._sleep cycles queued per slow step (about 25 ms on an H100)")
    p.add_argument("--modes", default="sync,prefetchloader,device,device-rows,device+delta")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (a dry run without a GPU)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    a.binary, a.chunkify = os.path.abspath(a.binary), os.path.abspath(a.chunkify)
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("FAIL cuda             torch.cuda.is_available() is False (use --device cpu for a dry run)")
        return 1
    print("torch %s, %s; %s" % (torch.__version__, torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                                frameworks(a)), flush=True)
    graph, n, train, check = prepare(a)
    dim = FeatureStore(graph).x.shape[1]
    print("graph %s: %d nodes, dim %d; %d training nodes, %d checked; fanouts %s, batch %d"
          % (graph, n, dim, len(train), len(check), a.fanouts, a.batch), flush=True)

    for fn in (check_equal, check_slow, check_pinned):
        try:
            fn(a, graph, check, device)
        except Exception:  # a check that cannot run fails; the others still run
            traceback.print_exc()
            report(fn.__name__, False, "raised (traceback above)")

    results = []
    print("\n%-15s %10s %10s %8s  (per epoch: wall, waiting for the next minibatch; %d timed epochs)"
          % ("mode", "s/epoch", "wait s", "steps", a.epochs), flush=True)
    for mode in a.modes.split(","):
        if mode == "prefetchloader" and device.type != "cuda":
            continue
        try:
            r = run_mode(mode, a, graph, train, device, dim)
        except Exception:
            traceback.print_exc()
            report("time " + mode, False, "raised (traceback above)")
            continue
        results.append(r)
        st = r["stats"]
        print("%-15s %10.3f %10.3f %8d  %s" % (mode, r["seconds_per_epoch"], r["wait_per_epoch"], r["steps"],
                                              "" if st is None else
                                              "per epoch: staged %.0f MB, direct %.0f MB, delta %.0f MB; "
                                              "%.1f MB a minibatch; %d slot waits"
                                              % (st["bytes_staged"] / 1e6 / (1 + a.epochs),
                                                 st["bytes_direct"] / 1e6 / (1 + a.epochs),
                                                 st["bytes_routed"] / 1e6 / (1 + a.epochs),
                                                 (st["bytes_staged"] + st["bytes_direct"] + st["bytes_routed"])
                                                 / 1e6 / max(1, st["minibatches"]), st["slot_waits"])),
              flush=True)
    by = {r["mode"]: r["seconds_per_epoch"] for r in results}
    if "sync" in by and "device" in by:
        print("device / sync: %.2f" % (by["device"] / by["sync"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                       "torch": torch.__version__, "graph": graph, "num_nodes": n, "dim": dim,
                       "fanouts": a.fanouts, "batch": a.batch, "train": len(train), "failed": FAILED,
                       "modes": results}, f, indent=1)
    print("\n%s" % ("FAIL: " + ", ".join(FAILED) if FAILED else "PASS: every check"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
