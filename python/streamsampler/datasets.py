"""Labelled graphs for training and accuracy checks.

``load_planetoid("cora" | "citeseer")`` reads the Planetoid pickles
(kimiyoung/planetoid's ind.NAME.* files) with the standard split, exactly
as PyG's ``Planetoid`` does; ``load_musae_facebook()`` reads SNAP's
musae-facebook (facebook-large-page-page) text files with a seeded
60/20/20 split. ``prepare(dataset, out)`` writes what ``streamsampler
serve`` and a trainer need: a graph directory (``chunkify build
--symmetrize``) with the features and labels packed into its feature store
(``chunkify features``; ``serve --features`` delivers them, and
:mod:`streamsampler.featstore` reads them), train/val/test id files, and
the store's inputs features.npy and labels.npy.

    python -m streamsampler.datasets cora out/cora --root testdata

The raw files are read from ``root`` (the ``--root`` option), else from
``$STREAMSAMPLER_DATASETS``; there is no built-in default. A checkout
bundles all three under ``testdata/`` (``--root testdata``): Cora as is,
CiteSeer and musae-facebook gzip-compressed (a raw file ``NAME`` may be
``NAME.gz``).

Needs numpy; the Planetoid pickles also need scipy (they hold scipy
sparse matrices).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import numpy.typing as npt

from .executables import find_chunkify as find_chunkify  # re-exported: it was defined here
from .typing import NodeIds, PathArg

#: The environment variable naming the raw dataset directory when no
#: ``root`` is given.
ROOT_ENV = "STREAMSAMPLER_DATASETS"


def dataset_root(root: Optional[PathArg] = None) -> str:
    """The raw dataset directory: ``root``, else $STREAMSAMPLER_DATASETS.
    Raises ValueError when neither is given and FileNotFoundError when the
    directory does not exist (the message names where it came from)."""
    if root is not None and os.fspath(root) != "":
        base, source = os.fspath(root), "root="
    elif os.environ.get(ROOT_ENV):
        base, source = os.environ[ROOT_ENV], "$" + ROOT_ENV
    else:
        raise ValueError("no dataset directory: pass root= (--root on the command line) or set $%s "
                         "to the folder holding planetoid/ and musae-facebook/ (a checkout's testdata/ "
                         "holds all three)" % ROOT_ENV)
    if not os.path.isdir(base):
        raise FileNotFoundError("dataset directory %r (from %s) does not exist" % (base, source))
    return base


def _root(root: Optional[PathArg], sub: str) -> str:
    """``sub`` of the dataset directory when it exists, else the directory
    itself (the raw files laid out flat)."""
    base = dataset_root(root)
    cand = os.path.join(base, sub)
    return cand if os.path.isdir(cand) else base


class Dataset:
    """A labelled graph. ``edges`` is [E, 2] int64, each undirected edge
    once with u < v, no self-loops; ``x`` [N, F] float32; ``y`` [N]
    int64; ``train``/``val``/``test`` sorted int64 node ids."""

    def __init__(self, name: str, num_nodes: int, edges: npt.NDArray[np.int64], x: npt.NDArray[np.float32],
                 y: npt.NDArray[np.int64], train: npt.NDArray[np.int64], val: npt.NDArray[np.int64],
                 test: npt.NDArray[np.int64], num_classes: int,
                 notes: str = "") -> None:
        self.name = name
        self.num_nodes = int(num_nodes)
        self.edges = edges
        self.x = x
        self.y = y
        self.train = train
        self.val = val
        self.test = test
        self.num_classes = int(num_classes)
        self.notes = notes

    @property
    def num_directed_edges(self) -> int:
        """Edges as a symmetrized graph stores them (both directions)."""
        return 2 * len(self.edges)

    def __repr__(self) -> str:
        return "Dataset(%s: %d nodes, %d undirected edges, %d features, %d classes, train/val/test %d/%d/%d)" % (
            self.name, self.num_nodes, len(self.edges), self.x.shape[1], self.num_classes,
            len(self.train), len(self.val), len(self.test))


def undirected_unique(u: NodeIds, v: NodeIds, num_nodes: int) -> npt.NDArray[np.int64]:
    """Each undirected edge once as (min, max), self-loops dropped, sorted."""
    u = np.asarray(u, np.int64)
    v = np.asarray(v, np.int64)
    keep = u != v
    a, b = np.minimum(u[keep], v[keep]), np.maximum(u[keep], v[keep])
    if len(a) and (a.min() < 0 or b.max() >= num_nodes):
        raise ValueError("edge endpoint outside 0..%d" % (num_nodes - 1))
    key = np.unique(a * num_nodes + b)
    return np.stack([key // num_nodes, key % num_nodes], 1)


# -- Planetoid ---------------------------------------------------------------

def _open_raw(path: str, mode: str = "rb", **kw: Any) -> Any:
    """Open a raw dataset file, or its gzip-compressed copy ``path.gz``
    when ``path`` is absent (the checkout bundles CiteSeer and
    musae-facebook compressed, testdata/README.md)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", mode if "b" in mode else mode.replace("t", "") + "t", **kw)
    return open(path, mode, **kw)


def _load_pickle(path: str) -> Any:
    with _open_raw(path, "rb") as f, warnings.catch_warnings():
        # Python-2 pickles of numpy arrays and scipy matrices; they name
        # scipy.sparse.csr, which newer scipy deprecates.
        warnings.simplefilter("ignore", DeprecationWarning)
        return pickle.load(f, encoding="latin1")


def _dense(m: Any) -> npt.NDArray[np.float32]:
    return np.asarray(m.todense() if hasattr(m, "todense") else m, dtype=np.float32)


def load_planetoid(name: str, root: Optional[PathArg] = None) -> Dataset:
    """Cora or CiteSeer with the Planetoid split, as PyG builds it:
    features ``allx`` then ``tx`` reordered so that test rows sit at their
    test.index ids; train = the first len(y) nodes (20 per class), val =
    the next 500, test = the sorted test.index (1000 nodes). CiteSeer's
    test.index skips 15 ids in its range (isolated nodes without
    features): as PyG does, they get zero features, label 0 and belong to
    no split."""
    name = name.lower()
    d = _root(root, "planetoid")
    obj = {}
    for part in ("x", "y", "tx", "ty", "allx", "ally", "graph"):
        obj[part] = _load_pickle(os.path.join(d, "ind.%s.%s" % (name, part)))
    with _open_raw(os.path.join(d, "ind.%s.test.index" % name), "r") as f:
        test_index = np.array([int(line) for line in f if line.strip()], dtype=np.int64)
    x, tx, allx = _dense(obj["x"]), _dense(obj["tx"]), _dense(obj["allx"])
    y, ty, ally = (np.asarray(obj[k]) for k in ("y", "ty", "ally"))
    sorted_test = np.sort(test_index)
    notes = ""
    if name == "citeseer":
        # Isolated test nodes: widen tx/ty to the whole test id range.
        lo, n_range = sorted_test[0], sorted_test[-1] - sorted_test[0] + 1
        tx_ext = np.zeros((n_range, tx.shape[1]), np.float32)
        tx_ext[sorted_test - lo] = tx
        ty_ext = np.zeros((n_range, ty.shape[1]), ty.dtype)
        ty_ext[sorted_test - lo] = ty
        tx, ty = tx_ext, ty_ext
        notes = "%d isolated test-range ids without features (zero features, label 0, in no split)" % (
            n_range - len(test_index))
    feats = np.concatenate([allx, tx])
    labels = np.concatenate([ally, ty]).argmax(1).astype(np.int64)
    feats[test_index] = feats[sorted_test]
    labels[test_index] = labels[sorted_test]
    num_nodes = len(labels)
    graph = obj["graph"]
    u, v = [], []
    for k, nbrs in graph.items():
        u.extend([k] * len(nbrs))
        v.extend(nbrs)
    num_nodes = max(num_nodes, max(graph.keys()) + 1)
    if num_nodes > len(labels):
        raise ValueError("%s: graph has %d nodes, features only %d" % (name, num_nodes, len(labels)))
    edges = undirected_unique(u, v, num_nodes)
    train = np.arange(len(y), dtype=np.int64)
    val = np.arange(len(y), len(y) + 500, dtype=np.int64)
    return Dataset(name, num_nodes, edges, feats, labels, train, val, sorted_test,
                   int(labels.max()) + 1, notes)


# -- musae-facebook ----------------------------------------------------------

def load_musae_facebook(root: Optional[PathArg] = None, seed: int = 0,
                        feature_dim: Optional[int] = 128) -> Dataset:
    """SNAP's musae-facebook page-page graph (22,470 pages, 4 page types).

    Node features are sparse bags of feature ids (facebook_features.json);
    ``feature_dim`` None keeps them as a dense 0/1 matrix (N × 4714, 420
    MB as float32), an integer projects them with a seeded Gaussian random
    projection to that many dimensions (the default, 128, as the
    dataset's preprocessed release in PyG has). Labels are the page types
    in sorted order. The split is a seeded permutation: 60% train, 20%
    val, 20% test."""
    d = _root(root, "musae-facebook")
    with _open_raw(os.path.join(d, "facebook_target.csv"), "r", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ids = np.array([int(r["id"]) for r in rows], np.int64)
    num_nodes = len(rows)
    if not np.array_equal(np.sort(ids), np.arange(num_nodes)):
        raise ValueError("facebook_target.csv: ids are not 0..%d" % (num_nodes - 1))
    classes = sorted({r["page_type"] for r in rows})
    y = np.empty(num_nodes, np.int64)
    y[ids] = [classes.index(r["page_type"]) for r in rows]

    with _open_raw(os.path.join(d, "facebook_edges.csv"), "r", newline="") as f:
        header = f.readline().strip()
        if header != "id_1,id_2":
            raise ValueError("facebook_edges.csv: header %r, want 'id_1,id_2'" % header)
        e = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    edges = undirected_unique(e[:, 0], e[:, 1], num_nodes)

    with _open_raw(os.path.join(d, "facebook_features.json"), "r") as f:
        feats = json.load(f)
    indptr = np.zeros(num_nodes + 1, np.int64)
    given: List[Optional[npt.NDArray[np.int64]]] = [None] * num_nodes
    for k, vals in feats.items():
        given[int(k)] = np.unique(np.asarray(vals, np.int64))
    lists = [a if a is not None else np.empty(0, np.int64) for a in given]
    indptr[1:] = np.cumsum([len(a) for a in lists])
    indices = np.concatenate(lists)
    nfeat = int(indices.max()) + 1
    rowidx = np.repeat(np.arange(num_nodes), np.diff(indptr))
    if feature_dim is None:
        x = np.zeros((num_nodes, nfeat), np.float32)
        x[rowidx, indices] = 1
    else:
        proj = np.random.default_rng(seed + 1).standard_normal((nfeat, feature_dim)).astype(np.float32)
        x = np.zeros((num_nodes, feature_dim), np.float32)
        np.add.at(x, rowidx, proj[indices])
        x /= np.sqrt(np.maximum(np.diff(indptr), 1))[:, None].astype(np.float32)

    perm = np.random.default_rng(seed).permutation(num_nodes)
    n_train, n_val = int(0.6 * num_nodes), int(0.2 * num_nodes)
    train = np.sort(perm[:n_train])
    val = np.sort(perm[n_train:n_train + n_val])
    test = np.sort(perm[n_train + n_val:])
    return Dataset("musae-facebook", num_nodes, edges, x, y, train, val, test, len(classes),
                   "classes %s; features: %s" % (classes, "dense 0/1" if feature_dim is None else
                                                 "%d-dim seeded random projection of %d sparse features" % (feature_dim, nfeat)))


LOADERS: Dict[str, Callable[..., Dataset]] = {
    "cora": lambda root=None, **kw: load_planetoid("cora", root),
    "citeseer": lambda root=None, **kw: load_planetoid("citeseer", root),
    "musae-facebook": load_musae_facebook,
}


def load(name: str, root: Optional[PathArg] = None, **kw: Any) -> Dataset:
    """Load a dataset by name: cora, citeseer, musae-facebook."""
    try:
        f = LOADERS[name.lower()]
    except KeyError:
        raise ValueError("unknown dataset %r (have %s)" % (name, ", ".join(sorted(LOADERS)))) from None
    return f(root=root, **kw)


# -- preparing a graph directory ---------------------------------------------

def write_ids(path: PathArg, ids: NodeIds) -> None:
    """Node ids, one per line (what --train reads)."""
    np.savetxt(path, np.asarray(ids, np.int64).reshape(-1), fmt="%d")


def prepare(ds: Dataset, out: PathArg, chunkify: Optional[PathArg] = None,
            build_graph: bool = True, pack_features: bool = True) -> Dict[str, str]:
    """Write ``ds`` under ``out``: edges.txt (each undirected edge once),
    graph/ (``chunkify build edges.txt -o graph --symmetrize --num-nodes N``),
    train.txt/val.txt/test.txt, features.npy, labels.npy and meta.json;
    with ``pack_features`` (and a graph) also the graph's feature store
    (``chunkify features features.npy -o graph --labels labels.npy``:
    graph/features.json and its data files, what ``serve --features``
    delivers and :mod:`streamsampler.featstore` reads). Returns a dict of
    the paths (``store``: the store's manifest, when packed). The graph's
    manifest is checked to hold both directions of every edge."""
    os.makedirs(out, exist_ok=True)
    paths = {k: os.path.join(out, f) for k, f in (
        ("edges", "edges.txt"), ("graph", "graph"), ("train", "train.txt"), ("val", "val.txt"),
        ("test", "test.txt"), ("features", "features.npy"), ("labels", "labels.npy"), ("meta", "meta.json"))}
    edges = ds.edges
    np.savetxt(paths["edges"], edges, fmt="%d")
    for split in ("train", "val", "test"):
        write_ids(paths[split], getattr(ds, split))
    np.save(paths["features"], ds.x.astype(np.float32))
    np.save(paths["labels"], ds.y.astype(np.int64))
    meta = {"name": ds.name, "num_nodes": ds.num_nodes, "undirected_edges": len(edges),
            "num_features": int(ds.x.shape[1]), "num_classes": ds.num_classes,
            "train": len(ds.train), "val": len(ds.val), "test": len(ds.test), "notes": ds.notes}
    if build_graph:
        if os.path.exists(paths["graph"]):
            shutil.rmtree(paths["graph"])
        # --num-nodes keeps isolated nodes above the largest endpoint.
        cmd = [find_chunkify(chunkify), "build", paths["edges"], "-o", paths["graph"], "--symmetrize",
               "--num-nodes", str(ds.num_nodes)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(paths["graph"], "manifest.json")) as f:
            m = json.load(f)
        if (m["num_nodes"], m["num_edges"]) != (ds.num_nodes, ds.num_directed_edges):
            raise RuntimeError("%s: graph has %d nodes / %d edges, want %d / %d" % (
                paths["graph"], m["num_nodes"], m["num_edges"], ds.num_nodes, ds.num_directed_edges))
        if pack_features:
            # The store takes the exact float32 matrix and int64 labels
            # written above (labels are stored as int32).
            cmd = [find_chunkify(chunkify), "features", paths["features"], "-o", paths["graph"],
                   "--labels", paths["labels"], "-q"]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            paths["store"] = os.path.join(paths["graph"], "features.json")
    with open(paths["meta"], "w") as f:
        json.dump(meta, f, indent=1)
    return paths


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m streamsampler.datasets NAME OUT [--root DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m streamsampler.datasets", description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(LOADERS))
    ap.add_argument("out")
    ap.add_argument("--root", help="raw dataset directory (default $%s; a checkout's testdata/ holds all three)"
                    % ROOT_ENV)
    ap.add_argument("--chunkify", help="chunkify binary")
    ap.add_argument("--seed", type=int, default=0, help="musae-facebook split and projection seed")
    a = ap.parse_args(argv)
    kw = {"seed": a.seed} if a.name == "musae-facebook" else {}
    try:
        root = dataset_root(a.root)
    except (ValueError, OSError) as e:
        ap.error(str(e))
    ds = load(a.name, root, **kw)
    paths = prepare(ds, a.out, a.chunkify)
    print(ds)
    print(json.dumps(paths, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
