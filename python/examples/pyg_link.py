"""Link prediction with PyG's LinkNeighborLoader, the way a PyG user
writes it, and the same script with streamsampler's loader swapped in
(issue 26's accuracy check; docs/ACCURACY.md).

GraphSAGE encoder (2 ``SAGEConv`` layers), dot-product decoder, binary
cross-entropy with logits; ``RandomLinkSplit`` (10 % validation, 10 %
test, undirected, no negative training samples: the training loader
draws them, ``neg_sampling="binary"``, one per positive, fresh each
minibatch); validation and test AUC over the split's positives and the
negatives ``RandomLinkSplit`` drew, computed in torch (ranks, ties
averaged); the test AUC at the epoch of best validation AUC.

The two loaders differ in ``make_loaders`` only, by the import and the
graph argument::

    from streamsampler.pyg import LinkNeighborLoader       # --loader streamsampler
    graph = streamsampler.from_pyg(train_data, DIR).path
    from reference_link_loader import LinkNeighborLoader   # --loader reference
    graph = train_data

``reference_link_loader`` is PyG's LinkNeighborLoader semantics in plain
torch (PyG's own needs pyg-lib or torch-sparse). The message-passing
graph is ``RandomLinkSplit``'s: ``train_data.edge_index`` for training and
validation, ``test_data.edge_index`` (training and validation edges) for
the test, so the streamsampler run imports two graph directories.

    python3 python/examples/pyg_link.py --root testdata --loader reference --seed 0
    python3 python/examples/pyg_link.py --root testdata --loader streamsampler --seed 0 \\
        --binary bin/streamsampler --chunkify bin/chunkify

prints one JSON object (test_auc, val_auc, best_epoch, seconds, ...) as
its last line; bench/link_accuracy.py runs it for 3 seeds and both loaders.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import streamsampler  # noqa: E402
from streamsampler import datasets  # noqa: E402

CONFIG = dict(fanouts=[10, 10], batch_size=256, hidden=128, out=64, lr=0.01, epochs=30, num_val=0.1, num_test=0.1)


def pyg_data(name, root):
    """The dataset as a PyG user has it: both directions of every edge,
    row-normalized x (PyG's NormalizeFeatures), y."""
    from torch_geometric.data import Data

    ds = datasets.load(name, root=root)
    e = torch.from_numpy(ds.edges.T.copy())
    x = torch.from_numpy(ds.x.astype(np.float32))
    x = x / x.sum(1, keepdim=True).clamp(min=1)
    return Data(x=x, edge_index=torch.cat([e, e.flip(0)], 1), y=torch.from_numpy(ds.y), num_nodes=ds.num_nodes)


def split(data, cfg):
    """PyG's RandomLinkSplit, as its link-prediction example uses it."""
    from torch_geometric.transforms import RandomLinkSplit

    t = RandomLinkSplit(num_val=cfg["num_val"], num_test=cfg["num_test"], is_undirected=True,
                        add_negative_train_samples=False)
    return t(data)


class Encoder(torch.nn.Module):
    def __init__(self, in_dim, hidden, out):
        super().__init__()
        from torch_geometric.nn import SAGEConv

        self.conv1 = SAGEConv(in_dim, hidden)
        self.conv2 = SAGEConv(hidden, out)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def decode(z, edge_label_index):
    return (z[edge_label_index[0]] * z[edge_label_index[1]]).sum(-1)


def auc(scores, labels):
    """ROC AUC in torch: the Mann-Whitney statistic, P(score of a positive
    > score of a negative) with ties counted half, from average ranks."""
    scores, labels = scores.double().cpu(), labels.cpu() > 0
    n_pos = int(labels.sum())
    n_neg = labels.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("auc: needs positives and negatives (%d, %d)" % (n_pos, n_neg))
    order = torch.argsort(scores)
    s = scores[order]
    _, inverse, counts = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    end = torch.cumsum(counts, 0).double()  # 1-based rank of each tie group's last member
    avg = end - (counts.double() - 1) / 2
    ranks = torch.empty_like(scores)
    ranks[order] = avg[inverse]
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def make_loaders(which, train_data, val_data, test_data, graphs, cfg):
    """The script's loaders: the only lines that differ between the two."""
    kw = dict(num_neighbors=cfg["fanouts"], batch_size=cfg["batch_size"])
    if which == "streamsampler":
        from streamsampler.pyg import LinkNeighborLoader
        g_train, g_val, g_test = graphs["train"], graphs["train"], graphs["test"]
    else:
        from reference_link_loader import LinkNeighborLoader
        g_train, g_val, g_test = train_data, val_data, test_data
        if which == "reference-per-epoch":  # a diagnostic: the reference with streamsampler's one sample per epoch
            kw["per_epoch_samples"] = True
    train = LinkNeighborLoader(g_train, edge_label_index=train_data.edge_label_index,
                               edge_label=train_data.edge_label, neg_sampling="binary", shuffle=True, **kw)
    val = LinkNeighborLoader(g_val, edge_label_index=val_data.edge_label_index, edge_label=val_data.edge_label, **kw)
    test = LinkNeighborLoader(g_test, edge_label_index=test_data.edge_label_index, edge_label=test_data.edge_label,
                              **kw)
    return train, val, test


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    scores, labels = [], []
    for batch in loader:
        batch = batch.to(device)
        z = model(batch.x, batch.edge_index)
        scores.append(decode(z, batch.edge_label_index).sigmoid())
        labels.append(batch.edge_label)
    return auc(torch.cat(scores), torch.cat(labels))


def run(which, data, seed, device, cfg, tmp, chunkify=None):
    torch.manual_seed(seed)
    np.random.seed(seed)
    train_data, val_data, test_data = split(data, cfg)
    graphs = {}
    if which == "streamsampler":
        # Once per split: the message-passing graphs (the supervision edges
        # are passed to the loaders as tensors, as to PyG's).
        graphs["train"] = streamsampler.from_pyg(train_data, os.path.join(tmp, "train-%d" % seed),
                                                 chunkify=chunkify).path
        graphs["test"] = streamsampler.from_pyg(test_data, os.path.join(tmp, "test-%d" % seed), chunkify=chunkify).path
    train_loader, val_loader, test_loader = make_loaders(which, train_data, val_data, test_data, graphs, cfg)
    model = Encoder(data.num_features, cfg["hidden"], cfg["out"]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    best_val, best_test, best_epoch, t0 = -1.0, 0.0, -1, time.time()
    losses = []
    for epoch in range(cfg["epochs"]):
        model.train()
        total = n = 0
        for batch in train_loader:
            batch = batch.to(device)
            opt.zero_grad()
            z = model(batch.x, batch.edge_index)
            out = decode(z, batch.edge_label_index)
            loss = F.binary_cross_entropy_with_logits(out, batch.edge_label.float())
            loss.backward()
            opt.step()
            total += float(loss) * out.numel()
            n += out.numel()
        losses.append(total / max(1, n))
        val = evaluate(model, val_loader, device)
        if val > best_val:
            best_val, best_test, best_epoch = val, evaluate(model, test_loader, device), epoch
    seconds = time.time() - t0
    for lo in (train_loader, val_loader, test_loader):
        if hasattr(lo, "close"):
            lo.close()
    return dict(loader=which, seed=seed, val_auc=best_val, test_auc=best_test, best_epoch=best_epoch,
                seconds=seconds, final_loss=losses[-1] if losses else None,
                train_edges=int(train_data.edge_label_index.size(1)), val_edges=int(val_data.edge_label_index.size(1)),
                test_edges=int(test_data.edge_label_index.size(1)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="raw datasets (a checkout's testdata/)")
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--loader", choices=("streamsampler", "reference", "reference-per-epoch"), default="streamsampler",
                    help="reference-per-epoch: the reference with one sample per node per epoch and hop (a diagnostic)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=CONFIG["epochs"])
    ap.add_argument("--device", default=None, help="default: cuda where available, else cpu")
    ap.add_argument("--binary", default=None, help="streamsampler executable ($STREAMSAMPLER_BIN)")
    ap.add_argument("--chunkify", default=None, help="chunkify executable ($STREAMSAMPLER_CHUNKIFY)")
    ap.add_argument("--stand-in-pyg", action="store_true",
                    help="without torch_geometric: python/tests' plain-torch SAGEConv, Data and RandomLinkSplit "
                         "stand-ins (not PyG's split: figures are indicative only)")
    args = ap.parse_args(argv)
    if args.stand_in_pyg:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE)))
        from tests.test_link_example import fake_modules
        sys.modules.update(fake_modules())
    if args.binary:
        os.environ["STREAMSAMPLER_BIN"] = os.path.abspath(args.binary)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cfg = dict(CONFIG, epochs=args.epochs)
    data = pyg_data(args.dataset, args.root)
    with tempfile.TemporaryDirectory() as tmp:
        res = run(args.loader, data, args.seed, device, cfg, tmp, chunkify=args.chunkify)
    res.update(dataset=args.dataset, epochs=cfg["epochs"], config=cfg,
               device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu")
    print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
