"""Layer-wise inference when ``x_all`` does not fit in memory.

PyG's evaluation runs a GNN one layer at a time over every node::

    for conv in model.convs:                       # model.inference(x_all, loader)
        xs = [conv(x_all[b.n_id], b.edge_index)[:b.batch_size] for b in loader]
        x_all = torch.cat(xs)                      # every node's output: in memory

With ``streamsampler.pyg.NeighborLoader(graph, input_nodes=None,
num_neighbors=[-1], shuffle=False)`` that loop runs unchanged (the server
makes the minibatches by one sequential pass over the chunks). Where
``x_all`` is larger than memory, :func:`layerwise_inference` runs the same
loop out of core: layer ``l``'s input rows come with each minibatch from a
feature store (layer 1: the graph's own; layer ``l > 1``: the store layer
``l − 1`` wrote), read by the server under the same planned reads as any
minibatch's rows (resident where the store fits the server's memory, else
windows of minibatches planned ahead, package ``layerwise``); and each
minibatch's outputs, which are the rows of consecutive nodes, are
streamed in node order into the next store, written by ``chunkify
features`` (so every row gets its CRC-32C and the manifest is written
last). A layer's store lives in its own directory,
``OUT/layer-L``, which holds the graph's files as symbolic links (a store
belongs to a graph directory: docs/FORMAT.md) and the store
(``features-*.bin``, ``features.json``). Memory: a few minibatches, never
a layer's output.

    path = layerwise_inference("graph/", model.convs, "work/", batch_size=4096,
                               activation=torch.relu)
    out = FeatureStore(path).x                     # memmap [num_nodes, out_dim]
"""

from __future__ import annotations

import itertools
import os
import shutil
from typing import Any, Callable, Generator, Iterator, Optional, Sequence

import numpy as np

from .adapters import pyg_arrays
from .batch import Batch
from .convert import _run_chunkify
from .executables import find_chunkify
from .featstore import MANIFEST
from .loader.servers import acquire_scan, release
from .optional import require
from .protocol import ServerError
from .typing import PathArg

__all__ = ["GRAPH_FILES", "layer_dir", "layerwise_inference", "scan_batches"]

#: The files of a graph directory (docs/FORMAT.md) that a layer's
#: directory links to.
GRAPH_FILES = ("manifest.json", "chunks.info", "edges.chunks")

#: Output dtypes a layer's store may take.
_DTYPES = {"float32": np.float32, "float16": np.float16}


def layer_dir(graph: PathArg, path: PathArg) -> str:
    """Make ``path`` a directory of the graph ``graph`` for a layer's
    store: the graph's files linked (symbolic links to their absolute
    paths), nothing else. An existing one is reused (its store replaced
    when written again); one whose links point elsewhere is refused."""
    d = os.fspath(path)
    os.makedirs(d, exist_ok=True)
    for name in GRAPH_FILES:
        target = os.path.abspath(os.path.join(os.fspath(graph), name))
        link = os.path.join(d, name)
        if os.path.islink(link):
            if os.readlink(link) != target:
                raise ValueError("%s links to %s, not to the graph's %s" % (link, os.readlink(link), target))
            continue
        if not os.path.exists(target):
            raise FileNotFoundError("%s: not a graph directory (no %s)" % (graph, name))
        os.symlink(target, link)
    return d


def scan_batches(graph: PathArg, batch_size: int, store: Optional[PathArg] = None, rows: bool = True,
                 edge_ids: bool = False, semantics: str = "pyg", depth: int = 4, server_args: Sequence[str] = (),
                 binary: Optional[PathArg] = None) -> Iterator[Batch]:
    """The minibatches of one full scan of ``graph``: ``batch_size``
    consecutive nodes with all of their in-neighbors, in node order (PyG's
    ``NeighborLoader(input_nodes=None, num_neighbors=[-1], shuffle=False)``
    as :class:`~streamsampler.Batch`), with ``rows`` from ``store`` (None:
    the graph's feature store), from a server of the graph shared with its
    loaders (:mod:`streamsampler.loader.servers`)."""
    server = acquire_scan(os.fspath(graph), server_args, binary)
    try:
        local = server.start(np.zeros(1, dtype=np.int64))
        with local.client(shared_rows=server.rows) as client:
            info = client.scan(batch_size, rows=rows, edge_ids=edge_ids, semantics=semantics, store=store)
            try:
                yield from client.scan_batches(int(info["scan"]), depth=depth)
            finally:
                try:
                    client.drop_scan(int(info["scan"]))
                except (OSError, ServerError):
                    pass
    finally:
        release(server)


def layerwise_inference(graph: PathArg, layers: Sequence[Callable[[Any, Any], Any]], out: PathArg,
                        batch_size: int = 4096, activation: Optional[Callable[[Any], Any]] = None,
                        device: Any = None, dtype: str = "float32", keep: bool = False,
                        server_args: Sequence[str] = (), binary: Optional[PathArg] = None,
                        chunkify: Optional[PathArg] = None) -> str:
    """Run ``layers`` one after another over every node of ``graph``, out
    of core (see the module doc), and return the directory of the last
    layer's feature store (``FeatureStore(path).x``: every node's output).

    Each layer is called as PyG calls a conv, ``layer(x, edge_index)``,
    with torch tensors on ``device``: ``x`` the rows of the minibatch's
    ``n_id`` (float32), ``edge_index`` its local edges; its first
    ``batch_size`` output rows (the minibatch's own nodes) are kept.
    ``activation`` (e.g. ``torch.relu``) is applied to every layer's
    output but the last's, as PyG's ``inference`` does. Layer 1 reads the
    graph's feature store; each layer writes ``out/layer-L`` (its outputs
    as ``dtype``, "float32" or "float16"), and the store before is removed
    once read, unless ``keep``. Runs under ``torch.no_grad()``."""
    torch = require("torch", "layerwise_inference", "torch", "scan_batches")
    if not layers:
        raise ValueError("layerwise_inference: no layers")
    if dtype not in _DTYPES:
        raise ValueError("layerwise_inference: dtype %r, want 'float32' or 'float16'" % (dtype,))
    if not os.path.exists(os.path.join(os.fspath(graph), MANIFEST)):
        raise FileNotFoundError("layerwise_inference: %s has no feature store (%s), which layer 1 reads: "
                                "streamsampler.from_pyg with x, or chunkify features" % (graph, MANIFEST))
    ck = find_chunkify(chunkify)
    src: Optional[str] = None
    for i, layer in enumerate(layers):
        dst = layer_dir(graph, os.path.join(os.fspath(out), "layer-%d" % (i + 1)))
        act = activation if i < len(layers) - 1 else None
        batches = scan_batches(graph, batch_size, store=src, server_args=server_args, binary=binary)
        rows = _outputs(batches, layer, act, device, torch, _DTYPES[dtype])
        try:
            first = next(rows, None)
            if first is None:
                raise ValueError("layerwise_inference: %s has no nodes" % (graph,))
            cmd = [ck, "features", "/dev/stdin", "--dim", str(first.shape[1]), "--dtype", dtype, "-o", dst,
                   "--force", "-q"]
            _run_chunkify(cmd, itertools.chain([first], rows))
        finally:
            rows.close()
        if src is not None and not keep:
            shutil.rmtree(src, ignore_errors=True)
        src = dst
    assert src is not None
    return src


def _outputs(batches: Iterator[Batch], layer: Callable[[Any, Any], Any], activation: Optional[Callable[[Any], Any]],
             device: Any, torch: Any, dtype: Any) -> Generator[Any, None, None]:
    """Each minibatch's outputs for its own nodes, as a C-ordered numpy
    array of ``dtype``, in node order (checked: a store's rows are the
    nodes in order)."""
    expect = 0
    try:
        with torch.no_grad():
            for b in batches:
                a = pyg_arrays(b)
                seeds = b.seeds
                if len(seeds) == 0 or int(seeds[0]) != expect or int(seeds[-1]) != expect + len(seeds) - 1:
                    raise RuntimeError("layerwise_inference: a minibatch of nodes %d.. arrived where node %d was due"
                                       % (int(seeds[0]) if len(seeds) else -1, expect))
                if b.x is None:
                    raise RuntimeError("layerwise_inference: the server sent no feature rows")
                x = torch.from_numpy(np.asarray(b.x, dtype=np.float32))
                ei = torch.from_numpy(a["edge_index"])
                if device is not None:
                    x, ei = x.to(device), ei.to(device)
                h = layer(x, ei)[: a["batch_size"]]
                if activation is not None:
                    h = activation(h)
                yield np.ascontiguousarray(h.detach().to("cpu").numpy(), dtype=dtype)
                expect += len(seeds)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()
