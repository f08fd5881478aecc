"""What the framework loaders share besides their servers: the checks of
their arguments, the default seed, and a graph directory for a PyG
``Data`` (written once, removed when the object is collected)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple, TypeVar

import numpy as np
import numpy.typing as npt

from ..convert import from_pyg, is_hetero_data
from ..graph import read_manifest
from ..typing import GraphSource, Nodes

__all__ = ["ALL_NEIGHBORS", "IGNORED_ARGS", "check_fanouts", "default_seed", "first_n", "graph_dir", "graph_num_nodes",
           "node_ids"]

_T = TypeVar("_T")


def first_n(it: Iterator[_T], n: int, mark: Callable[[_T], None]) -> Iterator[_T]:
    """The first ``n`` minibatches of ``it``, each passed to ``mark`` (which
    sets what the loader adds, ``input_id``) before it is yielded; ``it``
    is closed when the loader stops, early or not, so that the client
    reads the replies still in flight."""
    try:
        for i, b in enumerate(it):
            if i >= n:
                break
            mark(b)
            yield b
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def node_ids(nodes: Nodes, num_nodes: int, what: str = "input_nodes") -> npt.NDArray[np.int64]:
    """``nodes`` as int64 node ids: a boolean mask of ``num_nodes``, or ids
    (checked to be in the graph). Torch tensors are converted."""
    a = np.asarray(nodes.detach().cpu().numpy() if hasattr(nodes, "detach") else nodes)
    if a.dtype == np.bool_:
        if a.shape != (num_nodes,):
            raise ValueError("%s: a mask of shape %s for a graph of %d nodes" % (what, a.shape, num_nodes))
        return np.flatnonzero(a).astype(np.int64)
    if a.ndim != 1 or not (a.size == 0 or np.issubdtype(a.dtype, np.integer)):
        raise ValueError("%s: want a 1-D array of node ids or a boolean mask, got dtype %s shape %s"
                         % (what, a.dtype, a.shape))
    ids = a.astype(np.int64, copy=False)
    if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        bad = ids[(ids < 0) | (ids >= num_nodes)][0]
        raise ValueError("%s: node %d is not in the graph of %d nodes" % (what, bad, num_nodes))
    return ids


#: The fanout that takes every neighbor of a node (PyG's and DGL's -1):
#: the server's full layers, whose rows are the nodes' whole adjacencies.
ALL_NEIGHBORS = -1

#: Arguments of torch's DataLoader that PyG's loaders pass on and that have
#: no meaning here (the server samples; a thread prefetches): accepted and
#: ignored by every loader of this package (each adds its own).
IGNORED_ARGS = frozenset({"num_workers", "persistent_workers", "prefetch_factor", "worker_init_fn", "timeout",
                          "generator", "multiprocessing_context", "collate_fn", "sampler", "batch_sampler",
                          "filter_per_worker", "is_sorted", "directed", "pin_memory_device"})


def check_fanouts(fanouts: Sequence[int], what: str) -> List[int]:
    """``fanouts`` as ints, each 1 to 64 or -1 (every neighbor), at least
    one and at most 255 (ValueError naming ``what``)."""
    out = [int(f) for f in fanouts]
    if not out:
        raise ValueError("%s: no hops (want at least one fanout)" % what)
    if len(out) > 255:
        raise ValueError("%s: %d hops, at most 255" % (what, len(out)))
    for f in out:
        if not (1 <= f <= 64 or f == ALL_NEIGHBORS):
            raise ValueError("%s %d: streamsampler samples 1 to 64 neighbors per hop, or -1 for every neighbor"
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
    return int(read_manifest(graph)["num_nodes"])


_converted_lock = threading.Lock()
_converted: Dict[int, Tuple[Callable[[], Any], str]] = {}


def graph_dir(graph: GraphSource) -> str:
    """A graph directory for ``graph``: a path as is; a PyG ``Data``
    (anything with ``edge_index``) or ``HeteroData`` written once by
    ``from_pyg`` into a temporary directory, removed when the object is
    collected."""
    if isinstance(graph, (str, os.PathLike)):
        return os.fspath(graph)
    if not hasattr(graph, "edge_index") and not is_hetero_data(graph):
        raise TypeError("graph: want a graph directory (streamsampler.from_pyg / chunkify) or a PyG Data or "
                        "HeteroData, got %s" % type(graph).__name__)
    with _converted_lock:
        hit = _converted.get(id(graph))
        if hit is not None and hit[0]() is graph:
            return hit[1]
        tmp = tempfile.mkdtemp(prefix="streamsampler-pyg-")
        out = os.path.join(tmp, "graph")
        from_pyg(graph, out)
        ref: Callable[[], Any]
        try:
            ref = weakref.ref(graph)
            weakref.finalize(graph, _remove, tmp, id(graph))
        except TypeError:  # not weakly referable: kept until exit
            ref = _Strong(graph)
        _converted[id(graph)] = (ref, out)
        return out


class _Strong:
    """A reference to an object that is not weakly referable (kept until
    exit), called as a weakref is."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __call__(self) -> Any:
        return self.obj


def _remove(tmp: str, key: int) -> None:
    with _converted_lock:
        _converted.pop(key, None)
    shutil.rmtree(tmp, ignore_errors=True)
