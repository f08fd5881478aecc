"""A drop-in for DGL's ``DataLoader`` with a ``NeighborSampler``
(``dgl.dataloading``).

A DGL script swaps its loader by changing the import and the
constructor's first argument::

    # from dgl.dataloading import DataLoader, NeighborSampler
    from streamsampler.dgl import DataLoader, NeighborSampler

    sampler = NeighborSampler([10, 25])          # DGL order: input layer first
    loader = DataLoader("graph/", train_nids, sampler, batch_size=1024, shuffle=True)
    for input_nodes, output_nodes, blocks in loader:
        x = blocks[0].srcdata["feat"]
        y = blocks[-1].dstdata["label"]

Fanouts are in DGL's order: the first is the input layer's, the last the
seeds' hop (``NeighborSampler([10, 25])`` samples 25 neighbors of each
seed, then 10 of each node reached). Blocks follow DGL's ``to_block``:
each block's dst nodes are its first src nodes; ``srcdata[dgl.NID]`` and
``dstdata[dgl.NID]`` hold global node ids, ``edata[dgl.EID]`` each edge's
id (its position in the stored CSR, mapped to the input ``edge_index``
column where the graph came from :func:`streamsampler.from_pyg`); with a
feature store ``blocks[0].srcdata["feat"]`` and
``blocks[-1].dstdata["label"]``. Edges are sampled as DGL samples them, as
in-edges. Loaders of one graph share a server (see
:mod:`streamsampler.loader.servers`): ``shuffle=False`` loaders (validation,
test) are splits of it.

The blocks are :func:`streamsampler.to_dgl`'s (their arrays,
:func:`streamsampler.dgl_arrays`, tested without DGL); ``dgl.create_block``
is called only when iterating.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ..adapters import dgl_arrays, dgl_blocks, to_dgl
from ..batch import Batch
from ..delta import DeltaTransfer
from ..optional import require
from ..typing import GraphSource, Nodes, PathArg
from .node_loader import NodeLoader
from .utils import ALL_NEIGHBORS, check_fanouts

__all__ = ["DataLoader", "MultiLayerFullNeighborSampler", "NeighborSampler", "as_sampler"]


class NeighborSampler:
    """DGL's ``NeighborSampler(fanouts, replace=False, ...)``: ``fanouts``
    per GNN layer, input layer first (each 1 to 64, or DGL's -1: every
    neighbor, in CSR order; for a heterogeneous graph a layer may be a
    dict edge type → fanout, DGL's rules, :mod:`.hetero_dgl_loader`). ``prefetch_node_feats`` and
    ``prefetch_labels`` are accepted for compatibility: the features and
    labels of a graph with a feature store always come (as "feat" and
    "label")."""

    def __init__(self, fanouts: Sequence[Any], replace: bool = False, edge_dir: str = "in",
                 prefetch_node_feats: Any = None, prefetch_labels: Any = None, prefetch_edge_feats: Any = None,
                 output_device: Any = None, prob: Optional[str] = None, mask: Optional[str] = None) -> None:
        if edge_dir != "in":
            raise NotImplementedError("NeighborSampler(edge_dir=%r): streamsampler samples in-edges "
                                      "(store out-edges by building the graph without --reverse)" % edge_dir)
        if prob is not None or mask is not None:
            raise NotImplementedError("NeighborSampler(prob=/mask=): weighted sampling is not supported")
        #: Per layer, input layer first: an int, or (heterogeneous graphs)
        #: a dict edge type → int, as DGL's ``sample_neighbors`` takes them;
        #: checked against the graph's edge types by the loader.
        self.fanouts: List[Any]
        if any(isinstance(f, Mapping) for f in fanouts):
            self.fanouts = [dict(f) if isinstance(f, Mapping) else int(f) for f in fanouts]
        else:
            self.fanouts = check_fanouts(fanouts, "NeighborSampler: fanout")
        self.replace = bool(replace)
        self.output_device = output_device

    @property
    def per_etype(self) -> bool:
        """Whether a layer's fanouts are per edge type (a dict): a
        heterogeneous graph's sampler."""
        return any(isinstance(f, dict) for f in self.fanouts)

    @property
    def hop_fanouts(self) -> List[int]:
        """The fanouts in hop order (the seeds' hop first), as the server
        takes them: DGL's order reversed."""
        if self.per_etype:
            raise ValueError("NeighborSampler: per-edge-type fanouts (dicts) need a heterogeneous graph")
        return self.fanouts[::-1]


class MultiLayerFullNeighborSampler(NeighborSampler):
    """DGL's ``MultiLayerFullNeighborSampler(num_layers, ...)``: every
    neighbor of every node at each of ``num_layers`` layers, the
    ``NeighborSampler([-1] * num_layers)`` it is in DGL. With one layer,
    over every node in order without shuffling — DGL's layer-wise
    inference loop::

        sampler = MultiLayerFullNeighborSampler(1)
        loader = DataLoader("graph/", torch.arange(num_nodes), sampler, batch_size=4096, shuffle=False)
        for layer in model.layers:
            y = torch.empty(num_nodes, layer_out_dim)
            for input_nodes, output_nodes, blocks in loader:
                y[output_nodes] = layer(blocks[0], feat[input_nodes])
            feat = y

    — the minibatches are the server's full scan: ``batch_size``
    consecutive nodes with all of their in-neighbors, made by one
    sequential pass over the graph's chunks
    (:class:`~streamsampler.loader.NodeLoader`); any other use is an
    epoch's full layers."""

    def __init__(self, num_layers: int, **kwargs: Any) -> None:
        if int(num_layers) < 1:
            raise ValueError("MultiLayerFullNeighborSampler: num_layers %r, want >= 1" % (num_layers,))
        super().__init__([ALL_NEIGHBORS] * int(num_layers), **kwargs)


def as_sampler(graph_sampler: Any) -> NeighborSampler:
    """``graph_sampler`` as this module's :class:`NeighborSampler`: one of
    ours as it is, and DGL's own ``NeighborSampler`` or
    ``MultiLayerFullNeighborSampler`` (``dgl.dataloading``, recognised by
    their class name and module, so DGL need not be installed to tell)
    rebuilt from their ``fanouts``, ``replace``, ``edge_dir``, ``prob``
    and ``mask`` (DGL keeps these as attributes), which refuses what
    streamsampler does not do as our constructor does. Anything else is a
    TypeError."""
    if isinstance(graph_sampler, NeighborSampler):
        return graph_sampler
    cls = type(graph_sampler)
    if cls.__module__.split(".")[0] == "dgl" and cls.__name__ in ("NeighborSampler", "MultiLayerFullNeighborSampler"):
        fanouts = getattr(graph_sampler, "fanouts", None)
        if fanouts is None:
            raise TypeError("DataLoader: DGL's %s has no fanouts attribute to read" % cls.__name__)
        return NeighborSampler([dict(f) if isinstance(f, Mapping) else int(f) for f in fanouts], replace=bool(getattr(graph_sampler, "replace", False)),
                               edge_dir=str(getattr(graph_sampler, "edge_dir", "in")),
                               prob=getattr(graph_sampler, "prob", None), mask=getattr(graph_sampler, "mask", None))
    raise TypeError("DataLoader: graph_sampler must be a streamsampler.dgl.NeighborSampler or "
                    "MultiLayerFullNeighborSampler (or DGL's), got %s" % cls.__name__)


class DataLoader(NodeLoader):
    """DGL's ``DataLoader(graph, indices, graph_sampler, batch_size,
    shuffle, drop_last, device, ...)`` over a streamsampler graph
    directory (``graph``: its path, or a PyG ``Data``), yielding
    ``(input_nodes, output_nodes, blocks)``. ``indices``: node ids or a
    boolean mask. ``seed`` fixes the samples and shuffles.

    ``device`` (as DGL's; default the sampler's ``output_device``, else
    None: the host): the blocks are made on it in the loader's background
    thread, ``prefetch`` (default 2) ahead of the step, from index arrays
    and features copied through page-locked buffers on a side stream (the
    feature rows straight from the server's shared buffers where CUDA
    could register them), which is what DGL's ``use_uva``,
    ``use_alternate_streams`` and ``pin_prefetcher`` ask for (they are
    accepted and need nothing more). ``delta=True``: ``feat`` through a
    :class:`~streamsampler.DeltaTransfer`. Without a device, the blocks'
    tensors are in page-locked memory where torch has CUDA, unless
    ``pin_memory=False``. ``device_features`` (None: automatic): the
    feature store held on a CUDA ``device`` and ``feat``/``label``
    gathered there (see :class:`~streamsampler.loader.NodeLoader`).
    ``fresh`` (None: automatic): a ``shuffle=False`` loader over a small
    node set samples by random reads, the same blocks bit for bit (see
    :class:`~streamsampler.loader.NodeLoader`).

    With an edge-prediction sampler (``as_edge_prediction_sampler``),
    ``indices`` are edge ids and the loader is a
    :class:`~streamsampler.loader.link_loader.LinkDataLoader` (DGL's one
    ``DataLoader`` serves both)."""

    def __new__(cls, graph: GraphSource, indices: Any, graph_sampler: Any, *args: Any, **kwargs: Any) -> Any:
        from .hetero_dgl_loader import HeteroDataLoader
        from .hetero_loader import is_hetero_graph
        from .link_loader import LinkDataLoader, as_link_sampler
        link = as_link_sampler(graph_sampler)  # ours or DGL's as_edge_prediction_sampler
        if link is not None:
            return LinkDataLoader(graph, indices, link, *args, **kwargs)
        if is_hetero_graph(graph):
            return HeteroDataLoader(graph, indices, graph_sampler, *args, **kwargs)
        if isinstance(indices, Mapping):
            raise ValueError("DataLoader: indices is a dict of node types, but the graph is homogeneous (no "
                             "hetero.json): pass the node ids alone")
        return super().__new__(cls)

    def __init__(self, graph: GraphSource, indices: Optional[Nodes], graph_sampler: Any,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, device: Any = None,
                 seed: Optional[int] = None, prefetch: Optional[int] = None, server_args: Sequence[str] = (),
                 binary: Optional[PathArg] = None, pin_memory: Optional[bool] = None,
                 delta: Union[bool, DeltaTransfer, None] = False, device_features: Optional[bool] = None,
                 fresh: Optional[bool] = None, **kwargs: Any) -> None:
        graph_sampler = as_sampler(graph_sampler)
        ignored = {"num_workers", "use_uva", "use_ddp", "ddp_seed", "use_prefetch_thread", "use_alternate_streams",
                   "pin_prefetcher", "persistent_workers"}
        unknown = set(kwargs) - ignored
        if unknown:
            raise TypeError("DataLoader got unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        self.sampler = graph_sampler
        super().__init__(graph, graph_sampler.hop_fanouts, batch_size, indices, shuffle, drop_last, "dgl",
                         self._to_blocks, replace=graph_sampler.replace, seed=seed, prefetch=prefetch,
                         server_args=server_args, binary=binary,
                         device=device if device is not None else graph_sampler.output_device,
                         pin_memory=pin_memory, delta=delta, device_features=device_features, fresh=fresh)

    def _to_blocks(self, batch: Batch) -> Tuple[Any, Any, List[Any]]:
        """A minibatch as DGL's ``(input_nodes, output_nodes, blocks)``, on
        the host."""
        return to_dgl(batch, edge_perm=self.edge_perm)

    def host_minibatch(self, batch: Batch) -> Any:
        """The blocks' arrays (:func:`~streamsampler.dgl_arrays`) as host
        tensors, and the seeds: what is moved before the blocks are made."""
        torch = require("torch", "streamsampler.dgl.DataLoader", "torch and dgl", "dgl_arrays")
        arrays = dgl_arrays(batch, self.edge_perm)
        tensors = [{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in b.items()}
                   for b in arrays]
        return tensors, torch.from_numpy(batch.seeds.astype(np.int64))

    def finish_minibatch(self, obj: Any) -> Tuple[Any, Any, List[Any]]:
        """The blocks, made (on the device) from the moved tensors."""
        tensors, seeds = obj
        table = self.table()
        if table is not None and tensors:
            x, _ = table.gather(tensors[0]["src_ids"])
            tensors[0]["feat"] = x
            if table.y is not None:
                tensors[-1]["label"] = table.y.index_select(0, tensors[-1]["dst_ids"])
        return dgl_blocks(tensors, seeds)


def _register_hetero() -> None:
    # isinstance(loader, DataLoader) holds for the heterograph loader that
    # DataLoader(...) returns (an ABC virtual subclass).
    from .hetero_dgl_loader import HeteroDataLoader
    DataLoader.register(HeteroDataLoader)


_register_hetero()
