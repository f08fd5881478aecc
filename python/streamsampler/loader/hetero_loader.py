"""Heterogeneous graphs (issue 27): PyG's ``NeighborLoader`` over a
``HeteroData`` (:class:`HeteroNeighborLoader`, what
``streamsampler.pyg.NeighborLoader`` returns for heterogeneous input) and
the seed-node loader it is made of (:class:`HeteroNodeLoader`), over a
heterogeneous graph directory (``hetero.json``, docs/FORMAT.md) served by
a heterogeneous ``streamsampler serve`` (docs/PROTOCOL.md,
"Heterogeneous minibatches").

A PyG script changes only its import::

    # from torch_geometric.loader import NeighborLoader
    from streamsampler.pyg import NeighborLoader

    loader = NeighborLoader("graph/",           # or the HeteroData itself
                            num_neighbors={("paper", "cites", "paper"): [10, 5], ...},
                            input_nodes=("paper", data["paper"].train_mask),
                            batch_size=1024, shuffle=True)
    for batch in loader:                        # torch_geometric.data.HeteroData
        out = model(batch.x_dict, batch.edge_index_dict)[:batch["paper"].batch_size]

``num_neighbors`` follows PyG's ``NumNeighbors``
(torch_geometric/sampler/base.py, ``NumNeighbors._get_values``, which this
module's :func:`relation_fanouts` renders): a list is every edge type's; a
dict maps edge types (``(src, rel, dst)`` tuples, or PyG's
``"src__rel__dst"`` strings) to lists, an edge type of the graph missing
from it takes ``default`` where one is given (PyG's ``NumNeighbors(values,
default)``) and is otherwise an error, keys naming no edge type of the
graph are ignored as PyG ignores them, and every edge type's list must
have the same length.

The DGL heterograph loader is :mod:`.hetero_dgl_loader`.
"""

from __future__ import annotations

import json
import os
import weakref
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, cast

import numpy as np
import numpy.typing as npt

from ..client import Client
from ..convert import is_hetero_data, load_edge_perm
from ..hetero import EdgeType, HeteroBatch
from ..local import env_int
from ..optional import require
from ..protocol import ProtocolError
from ..typing import PathArg
from .base import EpochLoader
from .servers import SharedServer, TrainingStream, acquire, close_loader
from .utils import ALL_NEIGHBORS, IGNORED_ARGS, default_seed, first_n, graph_dir, node_ids

__all__ = ["HeteroGraph", "HeteroNeighborLoader", "HeteroNodeLoader", "is_hetero_graph", "relation_fanouts",
           "relation_key", "server_fanouts", "to_hetero_data"]

#: The largest fanout the server samples (hls.MaxFanout).
MAX_FANOUT = 64


def relation_key(et: EdgeType) -> str:
    """An edge type as the server names it (``serve --relation-fanouts``,
    ``relations/`` directories): ``src___rel___dst``."""
    return "___".join(et)


def is_hetero_graph(graph: Any) -> bool:
    """Whether ``graph`` is heterogeneous: a PyG ``HeteroData`` (or one
    like it), or a directory with ``hetero.json``."""
    if isinstance(graph, (str, os.PathLike)):
        return os.path.exists(os.path.join(os.fspath(graph), "hetero.json"))
    return is_hetero_data(graph)


class HeteroGraph:
    """What the loaders read of a heterogeneous graph directory besides
    what the server serves: its node types and counts and its edge types
    (``hetero.json``, in its order), and, read on first use, each type's
    ``labels/TYPE.npy`` (where no server sends labels), its
    splits as masks (``splits/TYPE/NAME.npy`` → ``NAME_mask``) and each
    relation's ``edge_perm.npy`` (stored edge i is column ``perm[i]`` of
    the ``edge_index`` it was imported from)."""

    def __init__(self, path: str) -> None:
        self.path = path
        manifest = os.path.join(path, "hetero.json")
        try:
            with open(manifest) as f:
                m = json.load(f)
            #: The node types, in hetero.json's order.
            self.node_types: List[str] = [str(t["name"]) for t in m["node_types"]]
            #: Each node type's node count.
            self.counts: Dict[str, int] = {str(t["name"]): int(t["count"]) for t in m["node_types"]}
            #: The edge types, in hetero.json's order (the server's).
            self.edge_types: List[EdgeType] = [(str(r["src"]), str(r["rel"]), str(r["dst"])) for r in m["relations"]]
            self._dirs = {(str(r["src"]), str(r["rel"]), str(r["dst"])): str(r["dir"]) for r in m["relations"]}
        except FileNotFoundError:
            raise FileNotFoundError("%s: not a heterogeneous graph directory (no hetero.json: build one with "
                                    "`chunkify build --node-types ... --relation ...` or streamsampler.from_pyg of a "
                                    "HeteroData)" % path) from None
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError("%s: malformed (%r)" % (manifest, e)) from e
        self._labels: Dict[str, Optional[npt.NDArray[Any]]] = {}
        self._masks: Dict[str, Dict[str, npt.NDArray[np.bool_]]] = {}
        self._perms: Dict[EdgeType, Optional[npt.NDArray[np.int64]]] = {}

    def labels(self, t: str) -> Optional[npt.NDArray[Any]]:
        """Node type ``t``'s labels from ``labels/TYPE.npy`` (the import's
        labels of a type without features), one per node (−1: none), or
        None. Where the graph has a feature store the loaders' server runs
        with ``--features`` and sends every type's labels itself, a
        store's checked against its CRC-32Cs: they are not read here."""
        if t not in self._labels:
            self._labels[t] = self._read_labels(t)
        return self._labels[t]

    def _read_labels(self, t: str) -> Optional[npt.NDArray[Any]]:
        n = self.counts[t]
        npy = os.path.join(self.path, "labels", t + ".npy")
        if os.path.exists(npy):
            y: npt.NDArray[Any] = np.load(npy, mmap_mode="r")
            if y.shape != (n,):
                raise ValueError("%s: shape %s, want (%d,) (node type %s)" % (npy, y.shape, n, t))
            return y
        return None

    def masks(self, t: str) -> Dict[str, npt.NDArray[np.bool_]]:
        """Node type ``t``'s splits as boolean masks named ``NAME_mask``."""
        if t not in self._masks:
            out: Dict[str, npt.NDArray[np.bool_]] = {}
            d = os.path.join(self.path, "splits", t)
            if os.path.isdir(d):
                for name in sorted(os.listdir(d)):
                    if name.endswith(".npy"):
                        m = np.zeros(self.counts[t], dtype=np.bool_)
                        m[np.load(os.path.join(d, name))] = True
                        out[name[:-4] + "_mask"] = m
            self._masks[t] = out
        return self._masks[t]

    def edge_perm(self, et: EdgeType) -> Optional[npt.NDArray[np.int64]]:
        """Relation ``et``'s edge_perm.npy (memory-mapped), or None."""
        if et not in self._perms:
            self._perms[et] = load_edge_perm(os.path.join(self.path, self._dirs[et]))
        return self._perms[et]


def _edge_type(key: Any) -> Optional[EdgeType]:
    """A ``num_neighbors`` key as an edge type: a (src, rel, dst) tuple or
    PyG's ``EdgeTypeStr`` form ``"src__rel__dst"``; None for anything
    else."""
    if isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key):
        return (key[0], key[1], key[2])
    if isinstance(key, str):
        parts = key.split("__")
        if len(parts) == 3:
            return (parts[0], parts[1], parts[2])
    return None


def _check_list(v: Any, what: str) -> List[int]:
    if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
        raise ValueError("%s: %r, want a list of fanouts (one per hop)" % (what, v))
    out = [int(f) for f in v]
    for f in out:
        if not (0 <= f <= MAX_FANOUT or f == ALL_NEIGHBORS):
            raise ValueError("%s: fanout %d, streamsampler samples 0 (none) to %d neighbors per hop, or -1 "
                             "(every neighbor)" % (what, f, MAX_FANOUT))
    return out


def relation_fanouts(num_neighbors: Any, edge_types: Sequence[EdgeType],
                     default: Optional[Sequence[int]] = None) -> Dict[EdgeType, List[int]]:
    """PyG's ``num_neighbors`` for a heterogeneous graph, per edge type
    (``NumNeighbors._get_values``, torch_geometric/sampler/base.py): a
    list is every edge type's; a dict gives each edge type its entry (a
    tuple or ``"src__rel__dst"`` key), ``default`` to those it lacks, and
    is a ValueError naming the first it lacks without ``default``; keys
    that name no edge type of the graph are ignored (as PyG does); the
    lists must all have the same length (PyG's "Number of hops must be the
    same across all edge types"). PyG's ``NumNeighbors`` object (its
    ``values`` and ``default``) is accepted too."""
    if type(num_neighbors).__name__ == "NumNeighbors" and hasattr(num_neighbors, "values"):
        default = getattr(num_neighbors, "default", None)
        num_neighbors = num_neighbors.values
    if isinstance(num_neighbors, Mapping):
        given: Dict[EdgeType, List[int]] = {}
        for k, v in num_neighbors.items():
            et = _edge_type(k)
            if et is None:
                raise ValueError("num_neighbors: key %r is not an edge type (want a (src, rel, dst) tuple or "
                                 "'src__rel__dst')" % (k,))
            given[et] = _check_list(v, "num_neighbors[%r]" % (k,))
        dflt = _check_list(default, "num_neighbors default") if default is not None else None
        out: Dict[EdgeType, List[int]] = {}
        for et in edge_types:
            if et in given:
                out[et] = given[et]
            elif dflt is not None:
                out[et] = dflt
            else:
                raise ValueError("Missing number of neighbors for edge type '%s' (num_neighbors has no entry for "
                                 "it and no default)" % (et,))
    else:
        if default is not None:
            raise ValueError("num_neighbors: 'default' must be None when a single list is given")
        lst = _check_list(num_neighbors, "num_neighbors")
        out = {et: list(lst) for et in edge_types}
    hops = {len(v) for v in out.values()}
    if len(hops) > 1:
        raise ValueError("Number of hops must be the same across all edge types (got %d different numbers of hops: "
                         "%s)" % (len(hops), ", ".join("%s: %d" % (et, len(v)) for et, v in out.items())))
    if not out or hops == {0}:
        raise ValueError("num_neighbors: no hops (want at least one fanout per edge type)")
    if hops.pop() > 255:
        raise ValueError("num_neighbors: more than 255 hops")
    return out


def server_fanouts(fan: Mapping[EdgeType, Sequence[int]]) -> Tuple[List[int], List[Tuple[str, List[int]]]]:
    """The server's flags for per-edge-type fanouts: ``--fanouts`` (the
    list most edge types share, among those ``--fanouts`` takes: 1..64 or
    -1 each) and ``--relation-fanouts`` for the others, in edge type order.
    Equal maps give equal flags (the shared servers' key)."""
    lists = [tuple(v) for v in fan.values()]
    ok = [v for v in lists if all(f >= 1 or f == ALL_NEIGHBORS for f in v)]
    if ok:
        default = max(ok, key=lambda v: (ok.count(v), -ok.index(v)))
    else:
        default = tuple(1 for _ in lists[0])
    rels = [(relation_key(et), list(v)) for et, v in fan.items() if tuple(v) != default]
    return list(default), rels


class HeteroNodeLoader(EpochLoader):
    """Minibatches of seed nodes of one type of a heterogeneous graph
    from a shared heterogeneous server, one epoch per ``iter()``: the
    :class:`~streamsampler.loader.NodeLoader` of heterogeneous graphs.

    ``graph`` is a heterogeneous graph directory; ``fanouts`` every edge
    type's per-hop fanouts (:func:`relation_fanouts`); ``node_type`` and
    ``nodes`` (local ids of the type, or a boolean mask over them; None:
    every node of the type) the seeds. ``shuffle=True``: the server's
    training stream (``serve --train-type``), a seeded shuffle per epoch;
    ``shuffle=False``: a split of the same server (``Client.hetero_split``),
    the nodes in the given order, each once. ``drop_last`` drops the short
    last minibatch (the loader stops before it). Each raw minibatch is a
    :class:`~streamsampler.hetero.HeteroBatch` with ``input_id`` set (int64
    positions of its seeds in ``nodes``); ``transform`` maps it to what
    ``iter`` yields. Loaders of the same graph, fanouts and seed share one
    server (:mod:`~streamsampler.loader.servers`). ``device`` and
    ``pin_memory`` as :class:`~streamsampler.loader.base.EpochLoader`
    takes them: what ``transform`` returns (a ``HeteroData``, DGL's
    blocks) moved to the device in the background thread, ``prefetch``
    minibatches ahead, or pinned on the host where CUDA is available.
    """

    def __init__(self, graph: str, fanouts: Mapping[EdgeType, Sequence[int]], batch_size: int, node_type: str,
                 nodes: Any, shuffle: bool, drop_last: bool, semantics: str,
                 transform: Optional[Callable[[HeteroBatch], Any]], seed: Optional[int] = None,
                 prefetch: Optional[int] = None, depth: int = 4, server_args: Sequence[str] = (),
                 binary: Optional[PathArg] = None, device: Any = None, pin_memory: Optional[bool] = None) -> None:
        # EpochLoader's transform takes a Batch; ours a HeteroBatch (the
        # base only calls it on what batches() yields).
        super().__init__(cast(Any, transform), prefetch, depth, device=device, pin_memory=pin_memory)
        who = type(self).__name__
        self.graph = graph
        #: The graph's types, labels, splits and edge permutations.
        self.info = HeteroGraph(graph)
        if node_type not in self.info.counts:
            raise ValueError("%s: input_nodes: node type %r is not a node type of %s (its types: %s)"
                             % (who, node_type, graph, ", ".join(self.info.node_types)))
        self.node_type = node_type
        n = self.info.counts[node_type]
        self.nodes = np.arange(n, dtype=np.int64) if nodes is None else \
            node_ids(nodes, n, "input_nodes (local ids of node type %s)" % node_type)
        if len(self.nodes) == 0:
            raise ValueError("%s: input_nodes: no nodes of type %s" % (who, node_type))
        if len(np.unique(self.nodes)) != len(self.nodes):
            raise ValueError("%s: input_nodes: a node appears twice (each node is a seed once per epoch)" % who)
        if int(batch_size) < 1:
            raise ValueError("%s: batch_size %r, want >= 1" % (who, batch_size))
        #: Every edge type's per-hop fanouts, in the graph's order.
        self.fanouts = {et: list(fanouts[et]) for et in self.info.edge_types}
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.semantics = semantics
        self.seed = int(seed) if seed is not None else default_seed()
        self._order = np.argsort(self.nodes, kind="stable")
        self._sorted = self.nodes[self._order]
        default, rels = server_fanouts(self.fanouts)
        training = TrainingStream(self.nodes, self.batch_size, self.drop_last, semantics, node_type) \
            if self.shuffle else None
        #: The shared server this loader's minibatches come from.
        self.server: SharedServer = acquire(graph, default, False, self.seed, training, server_args, binary,
                                            relation_fanouts=rels)
        if self.server.fallback_type is None:
            self.server.fallback_type = node_type  # a split that starts the server: its type's nodes train
        self._client: Optional[Client] = None
        self._split: Optional[int] = None
        self._finalizer = weakref.finalize(self, close_loader, self.server, [None])

    def __len__(self) -> int:
        """Minibatches per epoch (``iter()``)."""
        n = len(self.nodes)
        if self.shuffle:
            n //= env_int("WORLD_SIZE", 1)  # every rank serves the smallest shard's count
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @property
    def dataset(self) -> range:
        """The seed nodes' positions (``len(loader.dataset)``, as PyG's)."""
        return range(len(self.nodes))

    def client(self) -> Client:
        """The loader's connection (made on first use, starting the server
        if needed)."""
        if self._client is None:
            local = self.server.start(self.nodes)
            # The heterogeneous server sends no shared rows.
            self._client = local.client(shared_rows=False)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, close_loader, self.server, [self._client])
        return self._client

    def connection(self) -> Optional[Client]:
        """The loader's connection (see :meth:`client`)."""
        return self.client()

    def input_id(self, seeds: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
        """The seeds' positions in the loader's input nodes."""
        pos = np.searchsorted(self._sorted, seeds.astype(np.int64))
        if np.any(pos >= len(self._sorted)) or not np.array_equal(self._sorted[np.minimum(pos, len(self._sorted) - 1)],
                                                                 seeds.astype(np.int64)):
            raise ProtocolError("the server sent seeds of type %s that are not the loader's input nodes (a server "
                                "of another training stream?)" % self.node_type)
        return self._order[pos]

    def seeds(self, b: HeteroBatch) -> npt.NDArray[np.uint32]:
        """A minibatch's seeds (local ids of :attr:`node_type`)."""
        if b.semantics == "pyg":
            n = b.nodes[self.node_type]
            return n.n_id[:n.batch_size]
        return b.blocks[0].dst_n_id[self.node_type] if b.blocks else np.empty(0, np.uint32)

    def _stream(self, c: Client) -> Iterator[HeteroBatch]:
        """The training stream's next epoch (as :meth:`EpochLoader.stream`,
        over heterogeneous minibatches)."""
        epoch = int(c.epoch_info()["epoch"])
        if self._last_epoch is not None and epoch <= self._last_epoch:
            epoch = int(c.advance(self._last_epoch)["epoch"])  # the last iter() was left part-way
        self._last_epoch = epoch
        return c.hetero_batches(epoch, depth=self.depth, semantics=self.semantics)

    def batches(self) -> Iterator[HeteroBatch]:  # type: ignore[override]  # HeteroBatches, not Batches
        """The next epoch's raw minibatches: the training stream's next
        epoch, or the split's minibatches."""
        c = self.client()
        if self.shuffle:
            it = self._stream(c)
        else:
            if self._split is None:
                self._split = int(c.hetero_split(self.node_type, self.nodes.astype(np.uint32),
                                                 self.batch_size)["split"])
            it = c.hetero_split_batches(self._split, depth=self.depth, semantics=self.semantics)
        return self._numbered(it, len(self))

    def _numbered(self, it: Iterator[HeteroBatch], n: int) -> Iterator[HeteroBatch]:
        """The first ``n`` minibatches of ``it``, each with ``input_id``."""
        return first_n(it, n, lambda b: setattr(b, "input_id", self.input_id(self.seeds(b))))

    def close(self) -> None:
        """Close the connection; the last loader of a server stops it."""
        self._finalizer()


def input_type_and_nodes(input_nodes: Any, who: str) -> Tuple[str, Any]:
    """PyG's heterogeneous ``input_nodes``: ``(node_type, mask | ids |
    None)`` or a node type alone (every node of it); anything else is a
    ValueError."""
    if isinstance(input_nodes, str):
        return input_nodes, None
    if isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(input_nodes[0], str):
        return input_nodes[0], input_nodes[1]
    if input_nodes is None:
        raise ValueError("%s: a heterogeneous graph needs input_nodes=(node_type, mask or ids) or a node type "
                         "(PyG's rule: the seeds' type must be named)" % who)
    raise ValueError("%s: input_nodes of a heterogeneous graph: want (node_type, mask or ids) or a node type, got %s "
                     "(a plain mask or id list names no node type)" % (who, type(input_nodes).__name__))


class HeteroNeighborLoader(HeteroNodeLoader):
    """PyG's ``NeighborLoader(data, num_neighbors, input_nodes=(type, mask
    | ids | None), batch_size, shuffle, drop_last, transform, ...)`` over a
    heterogeneous graph (``data``: its directory, or a PyG ``HeteroData``
    written to a temporary directory once): what
    ``streamsampler.pyg.NeighborLoader`` returns for heterogeneous input.

    ``num_neighbors``: a list (every edge type) or a dict per edge type
    (PyG's rules, :func:`relation_fanouts`); each value 0 (the edge type
    is not sampled at that hop), 1 to 64, or -1 (every neighbor). Each
    minibatch is a ``torch_geometric.data.HeteroData`` as PyG's loader
    builds it for a ``HeteroData`` (:func:`to_hetero_data`);
    ``semantics="dgl"`` (not PyG's) yields the raw DGL-semantics
    :class:`~streamsampler.hetero.HeteroBatch` es instead. ``seed``
    fixes the samples and the shuffles (default: drawn from torch's
    generator). ``server_args`` are extra ``streamsampler serve`` flags.

    ``device`` (not PyG's: what wrapping PyG's loader in
    ``PrefetchLoader(loader, device)`` does): each ``HeteroData`` is moved
    to the device in the loader's background thread, ``prefetch`` of them
    ahead of the step, and ``batch.to(device)`` is then a no-op; without
    one, its tensors are in page-locked memory where torch has CUDA
    (``pin_memory=False``: not), so that ``batch.to(device,
    non_blocking=True)`` copies asynchronously.

    Refused: ``replace=True`` (the heterogeneous server samples without
    replacement only), temporal, weighted and disjoint sampling
    (NotImplementedError). The worker arguments are accepted and ignored.
    """

    def __init__(self, data: Any, num_neighbors: Any, input_nodes: Any = None, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, replace: bool = False,
                 transform: Optional[Callable[[Any], Any]] = None, seed: Optional[int] = None,
                 semantics: str = "pyg", prefetch: Optional[int] = None, server_args: Sequence[str] = (),
                 binary: Optional[PathArg] = None, device: Any = None, pin_memory: Optional[bool] = None,
                 **kwargs: Any) -> None:
        who = "NeighborLoader"
        for k in ("input_time", "time_attr", "weight_attr", "temporal_strategy"):
            if kwargs.pop(k, None) not in (None, "uniform"):
                raise NotImplementedError("%s(%s=...): temporal and weighted sampling are not supported by "
                                          "streamsampler" % (who, k))
        if kwargs.pop("disjoint", False):
            raise NotImplementedError("%s(disjoint=True) is not supported by streamsampler" % who)
        if kwargs.pop("subgraph_type", "directional") != "directional":
            raise NotImplementedError("%s(subgraph_type=...): only 'directional' (PyG's default)" % who)
        for k in ("delta", "device_features", "fresh"):
            if kwargs.pop(k, None) not in (None, False):
                raise NotImplementedError("%s(%s=...): not supported for heterogeneous graphs yet" % (who, k))
        unknown = set(kwargs) - IGNORED_ARGS  # pin_memory is not ignored: it is honoured
        if unknown:
            raise TypeError("%s got unexpected keyword arguments: %s" % (who, ", ".join(sorted(unknown))))
        if replace:
            raise NotImplementedError("%s(replace=True): the heterogeneous server samples without replacement "
                                      "only" % who)
        if semantics not in ("pyg", "dgl"):
            raise ValueError("%s: semantics=%r, want 'pyg' or 'dgl'" % (who, semantics))
        node_type, nodes = input_type_and_nodes(input_nodes, who)
        graph = graph_dir(data)
        info = HeteroGraph(graph)
        fan = relation_fanouts(num_neighbors, info.edge_types)
        #: The user's transform, applied to each ``HeteroData``.
        self.user_transform = transform
        #: PyG's ``loader.data``: what the loader was given.
        self.data = data
        super().__init__(graph, fan, batch_size, node_type, nodes, shuffle, drop_last, semantics,
                         self._to_data if semantics == "pyg" else None, seed=seed, prefetch=prefetch,
                         server_args=server_args, binary=binary, device=device, pin_memory=pin_memory)

    def _to_data(self, batch: HeteroBatch) -> Any:
        data = to_hetero_data(batch, self)
        if self.user_transform is not None:
            data = self.user_transform(data)
        return data


def _labels_of(batch: HeteroBatch, info: HeteroGraph, t: str, n_id: npt.NDArray[np.int64]) -> Optional[npt.NDArray[np.int64]]:
    """Node type ``t``'s labels for the rows ``n_id``: the server's (a
    server with --features sends them, one per row) where it sent them,
    else read from the graph."""
    ys = getattr(batch, "y", None) or {}
    if t in ys and len(ys[t]) == len(n_id):
        return np.asarray(ys[t], dtype=np.int64)
    labels = info.labels(t)
    if labels is None:
        return None
    return np.asarray(labels[n_id], dtype=np.int64)


def to_hetero_data(batch: HeteroBatch, loader: HeteroNodeLoader) -> Any:
    """A PyG-semantics minibatch as the ``torch_geometric.data.HeteroData``
    PyG's NeighborLoader yields for a ``HeteroData`` (its
    ``filter_hetero_data`` and ``set_value_dict`` calls,
    torch_geometric/loader/neighbor_loader.py and loader/utils.py): per
    node type ``n_id`` (int64), ``x`` (the server's rows, where the type
    has a store), ``y`` (int64, where the type has labels), each split
    mask of the type sliced by ``n_id``, ``num_sampled_nodes`` (a list)
    and ``num_nodes``; per edge type ``edge_index`` (int64 [2, E]),
    ``e_id`` (through the relation's edge_perm.npy, where it has one, to
    the column of the ``edge_index`` it was imported from) and
    ``num_sampled_edges`` (a list); on the seed type ``input_id`` and
    ``batch_size``."""
    needs = "torch and torch_geometric"
    torch = require("torch", "streamsampler.pyg.NeighborLoader", needs, "the raw HeteroBatch (transform=None)")
    HeteroData = require("torch_geometric.data", "streamsampler.pyg.NeighborLoader", needs,
                         "the raw HeteroBatch (transform=None)").HeteroData
    if batch.semantics != "pyg":
        raise ValueError("to_hetero_data: a %s-semantics minibatch (PyG's HeteroData needs semantics='pyg')"
                         % batch.semantics)
    info = loader.info
    data = HeteroData()
    for t in info.node_types:
        nodes = batch.nodes[t]
        n_id = nodes.n_id.astype(np.int64)
        st = data[t]
        st.num_nodes = len(n_id)
        x = batch.x.get(t)
        if x is not None:
            st.x = torch.from_numpy(np.asarray(x))
        y = _labels_of(batch, info, t, n_id)
        if y is not None:
            st.y = torch.from_numpy(y)
        for name, m in info.masks(t).items():
            setattr(st, name, torch.from_numpy(m[n_id]))
        st.n_id = torch.from_numpy(n_id)
        st.num_sampled_nodes = [int(v) for v in nodes.num_sampled_nodes]
    for et in info.edge_types:
        e = batch.edges[et]
        st = data[et]
        st.edge_index = torch.from_numpy(np.ascontiguousarray(e.edge_index, dtype=np.int64))
        if e.e_id is not None:
            perm = info.edge_perm(et)
            e_id = np.asarray(e.e_id, dtype=np.int64)
            st.e_id = torch.from_numpy(np.asarray(perm[e_id], dtype=np.int64) if perm is not None else e_id)
        st.num_sampled_edges = [int(v) for v in e.num_sampled_edges]
    seed_store = data[loader.node_type]
    seed_store.input_id = torch.from_numpy(np.asarray(getattr(batch, "input_id"), dtype=np.int64))
    seed_store.batch_size = int(batch.nodes[loader.node_type].batch_size)
    return data


def check_homogeneous_args(input_nodes: Any, num_neighbors: Any) -> None:
    """A homogeneous graph with PyG's heterogeneous arguments (a ``(type,
    nodes)`` input, a dict of fanouts) is a ValueError that says so."""
    if isinstance(input_nodes, tuple):
        raise ValueError("NeighborLoader: input_nodes=(%r, ...) names a node type, but the graph is homogeneous "
                         "(no hetero.json; a heterogeneous graph is built with `chunkify build --node-types` or "
                         "from_pyg of a HeteroData): pass the mask or ids alone" % (input_nodes[0],))
    if isinstance(num_neighbors, Mapping):
        raise ValueError("NeighborLoader: num_neighbors is a dict of edge types, but the graph is homogeneous: "
                         "pass a list of fanouts")

