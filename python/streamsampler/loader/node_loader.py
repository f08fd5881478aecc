"""Minibatches of seed nodes from a shared server: what the PyG and DGL
loaders (:mod:`.neighbor_loader`, :mod:`.dgl_loader`) are made of."""

from __future__ import annotations

import weakref
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ..batch import Batch
from ..client import Client
from ..protocol import ServerError
from ..convert import load_edge_perm
from ..delta import DeltaTransfer
from ..local import env_int
from ..typing import GraphSource, Nodes, PathArg
from . import device_table
from .base import EpochLoader
from .servers import EDGE_IDS, SharedServer, TrainingStream, acquire, acquire_scan, close_loader
from .utils import check_fanouts, default_seed, first_n, graph_dir, graph_num_nodes, node_ids

__all__ = ["FRESH_REACH", "NodeLoader"]

#: The largest reach, as a fraction of the graph's nodes, for which a
#: ``shuffle=False`` loader samples by random reads on its own
#: (``fresh=None``): random reads beat a streaming pass below about 1–2%
#: of the nodes (docs/PERFORMANCE.md, the random-read crossover).
FRESH_REACH = 0.01


class NodeLoader(EpochLoader):
    """Minibatches of seed nodes from a shared server
    (:mod:`streamsampler.loader.servers`), one epoch per ``iter()``.

    ``graph`` is a graph directory or a PyG ``Data`` (written to a
    temporary directory once). ``seed`` (default: drawn from torch's
    generator, see :func:`~streamsampler.loader.utils.default_seed`) fixes
    the shuffles and the samples. ``shuffle=True``: the nodes are the
    server's training stream, a fresh seeded shuffle every epoch, cut into
    ``batch_size`` pieces (the last short unless ``drop_last``); prepared
    ahead by the server. A stream left part-way (a ``break``) is left for
    good: the next ``iter()`` is the next epoch (:class:`EpochLoader`).
    ``shuffle=False``: the nodes are a split, served in the given order,
    every node once (the last minibatch short unless ``drop_last``),
    sampled from the server's current epoch.

    Each minibatch is a :class:`streamsampler.Batch` with ``semantics``
    ("pyg" or "dgl") and ``input_id`` set: int64 positions of its seeds in
    ``nodes``; ``transform`` maps it to what ``iter`` yields.

    ``device``, ``prefetch`` (default 4, 2 with a device), ``pin_memory``
    and ``delta``: see :class:`EpochLoader`. The connection takes the
    feature rows in shared buffers, which a CUDA ``device`` copies from
    directly.

    ``fanouts=[-1]`` over every node in order (``nodes`` None or all of
    them, ascending), ``shuffle=False``: the *full scan* of layer-wise
    inference (PyG's ``NeighborLoader(data, input_nodes=None,
    num_neighbors=[-1], shuffle=False)``, DGL's
    ``MultiLayerFullNeighborSampler(1)`` over ``torch.arange(N)``):
    minibatches of ``batch_size`` consecutive nodes with all of their
    in-neighbors, which the server makes by one sequential pass over the
    graph's chunks, without sampling (docs/PYTHON.md, "Layer-wise
    inference"); ``full_scan`` says the loader is one.

    ``fresh`` (None: automatic): with ``shuffle=False``, sample the
    minibatches by the server's random-read sampler (``sample_fresh``,
    DESIGN §4c) instead of a split: each minibatch is read from the graph
    there and then, touching only the blocks that hold its neighbors, with
    no split to register and no streaming pass. The minibatches are the
    split's bit for bit (the same key: the server's seed and current
    epoch), so the choice is about speed alone: automatic takes it for a
    node set whose reach — its nodes times the product of (1 + fanout)
    over the hops — is at most :data:`FRESH_REACH` of the graph's nodes
    (below the random-read crossover, docs/PERFORMANCE.md) and whose
    fanouts are all sampled (no -1).

    ``device_features`` (None: automatic): with a CUDA ``device``, hold the
    graph's feature store there (every row checked against its CRC-32C
    once, as it is loaded) and gather each minibatch's rows and labels on
    the device, so that only ids and edges cross the bus and the server
    reads no rows (:mod:`~streamsampler.loader.device_table`). By default
    on where the store fits a quarter of the device's memory and no
    ``delta`` transfer is asked for; False takes the rows from the server
    with every minibatch (out-of-core features); True insists.
    """

    def __init__(self, graph: GraphSource, fanouts: Sequence[int], batch_size: int, nodes: Optional[Nodes],
                 shuffle: bool, drop_last: bool, semantics: str, transform: Optional[Callable[[Batch], Any]],
                 replace: bool = False, seed: Optional[int] = None, prefetch: Optional[int] = None, depth: int = 4,
                 server_args: Sequence[str] = (), binary: Optional[PathArg] = None, device: Any = None,
                 pin_memory: Optional[bool] = None, delta: Union[bool, DeltaTransfer, None] = False,
                 device_features: Optional[bool] = None, fresh: Optional[bool] = None) -> None:
        if semantics not in ("pyg", "dgl"):
            raise ValueError("semantics %r, want 'pyg' or 'dgl'" % (semantics,))
        if int(batch_size) < 1:
            raise ValueError("batch_size %r, want >= 1" % (batch_size,))
        super().__init__(transform, prefetch, depth, device=device, pin_memory=pin_memory, delta=delta)
        self.graph = graph_dir(graph)
        #: Whether the loader holds the graph's feature store on its device
        #: (:mod:`~streamsampler.loader.device_table`) and gathers each
        #: minibatch's rows there, its server reading none.
        self.device_features = device_table.resolve(device_features, self.device, delta, self.graph,
                                                    type(self).__name__)
        self._table: Optional[device_table.DeviceTable] = None
        self.num_nodes = graph_num_nodes(self.graph)
        self.batch_size = int(batch_size)
        self.nodes = (np.arange(self.num_nodes, dtype=np.int64) if nodes is None
                      else node_ids(nodes, self.num_nodes))
        #: Whether the loader is the full scan of layer-wise inference
        #: (every node in order, all neighbors, no shuffle: see the class doc).
        self.full_scan = [int(f) for f in fanouts] == [-1] and not shuffle and \
            np.array_equal(self.nodes, np.arange(self.num_nodes))
        self.fanouts = check_fanouts(fanouts, "fanout")
        if len(self.nodes) == 0:
            raise ValueError("input_nodes: no nodes")
        if len(np.unique(self.nodes)) != len(self.nodes):
            raise ValueError("input_nodes: a node appears twice (each node is a seed once per epoch)")
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.semantics = semantics
        self.seed = int(seed) if seed is not None else default_seed()
        self.replace = bool(replace)
        #: Whether the minibatches come from the random-read sampler
        #: (``sample_fresh``) rather than a split (see the class doc).
        self.fresh = self._fresh(fresh)
        self._order = np.argsort(self.nodes, kind="stable")
        self._sorted = self.nodes[self._order]
        training = TrainingStream(self.nodes, self.batch_size, self.drop_last, semantics) if self.shuffle else None
        #: The shared server this loader's minibatches come from.
        self.server: SharedServer = (
            acquire_scan(self.graph, server_args, binary, rows=not self.device_features) if self.full_scan else
            acquire(self.graph, self.fanouts, replace, self.seed, training, server_args, binary,
                    rows=not self.device_features))
        self._client: Optional[Client] = None
        self._split: Optional[int] = None
        self._edge_perm: Optional[npt.NDArray[np.int64]] = None
        self._edge_perm_loaded = False
        self._finalizer = weakref.finalize(self, close_loader, self.server, [None])

    def _fresh(self, fresh: Optional[bool]) -> bool:
        """Whether to sample by random reads: as asked, or (None) where
        the node set's reach is small (the class doc)."""
        if self.shuffle or self.full_scan:
            if fresh:
                raise ValueError("fresh=True samples a fixed node set (shuffle=False), not a training stream "
                                 "or a full scan")
            return False
        if fresh is not None:
            return bool(fresh)
        if any(f < 1 for f in self.fanouts):
            return False
        reach = float(len(self.nodes))
        for f in self.fanouts:
            reach *= 1 + f
        return reach <= FRESH_REACH * self.num_nodes

    def __len__(self) -> int:
        """Minibatches per epoch (``iter()``)."""
        n = len(self.nodes)
        if self.shuffle:
            n //= env_int("WORLD_SIZE", 1)  # every rank serves the smallest shard's count
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def client(self) -> Client:
        """The loader's connection (made on first use, starting the
        server if needed)."""
        if self._client is None:
            # A full scan needs no training stream: a server it starts
            # samples a placeholder (node 0) rather than every node.
            local = self.server.start(self.nodes[:1] if self.full_scan else self.nodes)
            self._client = local.client(shared_rows=self.server.rows)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, close_loader, self.server, [self._client])
        return self._client

    def table(self) -> Optional[device_table.DeviceTable]:
        """The feature store on the loader's device (loaded and checked on
        first use, shared with the graph's other loaders on the device), or
        None where the rows come from the server."""
        if self.device_features and self._table is None:
            self._table = device_table.device_table(self.graph, self.device)
        return self._table

    def connection(self) -> Optional[Client]:
        """The loader's connection (see :meth:`client`)."""
        return self.client()

    def input_id(self, seeds: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
        """The seeds' positions in the loader's input nodes."""
        pos = np.searchsorted(self._sorted, seeds.astype(np.int64))
        return self._order[pos]

    @property
    def edge_perm(self) -> Optional[npt.NDArray[np.int64]]:
        """The graph's ``edge_perm.npy`` (stored edge i is column
        ``edge_perm[i]`` of the ``edge_index`` it was imported from),
        memory-mapped on first use; None when the graph has none."""
        if not self._edge_perm_loaded:
            self._edge_perm = load_edge_perm(self.graph)
            self._edge_perm_loaded = True
        return self._edge_perm

    def batches(self) -> Iterator[Batch]:
        """The next epoch's raw minibatches (no prefetching, no transform):
        the training stream's next epoch, or the split's minibatches."""
        c = self.client()
        if self.full_scan:
            it = self._scan(c)
        elif self.shuffle:
            it = self.stream(c, self.semantics)
        elif self.fresh:
            # The split's key: the server's seed and its current epoch.
            ep = int(c.epoch_info()["epoch"])
            it = c.fresh_batches(self.nodes.astype(np.uint32), self.fanouts, self.batch_size, seed=self.seed,
                                 epoch=ep, replace=self.replace, edge_ids=EDGE_IDS, semantics=self.semantics,
                                 depth=self.depth)
        else:
            if self._split is None:
                self._split = int(c.split(self.nodes.astype(np.uint32), self.batch_size)["split"])
            it = c.split_batches(self._split, depth=self.depth, semantics=self.semantics)
        return self._numbered(it, len(self))

    def scan_rows(self) -> bool:
        """Whether a full scan's minibatches carry their nodes' rows: where
        the server serves rows (not with ``device_features``)."""
        return bool(self.server.rows)

    @property
    def dataset(self) -> range:
        """The seed nodes' positions (``len(loader.dataset)`` is the number
        of seed nodes, as of PyG's and DGL's loaders)."""
        return range(len(self.nodes))

    def _scan(self, c: Client) -> Iterator[Batch]:
        """A full scan's minibatches (one pass over the chunks), the scan
        closed on the server when the iteration ends or is left."""
        info = c.scan(self.batch_size, rows=self.scan_rows(), edge_ids=EDGE_IDS, semantics=self.semantics)
        try:
            yield from c.scan_batches(int(info["scan"]), depth=self.depth)
        finally:
            try:
                c.drop_scan(int(info["scan"]))
            except (OSError, ServerError):
                pass  # the connection is gone: so is the scan

    def _numbered(self, it: Iterator[Batch], n: int) -> Iterator[Batch]:
        """The first ``n`` minibatches of ``it``, each with ``input_id``."""
        def mark(b: Batch) -> None:
            b.input_id = self.input_id(b.seeds)
        return first_n(it, n, mark)

    def close(self) -> None:
        """Close the connection; the last loader of a server stops it."""
        self._finalizer()

