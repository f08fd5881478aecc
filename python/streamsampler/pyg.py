"""A drop-in for PyG's ``NeighborLoader``.

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
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from .adapters import _require, pyg_arrays
from .executables import PathArg
from .protocol import Batch
from .servers import NodeLoader

#: Arguments of torch's DataLoader that PyG's NeighborLoader passes on and
#: that have no meaning here (the server samples; a thread prefetches).
_IGNORED = {"num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "worker_init_fn", "timeout",
            "generator", "multiprocessing_context", "collate_fn", "sampler", "batch_sampler",
            "filter_per_worker", "is_sorted", "directed"}


class NeighborLoader(NodeLoader):
    """PyG's ``NeighborLoader(data, num_neighbors, input_nodes, batch_size,
    shuffle, drop_last, replace, transform, ...)`` over a streamsampler
    graph directory (``data``: its path, or a PyG ``Data``).

    ``num_neighbors`` are per hop, hop 1 (the seeds' neighbors) first, 1
    to 64 each. ``input_nodes``: a boolean mask or node ids (None: every
    node). ``seed`` fixes the samples and the shuffles (same seed, same
    minibatches); ``semantics="dgl"`` assembles DGL's blocks instead.
    ``server_args`` are extra ``streamsampler serve`` flags (e.g.
    ``["--feature-cache", "4GiB"]``). Homogeneous graphs only; arguments
    of PyG's loader that need what the server does not do (temporal
    sampling, disjoint subgraphs, weighted sampling, heterogeneous input)
    are refused with NotImplementedError.
    """

    def __init__(self, data: Any, num_neighbors: Sequence[int], input_nodes: Any = None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, replace: bool = False,
                 transform: Optional[Callable[[Any], Any]] = None, seed: Optional[int] = None,
                 semantics: str = "pyg", prefetch: int = 4, server_args: Sequence[str] = (),
                 binary: Optional[PathArg] = None, **kwargs: Any) -> None:
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
        unknown = set(kwargs) - _IGNORED
        if unknown:
            raise TypeError("NeighborLoader got unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        self._user_transform = transform
        super().__init__(data, num_neighbors, batch_size, input_nodes, shuffle, drop_last, semantics,
                         self._to_data, replace=replace, seed=seed, prefetch=prefetch,
                         server_args=server_args, binary=binary)
        self._labels: Optional[np.ndarray] = None
        self._masks: Optional[Dict[str, np.ndarray]] = None
        self._edge_perm: Optional[np.ndarray] = None
        self._loaded = False

    def _load(self) -> None:
        """The graph's labels, split masks and edge permutation, read once."""
        if self._loaded:
            return
        from .convert import load_edge_perm

        if self._server.features:
            from .featstore import FeatureStore

            self._labels = FeatureStore(self.graph).y
        elif os.path.exists(os.path.join(self.graph, "labels.npy")):
            self._labels = np.load(os.path.join(self.graph, "labels.npy"), mmap_mode="r")
        self._masks = {}
        splits = os.path.join(self.graph, "splits")
        if os.path.isdir(splits):
            for name in sorted(os.listdir(splits)):
                if name.endswith(".npy"):
                    m = np.zeros(self.num_nodes, dtype=np.bool_)
                    m[np.load(os.path.join(splits, name))] = True
                    self._masks[name[:-4] + "_mask"] = m
        self._edge_perm = load_edge_perm(self.graph)
        self._loaded = True

    def _to_data(self, batch: Batch) -> Any:
        """A minibatch as PyG's ``Data`` (see the class doc)."""
        return to_data(batch, self)


def to_data(batch: Batch, loader: NeighborLoader) -> Any:
    """``batch`` as the ``torch_geometric.data.Data`` PyG's NeighborLoader
    yields, with the loader's labels, masks and edge permutation."""
    needs = "torch and torch_geometric"
    torch = _require("torch", "streamsampler.pyg.NeighborLoader", needs, "pyg_arrays")
    Data = _require("torch_geometric.data", "streamsampler.pyg.NeighborLoader", needs, "pyg_arrays").Data
    loader._load()
    a = pyg_arrays(batch)
    n_id = a["n_id"]
    data = Data(edge_index=torch.from_numpy(a["edge_index"]), num_nodes=len(n_id))
    if batch.x is not None:
        data.x = torch.from_numpy(np.asarray(batch.x))
    if loader._labels is not None:
        data.y = torch.from_numpy(np.asarray(loader._labels[n_id], dtype=np.int64))
    for name, m in (loader._masks or {}).items():
        data[name] = torch.from_numpy(m[n_id])
    data.n_id = torch.from_numpy(n_id)
    if a["e_id"] is not None:
        e_id = a["e_id"]
        if loader._edge_perm is not None:
            e_id = np.asarray(loader._edge_perm[e_id], dtype=np.int64)
        data.e_id = torch.from_numpy(e_id)
    data.input_id = torch.from_numpy(np.asarray(batch.input_id, dtype=np.int64))
    data.batch_size = a["batch_size"]
    data.num_sampled_nodes = a["num_sampled_nodes"]
    data.num_sampled_edges = a["num_sampled_edges"]
    if loader._user_transform is not None:
        data = loader._user_transform(data)
    return data


def __getattr__(name: str) -> Any:
    """``Node2Vec`` is made on first use: it subclasses
    ``torch_geometric.nn.Node2Vec``, and this module imports without
    torch."""
    if name == "Node2Vec":
        cls = _node2vec_class()
        globals()["Node2Vec"] = cls
        return cls
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _node2vec_class() -> Any:
    torch = _require("torch", "streamsampler.pyg.Node2Vec", "torch and torch_geometric", "Client.walks")
    nn = _require("torch_geometric.nn", "streamsampler.pyg.Node2Vec", "torch and torch_geometric", "Client.walks")

    class Node2Vec(nn.Node2Vec):  # type: ignore[misc, name-defined]
        """PyG's ``Node2Vec`` with its walks from streamsampler (no
        torch_cluster or pyg-lib, a graph of any size): the same
        embedding, ``loss``, ``loader``, ``forward`` and ``test``;
        ``pos_sample`` asks a streamsampler server for the walks (node2vec
        with ``p``, ``q``; DeepWalk when both are 1; DESIGN §3), so::

            # model = torch_geometric.nn.Node2Vec(data.edge_index, ...)
            model = streamsampler.pyg.Node2Vec("graph/", embedding_dim=128, walk_length=20,
                                               context_size=10, walks_per_node=10)
            loader = model.loader(batch_size=128, shuffle=True)
            for pos_rw, neg_rw in loader:
                loss = model.loss(pos_rw.to(device), neg_rw.to(device))

        ``graph`` is a graph directory (``from_pyg``) or a PyG ``Data``.
        A walk that reaches a node without neighbors stays there, as
        torch_cluster's do (the server pads it with -1). Each batch's
        walks have a seed drawn from torch's generator
        (``torch.manual_seed`` fixes them)."""

        def __init__(self, graph: Any, embedding_dim: int, walk_length: int, context_size: int,
                     walks_per_node: int = 1, p: float = 1.0, q: float = 1.0, num_negative_samples: int = 1,
                     num_nodes: Optional[int] = None, sparse: bool = False, binary: Optional[PathArg] = None,
                     server_args: Sequence[str] = ()) -> None:
            torch.nn.Module.__init__(self)  # PyG's __init__ looks for torch_cluster / pyg-lib
            from .servers import acquire, graph_dir, graph_num_nodes

            if walk_length < context_size:
                raise ValueError("walk_length %d < context_size %d" % (walk_length, context_size))
            self.graph = graph_dir(graph, binary)
            self.num_nodes = graph_num_nodes(self.graph) if num_nodes is None else int(num_nodes)
            self.EPS = 1e-15
            self.embedding_dim = embedding_dim
            self.walk_length = walk_length - 1  # steps, as PyG keeps it
            self.context_size = context_size
            self.walks_per_node = walks_per_node
            self.p, self.q = p, q
            self.num_negative_samples = num_negative_samples
            self.embedding = torch.nn.Embedding(self.num_nodes, embedding_dim, sparse=sparse)
            self.reset_parameters()
            # A server of the graph (walks need no epoch stream; one of
            # fanout 1 over node 0 is made if no loader has one).
            self._server = acquire(self.graph, [1], False, 0, None, server_args, binary)
            self._client: Any = None

        def _walks(self, batch: Any) -> Any:
            if self._client is None:
                self._client = self._server.start(np.zeros(1, np.int64)).client()
            mode = "deepwalk" if self.p == 1 and self.q == 1 else "node2vec"
            seed = int(torch.randint(0, 2**62, (1,)).item())
            rw = self._client.walks(batch.cpu().numpy().astype(np.uint32), self.walk_length,
                                    walks_per_node=self.walks_per_node, mode=mode, seed=seed, p=self.p, q=self.q)
            rw = np.array(rw, dtype=np.int64)
            # A walk that ended stays on its last node, as torch_cluster's.
            for t in range(1, rw.shape[1]):
                ended = rw[:, t] < 0
                rw[ended, t] = rw[ended, t - 1]
            return torch.from_numpy(rw)

        def pos_sample(self, batch: Any) -> Any:
            if not torch.is_tensor(batch):
                batch = torch.tensor(batch)
            rw = self._walks(batch)
            num_walks_per_rw = 1 + self.walk_length + 1 - self.context_size
            return torch.cat([rw[:, j:j + self.context_size] for j in range(num_walks_per_rw)], dim=0)

        def close(self) -> None:
            """Close the connection; the last user of the server stops it."""
            from .servers import release

            if self._client is not None:
                self._client.close()
                self._client = None
            if self._server is not None:
                release(self._server)
                self._server = None

    return Node2Vec
