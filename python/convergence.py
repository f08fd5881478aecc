"""GraphSAGE convergence check: our sampler (minibatches served with their
feature rows and labels from the graph's feature store) against a
reference uniform neighbor sampler written here in plain torch.

For each dataset and seed, a 2-layer GraphSAGE (torch_geometric.nn.SAGEConv,
mean aggregation) is trained with identical hyper-parameters and initial
weights on minibatches from

* ``ours/store``: ``streamsampler serve --features`` (one sample per node
  per epoch and layer, DESIGN §4); the model's input is ``batch.x`` (the
  rows of the minibatch's ``n_id`` read by the server from the feature
  store) and the loss's target ``batch.y`` (the seeds' labels from the
  store): no in-memory feature matrix on this path;
* ``ours/store+match``: the same with the server's ``--reorder match``
  (FastGL's Match-Reorder of each epoch's minibatches);
* ``reference``: fresh uniform samples without replacement for every
  minibatch (``RefSampler``, the same block structure), its rows gathered
  from the whole matrix.

Every path reads one source: the graph directory's feature store
(``chunkify features``, docs/FORMAT.md), the reference and the evaluation
through ``streamsampler.featstore`` (a numpy memmap of the same file the
server reads). Evaluation is the same for all: full-neighborhood inference
on the whole graph; the reported test accuracy is at the epoch of best
validation accuracy. Pass: |mean(ours) - mean(reference)| <= 1 point per
dataset, for each ``--reorder`` mode. Cora and CiteSeer rows are
row-normalized (PyG's NormalizeFeatures) by ``model_input``, one numpy
function applied to a minibatch's delivered rows and to the whole matrix
alike (row by row, so the results are the same bytes: ``--dry-run``
checks it).

On the GPU machine (no Go there: bin/streamsampler and bin/chunkify built
with CGO_ENABLED=0 and carried; the raw data is bundled under testdata/),
one command batch:

    python3 python/convergence.py prepare --out DATA --chunkify bin/chunkify --root testdata
    python3 python/convergence.py --data DATA --binary bin/streamsampler --seeds 0,1,2 --reorder none,match --out conv.json

Without torch, ``--dry-run`` runs everything but the model: it serves
every dataset with each ``--reorder`` mode for ``--epochs`` epochs (default
1) and checks that each minibatch's model input and labels equal the
store's rows (normalized as for the reference) byte for byte and that every
training node is a seed exactly once per epoch:

    python3 python/convergence.py --data DATA --binary bin/streamsampler --reorder none,match --dry-run

DIR (``--data``) holds one folder per dataset as ``prepare`` writes it:
graph/ with its feature store (features.json, features-1.bin,
labels-1.bin), edges.txt, train.txt, val.txt, test.txt, meta.json.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import streamsampler  # noqa: E402
from streamsampler import pyg_arrays  # noqa: E402
from streamsampler.featstore import FeatureStore  # noqa: E402

# Per dataset: fanouts, batch size, hidden units, epochs.
CONFIGS = {
    "cora": dict(fanouts=[10, 10], batch_size=32, hidden=64, epochs=60, normalize=True),
    "citeseer": dict(fanouts=[10, 10], batch_size=32, hidden=64, epochs=60, normalize=True),
    "musae-facebook": dict(fanouts=[10, 10], batch_size=512, hidden=128, epochs=30, normalize=False),
}
LR, WEIGHT_DECAY, DROPOUT = 0.01, 5e-4, 0.5
REORDERS = ("none", "match")
REFERENCE = "reference"


def sampler_name(reorder):
    """The results' name of our sampler with a --reorder mode."""
    return "ours/store" if reorder == "none" else "ours/store+" + reorder


def model_input(rows, normalize):
    """The model's input from feature-store rows: float32, and with
    ``normalize`` each row divided by its sum (PyG's NormalizeFeatures).
    Row by row, so a minibatch's rows get the same bytes as the same rows
    of the whole matrix."""
    x = np.array(rows, dtype=np.float32)  # a copy: never a view of a read-only store mapping
    if normalize:
        x = x / np.maximum(x.sum(1, keepdims=True), np.float32(1e-12))
    return x


class Data:
    """A prepared dataset folder: the feature store of graph/ (``store.x``
    a memmap, ``y`` int64 labels), the splits and the edge list."""

    def __init__(self, d):
        ids = lambda n: np.loadtxt(os.path.join(d, n), dtype=np.int64, ndmin=1)
        self.dir = d
        self.graph = os.path.join(d, "graph")
        self.train_file = os.path.join(d, "train.txt")
        self.store = FeatureStore(self.graph)
        if self.store.y is None:
            raise ValueError("%s: the feature store has no labels (prepare packs them)" % self.graph)
        self.y = self.store.y.astype(np.int64)
        self.train, self.val, self.test = ids("train.txt"), ids("val.txt"), ids("test.txt")
        for name, split in (("train", self.train), ("val", self.val), ("test", self.test)):
            if (self.y[split] < 0).any():
                raise ValueError("%s: %s.txt has nodes without a label" % (d, name))
        self.edges = np.loadtxt(os.path.join(d, "edges.txt"), dtype=np.int64, ndmin=2)
        self.num_classes = int(self.y.max()) + 1


def served_batch(batch, normalize):
    """Loader transform for our path: the index arrays, the model input
    from the delivered rows (``batch.x``) and the seeds' labels
    (``batch.y``, int64)."""
    if batch.x is None or batch.y is None:
        raise RuntimeError("minibatch %d of epoch %d came without features or labels: the server must run "
                           "with --features on a graph whose store has labels" % (batch.index, batch.epoch))
    a = pyg_arrays(batch)
    a["x"] = model_input(batch.x, normalize)
    a["y"] = batch.y.astype(np.int64)
    a["seeds"] = batch.seeds.astype(np.int64)
    return a


class SharedFraction:
    """The shared fraction of consecutive minibatches, as featplan reports
    it: the sum over consecutive pairs (A, B) of |A∩B| over the sum of |B|."""

    def __init__(self, num_nodes):
        self.mark = np.zeros(num_nodes, np.int64)
        self.step = 0
        self.shared = self.total = 0

    def add(self, n_id):
        if self.step:
            self.shared += int((self.mark[n_id] == self.step).sum())
            self.total += len(n_id)
        self.step += 1
        self.mark[n_id] = self.step

    def value(self):
        return self.shared / self.total if self.total else 0.0


def start_server(data, cfg, seed, binary, reorder, transport):
    """A LocalServer with --features (and --reorder) on the dataset, and a
    Loader of served_batch dicts over a client of it."""
    srv = streamsampler.LocalServer(data.graph, data.train_file, cfg["fanouts"], cfg["batch_size"], seed=seed,
                                    binary=binary, extra_args=["--features", "--reorder", reorder])
    srv.start()
    try:
        client = srv.client(shared_rows=transport == "shared")
        loader = streamsampler.Loader(client, transform=lambda b: served_batch(b, cfg["normalize"]),
                                      prefetch=8)
    except BaseException:
        srv.stop()
        raise
    return srv, client, loader


class RefSampler:
    """Uniform neighbor sampling without replacement, fresh for every
    minibatch, in plain torch: hop h samples min(deg, fanout) distinct
    neighbors of every destination node; the next hop's destinations are
    this hop's sources (destinations first, then new neighbors)."""

    def __init__(self, num_nodes, edges, fanouts, generator):
        import torch
        u = np.concatenate([edges[:, 0], edges[:, 1]])
        v = np.concatenate([edges[:, 1], edges[:, 0]])
        order = np.lexsort((v, u))
        self.col = torch.from_numpy(v[order])
        self.rowptr = torch.from_numpy(np.concatenate([[0], np.cumsum(np.bincount(u, minlength=num_nodes))]))
        self.fanouts = fanouts
        self.g = generator
        self.mark = torch.full((num_nodes,), -1, dtype=torch.long)

    def sample(self, seeds):
        """Per hop (hop order): (edge_index [2,E] local, (n_src, n_dst)),
        and n_id (the last hop's sources)."""
        import torch
        dst = seeds
        hops = []
        for k in self.fanouts:
            start = self.rowptr[dst]
            deg = self.rowptr[dst + 1] - start
            grp = torch.repeat_interleave(torch.arange(len(dst)), deg)
            off = torch.arange(int(deg.sum())) - torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
            nb = self.col[torch.repeat_interleave(start, deg) + off]
            # A random rank inside each destination's neighbor list.
            r = torch.rand(len(nb), generator=self.g)
            perm = torch.argsort(r)
            perm = perm[torch.argsort(grp[perm], stable=True)]
            grp_s, nb_s = grp[perm], nb[perm]
            rank = torch.arange(len(perm)) - torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
            keep = rank < k
            e_dst, e_nb = grp_s[keep], nb_s[keep]
            # Relabel: dst first, then new nodes.
            self.mark[dst] = torch.arange(len(dst))
            new = torch.unique(e_nb[self.mark[e_nb] < 0])
            self.mark[new] = torch.arange(len(dst), len(dst) + len(new))
            src = torch.cat([dst, new])
            e_src = self.mark[e_nb]
            self.mark[src] = -1
            hops.append((torch.stack([e_src, e_dst]), (len(src), len(dst))))
            dst = src
        return hops, dst


def make_model(in_dim, hidden, out_dim):
    import torch
    from torch_geometric.nn import SAGEConv

    class SAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList([SAGEConv(in_dim, hidden), SAGEConv(hidden, out_dim)])

        def forward_blocks(self, x, blocks):
            """blocks: outermost hop first, (edge_index, (n_src, n_dst))."""
            h = x
            for i, (ei, (ns, nd)) in enumerate(blocks):
                h = self.convs[i]((h, h[:nd]), ei, size=(ns, nd))
                if i < len(self.convs) - 1:
                    h = torch.relu(h)
                    h = torch.nn.functional.dropout(h, DROPOUT, self.training)
            return h

        def forward_full(self, x, ei):
            h = x
            for i, conv in enumerate(self.convs):
                h = conv(h, ei)
                if i < len(self.convs) - 1:
                    h = torch.relu(h)
            return h

    return SAGE()


def run_one(name, cfg, data, x_full, sampler, seed, binary, device, transport="shared"):
    """Train and evaluate once. ``sampler`` is REFERENCE or a --reorder
    mode of our server; ``x_full`` is the whole model input (for the
    reference's rows and for evaluation, numpy float32)."""
    import torch
    x = torch.from_numpy(x_full).to(device)
    y = torch.from_numpy(data.y).to(device)
    full_ei = torch.from_numpy(np.concatenate([data.edges, data.edges[:, ::-1]]).T.copy()).to(device)
    torch.manual_seed(seed)
    model = make_model(x.shape[1], cfg["hidden"], data.num_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    best_val, best_test, steps = -1.0, 0.0, 0
    shared = SharedFraction(len(data.y))
    srv = None
    if sampler != REFERENCE:
        srv, client, loader = start_server(data, cfg, seed, binary, sampler, transport)
    else:
        g = torch.Generator().manual_seed(1000 + seed)
        ref = RefSampler(len(data.y), data.edges, cfg["fanouts"], g)
        train_t = torch.from_numpy(data.train)
    t0 = time.time()
    try:
        for epoch in range(cfg["epochs"]):
            model.train()
            if sampler != REFERENCE:
                # The rows and labels the server delivered, nothing else.
                batches = ((torch.from_numpy(a["n_id"]), [(torch.from_numpy(e), s) for e, s in
                                                         zip(a["edge_index_per_hop"], a["sizes_per_hop"])],
                            torch.from_numpy(a["x"]), torch.from_numpy(a["y"])) for a in loader)
            else:
                perm = train_t[torch.randperm(len(train_t), generator=g)]

                def gen():
                    for i in range(0, len(perm), cfg["batch_size"]):
                        seeds = perm[i:i + cfg["batch_size"]]
                        hops, n_id = ref.sample(seeds)
                        yield n_id, hops, None, None
                batches = gen()
            for n_id, hops, xb, yb in batches:
                shared.add(n_id.numpy())
                blocks = [(ei.to(device), s) for ei, s in reversed(hops)]
                nd = blocks[-1][1][1]
                if xb is None:
                    n_id = n_id.to(device)
                    xb, yb = x[n_id], y[n_id[:nd]]
                out = model.forward_blocks(xb.to(device), blocks)
                loss = torch.nn.functional.cross_entropy(out, yb.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += 1
            model.eval()
            with torch.no_grad():
                pred = model.forward_full(x, full_ei).argmax(1)
                va = (pred[data.val] == y[data.val]).float().mean().item()
                te = (pred[data.test] == y[data.test]).float().mean().item()
            if va > best_val:
                best_val, best_test = va, te
    finally:
        if srv is not None:
            loader.close()
            client.close()
            srv.stop()
    return {"dataset": name, "sampler": sampler_name(sampler) if sampler != REFERENCE else REFERENCE,
            "seed": seed, "best_val": best_val, "test_at_best_val": best_test, "final_test": te, "steps": steps,
            "shared_fraction": round(shared.value(), 4), "seconds": round(time.time() - t0, 2)}


def dry_run(name, cfg, data, x_full, reorder, seed, binary, epochs, transport="shared"):
    """Our path without torch: serve ``epochs`` epochs and check every
    minibatch's model input and labels against the store, byte for byte,
    and that each epoch's seeds are the training nodes, each once.
    Returns a summary dict; raises AssertionError on a mismatch."""
    srv, client, loader = start_server(data, cfg, seed, binary, reorder, transport)
    raw = data.store.x
    shared = SharedFraction(len(data.y))
    batches = rows = 0
    try:
        for epoch in range(epochs):
            seeds = []
            for a in loader:
                n_id, bs = a["n_id"], a["batch_size"]
                if a["x"].tobytes() != x_full[n_id].tobytes():
                    raise AssertionError("%s epoch %d: model input differs from the store's rows" % (name, epoch))
                if a["x"].tobytes() != model_input(raw[n_id], cfg["normalize"]).tobytes():
                    raise AssertionError("%s epoch %d: delivered rows differ from the store's" % (name, epoch))
                if not np.array_equal(a["y"], data.y[n_id[:bs]]) or not np.array_equal(a["seeds"], n_id[:bs]):
                    raise AssertionError("%s epoch %d: labels differ from the store's" % (name, epoch))
                seeds.append(a["seeds"])
                shared.add(n_id)
                batches += 1
                rows += len(n_id)
            got = np.sort(np.concatenate(seeds))
            if not np.array_equal(got, np.sort(data.train)):
                raise AssertionError("%s epoch %d: seeds are not the training nodes, each once" % (name, epoch))
    finally:
        loader.close()
        client.close()
        srv.stop()
    return {"dataset": name, "sampler": sampler_name(reorder), "seed": seed, "epochs": epochs,
            "batches": batches, "rows": rows, "shared_fraction": round(shared.value(), 4), "checked": True}


def prepare_data(out, names, chunkify=None, root=None):
    """Write each dataset for this script: the prepare() output with the
    features and labels packed into graph/'s feature store, which is then
    the only copy (features.npy and labels.npy, the store's inputs, are
    removed once the store is read back equal)."""
    from streamsampler import datasets
    for name in names:
        d = os.path.join(out, name)
        ds = datasets.load(name, root)
        paths = datasets.prepare(ds, d, chunkify=chunkify)
        store = FeatureStore(paths["graph"])
        if store.x.tobytes() != ds.x.astype(np.float32).tobytes() or not np.array_equal(store.y, ds.y):
            raise RuntimeError("%s: the feature store does not hold the dataset's rows and labels" % paths["graph"])
        del store
        for k in ("features", "labels"):
            os.remove(paths[k])
        print("prepared", d, flush=True)


def save(path, obj):
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(obj, f, indent=1)
        os.replace(path + ".tmp", path)


def summarize(results, name, seed_list, samplers):
    """Per our sampler and seed group: means, s.d., the paired difference
    to the reference and the pass flag."""
    out = {}
    for label, seeds in (("3 seeds", seed_list[:3]), ("all %d seeds" % len(seed_list), seed_list)):
        if label != "3 seeds" and len(seed_list) <= 3:
            continue
        acc = {smp: [r["test_at_best_val"] * 100 for r in results
                     if r["dataset"] == name and r["sampler"] == smp and r["seed"] in seeds]
               for smp in samplers + [REFERENCE]}
        sf = {smp: [r["shared_fraction"] for r in results
                    if r["dataset"] == name and r["sampler"] == smp and r["seed"] in seeds]
              for smp in samplers + [REFERENCE]}
        m = {smp: float(np.mean(v)) for smp, v in acc.items()}
        sd = {smp: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for smp, v in acc.items()}
        for smp in samplers:
            paired = np.array(acc[smp]) - np.array(acc[REFERENCE])
            se = float(np.std(paired, ddof=1) / np.sqrt(len(paired))) if len(paired) > 1 else 0.0
            out.setdefault(smp, {})[label] = {
                "ours_mean": m[smp], "ours_sd": sd[smp], "ref_mean": m[REFERENCE], "ref_sd": sd[REFERENCE],
                "diff": m[smp] - m[REFERENCE], "paired_se": se, "pass": abs(m[smp] - m[REFERENCE]) <= 1.0,
                "ours": acc[smp], "reference": acc[REFERENCE],
                "shared_fraction": float(np.mean(sf[smp])), "ref_shared_fraction": float(np.mean(sf[REFERENCE]))}
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "prepare":
        ap = argparse.ArgumentParser(prog="convergence.py prepare")
        ap.add_argument("--out", required=True)
        ap.add_argument("--datasets", default="cora,citeseer,musae-facebook")
        ap.add_argument("--chunkify", default=None)
        ap.add_argument("--root", default=None, help="raw dataset directory (default $STREAMSAMPLER_DATASETS; "
                        "a checkout's testdata/ holds all three)")
        a = ap.parse_args(sys.argv[2:])
        prepare_data(a.out, a.datasets.split(","), a.chunkify, a.root)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--binary", default=None)
    ap.add_argument("--datasets", default="cora,citeseer,musae-facebook")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--reorder", default="none", help="our server's --reorder modes to train with, "
                    "comma-separated: none (ours/store), match (ours/store+match)")
    ap.add_argument("--transport", choices=("shared", "stream"), default="shared",
                    help="how rows reach us over the Unix socket: memory files (shared) or the byte stream")
    ap.add_argument("--out", default=None)
    ap.add_argument("--epochs", type=int, default=None, help="override every dataset's epochs (dry runs)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no torch: serve and check every minibatch's rows and labels against the store")
    a = ap.parse_args()
    reorders = a.reorder.split(",")
    for r in reorders:
        if r not in REORDERS:
            ap.error("--reorder %r: want a comma-separated list of %s" % (r, ", ".join(REORDERS)))
    seed_list = [int(x) for x in a.seeds.split(",")]
    samplers = [sampler_name(r) for r in reorders]
    results = []
    summary = {}
    if not a.dry_run:
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print("device", device, "torch", torch.__version__, flush=True)
    for name in a.datasets.split(","):
        cfg = dict(CONFIGS[name])
        if a.epochs:
            cfg["epochs"] = a.epochs
        data = Data(os.path.join(a.data, name))
        x_full = model_input(data.store.x, cfg["normalize"])
        for seed in seed_list:
            if a.dry_run:
                for r in reorders:
                    res = dry_run(name, cfg, data, x_full, r, seed, a.binary, a.epochs or 1, a.transport)
                    print(json.dumps(res), flush=True)
                    results.append(res)
                continue
            for smp in reorders + [REFERENCE]:
                res = run_one(name, cfg, data, x_full, smp, seed, a.binary, device, a.transport)
                print(json.dumps(res), flush=True)
                results.append(res)
                save(a.out, {"results": results, "partial": True})
        if not a.dry_run:
            summary[name] = summarize(results, name, seed_list, samplers)
    if a.dry_run:
        save(a.out, {"results": results, "dry_run": True})
        return 0
    print("\n| dataset | sampler | seeds | ours (mean ± sd) | reference (mean ± sd) | diff (± paired s.e.) "
          "| within 1 pt | shared fraction |")
    print("|---|---|---|---|---|---|---|---|")
    for name, by in summary.items():
        for smp, groups in by.items():
            for label, s in groups.items():
                print("| %s | %s | %s | %.2f ± %.2f | %.2f ± %.2f | %+.2f ± %.2f | %s | %.3f |" % (
                    name, smp, label, s["ours_mean"], s["ours_sd"], s["ref_mean"], s["ref_sd"], s["diff"],
                    s["paired_se"], "yes" if s["pass"] else "NO", s["shared_fraction"]))
    save(a.out, {"results": results, "summary": summary, "device": str(device), "transport": a.transport,
                 "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
                 "torch": torch.__version__, "lr": LR, "weight_decay": WEIGHT_DECAY, "dropout": DROPOUT,
                 "configs": {n: CONFIGS[n] for n in summary}})
    return 0 if all(g["3 seeds"]["pass"] for by in summary.values() for g in by.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
