"""Heterogeneous node classification with PyG's NeighborLoader over a
``HeteroData``, the way a PyG user writes it, and the same script with
streamsampler's loader swapped in (issue 27's accuracy check;
docs/ACCURACY.md).

Dataset: testdata/cora-hetero (derived from Planetoid Cora by its make.py:
papers and the dictionary's words as two node types, ``(paper, cites,
paper)`` and ``(paper, has, term)``, the papers' 16-dim hashed bags of
words, row-normalized as PyG's NormalizeFeatures does, featureless terms
given their one-hot rows, the papers' 7 classes and Planetoid's splits), made undirected as PyG users do with
``ToUndirected`` (here by hand, the same relations: ``cites`` both ways and
``(term, rev_has, paper)``). Why this one: real labels and a real graph,
two node types whose inputs differ in meaning and size, and a paper's
words reach it only through a relation, so the sampling of every relation matters;
small enough for 3 seeds × 2 loaders in minutes.

Model: a 2-layer R-GCN-style network, one ``SAGEConv((-1, -1), H)`` per
relation in a ``HeteroConv`` (sum over relations), ReLU and dropout
between, the papers' logits from the last layer; Adam; cross-entropy on
the seed papers (``[:batch['paper'].batch_size]``); the test accuracy at
the epoch of best validation accuracy. It needs neither pyg-lib nor
torch-sparse (torch_geometric 2.8's HeteroConv and SAGEConv are plain
torch).

The two loaders differ in ``make_loaders`` only (the import; the
streamsampler loader takes the graph directory from_pyg wrote, or the
HeteroData itself)::

    from streamsampler.pyg import NeighborLoader            # --loader streamsampler
    graph = streamsampler.from_pyg(data, DIR).path
    from reference_hetero_loader import NeighborLoader      # --loader reference
    graph = data

``--loader streamsampler`` needs the executables (``--binary``/``--chunkify``,
``$STREAMSAMPLER_BIN``, or a checkout's ``make build``) and torch_geometric.

    python3 python/examples/pyg_hetero.py --root testdata --loader reference --seed 0

prints one JSON object (test, val, best_epoch, seconds, ...) as its last
line; bench/hetero_accuracy.py runs it for 3 seeds and both loaders.
"""

import argparse
import gzip
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import streamsampler  # noqa: E402
from streamsampler import datasets  # noqa: E402

CONFIG = dict(fanouts=[10, 10], batch_size=32, hidden=64, lr=0.01, weight_decay=5e-4, epochs=40)


def _csv(path):
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", ndmin=2)


def pyg_data(root):
    """testdata/cora-hetero as a PyG user has it: a HeteroData with x per
    type, the papers' y and masks, and every relation in both directions
    (ToUndirected's result)."""
    from torch_geometric.data import HeteroData

    raw = os.path.join(root, "cora-hetero", "raw")
    data = HeteroData()
    with gzip.open(os.path.join(raw, "num-node-dict.csv.gz"), "rt") as f:
        types, counts = [line.strip().split(",") for line in f.read().strip().splitlines()]
    num = {t: int(c) for t, c in zip(types, counts)}
    x = torch.from_numpy(_csv(os.path.join(raw, "node-feat", "paper", "node-feat.csv.gz")).astype(np.float32))
    if x.shape[0] != num["paper"]:
        raise ValueError("%s: %d rows of paper features, num-node-dict says %d" % (raw, x.shape[0], num["paper"]))
    data["paper"].x = x / x.sum(1, keepdim=True).clamp(min=1)  # NormalizeFeatures, as for Planetoid
    # Terms have no features: each its one-hot row, the usual input of a
    # featureless type (a learned embedding, without one more code path).
    data["term"].x = torch.eye(num["term"])
    data["paper"].y = torch.from_numpy(_csv(os.path.join(raw, "node-label", "paper", "node-label.csv.gz"))
                                       .astype(np.int64).reshape(-1))
    cites = torch.from_numpy(_csv(os.path.join(raw, "relations", "paper___cites___paper", "edge.csv.gz"))
                             .astype(np.int64)).t()
    has = torch.from_numpy(_csv(os.path.join(raw, "relations", "paper___has___term", "edge.csv.gz"))
                           .astype(np.int64)).t()
    data["paper", "cites", "paper"].edge_index = torch.cat([cites, cites.flip(0)], 1)
    data["paper", "has", "term"].edge_index = has
    data["term", "rev_has", "paper"].edge_index = has.flip(0)
    ds = datasets.load_planetoid("cora", root=root)
    if ds.num_nodes != num["paper"]:
        raise ValueError("planetoid cora has %d papers, cora-hetero %d" % (ds.num_nodes, num["paper"]))
    for split in ("train", "val", "test"):
        m = torch.zeros(num["paper"], dtype=torch.bool)
        m[torch.from_numpy(getattr(ds, split))] = True
        setattr(data["paper"], split + "_mask", m)
    data.num_classes = ds.num_classes
    return data


class RGCN(torch.nn.Module):
    """One SAGEConv per relation, summed per destination type (HeteroConv)."""

    def __init__(self, edge_types, hidden, out_dim):
        super().__init__()
        from torch_geometric.nn import HeteroConv, SAGEConv

        self.conv1 = HeteroConv({et: SAGEConv((-1, -1), hidden) for et in edge_types}, aggr="sum")
        self.conv2 = HeteroConv({et: SAGEConv((-1, -1), out_dim) for et in edge_types}, aggr="sum")

    def forward(self, x_dict, edge_index_dict):
        h = self.conv1(x_dict, edge_index_dict)
        h = {k: F.dropout(F.relu(v), p=0.5, training=self.training) for k, v in h.items()}
        return self.conv2(h, edge_index_dict)["paper"]


def make_loaders(which, data, graph, cfg):
    """The script's loaders: the only lines that differ between the two."""
    if which == "streamsampler":
        from streamsampler.pyg import NeighborLoader
        kw = dict(num_neighbors=cfg["fanouts"], batch_size=cfg["batch_size"])
    else:
        from reference_hetero_loader import NeighborLoader
        kw = dict(num_neighbors=cfg["fanouts"], batch_size=cfg["batch_size"],
                  per_epoch_samples=which == "reference-per-epoch")
    train = NeighborLoader(graph, input_nodes=("paper", data["paper"].train_mask), shuffle=True, **kw)
    val = NeighborLoader(graph, input_nodes=("paper", data["paper"].val_mask), **kw)
    test = NeighborLoader(graph, input_nodes=("paper", data["paper"].test_mask), **kw)
    return train, val, test


def _inputs(batch, device):
    x = {t: batch[t].x.to(device) for t in batch.node_types}
    ei = {et: batch[et].edge_index.to(device) for et in batch.edge_types}
    return x, ei


@torch.no_grad()
def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    for batch in loader:
        bs = batch["paper"].batch_size
        out = model(*_inputs(batch, device))[:bs]
        correct += int((out.argmax(-1).cpu() == batch["paper"].y[:bs]).sum())
        total += bs
    return correct / total


def run(which, data, seed, device, cfg, tmp, chunkify=None):
    torch.manual_seed(seed)
    np.random.seed(seed)
    graph = data
    if which == "streamsampler":
        graph = streamsampler.from_pyg(data, os.path.join(tmp, "graph"), chunkify=chunkify).path
    train_loader, val_loader, test_loader = make_loaders(which, data, graph, cfg)
    model = RGCN(data.edge_types, cfg["hidden"], data.num_classes).to(device)
    with torch.no_grad():  # materialize the lazy (-1) input sizes before the optimizer sees the parameters
        model(*_inputs(next(iter(train_loader)), device))
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    best_val, best_test, best_epoch, t0 = -1.0, 0.0, -1, time.time()
    for epoch in range(cfg["epochs"]):
        model.train()
        for batch in train_loader:
            bs = batch["paper"].batch_size
            opt.zero_grad()
            out = model(*_inputs(batch, device))[:bs]
            loss = F.cross_entropy(out, batch["paper"].y[:bs].to(device))
            loss.backward()
            opt.step()
        val = accuracy(model, val_loader, device)
        if val > best_val:
            best_val, best_test, best_epoch = val, accuracy(model, test_loader, device), epoch
    for lo in (train_loader, val_loader, test_loader):
        if hasattr(lo, "close"):
            lo.close()
    return dict(loader=which, seed=seed, val=best_val, test=best_test, best_epoch=best_epoch,
                seconds=time.time() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="raw datasets (a checkout's testdata/)")
    ap.add_argument("--loader", choices=("streamsampler", "reference", "reference-per-epoch"), default="reference",
                    help="reference-per-epoch: the reference with one sample per node, relation and hop per epoch "
                         "(a diagnostic)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=CONFIG["epochs"])
    ap.add_argument("--device", default=None, help="default: cuda where available, else cpu")
    ap.add_argument("--binary", default=None, help="streamsampler executable ($STREAMSAMPLER_BIN)")
    ap.add_argument("--chunkify", default=None, help="chunkify executable ($STREAMSAMPLER_CHUNKIFY)")
    args = ap.parse_args(argv)
    if args.binary:
        os.environ["STREAMSAMPLER_BIN"] = os.path.abspath(args.binary)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cfg = dict(CONFIG, epochs=args.epochs)
    data = pyg_data(args.root)
    with tempfile.TemporaryDirectory() as tmp:
        res = run(args.loader, data, args.seed, device, cfg, tmp, chunkify=args.chunkify)
    res.update(dataset="cora-hetero", epochs=cfg["epochs"], config=cfg,
               device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu")
    print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
