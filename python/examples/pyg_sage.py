"""GraphSAGE trained with PyG's NeighborLoader, the way a PyG user writes
it, and the same script with streamsampler's loader swapped in (issue 13's
proof; table in docs/ACCURACY.md).

The two loaders differ in ``make_loaders`` only, by the import and the
constructor's first argument::

    from streamsampler.pyg import NeighborLoader      # ours
    graph = streamsampler.from_pyg(data, DIR).path    #   (once)
    from reference_loader import NeighborLoader       # the reference
    graph = data

``reference_loader`` is PyG's NeighborLoader semantics in plain torch
(torch_geometric's own needs pyg-lib or torch-sparse, which the GPU
machine lacks). Everything else (model, training, evaluation with
NeighborLoaders over the validation and test masks,
``model(batch.x, batch.edge_index)[:batch.batch_size]``) is one code path.
Test accuracy is taken at the epoch of best validation accuracy; the check
passes when each dataset's mean over the seeds is within 1 point of the
reference's.

After training (issue 25), the streamsampler run also evaluates the way
PyG's own GraphSAGE examples do: ``model.inference(x_all,
subgraph_loader)``, layer by layer over every node, with
``NeighborLoader(graph, input_nodes=None, num_neighbors=[-1],
batch_size=4096, shuffle=False)`` from ``streamsampler.pyg`` (the server's
full scan: one sequential pass over the chunks per layer), and checks it
against an independent full-neighborhood computation, the model's forward
over the whole graph's ``edge_index``: full neighborhoods are
deterministic, so the logits must agree to float tolerance and the test
accuracies exactly (``layerwise`` in the output; ``--no-layerwise`` skips
it).

    python3 python/examples/pyg_sage.py --root testdata --binary bin/streamsampler \\
        --chunkify bin/chunkify --seeds 0,1,2,3,4 --out pyg_sage.json
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import streamsampler  # noqa: E402
from streamsampler import datasets  # noqa: E402

# Per dataset: fanouts, batch size, hidden units, epochs, row-normalized x.
CONFIGS = {
    "cora": dict(fanouts=[10, 10], batch_size=32, hidden=64, epochs=60, normalize=True),
    "citeseer": dict(fanouts=[10, 10], batch_size=32, hidden=64, epochs=60, normalize=True),
    "musae-facebook": dict(fanouts=[10, 10], batch_size=512, hidden=128, epochs=30, normalize=False),
}


def pyg_data(name, root):
    """The dataset as a PyG user has it: a Data with both directions of
    every edge, x (row-normalized for the Planetoid sets, PyG's
    NormalizeFeatures), y and the three masks."""
    ds = datasets.load(name, root=root)
    e = torch.from_numpy(ds.edges.T.copy())
    x = torch.from_numpy(ds.x.astype(np.float32))
    if CONFIGS[name]["normalize"]:
        x = x / x.sum(1, keepdim=True).clamp(min=1)
    data = Data(x=x, edge_index=torch.cat([e, e.flip(0)], 1), y=torch.from_numpy(ds.y), num_nodes=ds.num_nodes)
    for split in ("train", "val", "test"):
        m = torch.zeros(ds.num_nodes, dtype=torch.bool)
        m[torch.from_numpy(getattr(ds, split))] = True
        data[split + "_mask"] = m
    data.num_classes = ds.num_classes
    return data


class SAGE(torch.nn.Module):
    def __init__(self, in_dim, hidden, out_dim):
        super().__init__()
        self.conv1 = SAGEConv(in_dim, hidden)
        self.conv2 = SAGEConv(hidden, out_dim)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)

    @torch.no_grad()
    def inference(self, x_all, subgraph_loader, device):
        """PyG's layer-wise inference (examples/reddit.py), unchanged: every
        node, one layer at a time, all of its neighbors."""
        convs = [self.conv1, self.conv2]
        for i, conv in enumerate(convs):
            xs = []
            for batch in subgraph_loader:
                x = x_all[batch.n_id.to(x_all.device)].to(device)
                x = conv(x, batch.edge_index.to(device))
                if i < len(convs) - 1:
                    x = x.relu_()
                xs.append(x[:batch.batch_size].cpu())
            x_all = torch.cat(xs, dim=0)
        return x_all


def layerwise_check(model, data, graph, device, batch_size=4096):
    """Test accuracy by layer-wise inference through streamsampler's
    drop-in (num_neighbors=[-1]) against the model over the whole graph:
    both accuracies, the largest logit difference, whether they match."""
    from streamsampler.pyg import NeighborLoader

    model.eval()
    sub = NeighborLoader(graph, input_nodes=None, num_neighbors=[-1], batch_size=batch_size, shuffle=False)
    try:
        t0 = time.time()
        lw = model.inference(data.x, sub, device)
        seconds = time.time() - t0
    finally:
        sub.close()
    with torch.no_grad():
        full = model(data.x.to(device), data.edge_index.to(device)).cpu()
    test = data.test_mask
    acc_lw = float((lw[test].argmax(-1) == data.y[test]).float().mean())
    acc_full = float((full[test].argmax(-1) == data.y[test]).float().mean())
    diff = float((lw - full).abs().max())
    return dict(test_layerwise=acc_lw, test_full=acc_full, max_abs_diff=diff, seconds=seconds,
                match=bool(torch.allclose(lw, full, rtol=1e-4, atol=1e-4)) and acc_lw == acc_full)


def make_loaders(which, data, graph, cfg):
    """The script's loaders: the only lines that differ between the two."""
    if which == "ours":
        from streamsampler.pyg import NeighborLoader
    else:
        from reference_loader import NeighborLoader
    kw = dict(num_neighbors=cfg["fanouts"], batch_size=cfg["batch_size"])
    train = NeighborLoader(graph, input_nodes=data.train_mask, shuffle=True, **kw)
    val = NeighborLoader(graph, input_nodes=data.val_mask, **kw)
    test = NeighborLoader(graph, input_nodes=data.test_mask, **kw)
    return train, val, test


@torch.no_grad()
def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    for batch in loader:
        batch = batch.to(device)
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        correct += int((out.argmax(-1) == batch.y[:batch.batch_size]).sum())
        total += batch.batch_size
    return correct / total


def run(which, data, graph, cfg, seed, device, layerwise=True):
    torch.manual_seed(seed)
    np.random.seed(seed)
    train_loader, val_loader, test_loader = make_loaders(which, data, graph, cfg)
    model = SAGE(data.num_features, cfg["hidden"], data.num_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    best_val, best_test, t0, seen = -1.0, 0.0, time.time(), 0
    for epoch in range(cfg["epochs"]):
        model.train()
        for batch in train_loader:
            batch = batch.to(device)
            opt.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
            seen += batch.batch_size
        val = accuracy(model, val_loader, device)
        if val > best_val:
            best_val, best_test = val, accuracy(model, test_loader, device)
    seconds = time.time() - t0
    # The trained model (its last epoch's weights) evaluated layer-wise,
    # while the training loader's server still runs (the full scan shares
    # it).
    lw = layerwise_check(model, data, graph, device) if layerwise and which == "ours" else None
    for lo in (train_loader, val_loader, test_loader):
        if hasattr(lo, "close"):
            lo.close()
    out = dict(val=best_val, test=best_test, seconds=seconds, seeds_per_epoch=seen // cfg["epochs"])
    if lw is not None:
        out["layerwise"] = lw
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="raw datasets (a checkout's testdata/)")
    ap.add_argument("--datasets", default="cora,citeseer,musae-facebook")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--loaders", default="reference,ours")
    ap.add_argument("--binary", default=None, help="streamsampler executable ($STREAMSAMPLER_BIN)")
    ap.add_argument("--chunkify", default=None, help="chunkify executable ($STREAMSAMPLER_CHUNKIFY)")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-layerwise", dest="layerwise", action="store_false",
                    help="skip the layer-wise inference check after training")
    args = ap.parse_args()
    if args.binary:
        os.environ["STREAMSAMPLER_BIN"] = os.path.abspath(args.binary)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    seeds = [int(s) for s in args.seeds.split(",")]
    results, ok = {}, True
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            cfg = dict(CONFIGS[name])
            if args.epochs:
                cfg["epochs"] = args.epochs
            data = pyg_data(name, args.root)
            t = time.time()
            info = streamsampler.from_pyg(data, os.path.join(tmp, name), chunkify=args.chunkify)
            print("%s: from_pyg %.2f s: %s" % (name, time.time() - t, info), flush=True)
            res = results[name] = {}
            for which in args.loaders.split(","):
                graph = info.path if which == "ours" else data
                runs = [run(which, data, graph, cfg, s, device, args.layerwise) for s in seeds]
                res[which] = dict(runs=runs, mean=float(np.mean([r["test"] for r in runs])) * 100,
                                  std=float(np.std([r["test"] for r in runs])) * 100)
                print("%-15s %-9s test %.2f ± %.2f  (%s)" % (name, which, res[which]["mean"], res[which]["std"],
                      ", ".join("%.1f" % (100 * r["test"]) for r in runs)), flush=True)
                for r in runs:
                    lw = r.get("layerwise")
                    if lw is not None:
                        ok &= lw["match"]
                        print("%-15s %-9s layer-wise inference (num_neighbors=[-1]) test %.2f, full graph %.2f, "
                              "max |logit diff| %.2e, %.2f s: %s" % (name, which, 100 * lw["test_layerwise"],
                                                                    100 * lw["test_full"], lw["max_abs_diff"],
                                                                    lw["seconds"], "PASS" if lw["match"] else "FAIL"),
                              flush=True)
            if "ours" in res and "reference" in res:
                d = res["ours"]["mean"] - res["reference"]["mean"]
                res["diff"] = d
                res["pass"] = abs(d) <= 1.0
                ok &= res["pass"]
                print("%-15s ours - reference = %+.2f points: %s" % (name, d, "PASS" if res["pass"] else "FAIL"),
                      flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=str(torch.cuda.get_device_name() if device.type == "cuda" else "cpu"),
                           seeds=seeds, configs=CONFIGS, results=results), f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
