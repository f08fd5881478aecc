"""Link prediction's loaders: a drop-in for PyG's ``LinkNeighborLoader``
(``torch_geometric/loader/link_neighbor_loader.py``, ``link_loader.py``)
and DGL's ``DataLoader`` over edge ids with an
``as_edge_prediction_sampler`` sampler (``dgl/dataloading/base.py``).

Each minibatch is ``batch_size`` seed edges (positives) of a training or
evaluation edge set, their negatives, and the neighborhoods of every
endpoint. The server (H3's ``serve --train-edges``, docs/PROTOCOL.md)
draws the negatives and samples the hops; a minibatch arrives as a
:class:`~streamsampler.Batch` whose ``link``
(:class:`~streamsampler.link.LinkFields`) holds the supervision in local
ids, whose ``seeds`` (the start of ``n_id``) are the sorted unique
endpoints of the positives and negatives, and whose hops are exactly a
node minibatch's over those seeds.

* **PyG** (:class:`LinkNeighborLoader`, ``semantics="pyg"``): a ``Data``
  with PyG's fields: ``n_id`` (``torch.unique`` of the endpoints, so
  sorted, then each hop's new nodes), ``e_id``, ``edge_index``,
  ``input_id`` (the positives' positions in ``edge_label_index``),
  ``num_sampled_nodes``/``num_sampled_edges``, ``x``/``y`` of ``n_id`` and
  the node masks, and, as PyG's ``edge_sample`` and
  ``LinkLoader.filter_fn`` make them: ``edge_label_index`` (positives,
  then negatives, local) and ``edge_label`` (the given labels, incremented
  by one in binary mode when their minimum is 0, else float ones; zeros of
  the same dtype for the negatives; absent without labels and without
  negatives), or in triplet mode ``src_index``, ``dst_pos_index`` and
  ``dst_neg_index`` ([P, amount], squeezed to [P] for amount 1 as PyG's
  ``view(num_pos, -1).squeeze(-1)`` does) and no edge_label fields.
* **DGL** (:class:`LinkDataLoader`, made by :class:`streamsampler.dgl.DataLoader`
  when its sampler is an :class:`EdgePredictionSampler`):
  ``(input_nodes, pair_graph, neg_pair_graph, blocks)`` (without a
  negative sampler ``(input_nodes, pair_graph, blocks)``) as DGL's
  ``EdgePredictionSampler.sample`` returns them. ``compact_graphs([pair,
  neg])`` numbers the seed nodes in order of first appearance over the
  positives' sources, their destinations, the negatives' sources, their
  destinations (DGL's ``graph/transform/compact.cc``: one ``IdHashMap``
  updated with each graph's src then dst arrays), so the blocks are
  rebuilt from the server's (sorted-seed) blocks in that order, as
  ``to_block`` would build them from the same samples (:func:`dgl_link_arrays`).

Negatives are drawn by the server from the loader's ``seed`` (same seed,
same negatives), fresh for every minibatch and epoch, uniformly over the
graph's nodes as PyG's ``torch.randint`` and DGL's ``Uniform`` draw them;
not torch's generator, so a script's ``torch.manual_seed`` fixes them
through ``seed``'s default (:func:`~streamsampler.loader.utils.default_seed`)
rather than draw by draw.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from ..adapters import pyg_arrays
from ..batch import Batch
from ..client import Client
from ..convert import EDGE_SPLIT_SUFFIX, load_edge_perm, load_edge_split
from ..featstore import FeatureStore
from ..graph import read_csr
from ..link import NEG_BINARY, NEG_NONE, NEG_TRIPLET
from ..local import LocalServer, env_int
from ..optional import require
from ..typing import GraphSource, PathArg
from .base import EpochLoader
from .servers import EDGE_IDS, SharedServer, TrainingStream, acquire, release
from .utils import IGNORED_ARGS, check_fanouts, default_seed, first_n, graph_dir, graph_num_nodes

__all__ = ["EdgePredictionSampler", "LinkDataLoader", "LinkLoader", "LinkNeighborLoader", "Uniform",
           "as_edge_prediction_sampler", "as_link_sampler", "dgl_link_arrays", "graph_edge_index", "neg_sampling_args",
           "pyg_link_arrays"]

#: PyG's DataLoader arguments that mean nothing here, accepted and ignored
#: as NeighborLoader does, and LinkNeighborLoader's transform_sampler_output.
_IGNORED = IGNORED_ARGS | {"transform_sampler_output"}


def neg_sampling_args(neg_sampling: Any, neg_sampling_ratio: Optional[float] = None,
                      who: str = "LinkNeighborLoader") -> Tuple[str, float]:
    """(mode, amount) of PyG's ``neg_sampling`` as ``NegativeSampling.cast``
    reads it: None, a mode string ("binary", "triplet"), a dict or tuple
    of ``NegativeSampling``'s arguments, or an object with ``mode`` and
    ``amount`` (PyG's ``NegativeSampling``, its mode an enum or a string).
    ``neg_sampling_ratio`` (PyG's deprecated argument) is binary sampling
    of that amount. Weighted negatives are refused (NotImplementedError);
    an amount <= 0, or a fractional one in triplet mode, is a ValueError
    as in PyG."""
    if neg_sampling_ratio is not None and float(neg_sampling_ratio) != 0.0:
        if neg_sampling is not None:
            raise ValueError("%s: give neg_sampling or neg_sampling_ratio, not both" % who)
        neg_sampling = ("binary", float(neg_sampling_ratio))
    if neg_sampling is None:
        return NEG_NONE, 0.0
    weight: Any = None
    if isinstance(neg_sampling, str):
        mode, amount = neg_sampling, 1.0
    elif isinstance(neg_sampling, dict):
        d = dict(neg_sampling)
        mode, amount = d.pop("mode", None), d.pop("amount", 1)
        weights = [d.pop(w, None) for w in ("weight", "src_weight", "dst_weight")]
        weight = next((w for w in weights if w is not None), None)
        if d:
            raise TypeError("%s: neg_sampling has unknown keys %s" % (who, sorted(d)))
    elif isinstance(neg_sampling, (tuple, list)):
        if not 1 <= len(neg_sampling) <= 4:  # NegativeSampling(mode, amount, src_weight, dst_weight)
            raise TypeError("%s: neg_sampling=%r, want (mode, amount)" % (who, neg_sampling))
        mode = neg_sampling[0]
        amount = neg_sampling[1] if len(neg_sampling) > 1 else 1
        weight = next((w for w in neg_sampling[2:] if w is not None), None)
    elif hasattr(neg_sampling, "mode"):
        mode, amount = neg_sampling.mode, getattr(neg_sampling, "amount", 1)
        for w in ("weight", "src_weight", "dst_weight"):
            if getattr(neg_sampling, w, None) is not None:
                weight = getattr(neg_sampling, w)
    else:
        raise TypeError("%s: neg_sampling=%r, want None, 'binary', 'triplet', a dict or a NegativeSampling"
                        % (who, neg_sampling))
    mode = str(getattr(mode, "value", mode))  # PyG's NegativeSamplingMode enum
    if mode not in (NEG_BINARY, NEG_TRIPLET):
        raise ValueError("%s: negative sampling mode %r, want 'binary' or 'triplet'" % (who, mode))
    if weight is not None:
        raise NotImplementedError("%s: weighted negative sampling (NegativeSampling weight=) is not supported by "
                                  "streamsampler: negatives are uniform over the nodes" % who)
    amount = float(amount)
    if not amount > 0:
        raise ValueError("%s: negative sampling amount %r, want > 0" % (who, amount))
    if mode == NEG_TRIPLET and amount != math.ceil(amount):
        raise ValueError("%s: triplet negative sampling needs an integer amount, got %r" % (who, amount))
    return mode, amount


def graph_edge_index(graph: str) -> npt.NDArray[np.int64]:
    """The ``edge_index`` [2, E] of a graph directory, in DGL's and PyG's
    edge-id order: the input ``edge_index`` of a graph from ``from_pyg``
    (its columns through ``edge_perm.npy``), else the stored CSR's order
    (edge id = position, as ``e_id`` is). Row 0 the source (a stored
    in-edge's neighbor), row 1 the destination."""
    indptr, indices = read_csr(graph)
    dst = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(np.asarray(indptr, dtype=np.int64)))
    src = np.asarray(indices, dtype=np.int64)
    perm = load_edge_perm(graph)
    out = np.empty((2, len(src)), np.int64)
    if perm is None:
        out[0], out[1] = src, dst
    else:
        out[0, perm], out[1, perm] = src, dst
    return out


def _as_edges(edge_label_index: Any, who: str) -> npt.NDArray[np.int64]:
    """A [2, E] int64 array of ``edge_label_index`` (a tensor, an array)."""
    a = np.asarray(edge_label_index.detach().cpu().numpy() if hasattr(edge_label_index, "detach")
                   else edge_label_index)
    if a.ndim != 2 or a.shape[0] != 2 or not (a.size == 0 or a.dtype.kind in "iu"):
        raise ValueError("%s: edge_label_index of dtype %s shape %s, want integer [2, E]" % (who, a.dtype, a.shape))
    return np.ascontiguousarray(a, dtype=np.int64)


def _as_array(a: Any) -> npt.NDArray[Any]:
    return np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a)


class LinkStream:
    """A link server's training stream: its seed edges, batch size,
    drop_last, negatives, exclusion and semantics (``same``: one server
    serves loaders that agree on all of them)."""

    def __init__(self, edges: npt.NDArray[np.int64], batch_size: int, drop_last: bool, semantics: str, mode: str,
                 amount: float, exclude: Optional[str], reverse_eids: Optional[npt.NDArray[np.int64]],
                 edges_file: Optional[str], eids: Optional[npt.NDArray[np.int64]] = None) -> None:
        self.edges = edges
        self.eids = eids
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.semantics = semantics
        self.mode = mode
        self.amount = amount
        self.exclude = exclude
        self.reverse_eids = reverse_eids
        self.edges_file = edges_file

    def same(self, o: LinkStream) -> bool:
        """Whether ``o`` is the same stream."""
        return ((self.batch_size, self.drop_last, self.semantics, self.mode, self.amount, self.exclude) ==
                (o.batch_size, o.drop_last, o.semantics, o.mode, o.amount, o.exclude)
                and np.array_equal(self.edges, o.edges)
                and (self.eids is None) == (o.eids is None)
                and (self.eids is None or o.eids is None or np.array_equal(self.eids, o.eids))
                and (self.reverse_eids is None) == (o.reverse_eids is None)
                and (self.reverse_eids is None or o.reverse_eids is None
                     or np.array_equal(self.reverse_eids, o.reverse_eids)))

    def server_args(self, tmp: str) -> List[str]:
        """``serve``'s link flags (files written under ``tmp``)."""
        path = self.edges_file
        if path is None:
            path = os.path.join(tmp, "train_edges.npy")
            np.save(path, self.edges)
        args = ["--train-edges", path, "--neg-sampling", self.mode]
        if self.eids is not None:
            # Each pair's stored edge id (serve --train-eids): what
            # exclusion goes by, exact also where a pair is stored twice.
            eids = os.path.join(tmp, "train_eids.npy")
            np.save(eids, self.eids)
            args += ["--train-eids", eids]
        if self.mode != NEG_NONE:
            args += ["--neg-amount", repr(self.amount)]
        if self.exclude is not None:
            args += ["--exclude", self.exclude]
        if self.reverse_eids is not None:
            rev = os.path.join(tmp, "reverse_eids.npy")
            np.save(rev, self.reverse_eids)
            args += ["--reverse-eids", rev]
        return args


class _LinkLocalServer(LocalServer):
    """``streamsampler serve`` of a link training stream: its flags name
    training edges, and serve takes training nodes or edges, not both
    (the ``--train`` LocalServer writes is left out)."""

    def args(self) -> List[str]:
        a = super().args()
        i = a.index("--train")
        return a[:i] + a[i + 2:]


class _LinkSharedServer(SharedServer):
    """A :class:`SharedServer` whose process is a :class:`_LinkLocalServer`
    (the node loaders' start, the same flags, without ``--train``)."""

    def start(self, fallback: npt.NDArray[np.int64]) -> LocalServer:
        with self._lock:
            if self.local is not None:
                return self.local
            t = self.training
            assert t is not None
            args = ["--semantics", t.semantics] + (["--edge-ids"] if EDGE_IDS else []) + \
                (["--drop-last"] if t.drop_last else [])
            if self.rows:
                args.append("--features")
            self.local = _LinkLocalServer(self.graph, np.unique(t.nodes), self.fanouts, t.batch_size, seed=self.seed,
                                          replace=self.replace, binary=self.binary,
                                          extra_args=args + self.server_args).start()
            return self.local


class _LinkServer:
    """A shared server of a link training stream: the node loaders'
    :class:`SharedServer` started with the stream's flags, and the
    temporary directory of its files."""

    def __init__(self, key: Tuple[Any, ...], stream: LinkStream, seed: int, graph: str, fanouts: Sequence[int],
                 replace: bool, server_args: Sequence[str], binary: Optional[PathArg], rows: bool) -> None:
        self.key = key
        self.stream = stream
        self.seed = seed
        self.tmp = tempfile.mkdtemp(prefix="streamsampler-link-")
        self.server = _LinkSharedServer(graph, fanouts, replace, seed,
                                        list(server_args) + stream.server_args(self.tmp), binary, rows=rows)
        # The batch size, drop_last and semantics of the stream; its nodes
        # (the endpoints) are not passed (--train-edges stands for --train).
        self.server.training = TrainingStream(np.unique(stream.edges), stream.batch_size, stream.drop_last,
                                              stream.semantics)
        self.server.users = 0


_link_lock = threading.Lock()
_link_servers: List[_LinkServer] = []


def _acquire_link(graph: str, fanouts: Sequence[int], replace: bool, seed: int, stream: Optional[LinkStream],
                  server_args: Sequence[str], binary: Optional[PathArg], rows: bool) -> SharedServer:
    """The server of a link loader: with ``stream`` (a training loader) the
    link server of the same stream and seed, made if there is none;
    without (an evaluation loader, whose edges are a split), any link
    server of the graph and sampling, else any of the node loaders'
    (:func:`streamsampler.loader.servers.acquire`)."""
    key = (os.path.realpath(graph), tuple(fanouts), bool(replace), tuple(server_args), bool(rows))
    with _link_lock:
        for ls in _link_servers:
            if ls.key == key and (stream is None or (ls.stream.same(stream) and ls.seed == seed)):
                ls.server.users += 1
                return ls.server
        if stream is not None:
            ls = _LinkServer(key, stream, seed, key[0], fanouts, replace, server_args, binary, rows)
            ls.server.users = 1
            _link_servers.append(ls)
            return ls.server
    return acquire(graph, fanouts, replace, seed, None, server_args, binary, rows=rows)


def _release(server: SharedServer) -> None:
    """A loader is done with ``server`` (a link server, or a node loaders'
    one); the last user stops it."""
    with _link_lock:
        ls = next((x for x in _link_servers if x.server is server), None)
        if ls is not None:
            server.users -= 1
            if server.users > 0:
                return
            _link_servers.remove(ls)
    if ls is None:
        release(server)
        return
    server.stop()
    shutil.rmtree(ls.tmp, ignore_errors=True)


class LinkLoader(EpochLoader):
    """Minibatches of seed edges from a shared server, one epoch per
    ``iter()``: what :class:`LinkNeighborLoader` and :class:`LinkDataLoader`
    are made of.

    ``edges`` (int64 [2, E]) are the seed edges; ``shuffle=True`` makes
    them the server's training stream (``serve --train-edges``: a seeded
    shuffle per epoch, sharded over ranks as node seeds are), with
    negatives of ``mode``/``amount`` and the ``exclude`` rule;
    ``shuffle=False`` serves them as a link split of the graph's server
    (``Client.link_split``: in order, each once). ``edges_file``: a file of
    the same edges for the server to read (a graph's edge split), else
    they are written to a temporary one; ``eids``: each edge's stored edge
    id (its position in the CSR; ``serve --train-eids``), which exclusion
    goes by; ``reverse_eids``: each stored edge's reverse's stored id. Each raw minibatch is a
    :class:`~streamsampler.Batch` with ``link`` set; ``transform`` maps it
    to what ``iter`` yields.
    """

    def __init__(self, graph: GraphSource, fanouts: Sequence[int], batch_size: int, edges: npt.NDArray[np.int64],
                 shuffle: bool, drop_last: bool, semantics: str, transform: Optional[Callable[[Batch], Any]],
                 mode: str = NEG_NONE, amount: float = 0.0, exclude: Optional[str] = None,
                 reverse_eids: Optional[npt.NDArray[np.int64]] = None, edges_file: Optional[str] = None,
                 eids: Optional[npt.NDArray[np.int64]] = None, replace: bool = False, seed: Optional[int] = None, prefetch: Optional[int] = None, depth: int = 4,
                 server_args: Sequence[str] = (), binary: Optional[PathArg] = None, device: Any = None,
                 pin_memory: Optional[bool] = None) -> None:
        who = type(self).__name__
        if semantics not in ("pyg", "dgl"):
            raise ValueError("%s: semantics %r, want 'pyg' or 'dgl'" % (who, semantics))
        if int(batch_size) < 1:
            raise ValueError("%s: batch_size %r, want >= 1" % (who, batch_size))
        super().__init__(transform, prefetch, depth, device=device, pin_memory=pin_memory)
        self.graph = graph_dir(graph)
        self.num_nodes = graph_num_nodes(self.graph)
        self.fanouts = check_fanouts(fanouts, "%s: fanout" % who)
        if edges.ndim != 2 or edges.shape[0] != 2:
            raise ValueError("%s: seed edges of shape %s, want [2, E]" % (who, edges.shape))
        if edges.shape[1] == 0:
            raise ValueError("%s: no seed edges" % who)
        bad = (edges < 0) | (edges >= self.num_nodes)
        if bad.any():
            r, c = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError("%s: edge_label_index[%d, %d] = %d is not a node of the graph (%d nodes)"
                             % (who, r, c, int(edges[r, c]), self.num_nodes))
        self.edges = edges
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.semantics = semantics
        self.mode, self.amount = mode, float(amount)
        self.seed = int(seed) if seed is not None else default_seed()
        stream = LinkStream(edges, self.batch_size, self.drop_last, semantics, mode, self.amount, exclude,
                            reverse_eids, edges_file, eids) if self.shuffle else None
        if not self.shuffle and exclude is not None:
            raise NotImplementedError("%s: exclude= applies to the training stream (shuffle=True); an evaluation "
                                      "split excludes nothing" % who)
        #: The shared server this loader's minibatches come from.
        self.server: SharedServer = _acquire_link(self.graph, self.fanouts, replace, self.seed, stream, server_args,
                                                  binary, rows=True)
        self._client: Optional[Client] = None
        self._split: Optional[int] = None
        self._edge_perm: Optional[npt.NDArray[np.int64]] = None
        self._edge_perm_loaded = False
        self._finalizer = weakref.finalize(self, _close, self.server, [None])

    def __len__(self) -> int:
        """Minibatches per epoch (``iter()``)."""
        n = self.edges.shape[1]
        if self.shuffle:
            n //= env_int("WORLD_SIZE", 1)  # every rank serves the smallest shard's count
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @property
    def dataset(self) -> range:
        """The seed edges' positions (``len(loader.dataset)``: their count)."""
        return range(self.edges.shape[1])

    def client(self) -> Client:
        """The loader's connection (made on first use, starting the server
        if needed)."""
        if self._client is None:
            local = self.server.start(np.unique(self.edges))
            self._client = local.client(shared_rows=self.server.rows)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close, self.server, [self._client])
        return self._client

    def connection(self) -> Optional[Client]:
        """The loader's connection (see :meth:`client`)."""
        return self.client()

    @property
    def edge_perm(self) -> Optional[npt.NDArray[np.int64]]:
        """The graph's ``edge_perm.npy`` (or None), memory-mapped on first use."""
        if not self._edge_perm_loaded:
            self._edge_perm = load_edge_perm(self.graph)
            self._edge_perm_loaded = True
        return self._edge_perm

    def batches(self) -> Iterator[Batch]:
        """The next epoch's raw minibatches: the training stream's next
        epoch, or the link split's minibatches."""
        c = self.client()
        if self.shuffle:
            it = self.stream(c, self.semantics)
        else:
            if self._split is None:
                self._split = int(c.link_split(self.edges, self.batch_size, neg_sampling=self.mode,
                                               amount=self.amount, seed=self.seed)["split"])
            it = c.split_batches(self._split, depth=self.depth, semantics=self.semantics)
        return self._checked(it, len(self))

    def _checked(self, it: Iterator[Batch], n: int) -> Iterator[Batch]:
        """The first ``n`` minibatches of ``it``, each a link minibatch."""
        def mark(b: Batch) -> None:
            if b.link is None:
                raise RuntimeError("%s: the server sent a node minibatch (no link fields): is it a "
                                   "streamsampler with link prediction (serve --train-edges)?"
                                   % type(self).__name__)
            b.input_id = np.asarray(b.link.input_id, dtype=np.int64)
        return first_n(it, n, mark)

    def close(self) -> None:
        """Close the connection; the last loader of a server stops it."""
        self._finalizer()


def _close(server: SharedServer, client: List[Optional[Client]]) -> None:
    if client[0] is not None:
        client[0].close()
    _release(server)


# ----------------------------------------------------------------- PyG


def pyg_link_arrays(batch: Batch, labels: Optional[npt.NDArray[Any]], mode: str,
                    edge_perm: Optional[npt.NDArray[np.int64]] = None) -> Dict[str, Any]:
    """The numpy arrays of PyG's ``LinkNeighborLoader`` output for a link
    minibatch: :func:`~streamsampler.pyg_arrays`'s node fields (``n_id``,
    ``edge_index``, ``e_id`` through ``edge_perm``, ``num_sampled_*``) and
    ``input_id``, plus, in modes none and binary, ``edge_label_index``
    (int64 [2, M]) and ``edge_label`` (``labels[input_id]`` — the loader's
    labels, already incremented as PyG does — or float32 ones, then zeros
    of that dtype for the M - P negatives; None in mode none without
    labels), in triplet mode ``src_index``, ``dst_pos_index`` and
    ``dst_neg_index`` (squeezed to [P] when each positive has one)."""
    link = batch.link
    if link is None:
        raise ValueError("pyg_link_arrays: a node minibatch (batch.link is None)")
    if link.mode != mode:
        raise ValueError("pyg_link_arrays: the server's minibatch has negatives %r, the loader asked for %r"
                         % (link.mode, mode))
    a = pyg_arrays(batch)
    out: Dict[str, Any] = {k: a[k] for k in ("n_id", "edge_index", "e_id", "num_sampled_nodes",
                                             "num_sampled_edges")}
    if out["e_id"] is not None and edge_perm is not None:
        out["e_id"] = np.asarray(edge_perm[out["e_id"]], dtype=np.int64)
    input_id = np.asarray(link.input_id, dtype=np.int64)
    out["input_id"] = input_id
    p = len(input_id)
    if mode == NEG_TRIPLET:
        for k in ("src_index", "dst_pos_index", "dst_neg_index"):
            if getattr(link, k) is None:
                raise ValueError("pyg_link_arrays: a triplet minibatch without %s" % k)
        dst_neg = np.asarray(link.dst_neg_index, dtype=np.int64).reshape(p, -1)
        out["src_index"] = np.asarray(link.src_index, dtype=np.int64)
        out["dst_pos_index"] = np.asarray(link.dst_pos_index, dtype=np.int64)
        out["dst_neg_index"] = dst_neg[:, 0] if dst_neg.shape[1] == 1 else dst_neg  # PyG's squeeze(-1)
        return out
    if link.edge_label_index is None:
        raise ValueError("pyg_link_arrays: a %s minibatch without edge_label_index" % mode)
    eli = np.asarray(link.edge_label_index, dtype=np.int64)
    out["edge_label_index"] = eli
    m = eli.shape[1]
    if mode == NEG_NONE and m != p:
        raise ValueError("pyg_link_arrays: %d supervision edges for %d positives without negatives" % (m, p))
    if labels is not None:
        pos = np.asarray(labels[input_id])
    elif mode == NEG_BINARY:
        pos = np.ones(p, np.float32)  # PyG: torch.ones(num_pos)
    else:
        out["edge_label"] = None
        return out
    out["edge_label"] = np.concatenate([pos, np.zeros(m - p, pos.dtype)]) if m > p else pos
    return out


class LinkNeighborLoader(LinkLoader):
    """PyG's ``LinkNeighborLoader(data, num_neighbors, edge_label_index,
    edge_label, neg_sampling, batch_size, shuffle, drop_last, replace,
    transform, ...)`` over a streamsampler graph directory (``data``: its
    path, or a PyG ``Data``, written to a temporary directory once).

    ``edge_label_index``: the seed edges, int64 [2, E] (a tensor or array),
    or the name of an edge split of the graph (``from_pyg(...,
    edge_splits=)``, whose ``edge_label`` is then the default), or None
    (every edge of the graph, PyG's default). ``edge_label``: [E], or None.
    ``neg_sampling``: None, "binary", "triplet", a dict, a tuple, or PyG's
    ``NegativeSampling`` (mode and amount); ``neg_sampling_ratio``: PyG's
    older name for binary sampling of that amount. The training loader
    (``shuffle=True``) is the server's link training stream; every other
    loader (validation, test) is a link split of the same server, its
    edges in order. Each minibatch is a ``torch_geometric.data.Data`` with
    PyG's fields (the module's doc). ``seed`` fixes the samples, shuffles
    and negatives. ``device``, ``prefetch``, ``pin_memory`` as in
    :class:`~streamsampler.pyg.NeighborLoader` (the rows always come from
    the server: no ``device_features``).

    Refused with NotImplementedError, as the server does not do them:
    temporal sampling (``edge_label_time``, ``time_attr``), disjoint
    subgraphs, weighted sampling or negatives, heterogeneous input (an
    ``(edge_type, index)`` pair).
    """

    def __init__(self, data: GraphSource, num_neighbors: Sequence[int], edge_label_index: Any = None,
                 edge_label: Any = None, edge_label_time: Any = None, replace: bool = False,
                 neg_sampling: Any = None, neg_sampling_ratio: Optional[float] = None, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, transform: Optional[Callable[[Any], Any]] = None,
                 seed: Optional[int] = None, semantics: str = "pyg", prefetch: Optional[int] = None,
                 server_args: Sequence[str] = (), binary: Optional[PathArg] = None, device: Any = None,
                 pin_memory: Optional[bool] = None, **kwargs: Any) -> None:
        who = "LinkNeighborLoader"
        if edge_label_time is not None:
            raise NotImplementedError("%s(edge_label_time=...): temporal sampling is not supported by streamsampler"
                                      % who)
        for k in ("time_attr", "weight_attr", "input_time"):
            if kwargs.pop(k, None) is not None:
                raise NotImplementedError("%s(%s=...): temporal and weighted sampling are not supported by "
                                          "streamsampler" % (who, k))
        if kwargs.pop("temporal_strategy", "uniform") != "uniform":
            raise NotImplementedError("%s(temporal_strategy=...): temporal sampling is not supported" % who)
        if kwargs.pop("disjoint", False):
            raise NotImplementedError("%s(disjoint=True) is not supported by streamsampler" % who)
        if kwargs.pop("subgraph_type", "directional") != "directional":
            raise NotImplementedError("%s(subgraph_type=...): only 'directional' (PyG's default)" % who)
        if isinstance(edge_label_index, tuple):
            raise NotImplementedError("%s: heterogeneous edge_label_index (edge type, edges) is not supported: "
                                      "streamsampler graphs are homogeneous" % who)
        unknown = set(kwargs) - _IGNORED
        if unknown:
            raise TypeError("%s got unexpected keyword arguments: %s" % (who, ", ".join(sorted(unknown))))
        mode, amount = neg_sampling_args(neg_sampling, neg_sampling_ratio, who)
        graph = graph_dir(data)
        edges_file = None
        if isinstance(edge_label_index, str):
            edges, split_label = load_edge_split(graph, edge_label_index)
            edges_file = os.path.join(graph, "splits", edge_label_index + EDGE_SPLIT_SUFFIX)
            if edge_label is None:
                edge_label = split_label
        elif edge_label_index is None:
            edges = graph_edge_index(graph)
        else:
            edges = _as_edges(edge_label_index, who)
        labels = None
        if edge_label is not None:
            labels = _as_array(edge_label)
            if labels.ndim != 1 or labels.shape[0] != edges.shape[1]:
                raise ValueError("%s: edge_label of shape %s for %d seed edges" % (who, labels.shape, edges.shape[1]))
            if mode == NEG_TRIPLET:
                raise ValueError("%s: 'edge_label' needs to be undefined for 'triplet'-based negative sampling (as in "
                                 "PyG): use src_index, dst_pos_index and dst_neg_index" % who)
            if mode == NEG_BINARY and labels.size and labels.min() == 0:
                labels = labels + 1  # PyG's LinkLoader: so that zero denotes "negative"
        #: The seed edges' labels as the minibatches carry them (PyG's
        #: increment applied), or None.
        self.edge_label = labels
        self.user_transform = transform
        super().__init__(graph, num_neighbors, batch_size, edges, shuffle, drop_last, semantics, self._to_data,
                         mode=mode, amount=amount, edges_file=edges_file, replace=replace, seed=seed,
                         prefetch=prefetch, server_args=server_args, binary=binary, device=device,
                         pin_memory=pin_memory)
        self._labels: Optional[npt.NDArray[Any]] = None
        self._masks: Dict[str, npt.NDArray[np.bool_]] = {}
        self._loaded = False

    def _load(self) -> None:
        """The graph's node labels and split masks, read once."""
        if self._loaded:
            return
        if self.server.features:
            self._labels = FeatureStore(self.graph).y
        elif os.path.exists(os.path.join(self.graph, "labels.npy")):
            self._labels = np.load(os.path.join(self.graph, "labels.npy"), mmap_mode="r")
        splits = os.path.join(self.graph, "splits")
        if os.path.isdir(splits):
            for name in sorted(os.listdir(splits)):
                if name.endswith(".npy") and not name.endswith((EDGE_SPLIT_SUFFIX, ".edge_label.npy")):
                    m = np.zeros(self.num_nodes, dtype=np.bool_)
                    m[np.load(os.path.join(splits, name))] = True
                    self._masks[name[:-4] + "_mask"] = m
        self._loaded = True

    @property
    def labels(self) -> Optional[npt.NDArray[Any]]:
        """Every node's label (the feature store's, else labels.npy), or None."""
        self._load()
        return self._labels

    @property
    def masks(self) -> Dict[str, npt.NDArray[np.bool_]]:
        """Each node split of the graph as a boolean mask, ``NAME_mask``."""
        self._load()
        return self._masks

    def host_minibatch(self, batch: Batch) -> Any:
        """A minibatch's fields as host tensors (a dict), what crosses to
        the device before the ``Data`` is built (:meth:`finish_minibatch`)."""
        torch = require("torch", "streamsampler.pyg.LinkNeighborLoader", "torch and torch_geometric",
                        "pyg_link_arrays")
        a = pyg_link_arrays(batch, self.edge_label, self.mode, self.edge_perm)
        n_id = a["n_id"]
        raw: Dict[str, Any] = {}
        for k, v in a.items():
            raw[k] = torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
        if batch.x is not None:
            raw["x"] = torch.from_numpy(np.asarray(batch.x))
        if self.labels is not None:
            raw["y"] = torch.from_numpy(np.asarray(self.labels[n_id], dtype=np.int64))
        raw["masks"] = {name: torch.from_numpy(m[n_id]) for name, m in self.masks.items()}
        return raw

    def finish_minibatch(self, obj: Any) -> Any:
        """PyG's ``Data`` from the (moved) fields, then the user's transform."""
        Data = require("torch_geometric.data", "streamsampler.pyg.LinkNeighborLoader", "torch and torch_geometric",
                       "pyg_link_arrays").Data
        raw = dict(obj)
        n_id = raw.pop("n_id")
        data = Data(edge_index=raw.pop("edge_index"), num_nodes=int(n_id.shape[0]))
        if "x" in raw:
            data.x = raw.pop("x")
        if "y" in raw:
            data.y = raw.pop("y")
        for name, m in raw.pop("masks").items():
            data[name] = m
        data.n_id = n_id
        e_id = raw.pop("e_id")
        if e_id is not None:
            data.e_id = e_id
        for k in ("input_id", "edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index",
                  "num_sampled_nodes", "num_sampled_edges"):
            if raw.get(k) is not None:
                data[k] = raw[k]
        if self.user_transform is not None:
            data = self.user_transform(data)
        return data

    def _to_data(self, batch: Batch) -> Any:
        """A minibatch as PyG's ``Data``, on the host."""
        return self.finish_minibatch(self.host_minibatch(batch))


# ----------------------------------------------------------------- DGL


class Uniform:
    """DGL's ``dgl.dataloading.negative_sampler.Uniform(k)``: for each seed
    edge (u, v), k negatives (u, v') with v' uniform over the nodes (DGL's
    ``_generate``: ``src.repeat_interleave(k)``, ``randint``); drawn by the
    server from the loader's seed."""

    def __init__(self, k: int) -> None:
        if int(k) < 1:
            raise ValueError("Uniform: k %r, want >= 1" % (k,))
        self.k = int(k)

    def __repr__(self) -> str:
        return "Uniform(%d)" % self.k


def _negative_k(negative_sampler: Any) -> Optional[int]:
    """k of a uniform negative sampler (ours, or DGL's ``Uniform``,
    recognised by class name and module), None for none; other samplers
    are refused."""
    if negative_sampler is None:
        return None
    if isinstance(negative_sampler, Uniform):
        return negative_sampler.k
    cls = type(negative_sampler)
    if cls.__module__.split(".")[0] == "dgl" and cls.__name__ == "Uniform":
        return int(getattr(negative_sampler, "k"))
    raise NotImplementedError("as_edge_prediction_sampler: negative_sampler %s is not supported: streamsampler draws "
                              "negative_sampler.Uniform(k) on the server" % cls.__name__)


class EdgePredictionSampler:
    """DGL's ``EdgePredictionSampler`` (made by
    :func:`as_edge_prediction_sampler`): a node sampler, an exclusion
    rule and a uniform negative sampler's k, which
    :class:`streamsampler.dgl.DataLoader` over edge ids serves."""

    def __init__(self, sampler: Any, exclude: Optional[str] = None, reverse_eids: Any = None,
                 reverse_etypes: Any = None, negative_sampler: Any = None, prefetch_labels: Any = None) -> None:
        from .dgl_loader import as_sampler
        self.sampler = as_sampler(sampler)
        if reverse_etypes is not None or exclude == "reverse_types":
            raise NotImplementedError("as_edge_prediction_sampler: reverse_types needs edge types; streamsampler "
                                      "graphs are homogeneous")
        if callable(exclude):
            raise NotImplementedError("as_edge_prediction_sampler: a callable exclude is not supported; use None, "
                                      "'self' or 'reverse_id'")
        if exclude not in (None, "self", "reverse_id"):
            raise ValueError("as_edge_prediction_sampler: exclude=%r, want None, 'self' or 'reverse_id'" % (exclude,))
        if exclude == "reverse_id" and reverse_eids is None:
            raise ValueError("as_edge_prediction_sampler: exclude='reverse_id' needs reverse_eids")
        self.exclude = exclude
        self.reverse_eids = None if reverse_eids is None else np.asarray(_as_array(reverse_eids), dtype=np.int64)
        self.negative_sampler = negative_sampler
        #: Negatives per seed edge (None: no negative sampler).
        self.k = _negative_k(negative_sampler)

    @property
    def output_device(self) -> Any:
        """The node sampler's ``output_device``."""
        return self.sampler.output_device


def as_link_sampler(graph_sampler: Any) -> Optional[EdgePredictionSampler]:
    """``graph_sampler`` as an :class:`EdgePredictionSampler`: ours as it
    is, DGL's own (``dgl.dataloading.as_edge_prediction_sampler``'s,
    recognised by class name and module) rebuilt from its ``sampler``,
    ``exclude``, ``reverse_eids``, ``reverse_etypes`` and
    ``negative_sampler`` (refusing what ours refuses); None for anything
    else (a node sampler)."""
    if isinstance(graph_sampler, EdgePredictionSampler):
        return graph_sampler
    cls = type(graph_sampler)
    if cls.__module__.split(".")[0] == "dgl" and cls.__name__ == "EdgePredictionSampler":
        g = graph_sampler
        return EdgePredictionSampler(getattr(g, "sampler"), getattr(g, "exclude", None),
                                     getattr(g, "reverse_eids", None), getattr(g, "reverse_etypes", None),
                                     getattr(g, "negative_sampler", None))
    return None


def as_edge_prediction_sampler(sampler: Any, exclude: Optional[str] = None, reverse_eids: Any = None,
                               reverse_etypes: Any = None, negative_sampler: Any = None,
                               prefetch_labels: Any = None) -> EdgePredictionSampler:
    """DGL's ``dgl.dataloading.as_edge_prediction_sampler``: ``sampler``
    (ours or DGL's NeighborSampler) over the endpoints of each minibatch's
    seed edges and negatives; ``exclude``: None, "self" (the seed edges
    are not sampled as neighbors) or "reverse_id" (nor their reverses,
    ``reverse_eids[eid]``); ``negative_sampler``: :class:`Uniform` (ours or
    DGL's). Refused: reverse_types, callables, other negative samplers."""
    return EdgePredictionSampler(sampler, exclude, reverse_eids, reverse_etypes, negative_sampler, prefetch_labels)


def _first_appearance(*arrays: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct values of the arrays, concatenated, in order of first
    appearance (DGL's IdHashMap ``Values``)."""
    cat = np.concatenate(arrays) if arrays else np.empty(0, np.int64)
    uniq, first = np.unique(cat, return_index=True)
    return np.asarray(uniq[np.argsort(first, kind="stable")], dtype=np.int64)


def _lookup(keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each value's position in ``keys`` (distinct; every value present)."""
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys, values, sorter=order)
    return np.asarray(order[pos], dtype=np.int64)


def dgl_link_arrays(batch: Batch, eids: npt.NDArray[np.int64],
                    edge_perm: Optional[npt.NDArray[np.int64]] = None) -> Dict[str, Any]:
    """The arrays of DGL's ``(input_nodes, pair_graph, neg_pair_graph,
    blocks)`` for a link minibatch of DGL semantics whose positives are
    edges ``eids`` (DGL edge ids, ``pair_graph.edata[dgl.EID]``).

    The seed nodes are ordered as ``compact_graphs([pair_graph,
    neg_pair_graph])`` orders them (first appearance over positive
    sources, positive destinations, negative sources, negative
    destinations); ``pair`` and ``neg`` are dicts with ``src``/``dst``
    (int64 local ids into the seeds), ``num_nodes`` and ``nid`` (the seeds,
    ``ndata[dgl.NID]``; ``pair`` also ``eid``); ``neg`` is None without
    negatives; DGL's negatives of positive i are rows ``i*k .. i*k+k-1``
    (``repeat_interleave``). ``blocks`` are :func:`~streamsampler.dgl_arrays`'s
    dicts rebuilt with the seeds in that order as ``to_block`` builds them
    from the same samples: each block's dst nodes in the previous block's
    src order, edges grouped by dst in that order (each node's in slot
    order), src nodes the dst nodes then the others in order of first
    appearance; ``input_nodes`` the first block's src (the seeds first);
    ``feat`` (the input nodes' rows) where the server sent rows."""
    link = batch.link
    if link is None:
        raise ValueError("dgl_link_arrays: a node minibatch (batch.link is None)")
    if batch.semantics != "dgl":
        raise ValueError("dgl_link_arrays: a minibatch of %s semantics has no DGL blocks" % batch.semantics)
    seeds = batch.seeds.astype(np.int64)
    p = len(link.input_id)
    neg_s: Optional[npt.NDArray[np.int64]] = None
    neg_d: Optional[npt.NDArray[np.int64]] = None
    if link.mode == NEG_TRIPLET:
        assert link.src_index is not None and link.dst_pos_index is not None and link.dst_neg_index is not None
        ps, pd = seeds[link.src_index], seeds[link.dst_pos_index]
        nd = seeds[np.asarray(link.dst_neg_index, dtype=np.int64).reshape(-1)]
        neg_s, neg_d = np.repeat(ps, len(nd) // max(1, p)), nd
    elif link.mode == NEG_NONE:
        assert link.edge_label_index is not None
        ps, pd = seeds[link.edge_label_index[0]], seeds[link.edge_label_index[1]]
    else:
        raise ValueError("dgl_link_arrays: DGL's negatives are per source (triplet mode), got %r" % link.mode)
    order = _first_appearance(ps, pd) if neg_s is None or neg_d is None else _first_appearance(ps, pd, neg_s, neg_d)
    if len(order) != len(seeds) or not np.array_equal(np.sort(order), np.unique(seeds)):
        raise ValueError("dgl_link_arrays: the minibatch's seeds are not the endpoints of its edges")
    s = len(order)
    pair = {"src": _lookup(order, ps), "dst": _lookup(order, pd), "num_nodes": s, "nid": order,
            "eid": np.asarray(eids, dtype=np.int64)}
    neg = None
    if neg_s is not None and neg_d is not None:
        neg = {"src": _lookup(order, neg_s), "dst": _lookup(order, neg_d), "num_nodes": s, "nid": order}
    blocks: List[Dict[str, Any]] = []
    dst = order
    for h in batch.hops:  # the seeds' hop first
        src_g = h.src.astype(np.int64)
        new_pos = _lookup(dst, h.dst.astype(np.int64))  # old dst index -> new
        key = new_pos[h.edge_dst.astype(np.int64)]
        e = np.argsort(key, kind="stable")
        e_src = src_g[h.edge_src.astype(np.int64)[e]]
        extra = _first_appearance(e_src[~np.isin(e_src, dst)])
        src = np.concatenate([dst, extra])
        eid = None
        if h.e_id is not None:
            eid = h.e_id.astype(np.int64)[e]
            if edge_perm is not None:
                eid = np.asarray(edge_perm[eid], dtype=np.int64)
        blocks.append({"src_ids": src, "dst_ids": dst, "edge_src": _lookup(src, e_src), "edge_dst": key[e],
                       "edge_ids": eid, "num_src_nodes": len(src), "num_dst_nodes": len(dst)})
        dst = src
    blocks.reverse()  # DGL's order: the input layer's block first
    input_nodes = blocks[0]["src_ids"] if blocks else order
    if blocks and batch.x is not None:
        old = batch.n_id.astype(np.int64)
        blocks[0]["feat"] = np.asarray(batch.x)[_lookup(old, input_nodes)]
    return {"input_nodes": input_nodes, "pair": pair, "neg": neg, "blocks": blocks}


class LinkDataLoader(LinkLoader):
    """DGL's ``DataLoader(graph, indices, sampler)`` with an
    :class:`EdgePredictionSampler` (``as_edge_prediction_sampler``):
    ``indices`` are edge ids (DGL's: columns of the ``edge_index`` of a
    graph from ``from_pyg``, else positions in the stored CSR), each
    minibatch ``(input_nodes, pair_graph, neg_pair_graph, blocks)`` —
    ``(input_nodes, pair_graph, blocks)`` without a negative sampler — of
    DGL graphs (:func:`dgl_link_arrays` has the arrays). Made by
    :class:`streamsampler.dgl.DataLoader`; ``shuffle=True`` is the server's
    link training stream (negatives and exclusion on the server),
    ``shuffle=False`` a link split (exclusion refused)."""

    def __init__(self, graph: GraphSource, indices: Any, graph_sampler: EdgePredictionSampler, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, device: Any = None, seed: Optional[int] = None,
                 prefetch: Optional[int] = None, server_args: Sequence[str] = (), binary: Optional[PathArg] = None,
                 pin_memory: Optional[bool] = None, **kwargs: Any) -> None:
        ignored = {"num_workers", "use_uva", "use_ddp", "ddp_seed", "use_prefetch_thread", "use_alternate_streams",
                   "pin_prefetcher", "persistent_workers"}
        unknown = set(kwargs) - ignored
        if unknown:
            raise TypeError("DataLoader got unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        g = graph_dir(graph)
        all_edges = graph_edge_index(g)
        ids = _as_array(indices)
        if ids.dtype == np.bool_:
            ids = np.flatnonzero(ids)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= all_edges.shape[1]):
            bad = int(ids[(ids < 0) | (ids >= all_edges.shape[1])][0])
            raise ValueError("DataLoader: edge id %d is not an edge of the graph (%d edges)"
                             % (bad, all_edges.shape[1]))
        #: The seed edges' DGL edge ids.
        self.eids = ids
        self.sampler = graph_sampler
        rev = None
        if graph_sampler.reverse_eids is not None:
            rev = self._stored_reverse(g, graph_sampler.reverse_eids, all_edges.shape[1])
        perm = load_edge_perm(g)
        stored = ids
        if perm is not None:  # DGL's edge id -> the stored edge's position
            inv = np.empty(all_edges.shape[1], np.int64)
            inv[np.asarray(perm)] = np.arange(all_edges.shape[1], dtype=np.int64)
            stored = inv[ids]
        k = graph_sampler.k
        super().__init__(g, graph_sampler.sampler.hop_fanouts, batch_size, np.ascontiguousarray(all_edges[:, ids]),
                         shuffle, drop_last, "dgl", self._to_graphs,
                         mode=NEG_NONE if k is None else NEG_TRIPLET, amount=0.0 if k is None else float(k),
                         exclude=graph_sampler.exclude, reverse_eids=rev, eids=stored,
                         replace=graph_sampler.sampler.replace,
                         seed=seed, prefetch=prefetch, server_args=server_args, binary=binary,
                         device=device if device is not None else graph_sampler.output_device, pin_memory=pin_memory)

    @staticmethod
    def _stored_reverse(graph: str, reverse_eids: npt.NDArray[np.int64], num_edges: int) -> npt.NDArray[np.int64]:
        """DGL's ``reverse_eids`` (edge id -> its reverse's id) in the
        server's edge ids, positions in the stored CSR (stored edge i is
        DGL edge ``perm[i]``): ``inv_perm[reverse_eids[perm[i]]]``."""
        if reverse_eids.shape != (num_edges,):
            raise ValueError("as_edge_prediction_sampler: reverse_eids of shape %s, want [%d] (one per edge)"
                             % (reverse_eids.shape, num_edges))
        perm = load_edge_perm(graph)
        if perm is None:
            return reverse_eids
        inv = np.empty(num_edges, np.int64)
        inv[np.asarray(perm)] = np.arange(num_edges, dtype=np.int64)
        return np.asarray(inv[reverse_eids[np.asarray(perm)]], dtype=np.int64)

    def arrays(self, batch: Batch) -> Dict[str, Any]:
        """:func:`dgl_link_arrays` of a raw minibatch."""
        return dgl_link_arrays(batch, self.eids[batch.link.input_id] if batch.link is not None else self.eids[:0],
                               self.edge_perm)

    def host_minibatch(self, batch: Batch) -> Any:
        """The arrays as host tensors (moved to ``device`` before the
        graphs are made there)."""
        torch = require("torch", "streamsampler.dgl.DataLoader", "torch and dgl", "dgl_link_arrays")

        def t(d: Optional[Dict[str, Any]]) -> Any:
            if d is None:
                return None
            return {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
                    for k, v in d.items()}
        a = self.arrays(batch)
        return {"input_nodes": torch.from_numpy(a["input_nodes"]), "pair": t(a["pair"]), "neg": t(a["neg"]),
                "blocks": [t(b) for b in a["blocks"]]}

    def finish_minibatch(self, obj: Any) -> Any:
        """DGL's graphs from the (moved) tensors."""
        dgl = require("dgl", "streamsampler.dgl.DataLoader", "dgl", "dgl_link_arrays")
        from ..adapters import dgl_blocks

        def pair_graph(d: Dict[str, Any], eid: bool) -> Any:
            g = dgl.graph((d["src"], d["dst"]), num_nodes=d["num_nodes"])
            g.ndata[dgl.NID] = d["nid"]
            if eid:
                g.edata[dgl.EID] = d["eid"]
            return g
        _, _, blocks = dgl_blocks(obj["blocks"], obj["input_nodes"])
        pair = pair_graph(obj["pair"], True)
        if obj["neg"] is None:
            return obj["input_nodes"], pair, blocks
        return obj["input_nodes"], pair, pair_graph(obj["neg"], False), blocks

    def _to_graphs(self, batch: Batch) -> Any:
        """A minibatch as DGL's tuple, on the host."""
        return self.finish_minibatch(self.host_minibatch(batch))
