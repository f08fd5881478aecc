"""GraphSAGE convergence check: our sampler (served minibatches) against a
reference uniform neighbor sampler written here in plain torch.

For each dataset and seed, a 2-layer GraphSAGE (torch_geometric.nn.SAGEConv,
mean aggregation) is trained twice with identical hyper-parameters and
initial weights: once on minibatches from ``streamsampler serve`` (one
sample per node per epoch and layer, DESIGN §4), once on minibatches from
the reference sampler (fresh uniform samples without replacement for every
minibatch, the same block structure: each hop samples every destination of
the hop before). Evaluation is the same for both: full-neighborhood
inference on the whole graph; the reported test accuracy is at the epoch
of best validation accuracy. Pass: |mean(ours) - mean(reference)| <= 1
point per dataset.

    python3 python/convergence.py prepare --out DIR [--root RAW]  # datasets -> DIR/{cora,citeseer,musae-facebook}
    python3 python/convergence.py --data DIR --binary bin/streamsampler [--out results.json]

DIR holds one folder per dataset as ``python -m streamsampler.datasets``
writes it (graph/, train.txt, val.txt, test.txt, labels.npy, and
features.npy or features.npz).
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

# Per dataset: fanouts, batch size, hidden units, epochs.
CONFIGS = {
    "cora": dict(fanouts=[10, 10], batch_size=32, hidden=64, epochs=60, normalize=True),
    "citeseer": dict(fanouts=[10, 10], batch_size=32, hidden=64, epochs=60, normalize=True),
    "musae-facebook": dict(fanouts=[10, 10], batch_size=512, hidden=128, epochs=30, normalize=False),
}
LR, WEIGHT_DECAY, DROPOUT = 0.01, 5e-4, 0.5


def load(d):
    ids = lambda n: np.loadtxt(os.path.join(d, n), dtype=np.int64, ndmin=1)
    if os.path.exists(os.path.join(d, "features.npz")):
        x = np.load(os.path.join(d, "features.npz"))["x"]
    else:
        x = np.load(os.path.join(d, "features.npy"))
    y = np.load(os.path.join(d, "labels.npy"))
    edges = np.loadtxt(os.path.join(d, "edges.txt"), dtype=np.int64, ndmin=2)
    return x.astype(np.float32), y, ids("train.txt"), ids("val.txt"), ids("test.txt"), edges


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


def run_one(name, cfg, data, sampler, seed, binary, device, graph_dir, train_file):
    import torch
    x_np, y_np, train, val, test, edges = data
    x = torch.from_numpy(x_np).to(device)
    y = torch.from_numpy(y_np).to(device)
    full_ei = torch.from_numpy(np.concatenate([edges, edges[:, ::-1]]).T.copy()).to(device)
    torch.manual_seed(seed)
    model = make_model(x.shape[1], cfg["hidden"], int(y_np.max()) + 1).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    best_val, best_test, steps = -1.0, 0.0, 0
    srv = None
    if sampler == "ours":
        srv = streamsampler.LocalServer(graph_dir, train_file, cfg["fanouts"], cfg["batch_size"], seed=seed,
                                        binary=binary)
        srv.start()
        client = srv.client()
        loader = streamsampler.Loader(client, transform=pyg_arrays, prefetch=8)
    else:
        g = torch.Generator().manual_seed(1000 + seed)
        ref = RefSampler(len(y_np), edges, cfg["fanouts"], g)
        train_t = torch.from_numpy(train)
    t0 = time.time()
    try:
        for epoch in range(cfg["epochs"]):
            model.train()
            if sampler == "ours":
                batches = ((torch.from_numpy(a["n_id"]), [(torch.from_numpy(e), s) for e, s in
                                                         zip(a["edge_index_per_hop"], a["sizes_per_hop"])],
                            a["batch_size"]) for a in loader)
            else:
                perm = train_t[torch.randperm(len(train_t), generator=g)]

                def gen():
                    for i in range(0, len(perm), cfg["batch_size"]):
                        seeds = perm[i:i + cfg["batch_size"]]
                        hops, n_id = ref.sample(seeds)
                        yield n_id, hops, len(seeds)
                batches = gen()
            for n_id, hops, bs in batches:
                n_id = n_id.to(device)
                blocks = [(ei.to(device), s) for ei, s in reversed(hops)]
                out = model.forward_blocks(x[n_id], blocks)
                loss = torch.nn.functional.cross_entropy(out, y[n_id[:bs]])
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += 1
            model.eval()
            with torch.no_grad():
                pred = model.forward_full(x, full_ei).argmax(1)
                va = (pred[val] == y[val]).float().mean().item()
                te = (pred[test] == y[test]).float().mean().item()
            if va > best_val:
                best_val, best_test = va, te
    finally:
        if srv is not None:
            loader.close()
            client.close()
            srv.stop()
    return {"dataset": name, "sampler": sampler, "seed": seed, "best_val": best_val, "test_at_best_val": best_test,
            "final_test": te, "steps": steps, "seconds": round(time.time() - t0, 2)}


def prepare_data(out, names, chunkify=None, root=None):
    """Write each dataset for this script (and to carry elsewhere): the
    prepare() output with features compressed (features.npz)."""
    from streamsampler import datasets
    for name in names:
        d = os.path.join(out, name)
        paths = datasets.prepare(datasets.load(name, root), d, chunkify=chunkify)
        x = np.load(paths["features"])
        np.savez_compressed(os.path.join(d, "features.npz"), x=x)
        os.remove(paths["features"])
        print("prepared", d, flush=True)


def save(path, obj):
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(obj, f, indent=1)
        os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "prepare":
        ap = argparse.ArgumentParser(prog="convergence.py prepare")
        ap.add_argument("--out", required=True)
        ap.add_argument("--datasets", default="cora,citeseer,musae-facebook")
        ap.add_argument("--chunkify", default=None)
        ap.add_argument("--root", default=None, help="raw dataset directory (default $STREAMSAMPLER_DATASETS)")
        a = ap.parse_args(sys.argv[2:])
        prepare_data(a.out, a.datasets.split(","), a.chunkify, a.root)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--binary", default=None)
    ap.add_argument("--datasets", default="cora,citeseer,musae-facebook")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default=None)
    ap.add_argument("--epochs", type=int, default=None, help="override every dataset's epochs (dry runs)")
    a = ap.parse_args()
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print("device", device, "torch", torch.__version__, flush=True)
    results = []
    summary = {}
    seed_list = [int(x) for x in a.seeds.split(",")]
    for name in a.datasets.split(","):
        cfg = dict(CONFIGS[name])
        if a.epochs:
            cfg["epochs"] = a.epochs
        d = os.path.join(a.data, name)
        data = load(d)
        if cfg["normalize"]:
            # Row-normalized bag-of-words features (PyG's NormalizeFeatures).
            x = data[0]
            data = (x / np.maximum(x.sum(1, keepdims=True), 1e-12),) + data[1:]
        for seed in seed_list:
            for sampler in ("ours", "reference"):
                r = run_one(name, cfg, data, sampler, seed, a.binary, device, os.path.join(d, "graph"),
                            os.path.join(d, "train.txt"))
                print(json.dumps(r), flush=True)
                results.append(r)
                save(a.out, {"results": results, "partial": True})
        for label, seeds in (("3 seeds", seed_list[:3]), ("all %d seeds" % len(seed_list), seed_list)):
            if label != "3 seeds" and len(seed_list) <= 3:
                continue
            acc = {smp: [r["test_at_best_val"] * 100 for r in results
                         if r["dataset"] == name and r["sampler"] == smp and r["seed"] in seeds]
                   for smp in ("ours", "reference")}
            m = {smp: float(np.mean(v)) for smp, v in acc.items()}
            sd = {smp: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for smp, v in acc.items()}
            paired = np.array(acc["ours"]) - np.array(acc["reference"])
            se = float(np.std(paired, ddof=1) / np.sqrt(len(paired))) if len(paired) > 1 else 0.0
            summary.setdefault(name, {})[label] = {
                "ours_mean": m["ours"], "ours_sd": sd["ours"], "ref_mean": m["reference"],
                "ref_sd": sd["reference"], "diff": m["ours"] - m["reference"], "paired_se": se,
                "pass": abs(m["ours"] - m["reference"]) <= 1.0, "config": cfg,
                "ours": acc["ours"], "reference": acc["reference"]}
    print("\n| dataset | seeds | ours (mean ± sd) | reference (mean ± sd) | diff (± paired s.e.) | within 1 pt |")
    print("|---|---|---|---|---|---|")
    for name, by in summary.items():
        for label, s in by.items():
            print("| %s | %s | %.2f ± %.2f | %.2f ± %.2f | %+.2f ± %.2f | %s |" % (
                name, label, s["ours_mean"], s["ours_sd"], s["ref_mean"], s["ref_sd"], s["diff"], s["paired_se"],
                "yes" if s["pass"] else "NO"))
    save(a.out, {"results": results, "summary": summary, "device": str(device),
                 "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
                 "torch": torch.__version__, "lr": LR, "weight_decay": WEIGHT_DECAY, "dropout": DROPOUT})
    return 0 if all(by["3 seeds"]["pass"] for by in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
