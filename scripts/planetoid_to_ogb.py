#!/usr/bin/env python3
"""Convert a Planetoid dataset (kimiyoung/planetoid's ind.NAME.* pickles)
to OGB's raw layout, with the Python standard library only (no numpy or
scipy): NAME.node-feat.csv.gz (one comma-separated row of features per
node), NAME.node-label.csv (one class per line) and NAME.edges.txt.gz (one
"u v" line per adjacency entry of ind.NAME.graph, duplicates kept).

Rows follow the standard Planetoid processing (PyG's and Kipf's): features
and labels are allx/ally followed by tx/ty, and the test rows are placed
at the ids listed in ind.NAME.test.index. Only Cora is supported (CiteSeer
has test ids without features).

    python3 scripts/planetoid_to_ogb.py testdata/planetoid cora testdata/planetoid

The Go tests (ingest/realdata_features_test.go) read the result.
"""

import gzip
import os
import pickle
import sys


class _Array:
    """numpy.ndarray, rebuilt from its pickled state."""

    def __init__(self, *args):
        pass

    def __setstate__(self, state):
        _, shape, dtype, fortran, raw = state
        if fortran:
            raise ValueError("Fortran-order array")
        self.shape = tuple(shape)
        self.dtype = dtype
        self.raw = raw if isinstance(raw, bytes) else raw.encode("latin1")

    def values(self):
        code = {"f4": "f", "f8": "d", "i4": "i", "i8": "q"}[self.dtype.code]
        import array

        a = array.array(code)
        a.frombytes(self.raw)
        if self.dtype.order == ">":
            a.byteswap()
        return list(a)


class _DType:
    """numpy.dtype, rebuilt from its pickled state."""

    def __init__(self, code, *args):
        self.code = code
        self.order = "<"

    def __setstate__(self, state):
        self.order = state[1] if state[1] in "<>" else "<"


class _CSR:
    """scipy.sparse.csr_matrix: its __dict__ holds data, indices, indptr, _shape."""


def _reconstruct(cls, shape, dtype):
    return _Array()


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        table = {
            ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
            ("numpy", "ndarray"): _Array,
            ("numpy", "dtype"): _DType,
            ("scipy.sparse.csr", "csr_matrix"): _CSR,
        }
        if (module, name) in table:
            return table[(module, name)]
        if module in ("collections", "builtins", "__builtin__") and name in ("defaultdict", "list"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError("unexpected global %s.%s" % (module, name))


def _load(root, name, part):
    with open(os.path.join(root, "ind.%s.%s" % (name, part)), "rb") as f:
        return _Unpickler(f, encoding="latin1").load()


def _dense_rows(csr):
    n, d = csr._shape
    data, ind, ptr = csr.data.values(), csr.indices.values(), csr.indptr.values()
    rows = []
    for r in range(n):
        row = [0.0] * d
        for k in range(ptr[r], ptr[r + 1]):
            row[ind[k]] = data[k]
        rows.append(row)
    return rows, d


def _classes(onehot):
    n, k = onehot.shape
    v = onehot.values()
    out = []
    for r in range(n):
        hot = [j for j in range(k) if v[r * k + j]]
        out.append(hot[0] if hot else -1)
    return out


def main(root, name, out):
    allx, ax_d = _dense_rows(_load(root, name, "allx"))
    tx, tx_d = _dense_rows(_load(root, name, "tx"))
    ally, ty = _classes(_load(root, name, "ally")), _classes(_load(root, name, "ty"))
    graph = _load(root, name, "graph")
    with open(os.path.join(root, "ind.%s.test.index" % name)) as f:
        test = [int(line) for line in f if line.strip()]
    n = len(allx) + len(tx)
    if ax_d != tx_d or n != len(graph) or sorted(test) != list(range(min(test), min(test) + len(tx))):
        raise SystemExit("%s: unexpected layout (only Cora is supported)" % name)
    feats, labels = allx + tx, ally + ty
    # tx[i] belongs to node test[i]; sorted(test) are the rows after allx.
    lo = len(allx)
    fx, fy = list(feats), list(labels)
    for i, node in enumerate(test):
        fx[node], fy[node] = feats[lo + i], labels[lo + i]
    fmt = lambda v: "1" if v == 1.0 else ("0" if v == 0.0 else repr(v))
    with gzip.GzipFile(os.path.join(out, "%s.node-feat.csv.gz" % name), "wb", mtime=0) as f:
        for row in fx:
            f.write((",".join(fmt(v) for v in row) + "\n").encode())
    with open(os.path.join(out, "%s.node-label.csv" % name), "w") as f:
        for y in fy:
            f.write("%d\n" % y)
    with gzip.GzipFile(os.path.join(out, "%s.edges.txt.gz" % name), "wb", mtime=0) as f:
        for u in sorted(graph):
            for v in graph[u]:
                f.write(("%d %d\n" % (u, v)).encode())


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
