"""The servers the framework loaders share, and what they load from them.

A PyG ``NeighborLoader`` or DGL ``DataLoader`` of this package starts no
server of its own when another loader of the same graph and sampling
(fanouts, replacement, seed) has one: the training loader and the
validation and test loaders of a script are served by one
``streamsampler serve``, the training nodes as its epoch stream and every
other node list as a split of it (docs/PROTOCOL.md). A server starts when
a loader first needs it (``iter`` or a ``split``), with the training nodes
of a shuffling loader made for it by then, and stops when the last loader
using it is closed or collected, or at exit.

:class:`NodeLoader` is what both frameworks' loaders are made of: one
epoch per ``iter()``, minibatches prefetched in a thread, each a
:class:`streamsampler.Batch` with ``input_id`` (the seeds' positions in
the loader's input nodes).
"""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .client import Client
from .executables import PathArg
from .loader import prefetched
from .local import LocalServer, _env_int
from .protocol import Batch

#: Node ids or a boolean mask, as the loaders accept them (numpy arrays,
#: torch tensors, sequences).
Nodes = Any


def node_ids(nodes: Nodes, num_nodes: int, what: str = "input_nodes") -> np.ndarray:
    """``nodes`` as int64 node ids: a boolean mask of ``num_nodes``, or ids
    (checked to be in the graph). Torch tensors are converted."""
    if hasattr(nodes, "detach"):
        nodes = nodes.detach().cpu().numpy()
    a = np.asarray(nodes)
    if a.dtype == np.bool_:
        if a.shape != (num_nodes,):
            raise ValueError("%s: a mask of shape %s for a graph of %d nodes" % (what, a.shape, num_nodes))
        return np.flatnonzero(a).astype(np.int64)
    if a.ndim != 1 or not (a.size == 0 or np.issubdtype(a.dtype, np.integer)):
        raise ValueError("%s: want a 1-D array of node ids or a boolean mask, got dtype %s shape %s"
                         % (what, a.dtype, a.shape))
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or a.max() >= num_nodes):
        bad = a[(a < 0) | (a >= num_nodes)][0]
        raise ValueError("%s: node %d is not in the graph of %d nodes" % (what, bad, num_nodes))
    return a


def check_fanouts(fanouts: Sequence[int], what: str) -> List[int]:
    """``fanouts`` as ints, each 1 to 64 (ValueError naming ``what``)."""
    out = [int(f) for f in fanouts]
    for f in out:
        if not 1 <= f <= 64:
            raise ValueError("%s %d: streamsampler samples 1 to 64 neighbors per hop (not -1, every neighbor)"
                             % (what, f))
    return out


def default_seed() -> int:
    """A sampling seed drawn from torch's random generator when torch is
    installed (so that ``torch.manual_seed`` fixes the minibatches, as it
    fixes PyG's and DGL's), else 0."""
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.randint(0, 2**62, (1,)).item())


def graph_num_nodes(graph: str) -> int:
    """The node count of a graph directory (its manifest)."""
    from .graph import read_manifest

    return int(read_manifest(graph)["num_nodes"])


#: Whether the shared servers sample edge ids (``serve --edge-ids``): PyG's
#: ``e_id``, DGL's ``dgl.EID``.
EDGE_IDS = True


class _Training:
    """A server's training stream: its nodes, batch size, drop_last and
    semantics."""

    def __init__(self, nodes: np.ndarray, batch_size: int, drop_last: bool, semantics: str) -> None:
        self.nodes = nodes
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.semantics = semantics

    def same(self, o: "_Training") -> bool:
        return (self.batch_size, self.drop_last, self.semantics) == (o.batch_size, o.drop_last, o.semantics) \
            and np.array_equal(np.unique(self.nodes), np.unique(o.nodes))


class SharedServer:
    """One ``streamsampler serve`` of a graph and sampling configuration,
    shared by the loaders made for them (see the module's doc)."""

    def __init__(self, graph: str, fanouts: Sequence[int], replace: bool, seed: int,
                 server_args: Sequence[str], binary: Optional[PathArg]) -> None:
        self.graph = graph
        self.fanouts = list(fanouts)
        self.replace = replace
        self.seed = seed
        self.server_args = list(server_args)
        self.binary = binary
        self.training: Optional[_Training] = None
        self.local: Optional[LocalServer] = None
        self.users = 0
        self._lock = threading.Lock()
        self.features = os.path.exists(os.path.join(graph, "features.json"))

    def start(self, fallback: np.ndarray) -> LocalServer:
        """The running server, started now if it is not (with the training
        stream, else with ``fallback`` as its training nodes: a server
        serves splits beside a stream it must have)."""
        with self._lock:
            if self.local is not None:
                return self.local
            t = self.training or _Training(fallback, 1024, False, "dgl")
            args = ["--semantics", t.semantics] + (["--edge-ids"] if EDGE_IDS else []) + \
                (["--drop-last"] if t.drop_last else [])
            if self.features:
                args.append("--features")
            self.local = LocalServer(self.graph, np.unique(t.nodes), self.fanouts, t.batch_size, seed=self.seed,
                                     replace=self.replace, binary=self.binary,
                                     extra_args=args + self.server_args).start()
            return self.local

    def stop(self) -> None:
        with self._lock:
            if self.local is not None:
                self.local.stop()
                self.local = None


_registry_lock = threading.Lock()
_registry: Dict[Tuple[str, Tuple[int, ...], bool, Tuple[str, ...]], List[SharedServer]] = {}


def acquire(graph: str, fanouts: Sequence[int], replace: bool, seed: int, training: Optional[_Training],
            server_args: Sequence[str] = (), binary: Optional[PathArg] = None) -> SharedServer:
    """The shared server for a loader: with ``training`` (a shuffling
    loader) one whose training stream and seed are the same, or one not
    started and without a stream yet, which takes them; without, any of
    the graph's (a split's minibatches come from its server's seed)."""
    key = (os.path.realpath(graph), tuple(fanouts), bool(replace), tuple(server_args))
    with _registry_lock:
        servers = _registry.setdefault(key, [])
        chosen = None
        for s in servers:
            if training is None:
                chosen = s
                break
            if s.training is not None and s.training.same(training) and s.seed == seed:
                chosen = s
                break
            if s.training is None and s.local is None:
                s.training, s.seed = training, seed
                chosen = s
                break
        if chosen is None:
            chosen = SharedServer(key[0], fanouts, replace, seed, server_args, binary)
            chosen.training = training
            servers.append(chosen)
        chosen.users += 1
        return chosen


def release(s: SharedServer) -> None:
    """A loader is done with ``s``; the last one stops it."""
    with _registry_lock:
        s.users -= 1
        if s.users > 0:
            return
        for key, servers in list(_registry.items()):
            if s in servers:
                servers.remove(s)
                if not servers:
                    del _registry[key]
    s.stop()


@atexit.register
def _stop_all() -> None:
    with _registry_lock:
        servers = [s for ss in _registry.values() for s in ss]
        _registry.clear()
    for s in servers:
        s.stop()


_converted_lock = threading.Lock()
_converted: Dict[int, Tuple[Any, str]] = {}


def graph_dir(graph: Any, binary: Optional[PathArg] = None) -> str:
    """A graph directory for ``graph``: a path as is; a PyG ``Data``
    (anything with ``edge_index``) written once by ``from_pyg`` into a
    temporary directory, removed when the object is collected."""
    if isinstance(graph, (str, os.PathLike)):
        return os.fspath(graph)
    if not hasattr(graph, "edge_index"):
        raise TypeError("graph: want a graph directory (streamsampler.from_pyg / chunkify) or a PyG Data, got %s"
                        % type(graph).__name__)
    from .convert import from_pyg

    with _converted_lock:
        hit = _converted.get(id(graph))
        if hit is not None and hit[0]() is graph:
            return hit[1]
        tmp = tempfile.mkdtemp(prefix="streamsampler-pyg-")
        out = os.path.join(tmp, "graph")
        from_pyg(graph, out)
        try:
            ref: Callable[[], Any] = weakref.ref(graph)
            weakref.finalize(graph, _remove, tmp, id(graph))
        except TypeError:  # not weakly referable: kept until exit
            ref = (lambda g=graph: g)
        _converted[id(graph)] = (ref, out)
        return out


def _remove(tmp: str, key: int) -> None:
    import shutil

    with _converted_lock:
        _converted.pop(key, None)
    shutil.rmtree(tmp, ignore_errors=True)


class NodeLoader:
    """Minibatches of seed nodes from a shared server (see the module's
    doc), one epoch per ``iter()``.

    ``seed`` (default: drawn from torch's generator, see
    :func:`default_seed`) fixes the shuffles and the samples.
    ``shuffle=True``: the nodes are the server's training stream, a fresh
    seeded shuffle every epoch, cut into ``batch_size`` pieces (the last
    short unless ``drop_last``); prepared ahead by the server. A stream
    left part-way (a ``break``) is left for good: the next ``iter()`` is
    the next epoch. ``shuffle=False``: the nodes are a split, served in the
    given order, every node once (the last minibatch short unless
    ``drop_last``), sampled from the server's current epoch.

    Each minibatch is a :class:`streamsampler.Batch` with ``semantics``
    ("pyg" or "dgl") and ``input_id`` set: int64 positions of its seeds in
    ``nodes``; ``transform`` maps it to what ``iter`` yields.
    """

    def __init__(self, graph: Any, fanouts: Sequence[int], batch_size: int, nodes: Optional[Nodes],
                 shuffle: bool, drop_last: bool, semantics: str, transform: Optional[Callable[[Batch], Any]],
                 replace: bool = False, seed: Optional[int] = None, prefetch: int = 4, depth: int = 4,
                 server_args: Sequence[str] = (), binary: Optional[PathArg] = None) -> None:
        if semantics not in ("pyg", "dgl"):
            raise ValueError("semantics %r, want 'pyg' or 'dgl'" % (semantics,))
        if int(batch_size) < 1:
            raise ValueError("batch_size %r, want >= 1" % (batch_size,))
        self.graph = graph_dir(graph, binary)
        self.num_nodes = graph_num_nodes(self.graph)
        self.fanouts = check_fanouts(fanouts, "fanout")
        self.batch_size = int(batch_size)
        self.nodes = (np.arange(self.num_nodes, dtype=np.int64) if nodes is None
                      else node_ids(nodes, self.num_nodes))
        if len(self.nodes) == 0:
            raise ValueError("input_nodes: no nodes")
        if len(np.unique(self.nodes)) != len(self.nodes):
            raise ValueError("input_nodes: a node appears twice (each node is a seed once per epoch)")
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.semantics = semantics
        self.transform = transform
        self.prefetch = prefetch
        self.depth = depth
        self.seed = int(seed) if seed is not None else default_seed()
        self._order = np.argsort(self.nodes, kind="stable")
        self._sorted = self.nodes[self._order]
        training = _Training(self.nodes, self.batch_size, self.drop_last, semantics) if self.shuffle else None
        self._server = acquire(self.graph, self.fanouts, replace, self.seed, training, server_args, binary)
        self._client: Optional[Client] = None
        self._split: Optional[int] = None
        self._last_epoch: Optional[int] = None
        self._finalizer = weakref.finalize(self, _close, self._server, [None])

    def __len__(self) -> int:
        """Minibatches per epoch (``iter()``)."""
        n = len(self.nodes)
        if self.shuffle:
            world = _env_int("WORLD_SIZE", 1)
            n //= world  # every rank serves the smallest shard's count
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def client(self) -> Client:
        """The loader's connection (made on first use, starting the
        server if needed)."""
        if self._client is None:
            local = self._server.start(self.nodes)
            self._client = local.client(shared_rows=self._server.features)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close, self._server, [self._client])
        return self._client

    def input_id(self, seeds: np.ndarray) -> np.ndarray:
        """The seeds' positions in the loader's input nodes."""
        pos = np.searchsorted(self._sorted, seeds.astype(np.int64))
        return self._order[pos]

    def batches(self) -> Iterator[Batch]:
        """One epoch of raw minibatches (no prefetching, no transform)."""
        c = self.client()
        if self.shuffle:
            info = c.epoch_info()
            e = info["epoch"]
            if self._last_epoch is not None and e <= self._last_epoch:
                e = c.advance(self._last_epoch)["epoch"]  # the last iter() was left part-way
            self._last_epoch = e
            it = c.batches(e, depth=self.depth, semantics=self.semantics)
        else:
            if self._split is None:
                self._split = c.split(self.nodes.astype(np.uint32), self.batch_size)["split"]
            it = c.split_batches(self._split, depth=self.depth, semantics=self.semantics)
        n = len(self)
        try:
            for i, b in enumerate(it):
                if i >= n:
                    break
                b.input_id = self.input_id(b.seeds)
                yield b
        finally:
            it.close()

    def __iter__(self) -> Iterator[Any]:
        return prefetched(self.batches, self.transform, self.prefetch)

    def close(self) -> None:
        """Close the connection; the last loader of a server stops it."""
        self._finalizer()

    def __enter__(self) -> "NodeLoader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(server: SharedServer, client: List[Optional[Client]]) -> None:
    if client[0] is not None:
        client[0].close()
    release(server)

