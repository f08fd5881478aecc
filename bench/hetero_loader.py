"""What the heterogeneous drop-ins cost per minibatch on top of the
server's heterogeneous minibatches (issue 27, item 3): the median epoch of
the raw HeteroBatches (``HeteroNodeLoader``, ``transform=None``) against
the same epochs as PyG ``HeteroData`` (``streamsampler.pyg.NeighborLoader``)
and as DGL heterograph blocks (``streamsampler.dgl.DataLoader``), on a
heterogeneous graph directory (default: testdata/hetero-mini built with
``--add-reverse``), every company a seed, fanouts [10, 5] on every
relation, 256 seeds per minibatch, the server with --features.

torch_geometric and dgl are used where installed; otherwise the stand-ins
of python/tests/fakes.py (``HeteroData``, ``dgl.create_block``) take their
place, and the figures are the loader's own conversion (arrays to tensors,
labels, masks, edge ids) without PyG's or DGL's object overhead: the
output says which.

    python3 bench/hetero_loader.py [--graph DIR] [--epochs 6] [--binary bin/streamsampler]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from unittest import mock

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

import streamsampler.dgl  # noqa: E402
import streamsampler.pyg  # noqa: E402
from streamsampler.executables import find_chunkify  # noqa: E402
from streamsampler.loader.hetero_loader import HeteroGraph, HeteroNodeLoader, relation_fanouts  # noqa: E402


def stand_ins():
    """sys.modules entries for what is not installed, and their names."""
    from tests import fakes
    mods, names = {}, []
    try:
        import torch_geometric.data  # noqa: F401
    except ImportError:
        mods.update(fakes.fake_pyg_hetero())
        names.append("torch_geometric")
    try:
        import dgl  # noqa: F401
    except ImportError:
        mods.update(fakes.fake_dgl_hetero())
        names.append("dgl")
    return mods, names


def median_epoch(loader, epochs):
    """The median wall of epochs 2.. (the first starts the server) and the
    minibatches per epoch."""
    walls, n = [], 0
    with loader:
        for _ in range(epochs):
            t = time.perf_counter()
            n = sum(1 for _ in loader)
            walls.append(time.perf_counter() - t)
    return statistics.median(walls[1:]), n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default=None, help="a heterogeneous graph directory (default: hetero-mini, built)")
    ap.add_argument("--type", default="company", help="the seeds' node type")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--binary", default=None, help="streamsampler executable ($STREAMSAMPLER_BIN)")
    ap.add_argument("--chunkify", default=None, help="chunkify executable ($STREAMSAMPLER_CHUNKIFY)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        g = args.graph
        if g is None:
            g = os.path.join(tmp, "het")
            subprocess.run([find_chunkify(args.chunkify), "build", "--ogb-raw",
                            os.path.join(REPO, "testdata", "hetero-mini"), "-o", g, "--add-reverse", "-q"], check=True)
        info = HeteroGraph(g)
        fan = relation_fanouts([10, 5], info.edge_types)
        n = info.counts[args.type]
        bs, t, b = args.batch_size, args.type, args.binary
        mods, faked = stand_ins()
        print("graph %s; seeds: every %s (%d), %d per minibatch; %s" % (
            g, t, n, bs, "stand-ins for " + " and ".join(faked) if faked else "torch_geometric and dgl installed"))
        runs = [
            ("raw HeteroBatch (pyg)", lambda: HeteroNodeLoader(g, fan, bs, t, None, True, False, "pyg", None, seed=1,
                                                               binary=b)),
            ("HeteroData (pyg.NeighborLoader)", lambda: streamsampler.pyg.NeighborLoader(
                g, [10, 5], input_nodes=t, batch_size=bs, shuffle=True, seed=1, binary=b)),
            ("raw HeteroBatch (dgl)", lambda: HeteroNodeLoader(g, fan, bs, t, None, True, False, "dgl", None, seed=1,
                                                               binary=b)),
            ("DGL blocks (dgl.DataLoader)", lambda: streamsampler.dgl.DataLoader(
                g, {t: np.arange(n)}, streamsampler.dgl.NeighborSampler([5, 10]), batch_size=bs, shuffle=True,
                seed=1, binary=b)),
        ]
        with mock.patch.dict(sys.modules, mods):
            for name, make in runs:
                med, k = median_epoch(make(), args.epochs)
                print("%-32s %3d minibatches/epoch, median epoch %.3f s (%.2f ms/minibatch)"
                      % (name, k, med, 1e3 * med / k), flush=True)


if __name__ == "__main__":
    main()
