#!/usr/bin/env python3
"""Derive testdata/cora-hetero (OGB's heterogeneous raw layout) from the
bundled Planetoid Cora (../planetoid), deterministically: a labelled
heterogeneous node-classification dataset for python/examples/pyg_hetero.py.

Node types: ``paper`` (Cora's 2708 papers, Planetoid's node order) and
``term`` (Cora's 1433 dictionary words, in column order). Relations:
``(paper, cites, paper)``, each undirected Cora citation once (u < v; PyG's
``ToUndirected`` or ``chunkify --add-reverse`` adds the other direction),
and ``(paper, has, term)``, one edge per nonzero of Cora's bag of words.
Features: a paper's 16 columns, the j-th the number of its words whose id
is ≡ j (mod 16) (a hashed bag of words, so that the words themselves reach
a paper only through ``has``); terms have none (the example gives each its
one-hot row, the usual input of a featureless type). Labels: the papers'
7 classes. The splits are
Planetoid's (140 train, 500 val, 1000 test), read from ../planetoid by
``streamsampler.datasets.load_planetoid``, not duplicated here.

Run from the repository root: PYTHONPATH=python python3 testdata/cora-hetero/make.py
Output is byte-identical on every run (gzip with mtime 0, no name).
"""
import gzip
import io
import os
import sys

import numpy as np

sys.path.insert(0, "python")
from streamsampler import datasets  # noqa: E402

OUT = "testdata/cora-hetero/raw"
DIM = 16


def write_gz(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(text.encode())
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def main():
    ds = datasets.load_planetoid("cora", root="testdata")
    n, words = ds.x.shape
    write_gz(f"{OUT}/num-node-dict.csv.gz", "paper,term\n%d,%d\n" % (n, words))
    write_gz(f"{OUT}/relations/paper___cites___paper/edge.csv.gz",
             "".join("%d,%d\n" % (u, v) for u, v in ds.edges.tolist()))
    p, w = np.nonzero(ds.x)  # row-major: by paper, then word
    write_gz(f"{OUT}/relations/paper___has___term/edge.csv.gz",
             "".join("%d,%d\n" % (a, b) for a, b in zip(p.tolist(), w.tolist())))
    hashed = np.zeros((n, DIM), np.int64)
    np.add.at(hashed, (p, w % DIM), 1)
    write_gz(f"{OUT}/node-feat/paper/node-feat.csv.gz",
             "".join(",".join(str(v) for v in row) + "\n" for row in hashed.tolist()))
    write_gz(f"{OUT}/node-label/paper/node-label.csv.gz", "".join("%d\n" % v for v in ds.y.tolist()))


if __name__ == "__main__":
    main()
