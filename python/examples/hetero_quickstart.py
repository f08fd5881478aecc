"""Heterogeneous graphs end to end on bundled data (issue 27's "Done
when"): build a graph from typed edge lists, serve it, iterate PyG
``HeteroData`` minibatches.

1. ``chunkify build --node-types … --relation SRC,REL,DST=FILE …
   --node-features T=FILE … --add-reverse``: testdata/hetero-mini's raw
   relations (company, government, politician, tvshow pages and their
   mutual likes; one edge list per relation) and the per-type features;
2. ``streamsampler.pyg.NeighborLoader(graph, num_neighbors={...},
   input_nodes=("company", ids), shuffle=True)``, which starts one
   ``streamsampler serve`` for the graph;
3. one epoch of minibatches, printing each one's nodes and edges per type.

Without torch_geometric the loader's ``HeteroData`` cannot be built: the
script says so and iterates the raw minibatches
(:class:`streamsampler.hetero.HeteroBatch`, the same arrays) instead.

    python3 python/examples/hetero_quickstart.py [--out DIR] [--chunkify bin/chunkify] [--binary bin/streamsampler]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

from streamsampler.executables import find_chunkify  # noqa: E402
from streamsampler.loader.hetero_loader import HeteroGraph, HeteroNodeLoader, relation_fanouts  # noqa: E402

RAW = os.path.join(REPO, "testdata", "hetero-mini", "raw")


def build(out, chunkify=None):
    """chunkify build from typed edge lists: one --relation per raw
    relation, the node types' counts, each type's features."""
    raw_rel = os.path.join(RAW, "relations")
    cmd = [find_chunkify(chunkify), "build", "-o", out, "--force", "--add-reverse", "--chunk-size", "64KiB", "-q",
           "--node-types", os.path.join(RAW, "num-node-dict.csv.gz")]
    for name in sorted(os.listdir(raw_rel)):
        cmd += ["--relation", "%s=%s" % (name.replace("___", ","), os.path.join(raw_rel, name, "edge.csv.gz"))]
    for t in sorted(os.listdir(os.path.join(RAW, "node-feat"))):
        cmd += ["--node-features", "%s=%s" % (t, os.path.join(RAW, "node-feat", t, "node-feat.csv.gz"))]
    print("$ " + " ".join(cmd).replace(REPO + os.sep, ""))
    subprocess.run(cmd, check=True)
    return out


def have_pyg():
    try:
        import torch_geometric.data  # noqa: F401
        return True
    except ImportError:
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="graph directory to write (default: a temporary one)")
    ap.add_argument("--chunkify", default=None, help="chunkify executable ($STREAMSAMPLER_CHUNKIFY)")
    ap.add_argument("--binary", default=None, help="streamsampler executable ($STREAMSAMPLER_BIN)")
    ap.add_argument("--raw", action="store_true", help="iterate the raw HeteroBatches even with torch_geometric")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        graph = build(args.out or os.path.join(tmp, "hetero-mini"), args.chunkify)
        info = HeteroGraph(graph)
        print("graph %s: node types %s; %d relations" % (
            graph, ", ".join("%s=%d" % (t, info.counts[t]) for t in info.node_types), len(info.edge_types)))
        # PyG's num_neighbors dict: likes between companies sampled less.
        num_neighbors = {et: [5, 3] for et in info.edge_types}
        num_neighbors[("company", "likes", "company")] = [2, 1]
        train = np.arange(0, info.counts["company"], 10)
        kw = dict(batch_size=128, shuffle=True, seed=0, binary=args.binary)
        pyg = have_pyg() and not args.raw
        if pyg:
            from streamsampler.pyg import NeighborLoader
            loader = NeighborLoader(graph, num_neighbors=num_neighbors, input_nodes=("company", train), **kw)
        else:
            print("torch_geometric is not installed: iterating the raw HeteroBatches (the arrays a HeteroData "
                  "minibatch is made of) instead")
            loader = HeteroNodeLoader(graph, relation_fanouts(num_neighbors, info.edge_types), 128, "company", train,
                                      True, False, "pyg", None, seed=0, binary=args.binary)
        seeds = 0
        with loader:
            print("%d minibatches of %d seeds (company)" % (len(loader), kw["batch_size"]))
            for i, b in enumerate(loader):
                if pyg:
                    nodes = {t: int(b[t].num_nodes) for t in b.node_types}
                    edges = {et[1] + ":" + et[0] + ">" + et[2]: int(b[et].edge_index.size(1)) for et in b.edge_types}
                    bs = int(b["company"].batch_size)
                    has_x = [t for t in b.node_types if "x" in b[t].keys()]
                else:
                    nodes = {t: len(n.n_id) for t, n in b.nodes.items()}
                    edges = {et[1] + ":" + et[0] + ">" + et[2]: int(e.edge_index.shape[1]) for et, e in b.edges.items()}
                    bs = b.nodes["company"].batch_size
                    has_x = sorted(b.x)
                seeds += bs
                if i < 3 or i == len(loader) - 1:
                    print("minibatch %d: %d seeds; nodes %s; %d edges over %d relations; x of %s" % (
                        i, bs, nodes, sum(edges.values()), sum(1 for v in edges.values() if v), ", ".join(has_x)))
        print("one epoch: %d seed companies, each once (%s)" % (seeds, "HeteroData" if pyg else "HeteroBatch"))
        if seeds != len(train):
            raise SystemExit("expected %d seeds, got %d" % (len(train), seeds))


if __name__ == "__main__":
    main()
