"""Node2Vec embeddings of Cora from streamsampler's walks against the same
model trained on walks from a plain-torch reference walker (issue 14's
proof; docs/ACCURACY.md).

PyG's examples/node2vec.py, with the model made two ways:

* ``ours``: ``streamsampler.pyg.Node2Vec("graph/", ...)``: PyG's Node2Vec
  (embedding, loss, loader, test) whose positive walks come from a
  streamsampler server (DESIGN §3 walks; no torch_cluster);
* ``reference``: the same class with ``pos_sample`` drawing uniform walks
  in plain torch (torch_geometric's own needs torch_cluster or pyg-lib,
  which the GPU machine lacks).

Everything else is PyG's example: embedding 128, walk length 20, context
10, 10 walks per node, 1 negative sample, p = q = 1, SparseAdam lr 0.01,
batch 128; test accuracy of a logistic regression on the embeddings
(train mask → test mask). Pass: the means over the seeds are within 2
points.

    python3 python/examples/node2vec_cora.py --root testdata --binary bin/streamsampler \\
        --chunkify bin/chunkify --seeds 0,1,2 --out node2vec.json
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import streamsampler  # noqa: E402
import streamsampler.pyg  # noqa: E402
from pyg_sage import pyg_data  # noqa: E402

HP = dict(embedding_dim=128, walk_length=20, context_size=10, walks_per_node=10, num_negative_samples=1,
          p=1.0, q=1.0, sparse=True)


def reference_model(data):
    """PyG's Node2Vec with uniform walks drawn in plain torch."""
    from torch_geometric.nn import Node2Vec as PyG

    class Reference(streamsampler.pyg.Node2Vec):
        def __init__(self, edge_index, num_nodes, **hp):
            torch.nn.Module.__init__(self)
            src, dst = edge_index
            order = torch.argsort(src * num_nodes + dst)
            self.col = dst[order]
            self.rowptr = torch.zeros(num_nodes + 1, dtype=torch.long)
            self.rowptr[1:] = torch.cumsum(torch.bincount(src, minlength=num_nodes), 0)
            self.num_nodes, self.EPS = num_nodes, 1e-15
            self.embedding_dim, self.walk_length = hp["embedding_dim"], hp["walk_length"] - 1
            self.context_size, self.walks_per_node = hp["context_size"], hp["walks_per_node"]
            self.p, self.q, self.num_negative_samples = hp["p"], hp["q"], hp["num_negative_samples"]
            self.embedding = torch.nn.Embedding(num_nodes, self.embedding_dim, sparse=hp["sparse"])
            self.reset_parameters()
            self._server = self._client = None

        def _walks(self, batch):
            cur = batch.repeat(self.walks_per_node)
            rw = [cur]
            for _ in range(self.walk_length):
                start = self.rowptr[cur]
                deg = self.rowptr[cur + 1] - start
                pick = start + (torch.rand(len(cur)) * deg).long()
                cur = torch.where(deg > 0, self.col[pick.clamp(max=len(self.col) - 1)], cur)
                rw.append(cur)
            return torch.stack(rw, 1)

    assert issubclass(Reference, PyG)
    return Reference(data.edge_index, data.num_nodes, **HP)


def logistic_accuracy(model, z, data):
    """Test accuracy of a logistic regression on the embeddings: PyG's
    model.test (scikit-learn) where installed, else the same model fitted
    with torch's LBFGS."""
    tr, te = data.train_mask, data.test_mask
    try:
        return model.test(z[tr], data.y[tr], z[te], data.y[te], max_iter=150)
    except ImportError:
        pass
    x, y = z.detach().cpu(), data.y
    lin = torch.nn.Linear(x.size(1), int(y.max()) + 1)
    opt = torch.optim.LBFGS(lin.parameters(), max_iter=150)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(lin(x[tr]), y[tr]) + 1e-4 * lin.weight.pow(2).sum() / 2
        loss.backward()
        return loss

    opt.step(closure)
    return float((lin(x[te]).argmax(1) == y[te]).float().mean())


def run(which, data, graph, seed, epochs, device):
    torch.manual_seed(seed)
    np.random.seed(seed)
    model = (streamsampler.pyg.Node2Vec(graph, **HP) if which == "ours" else reference_model(data)).to(device)
    loader = model.loader(batch_size=128, shuffle=True, num_workers=0)
    opt = torch.optim.SparseAdam(list(model.parameters()), lr=0.01)
    t0 = time.time()
    for _ in range(epochs):
        model.train()
        for pos_rw, neg_rw in loader:
            opt.zero_grad()
            loss = model.loss(pos_rw.to(device), neg_rw.to(device))
            loss.backward()
            opt.step()
    secs = time.time() - t0
    model.eval()
    with torch.no_grad():
        acc = logistic_accuracy(model, model(), data)
    if which == "ours":
        model.close()
    return dict(test=acc, seconds=secs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--walkers", default="reference,ours")
    ap.add_argument("--binary", default=None)
    ap.add_argument("--chunkify", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.binary:
        os.environ["STREAMSAMPLER_BIN"] = os.path.abspath(args.binary)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = pyg_data("cora", args.root)
    seeds = [int(s) for s in args.seeds.split(",")]
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        graph = streamsampler.from_pyg(data, os.path.join(tmp, "cora"), chunkify=args.chunkify).path
        for which in args.walkers.split(","):
            runs = [run(which, data, graph, s, args.epochs, device) for s in seeds]
            res[which] = dict(runs=runs, mean=100 * float(np.mean([r["test"] for r in runs])),
                              std=100 * float(np.std([r["test"] for r in runs])))
            print("%-9s test %.2f ± %.2f (%s), %.1f s per run" % (
                which, res[which]["mean"], res[which]["std"], ", ".join("%.1f" % (100 * r["test"]) for r in runs),
                np.mean([r["seconds"] for r in runs])), flush=True)
    ok = True
    if "ours" in res and "reference" in res:
        d = res["ours"]["mean"] - res["reference"]["mean"]
        ok = abs(d) <= 2
        print("ours - reference = %+.2f points: %s" % (d, "PASS" if ok else "FAIL"))
        res["diff"], res["pass"] = d, ok
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                           hyperparameters=HP, epochs=args.epochs, seeds=seeds, results=res), f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
