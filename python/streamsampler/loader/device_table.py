"""A graph's feature store held on the trainer's GPU, so that a minibatch
crosses the bus as node ids and edges, and its rows are gathered where
the model reads them (the loaders' ``device_features``).

Why: a minibatch of [15, 10] over 1024 seeds touches ~110 k nodes; with
64 float32 features its rows are 28 MB, ten times its ids and edges. The
server gathering them, the connection carrying them and the copy to the
device cost more than the model's step on an H100 (docs/PERFORMANCE.md,
"training end to end"). Where the store fits on the device, it is copied
there once — as DGL's ``use_uva``/GPU features and PyG's ``data.to(device)``
users already do — and each minibatch's ``x``, ``y`` and split masks are
``index_select``-ed on the device, on the loader's side stream.

Nothing is delivered unchecked: every row is checked against its CRC-32C
(the store's ``features-G.crc``, docs/FORMAT.md) after it has landed in
device memory, and the labels against their page CRCs
(``labels-G.crc``), before the table is used. A mismatch raises
:class:`~streamsampler.featstore.StoreError` naming the file, the row
(or page) and both CRCs.

One table per graph and device is shared by the loaders holding it (the
training loader and its evaluation loaders), and freed with the last.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..featstore import CRC32C_TABLE, MANIFEST, FeatureStore, StoreError
from ..optional import require

__all__ = ["BLOCK_BYTES", "DeviceTable", "FRACTION", "crc32c_rows", "device_table", "fits", "resolve", "store_bytes"]

#: The auto rule: a store goes on the device when its rows and labels take
#: at most this fraction of the device's memory (the model, activations
#: and the allocator's cache keep the rest).
FRACTION = 0.25

#: Rows are read, copied and checked in blocks of about this many bytes
#: (two page-locked buffers of it, alternating, so that reading a block
#: overlaps copying and checking the one before).
BLOCK_BYTES = 64 << 20

_TABLE = np.array(CRC32C_TABLE, dtype=np.int64)
_tables: Dict[Any, Any] = {}


def crc32c_rows(rows: Any) -> Any:
    """The CRC-32C (Castagnoli) of each row of ``rows``, a 2-D uint8 torch
    tensor on any device, as an int64 tensor there: one table step per
    byte column, over every row at once (the rows are many, the columns a
    row's bytes)."""
    torch = require("torch", "crc32c_rows", "torch", "the server's checked rows")
    table = _tables.get(rows.device)
    if table is None:
        table = torch.from_numpy(_TABLE).to(rows.device)
        _tables[rows.device] = table
    c = torch.full((rows.shape[0],), 0xFFFFFFFF, dtype=torch.int64, device=rows.device)
    for j in range(rows.shape[1]):
        c = table[(c ^ rows[:, j]) & 0xFF] ^ (c >> 8)  # int64 ^ uint8 promotes to int64
    return c ^ 0xFFFFFFFF


def store_bytes(graph: str) -> int:
    """The bytes a graph's feature store takes on a device: its rows, its
    labels as int64, and the graph's edge permutation (``edge_perm.npy``,
    :func:`streamsampler.from_pyg`'s), which the PyG loader maps edge ids
    through on the device beside them."""
    import json
    with open(os.path.join(graph, MANIFEST)) as f:
        m = json.load(f)
    n = int(m["num_nodes"])
    perm = os.path.join(graph, "edge_perm.npy")
    return n * int(m["features"]["row_bytes"]) + (8 * n if m.get("labels") is not None else 0) + \
        (os.path.getsize(perm) if os.path.exists(perm) else 0)


def fits(graph: str, device: Any) -> bool:
    """Whether the store of ``graph`` fits the auto rule on CUDA
    ``device`` (:data:`FRACTION` of its memory)."""
    torch = require("torch", "device_features", "torch", "device_features=False")
    index = device.index if device.index is not None else torch.cuda.current_device()
    total = int(torch.cuda.get_device_properties(index).total_memory)
    return store_bytes(graph) <= FRACTION * total


class DeviceTable:
    """A graph's feature store on ``device``: ``x`` [num_nodes, dim] in the
    store's dtype, ``y`` int64 [num_nodes] (-1: no label) or None, every
    row and label page checked (see the module's doc). ``block_bytes``
    sizes the reads."""

    def __init__(self, graph: str, device: Any, block_bytes: int = BLOCK_BYTES) -> None:
        torch = require("torch", "DeviceTable", "torch", "device_features=False")
        store = FeatureStore(graph)
        m = store.manifest
        feat = m["features"]
        if int(m.get("version", 0)) < 2:
            raise StoreError("%s: version %r has no CRC per row to check the rows with; rebuild the store with "
                             "`chunkify features FEATURES -o %s --force`" % (store.path, m.get("version"), graph))
        self.graph = graph
        self.device = device
        self.num_nodes = store.num_nodes
        self.dim = store.dim
        rb = int(feat["row_bytes"])
        crcs = _crcs(graph, feat, store.num_nodes, store.path)
        x = torch.empty((store.num_nodes, rb), dtype=torch.uint8, device=device)
        path = os.path.join(graph, feat["file"])
        per = max(1, int(block_bytes) // max(1, rb))
        pinned = device.type == "cuda"
        bufs = [torch.empty(per * rb, dtype=torch.uint8, pin_memory=pinned) for _ in range(2)]
        events: List[Optional[Any]] = [None, None]
        stream = torch.cuda.Stream(device) if pinned else None
        bad: List[Tuple[int, Any, Any]] = []
        with open(path, "rb", buffering=0) as f, (torch.cuda.stream(stream) if stream is not None
                                                   else contextlib.nullcontext()):
            for k, lo in enumerate(range(0, store.num_nodes, per)):
                hi = min(store.num_nodes, lo + per)
                i = k % 2
                ev = events[i]
                if ev is not None:
                    ev.synchronize()  # the copy reading this buffer is done
                buf = bufs[i][:(hi - lo) * rb]
                _read_exact(f, buf.numpy(), path, lo * rb)
                dst = x[lo:hi]
                dst.copy_(buf.view(hi - lo, rb), non_blocking=pinned)
                if pinned:
                    e = torch.cuda.Event()
                    e.record(stream)
                    events[i] = e
                got = crc32c_rows(dst)
                want = torch.from_numpy(crcs[lo:hi].astype(np.int64)).to(device, non_blocking=False)
                wrong = torch.nonzero(got != want).flatten()
                if wrong.numel():
                    r = int(wrong[0])
                    bad.append((lo + r, int(got[r]), int(want[r])))
                    break
        if stream is not None:
            stream.synchronize()
        if bad:
            u, got_crc, want_crc = bad[0]
            raise StoreError("%s: row %d (bytes %d..%d): CRC-32C %08x, %s says %08x: the file changed since it "
                             "was written" % (path, u, u * rb, (u + 1) * rb - 1, got_crc, feat["crcs"]["file"],
                                              want_crc))
        dtype = {"float32": torch.float32, "float16": torch.float16, "int8": torch.int8,
                 "uint8": torch.uint8}[feat["dtype"]]
        #: The rows, [num_nodes, dim], on the device.
        self.x = x.view(dtype).view(store.num_nodes, store.dim)
        #: The labels as int64 (-1: none), on the device; None without.
        self.y: Optional[Any] = None
        if m.get("labels") is not None:
            self.y = _checked_labels(graph, m["labels"], store.num_nodes, device)
        #: Bytes held on the device.
        self.nbytes = int(self.x.numel()) * int(self.x.element_size()) + \
            (8 * store.num_nodes if self.y is not None else 0)
        self.masks: Dict[str, Any] = {}

    def with_masks(self, masks: Dict[str, Any]) -> DeviceTable:
        """Also hold the graph's split masks (boolean, one per node) on
        the device, once."""
        torch = require("torch", "DeviceTable", "torch", "device_features=False")
        for name, m in masks.items():
            if name not in self.masks:
                self.masks[name] = torch.from_numpy(np.ascontiguousarray(m)).to(self.device)
        return self

    def gather(self, n_id: Any) -> Tuple[Any, Optional[Any]]:
        """``x[n_id]`` and ``y[n_id]`` (None without labels), on the device,
        on the current stream."""
        x = self.x.index_select(0, n_id)
        return x, (self.y.index_select(0, n_id) if self.y is not None else None)


def _read_exact(f: Any, buf: Any, path: str, offset: int) -> None:
    view = memoryview(buf).cast("B")
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            raise StoreError("%s: ends at byte %d, want %d more bytes" % (path, offset + got, len(view) - got))
        got += n


def _crcs(graph: str, d: Dict[str, Any], spans: int, manifest: str) -> np.ndarray[Any, np.dtype[np.uint32]]:
    c = d.get("crcs") or {}
    name = c.get("file", "")
    if not isinstance(name, str) or os.path.basename(name) != name or not name.endswith(".crc"):
        raise StoreError("%s: crcs.file %r, want a plain name like features-1.crc" % (manifest, name))
    path = os.path.join(graph, name)
    a = np.fromfile(path, dtype="<u4")
    if len(a) != spans:
        raise StoreError("%s: %d CRCs, want %d (manifest %s): truncated or replaced" % (path, len(a), spans,
                                                                                       manifest))
    return a


def _checked_labels(graph: str, lab: Dict[str, Any], n: int, device: Any) -> Any:
    """The labels file, each 4096-byte page (the last shorter) checked on
    ``device`` against labels-G.crc, as an int64 tensor there."""
    torch = require("torch", "DeviceTable", "torch", "device_features=False")
    path = os.path.join(graph, lab["file"])
    raw = np.fromfile(path, dtype=np.uint8)
    span = int(lab.get("crc_span", 4096))
    pages = -(-len(raw) // span)
    crcs = _crcs(graph, lab, pages, os.path.join(graph, MANIFEST))
    full = len(raw) // span
    dev = torch.from_numpy(raw).to(device)
    got = np.empty(pages, dtype=np.int64)
    if full:
        got[:full] = crc32c_rows(dev[:full * span].view(full, span)).cpu().numpy()
    if pages > full:
        got[full] = int(crc32c_rows(dev[full * span:].view(1, -1))[0])
    wrong = np.flatnonzero(got != crcs.astype(np.int64))
    if len(wrong):
        p = int(wrong[0])
        raise StoreError("%s: page %d (bytes %d..%d): CRC-32C %08x, %s says %08x: the file changed since it was "
                         "written" % (path, p, p * span, min(len(raw), (p + 1) * span) - 1, got[p], lab["crcs"]["file"],
                                      crcs[p]))
    if len(raw) != 4 * n:
        raise StoreError("%s: %d bytes, want %d labels of 4" % (path, len(raw), n))
    return dev.view(torch.int32).to(torch.int64)


_lock = threading.Lock()
_cache: "weakref.WeakValueDictionary[Tuple[str, str, str], DeviceTable]" = weakref.WeakValueDictionary()


def device_table(graph: str, device: Any) -> DeviceTable:
    """The table of ``graph`` on ``device``, loaded and checked on first
    use, shared while any loader holds it (a store replaced meanwhile,
    ``chunkify features --force``, is loaded anew: its manifest's
    checksum is in the key)."""
    import json
    with open(os.path.join(graph, MANIFEST)) as f:
        sig = str(json.load(f).get("checksum"))
    key = (os.path.realpath(graph), str(device), sig)
    with _lock:
        t = _cache.get(key)
        if t is None:
            t = DeviceTable(graph, device)
            _cache[key] = t
        return t


def resolve(device_features: Any, device: Any, delta: Any, graph: str, who: str) -> bool:
    """Whether a loader holds the store of ``graph`` on its ``device``:
    ``device_features`` True (required: ValueError where it cannot), False
    (never), or None (the default: where the loader has a CUDA device, the
    graph a feature store, no ``delta`` transfer asked for, and the store
    fits :data:`FRACTION` of the device's memory)."""
    if device_features is not None and not isinstance(device_features, bool):
        raise TypeError("%s: device_features=%r, want True, False or None (automatic)" % (who, device_features))
    if device_features is False:
        return False
    has_store = os.path.exists(os.path.join(graph, MANIFEST))
    cuda = device is not None and device.type == "cuda"
    delta_on = delta is not None and delta is not False
    if device_features:
        if not has_store:
            raise ValueError("%s: device_features=True, but %s has no feature store (chunkify features)"
                             % (who, graph))
        if not cuda:
            raise ValueError("%s: device_features=True holds the feature store on a CUDA device: pass device='cuda'"
                             % who)
        if delta_on:
            raise ValueError("%s: device_features=True and delta= exclude each other: with the store on the "
                             "device no rows cross the bus" % who)
        return True
    return has_store and cuda and not delta_on and fits(graph, device)
