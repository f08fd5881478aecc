"""A drop-in for PyG's ``NeighborLoader``
(``torch_geometric/loader/neighbor_loader.py``).

A PyG script swaps its loader by changing the import and the
constructor's first argument::

    # from torch_geometric.loader import NeighborLoader
    from streamsampler.pyg import NeighborLoader

    loader = NeighborLoader("graph/",            # was: data
                            num_neighbors=[25, 10], batch_size=1024,
                            input_nodes=train_mask, shuffle=True)
    for batch in loader:
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])

``graph/`` is a graph directory written by :func:`streamsampler.from_pyg`
(the ``Data`` itself is accepted too: it is written to a temporary
directory once). Each minibatch is a ``torch_geometric.data.Data`` with
PyG's fields and PyG's hop semantics exactly (docs/PYTHON.md): ``x`` and
``y`` (from the graph's feature store), ``edge_index``, ``n_id``,
``e_id``, ``input_id``, ``batch_size``, ``num_sampled_nodes``,
``num_sampled_edges``, and each split of the graph as a node mask
(``train_mask`` …, as ``from_pyg`` wrote them). ``len(loader)`` is the
epoch's minibatch count and every ``iter()`` a whole epoch.

Loaders of the same graph and sampling share one server: a shuffling
(training) loader's nodes are its epoch stream, prepared ahead in the
background; every other loader (``shuffle=False``: validation, test, any
node list) is a split of the same server, its nodes in order, each once.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ..adapters import pyg_arrays
from ..batch import Batch
from ..delta import DeltaTransfer
from ..featstore import FeatureStore
from ..optional import require
from ..typing import GraphSource, Nodes, PathArg
from .node_loader import NodeLoader
from .utils import IGNORED_ARGS

__all__ = ["NeighborLoader", "to_data"]


class LoaderData:
    """PyG's ``loader.data`` for :class:`NeighborLoader`: the graph a
    script edits before it iterates, as PyG's own examples do for layer-wise
    inference::

        subgraph_loader = NeighborLoader(data, input_nodes=None, num_neighbors=[-1], shuffle=False)
        del subgraph_loader.data.x, subgraph_loader.data.y   # the model gathers x_all[n_id] itself
        subgraph_loader.data.num_nodes = data.num_nodes
        subgraph_loader.data.n_id = torch.arange(data.num_nodes)

    ``del .x`` / ``del .y`` leave them out of every minibatch (a full scan
    then asks the server for no rows at all); any other attribute set here
    of one entry per node (first dimension ``num_nodes``) is sliced by each
    minibatch's ``n_id``, as PyG slices a ``Data``'s node attributes, and
    setting ``x`` or ``y`` back replaces the store's. ``num_nodes`` is the
    graph's (setting another is a ValueError). Reading ``x`` gives the
    feature store's rows (memory-mapped), ``y`` the labels; anything else
    is the ``Data`` the loader was given, where it was given one."""

    def __init__(self, loader: "NeighborLoader", source: Any) -> None:
        object.__setattr__(self, "_loader", loader)
        object.__setattr__(self, "_source", None if isinstance(source, (str, os.PathLike)) else source)
        object.__setattr__(self, "_dropped", set())
        object.__setattr__(self, "_extra", {})

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if name in d["_extra"]:
            return d["_extra"][name]
        if name in d["_dropped"]:
            raise AttributeError("'%s' was deleted from the loader's data" % name)
        loader = d["_loader"]
        if name == "num_nodes":
            return loader.num_nodes
        if name == "x" and loader.server.features:
            return FeatureStore(loader.graph).x
        if name == "y" and loader.labels is not None:
            return loader.labels
        if d["_source"] is not None and not name.startswith("_"):
            return getattr(d["_source"], name)
        raise AttributeError("the loader's data has no attribute %r" % name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "num_nodes":
            if int(value) != self._loader.num_nodes:
                raise ValueError("loader.data.num_nodes = %d: the graph has %d nodes" % (int(value), self._loader.num_nodes))
            return
        self._dropped.discard(name)
        self._extra[name] = value

    def __delattr__(self, name: str) -> None:
        if name in self._extra:
            del self._extra[name]
        elif name not in ("x", "y") or name in self._dropped:
            raise AttributeError(name)
        if name in ("x", "y"):
            self._dropped.add(name)

    def has(self, name: str) -> bool:
        """Whether minibatches carry ``name`` from the store (x, y): not
        deleted and not replaced."""
        return name not in self._dropped and name not in self._extra

    def node_attrs(self) -> Dict[str, Any]:
        """The attributes set here with one entry per node: each
        minibatch takes their rows at its ``n_id``."""
        n = self._loader.num_nodes
        return {k: v for k, v in self._extra.items() if getattr(v, "shape", None) and int(v.shape[0]) == n}


class NeighborLoader(NodeLoader):  # and HeteroNeighborLoader, registered below
    """PyG's ``NeighborLoader(data, num_neighbors, input_nodes, batch_size,
    shuffle, drop_last, replace, transform, ...)`` over a streamsampler
    graph directory (``data``: its path, or a PyG ``Data``).

    ``num_neighbors`` are per hop, hop 1 (the seeds' neighbors) first, 1
    to 64 each, or -1 for every neighbor (mixed, e.g. ``[-1, 10]``, as PyG
    allows); ``[-1]`` with ``input_nodes=None`` and ``shuffle=False`` is
    layer-wise inference's full scan (every node in order with all of its
    in-neighbors, one sequential pass over the chunks: ``model.inference``
    runs unchanged; docs/PYTHON.md). ``input_nodes``: a boolean mask or node ids (None: every
    node). ``seed`` fixes the samples and the shuffles (same seed, same
    minibatches); ``semantics="dgl"`` assembles DGL's blocks instead.
    ``server_args`` are extra ``streamsampler serve`` flags (e.g.
    ``["--feature-cache", "4GiB"]``; by default the server sizes its
    feature cache from the memory it may use). Homogeneous graphs only; arguments
    of PyG's loader that need what the server does not do (temporal
    sampling, disjoint subgraphs, weighted sampling, heterogeneous input)
    are refused with NotImplementedError.

    ``device`` (not PyG's: what wrapping PyG's loader in
    ``PrefetchLoader(loader, device)`` does, done in the loader's
    background thread): each ``Data`` arrives on it, ``prefetch``
    (default 2) ahead of the step, its tensors copied through page-locked
    buffers on a side stream, the feature rows straight from the server's
    shared buffers where CUDA could register them; the script's
    ``batch.to(device)`` is then a no-op. The ``Data`` is built on the
    device from the server's arrays, and ``transform`` runs on it there.
    ``delta=True`` sends ``x`` through a
    :class:`~streamsampler.DeltaTransfer`. ``device_features`` (None:
    automatic; on where the store fits a quarter of the CUDA device's
    memory and no ``delta`` is asked for): the feature store is held on
    the device, every row checked once against its CRC-32C as it is
    loaded, and ``x``, ``y`` and the masks are gathered there by
    ``n_id``, so that only ids and edges cross the bus; False takes the
    rows from the server with each minibatch (features larger than the
    device). ``fresh`` (not PyG's; None: automatic): an evaluation loader
    (``shuffle=False``) over a small node set samples by the server's
    random-read sampler instead of a streaming pass, the same minibatches
    bit for bit (:class:`~streamsampler.loader.NodeLoader`). Without a device, ``Data`` tensors are in page-locked memory
    where torch has CUDA (``pin_memory=False``: not), so PyG's
    ``PrefetchLoader`` pins nothing
    itself.
    """

    def __new__(cls, data: Any, *args: Any, **kwargs: Any) -> Any:
        """A heterogeneous graph (a directory with hetero.json, or a PyG
        ``HeteroData``) gets a
        :class:`~streamsampler.loader.hetero_loader.HeteroNeighborLoader`
        (an instance of this class for ``isinstance``), as PyG's one
        NeighborLoader serves both; a homogeneous one with heterogeneous
        arguments (``input_nodes=(type, nodes)``, a dict of fanouts) is a
        ValueError."""
        from .hetero_loader import HeteroNeighborLoader, check_homogeneous_args, is_hetero_graph
        if is_hetero_graph(data):
            return HeteroNeighborLoader(data, *args, **kwargs)
        num_neighbors = args[0] if args else kwargs.get("num_neighbors")
        input_nodes = args[1] if len(args) > 1 else kwargs.get("input_nodes")
        check_homogeneous_args(input_nodes, num_neighbors)
        return super().__new__(cls)

    def __init__(self, data: GraphSource, num_neighbors: Sequence[int],
                 input_nodes: Union[Nodes, Tuple[str, Any], None] = None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, replace: bool = False,
                 transform: Optional[Callable[[Any], Any]] = None, seed: Optional[int] = None,
                 semantics: str = "pyg", prefetch: Optional[int] = None, server_args: Sequence[str] = (),
                 binary: Optional[PathArg] = None, device: Any = None, pin_memory: Optional[bool] = None,
                 delta: Union[bool, DeltaTransfer, None] = False, device_features: Optional[bool] = None,
                 fresh: Optional[bool] = None, **kwargs: Any) -> None:
        for k in ("input_time", "time_attr", "weight_attr", "temporal_strategy"):
            if kwargs.pop(k, None) not in (None, "uniform"):
                raise NotImplementedError("NeighborLoader(%s=...): temporal and weighted sampling are not "
                                          "supported by streamsampler" % k)
        if kwargs.pop("disjoint", False):
            raise NotImplementedError("NeighborLoader(disjoint=True) is not supported by streamsampler")
        if kwargs.pop("subgraph_type", "directional") != "directional":
            raise NotImplementedError("NeighborLoader(subgraph_type=...): only 'directional' (PyG's default)")
        if isinstance(input_nodes, tuple):
            raise NotImplementedError("NeighborLoader: heterogeneous input_nodes (node type, nodes) are not "
                                      "supported: streamsampler graphs are homogeneous")
        unknown = set(kwargs) - IGNORED_ARGS  # pin_memory is not ignored: it is honoured
        if unknown:
            raise TypeError("NeighborLoader got unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        #: The user's transform, applied to each ``Data``.
        self.user_transform = transform
        super().__init__(data, num_neighbors, batch_size, input_nodes, shuffle, drop_last, semantics,
                         self._to_data, replace=replace, seed=seed, prefetch=prefetch,
                         server_args=server_args, binary=binary, device=device, pin_memory=pin_memory,
                         delta=delta, device_features=device_features, fresh=fresh)
        #: PyG's ``loader.data`` (:class:`LoaderData`): what a script may
        #: delete or add before iterating.
        self.data = LoaderData(self, data)
        self._perm_dev: Any = None
        self._labels: Optional[npt.NDArray[Any]] = None
        self._masks: Dict[str, npt.NDArray[np.bool_]] = {}
        self._loaded = False

    def _load(self) -> None:
        """The graph's labels and split masks, read once."""
        if self._loaded:
            return
        if self.server.features:
            self._labels = FeatureStore(self.graph).y
        elif os.path.exists(os.path.join(self.graph, "labels.npy")):
            self._labels = np.load(os.path.join(self.graph, "labels.npy"), mmap_mode="r")
        masks = {}
        splits = os.path.join(self.graph, "splits")
        if os.path.isdir(splits):
            for name in sorted(os.listdir(splits)):
                # Edge splits (NAME.edges.npy, NAME.edge_label.npy) are the
                # link loaders' seed edges, not node masks.
                if name.endswith(".npy") and not name.endswith((".edges.npy", ".edge_label.npy")):
                    m = np.zeros(self.num_nodes, dtype=np.bool_)
                    m[np.load(os.path.join(splits, name))] = True
                    masks[name[:-4] + "_mask"] = m
        self._masks = masks
        self._loaded = True

    def scan_rows(self) -> bool:
        """A full scan asks for rows unless the script deleted ``data.x``
        (the model gathers ``x_all[n_id]`` itself, PyG's layer-wise
        inference)."""
        return super().scan_rows() and self.data.has("x")

    @property
    def labels(self) -> Optional[npt.NDArray[Any]]:
        """Every node's label (the feature store's, else the graph's
        labels.npy; None without), read on first use."""
        self._load()
        return self._labels

    @property
    def masks(self) -> Dict[str, npt.NDArray[np.bool_]]:
        """Each split of the graph (splits/NAME.npy) as a boolean mask over
        its nodes, named ``NAME_mask``; read on first use."""
        self._load()
        return self._masks

    def _to_data(self, batch: Batch) -> Any:
        """A minibatch as PyG's ``Data`` (see the class doc), on the host."""
        return to_data(batch, self)

    def host_minibatch(self, batch: Batch) -> Any:
        """With a device: what crosses to it (:func:`raw_minibatch`), the
        ``Data`` being built there (:meth:`finish_minibatch`)."""
        if self.device is None:
            return super().host_minibatch(batch)
        return raw_minibatch(batch, self)

    def finish_minibatch(self, obj: Any) -> Any:
        """With a device: the ``Data`` built on it from the moved arrays
        (:func:`device_data`), then the user's transform."""
        if self.device is None:
            return obj
        data = device_data(obj, self)
        if self.user_transform is not None:
            data = self.user_transform(data)
        return data

    def device_edge_perm(self) -> Any:
        """The edge permutation on the device where the store is held there
        (counted in its size, :func:`~streamsampler.loader.device_table.store_bytes`),
        else None (mapped on the host)."""
        if self._perm_dev is None and self.device_features and self.edge_perm is not None:
            torch = require("torch", "streamsampler.pyg.NeighborLoader", "torch", "device=None")
            self._perm_dev = torch.from_numpy(np.array(self.edge_perm, dtype=np.int64)).to(self.device)
        return self._perm_dev


def _host(a: npt.NDArray[Any]) -> Any:
    """A host tensor viewing ``a`` (uint32 as int32: torch's older versions
    have no uint32; :func:`device_data` reads it back unsigned)."""
    import torch
    if a.dtype == np.uint32:
        a = a.view(np.int32)
    return torch.from_numpy(a)


def raw_minibatch(batch: Batch, loader: NeighborLoader) -> Dict[str, Any]:
    """What a minibatch moves to a device: its arrays as the server sent
    them (the last hop's src, each hop's local edge ends, edge ids; views,
    no conversion), its rows where the server sent them, the labels and
    masks gathered on the host where the store is not on the device, and
    the counts. :func:`device_data` builds PyG's ``Data`` from it there:
    the int64 conversions, offsets and concatenations of :func:`to_data`
    run on the device, not in the trainer's process's Python."""
    hops = batch.hops
    src = hops[-1].src if hops else batch.seeds
    raw: Dict[str, Any] = {
        "src": _host(src),
        "edge_src": [_host(h.edge_src) for h in hops],
        "edge_dst": [_host(h.edge_dst) for h in hops],
        "input_id": _host(np.asarray(batch.input_id, dtype=np.int64)),
        "lo": [], "num_sampled_nodes": [len(batch.seeds)], "num_sampled_edges": [len(h.edge_src) for h in hops],
        "batch_size": len(batch.seeds),
    }
    prev = len(batch.seeds)
    for h in hops:
        raw["lo"].append(prev - len(h.dst))
        raw["num_sampled_nodes"].append(len(h.src) - prev)
        prev = len(h.src)
    if batch.has_edge_ids:
        if loader.device_edge_perm() is None and loader.edge_perm is not None:
            e = np.concatenate([h.e_id for h in hops]) if hops else np.empty(0, np.int64)
            raw["e_id"] = _host(np.asarray(loader.edge_perm[e], dtype=np.int64))
        else:
            raw["e_id_per_hop"] = [_host(np.asarray(h.e_id, dtype=np.int64)) for h in hops]
    if batch.x is not None:
        raw["x"] = _host(np.asarray(batch.x))
    if not loader.device_features:
        labels = loader.labels
        if labels is not None:
            raw["y"] = _host(np.asarray(labels[src], dtype=np.int64))
        raw["masks"] = {name: _host(m[src]) for name, m in loader.masks.items()}
    return raw


def device_data(raw: Dict[str, Any], loader: NeighborLoader) -> Any:
    """PyG's ``Data`` (as :func:`to_data` makes it) from a moved
    :func:`raw_minibatch`, built on its device on the current stream; ``x``,
    ``y`` and the masks gathered from the store held there where it is."""
    needs = "torch and torch_geometric"
    torch = require("torch", "streamsampler.pyg.NeighborLoader", needs, "pyg_arrays")
    Data = require("torch_geometric.data", "streamsampler.pyg.NeighborLoader", needs, "pyg_arrays").Data

    def unsigned(t: Any) -> Any:
        return t.to(torch.int64) & 0xFFFFFFFF

    n_id = unsigned(raw["src"])
    parts = []
    for es, ed, lo in zip(raw["edge_src"], raw["edge_dst"], raw["lo"]):
        ei = torch.empty((2, es.shape[0]), dtype=torch.int64, device=n_id.device)
        ei[0] = es
        torch.add(ed, lo, out=ei[1])
        parts.append(ei)
    edge_index = torch.cat(parts, 1) if parts else torch.empty((2, 0), dtype=torch.int64, device=n_id.device)
    data = Data(edge_index=edge_index, num_nodes=int(n_id.shape[0]))
    table = loader.table()
    keep = loader.data
    if table is not None:
        table.with_masks(loader.masks)
        x, y = table.gather(n_id)
        if keep.has("x"):
            data.x = x
        if y is not None and keep.has("y"):
            data.y = y
        for name, m in table.masks.items():
            data[name] = m.index_select(0, n_id)
    else:
        if "x" in raw and keep.has("x"):
            data.x = raw["x"]
        if "y" in raw and keep.has("y"):
            data.y = raw["y"]
        for name, m in raw["masks"].items():
            data[name] = m
    for name, v in keep.node_attrs().items():
        t = torch.as_tensor(v)
        data[name] = t.index_select(0, n_id.to(t.device)).to(n_id.device)
    data.n_id = n_id
    if "e_id" in raw:
        data.e_id = raw["e_id"]
    elif "e_id_per_hop" in raw:
        e_id = torch.cat(raw["e_id_per_hop"]) if raw["e_id_per_hop"] else \
            torch.empty(0, dtype=torch.int64, device=n_id.device)
        perm = loader.device_edge_perm()
        data.e_id = perm.index_select(0, e_id) if perm is not None else e_id
    data.input_id = raw["input_id"]
    data.batch_size = raw["batch_size"]
    data.num_sampled_nodes = raw["num_sampled_nodes"]
    data.num_sampled_edges = raw["num_sampled_edges"]
    return data


def to_data(batch: Batch, loader: NeighborLoader) -> Any:
    """``batch`` as the ``torch_geometric.data.Data`` PyG's NeighborLoader
    yields, with the loader's labels, masks and edge permutation, on the
    host (a loader with a device builds it there: :func:`device_data`)."""
    needs = "torch and torch_geometric"
    torch = require("torch", "streamsampler.pyg.NeighborLoader", needs, "pyg_arrays")
    Data = require("torch_geometric.data", "streamsampler.pyg.NeighborLoader", needs, "pyg_arrays").Data
    labels, masks, edge_perm = loader.labels, loader.masks, loader.edge_perm
    a = pyg_arrays(batch)
    n_id = a["n_id"]
    data = Data(edge_index=torch.from_numpy(a["edge_index"]), num_nodes=len(n_id))
    keep = loader.data
    if batch.x is not None and keep.has("x"):
        data.x = torch.from_numpy(np.asarray(batch.x))
    if labels is not None and keep.has("y"):
        data.y = torch.from_numpy(np.asarray(labels[n_id], dtype=np.int64))
    for name, m in masks.items():
        data[name] = torch.from_numpy(m[n_id])
    for name, v in keep.node_attrs().items():
        data[name] = torch.as_tensor(v)[torch.from_numpy(n_id.astype(np.int64))]
    data.n_id = torch.from_numpy(n_id)
    if a["e_id"] is not None:
        e_id = a["e_id"]
        if edge_perm is not None:
            e_id = np.asarray(edge_perm[e_id], dtype=np.int64)
        data.e_id = torch.from_numpy(e_id)
    data.input_id = torch.from_numpy(np.asarray(batch.input_id, dtype=np.int64))
    data.batch_size = a["batch_size"]
    data.num_sampled_nodes = a["num_sampled_nodes"]
    data.num_sampled_edges = a["num_sampled_edges"]
    if loader.user_transform is not None:
        data = loader.user_transform(data)
    return data


def _register_hetero() -> None:
    # isinstance(loader, NeighborLoader) holds for the heterogeneous loader
    # that NeighborLoader(...) returns (an ABC virtual subclass: no
    # inheritance of the homogeneous machinery).
    from .hetero_loader import HeteroNeighborLoader
    NeighborLoader.register(HeteroNeighborLoader)


_register_hetero()
