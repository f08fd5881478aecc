"""Read a graph directory's feature store (``chunkify features``) with numpy.

The store's format is docs/FORMAT.md's "The feature store (version 2)":
``features.json`` names a header-free row-major matrix file
(``features-G.bin``, [num_nodes, dim], one little-endian dtype) and an
optional int32 label file (``labels-G.bin``, -1 for none). Row ``u`` is
the ``row_bytes`` bytes at ``u * row_bytes``, so the matrix is a
``numpy.memmap`` with no copy: what a trainer needs for whole-graph work
(full-neighborhood inference) besides the rows ``serve --features``
delivers with every minibatch.

    store = FeatureStore("out/cora/graph")
    x = store.x           # memmap [num_nodes, dim]
    y = store.y           # int32 [num_nodes] (or None)

``FeatureStore`` checks what is cheap: the manifest's version and fields,
the data files' exact sizes, and that the store belongs to this graph
(features.json's ``graph`` fingerprint against manifest.json). The page
CRCs are checked by ``chunkify verify`` and by every read of the server.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Dict, List, Optional

import numpy as np
import numpy.typing as npt

from .typing import PathArg

#: numpy dtypes of the store's feature dtypes (little-endian).
DTYPES: Dict[str, np.dtype[Any]] = {"float32": np.dtype("<f4"), "float16": np.dtype("<f2"), "int8": np.dtype("i1"),
          "uint8": np.dtype("u1")}

#: The manifest file of a store in a graph directory.
MANIFEST = "features.json"


class StoreError(ValueError):
    """A feature store that is missing, malformed or does not match its
    graph; the message names the file and what was expected."""


def _crc32c_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


#: CRC-32C's byte table (reflected Castagnoli polynomial): ``crc32c``'s,
#: and the device table's row checks'.
CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, in pure Python (for the few bytes
    of a graph fingerprint)."""
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def graph_fingerprint(graph: PathArg) -> Dict[str, int]:
    """The fingerprint of a graph directory (chunkfmt.Fingerprint): its
    manifest.json's shape and the CRC-32C over its chunks' CRC-32C values,
    each as 4 little-endian bytes, in order."""
    path = os.path.join(os.fspath(graph), "manifest.json")
    with open(path) as f:
        m = json.load(f)
    crcs = b"".join(struct.pack("<I", c["crc32c"]) for c in m["chunks"])
    return {"num_nodes": m["num_nodes"], "num_edges": m["num_edges"], "chunk_size": m["chunk_size"],
            "chunks": len(m["chunks"]), "chunk_crcs": crc32c(crcs)}


class FeatureStore:
    """The feature store of graph directory ``graph``.

    ``x`` is a read-only ``numpy.memmap`` [num_nodes, dim] of the store's
    dtype; ``y`` the labels as an int32 array (-1: none), or None when the
    store has none; ``manifest`` the parsed features.json. Raises
    FileNotFoundError when the directory has no store and StoreError when
    it is malformed or packed for another graph.
    """

    def __init__(self, graph: PathArg) -> None:
        self.graph = os.fspath(graph)
        self.path = os.path.join(self.graph, MANIFEST)
        if not os.path.exists(self.path):
            raise FileNotFoundError("%s: no feature store (pack one with `chunkify features FEATURES -o %s`)"
                                    % (self.path, self.graph))
        with open(self.path) as f:
            try:
                m: Dict[str, Any] = json.load(f)
            except ValueError as e:
                raise StoreError("%s: not JSON: %s" % (self.path, e)) from None
        self.manifest = m
        if m.get("version") not in (1, 2):  # 2 adds page checksums; the data files' layout is the same
            raise StoreError("%s: version %r, want 1 or 2" % (self.path, m.get("version")))
        fp = graph_fingerprint(self.graph)
        if m.get("graph") != fp:
            raise StoreError("%s: packed for graph %r, but %s is %r (rebuilt or another graph: pack again)"
                             % (self.path, m.get("graph"), os.path.join(self.graph, "manifest.json"), fp))
        self.num_nodes = int(m["num_nodes"])
        feat = m["features"]
        if feat.get("dtype") not in DTYPES:
            raise StoreError("%s: features.dtype %r, want one of %s" % (self.path, feat.get("dtype"),
                                                                        ", ".join(DTYPES)))
        self.dtype = DTYPES[feat["dtype"]]
        self.dim = int(feat["dim"])
        if int(feat["row_bytes"]) != self.dim * self.dtype.itemsize:
            raise StoreError("%s: features.row_bytes %d, want dim %d × %d" % (
                self.path, feat["row_bytes"], self.dim, self.dtype.itemsize))
        fpath = self._data_file(feat, self.num_nodes * int(feat["row_bytes"]), "features")
        self.x: npt.NDArray[Any] = (np.memmap(fpath, dtype=self.dtype, mode="r", shape=(self.num_nodes, self.dim))
                              if self.num_nodes * self.dim else np.empty((self.num_nodes, self.dim), self.dtype))
        self.y: Optional[npt.NDArray[np.int32]] = None
        self.num_classes = 0
        if m.get("labels") is not None:
            lab = m["labels"]
            if lab.get("dtype") != "int32":
                raise StoreError("%s: labels.dtype %r, want int32" % (self.path, lab.get("dtype")))
            lpath = self._data_file(lab, 4 * self.num_nodes, "labels")
            self.y = np.fromfile(lpath, dtype="<i4").astype(np.int32, copy=False)
            self.num_classes = int(lab["num_classes"])

    def _data_file(self, d: Dict[str, Any], size: int, what: str) -> str:
        name = d.get("file", "")
        if not isinstance(name, str) or os.path.basename(name) != name or not name.startswith(what + "-"):
            raise StoreError("%s: %s.file %r, want a plain name like %s-1.bin" % (self.path, what, name, what))
        if int(d["size"]) != size:
            raise StoreError("%s: %s.size %d, want %d for its shape" % (self.path, what, d["size"], size))
        path = os.path.join(self.graph, name)
        got = os.path.getsize(path)
        if got != size:
            raise StoreError("%s: %d bytes, want %d (manifest %s): truncated or replaced" % (
                path, got, size, self.path))
        return path

    def __repr__(self) -> str:
        return "FeatureStore(%s: %d × %d %s, %s)" % (self.graph, self.num_nodes, self.dim, self.dtype.name,
                                                    "%d classes" % self.num_classes if self.y is not None
                                                    else "no labels")
