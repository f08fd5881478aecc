"""The servers the framework loaders share.

A PyG ``NeighborLoader`` or DGL ``DataLoader`` of this package starts no
server of its own when another loader of the same graph and sampling
(fanouts, replacement, seed) has one: the training loader and the
validation and test loaders of a script are served by one
``streamsampler serve``, the training nodes as its epoch stream and every
other node list as a split of it (docs/PROTOCOL.md). A server starts when
a loader first needs it (``iter`` or a ``split``), with the training nodes
of a shuffling loader made for it by then, and stops when the last loader
using it is closed or collected, or at exit.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from ..client import Client
from ..local import LocalServer
from ..typing import PathArg

__all__ = ["EDGE_IDS", "RelationFanouts", "SharedServer", "TrainingStream", "acquire", "acquire_scan", "close_loader",
           "release"]

#: A heterogeneous server's per-relation fanouts: (src___rel___dst,
#: fanouts per hop) pairs, those of the relations that do not take the
#: default fanouts (``serve --relation-fanouts``).
RelationFanouts = Sequence[Tuple[str, Sequence[int]]]

#: Whether the shared servers sample edge ids (``serve --edge-ids``): PyG's
#: ``e_id``, DGL's ``dgl.EID``.
EDGE_IDS = True


class TrainingStream:
    """A server's training stream: its nodes, batch size, drop_last and
    semantics; on a heterogeneous graph, the nodes' type (``node_type``,
    local ids of it: ``serve --train-type``)."""

    def __init__(self, nodes: npt.NDArray[np.int64], batch_size: int, drop_last: bool, semantics: str,
                 node_type: Optional[str] = None) -> None:
        self.nodes = nodes
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.semantics = semantics
        self.node_type = node_type

    def same(self, o: TrainingStream) -> bool:
        """Whether ``o`` is the same stream (the same nodes in any order)."""
        return (self.batch_size, self.drop_last, self.semantics, self.node_type) == \
            (o.batch_size, o.drop_last, o.semantics, o.node_type) \
            and np.array_equal(np.unique(self.nodes), np.unique(o.nodes))


class SharedServer:
    """One ``streamsampler serve`` of a graph and sampling configuration,
    shared by the loaders made for them (see the module's doc)."""

    def __init__(self, graph: str, fanouts: Sequence[int], replace: bool, seed: int,
                 server_args: Sequence[str], binary: Optional[PathArg], rows: bool = True,
                 relation_fanouts: RelationFanouts = ()) -> None:
        self.graph = graph
        self.fanouts = list(fanouts)
        self.replace = replace
        self.seed = seed
        self.server_args = list(server_args)
        self.binary = binary
        self.training: Optional[TrainingStream] = None
        self.local: Optional[LocalServer] = None
        self.users = 0
        self._lock = threading.Lock()
        #: Whether the graph has a feature store.
        self.features = os.path.exists(os.path.join(graph, "features.json"))
        #: Whether the server reads the store's rows and labels into its
        #: minibatches (``serve --features``): not for loaders that hold
        #: the store on their device (``device_features``).
        self.rows = self.features and rows
        #: Whether the graph is heterogeneous (hetero.json): the server
        #: takes ``--train-type`` and ``relation_fanouts``.
        self.hetero = os.path.exists(os.path.join(graph, "hetero.json"))
        #: A heterogeneous server's fanouts of the relations that do not
        #: take ``fanouts``: (src___rel___dst, fanouts) pairs.
        self.relation_fanouts = tuple((str(k), tuple(int(f) for f in v)) for k, v in relation_fanouts)
        #: The node type of ``start``'s fallback training nodes (a
        #: heterogeneous server started for a split: the split's type).
        self.fallback_type: Optional[str] = None
        if self.hetero:
            # Per-type stores (features/TYPE/features.json): serve --features
            # with any of them.
            fdir = os.path.join(graph, "features")
            self.features = os.path.isdir(fdir) and any(
                os.path.exists(os.path.join(fdir, t, "features.json")) for t in os.listdir(fdir))
            self.rows = self.features and rows

    def start(self, fallback: npt.NDArray[np.int64]) -> LocalServer:
        """The running server, started now if it is not (with the training
        stream, else with ``fallback`` as its training nodes, of
        :attr:`fallback_type` on a heterogeneous graph: a server serves
        splits beside a stream it must have)."""
        with self._lock:
            if self.local is not None:
                return self.local
            t = self.training or TrainingStream(fallback, 1024, False, "dgl", self.fallback_type)
            args = ["--semantics", t.semantics] + (["--edge-ids"] if EDGE_IDS else [])
            if self.hetero:
                # drop_last is the loader's (the heterogeneous server has no
                # --drop-last): it stops before the short last minibatch.
                args += ["--train-type", str(t.node_type)]
                for rel, fs in self.relation_fanouts:
                    args += ["--relation-fanouts", "%s=%s" % (rel, ",".join(map(str, fs)))]
            elif t.drop_last:
                args.append("--drop-last")
            if self.rows:
                args.append("--features")
            self.local = LocalServer(self.graph, np.unique(t.nodes), self.fanouts, t.batch_size, seed=self.seed,
                                     replace=self.replace, binary=self.binary,
                                     extra_args=args + self.server_args).start()
            return self.local

    def stop(self) -> None:
        """Stop the server if it runs."""
        with self._lock:
            if self.local is not None:
                self.local.stop()
                self.local = None


_registry_lock = threading.Lock()
_registry: Dict[Tuple[str, Tuple[int, ...], bool, Tuple[str, ...], bool, Tuple[Tuple[str, Tuple[int, ...]], ...]],
                List[SharedServer]] = {}


def acquire(graph: str, fanouts: Sequence[int], replace: bool, seed: int, training: Optional[TrainingStream],
            server_args: Sequence[str] = (), binary: Optional[PathArg] = None, rows: bool = True,
            relation_fanouts: RelationFanouts = ()) -> SharedServer:
    """The shared server for a loader: with ``training`` (a shuffling
    loader) one whose training stream and seed are the same, or one not
    started and without a stream yet, which takes them; without, any of
    the graph's (a split's minibatches come from its server's seed).
    ``rows``: whether the loader takes feature rows from the server (else
    it holds the store on its device, and shares servers that read none).
    ``relation_fanouts``: a heterogeneous graph's relations sampled with
    other fanouts than ``fanouts`` (part of the key: a loader shares only a
    server that samples every relation alike)."""
    rel = tuple((str(k), tuple(int(f) for f in v)) for k, v in relation_fanouts)
    key = (os.path.realpath(graph), tuple(fanouts), bool(replace), tuple(server_args), bool(rows), rel)
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
            chosen = SharedServer(key[0], fanouts, replace, seed, server_args, binary, rows=rows,
                                  relation_fanouts=rel)
            chosen.training = training
            servers.append(chosen)
        chosen.users += 1
        return chosen


def acquire_scan(graph: str, server_args: Sequence[str] = (), binary: Optional[PathArg] = None,
                 rows: bool = True) -> SharedServer:
    """A shared server for full scans (layer-wise inference: a scan needs
    no sampling, so any server of the graph answers it): one already made
    for the graph with the same ``server_args`` and ``rows``, else a new
    one, which a scan starts with a placeholder training stream (node 0,
    one neighbor: its first epoch samples one node)."""
    real = os.path.realpath(graph)
    with _registry_lock:
        for key, servers in _registry.items():
            if key[0] == real and key[3] == tuple(server_args) and key[4] == bool(rows) and servers:
                servers[0].users += 1
                return servers[0]
    return acquire(graph, [1], False, 0, None, server_args, binary, rows=rows)


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


def close_loader(server: SharedServer, client: List[Optional[Client]]) -> None:
    """What a loader's finalizer runs: close its connection (``client[0]``,
    once made) and release its server (the last loader stops it)."""
    if client[0] is not None:
        client[0].close()
    release(server)


@atexit.register
def _stop_all() -> None:
    with _registry_lock:
        servers = [s for ss in _registry.values() for s in ss]
        _registry.clear()
    for s in servers:
        s.stop()
