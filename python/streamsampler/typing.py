"""The type aliases of the package's signatures, in one place (as
``torch_geometric.typing``): what the public functions accept, spelled
out for type checkers and readers.

numpy arrays are ``numpy.typing.NDArray[...]``; torch tensors, which the
package never needs to import to accept, are :class:`TensorLike` (a
structural type: anything with ``detach().cpu().numpy()``).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Protocol, Sequence, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

__all__ = [
    "Address", "Buffer", "DirectStats", "EpochInfo", "EpochStats", "FeatureReads", "FeatureStats", "GraphSource",
    "NodeIds", "Nodes", "PathArg", "PyGData", "SplitStats", "TensorLike", "TrainNodes",
]

#: A file-system path as the public functions accept it.
PathArg = Union[str, "os.PathLike[str]"]

#: Node ids as the requests accept them: any 1-D integer sequence whose
#: values fit in uint32.
NodeIds = Union[Sequence[int], npt.NDArray[np.integer[Any]]]


class TensorLike(Protocol):
    """A torch tensor, as far as the package uses one that it is given:
    moved to the host and viewed as numpy."""

    def detach(self) -> TensorLike: ...

    def cpu(self) -> TensorLike: ...

    def numpy(self) -> npt.NDArray[Any]: ...


#: The nodes a loader iterates: node ids (a 1-D integer array, tensor or
#: sequence) or a boolean mask over the graph's nodes.
Nodes = Union[Sequence[int], Sequence[bool], npt.NDArray[np.integer[Any]], npt.NDArray[np.bool_], TensorLike]


class PyGData(Protocol):
    """A PyG ``Data`` as the loaders accept it in place of a graph
    directory: anything with an ``edge_index`` (written once by
    :func:`streamsampler.from_pyg`)."""

    @property
    def edge_index(self) -> Any: ...


#: A loader's graph: a graph directory, or a PyG ``Data``.
GraphSource = Union[PathArg, PyGData]

#: A server address: a Unix socket path, "unix:PATH", "tcp://HOST:PORT",
#: "tcp:HOST:PORT" or a (host, port) tuple.
Address = Union[str, "os.PathLike[str]", Tuple[str, int]]

#: An epoch's description as epoch_info and advance return it
#: (docs/PROTOCOL.md lists the keys; ``stats`` and ``previous_stats`` are
#: :class:`EpochStats`).
EpochInfo = Dict[str, Any]


class FeatureReads(TypedDict, total=False):
    """What an epoch's feature plan read (``EpochStats["features"]["reads"]``):
    rows needed (every n_id row), from the cache and from disk; reads and
    their bytes (aligned extents); the read amplification and the floors."""

    batches: int
    row_bytes: int
    cache_rows: int
    rows_needed: int
    rows_from_cache: int
    rows_from_disk: int
    reads: int
    bytes_read: int
    disk_row_bytes: int
    read_amplification: float
    preload_rows: int
    distinct_rows: int
    compulsory_bytes: int
    optimum_bytes: int
    vs_optimum: float


class FeatureStats(TypedDict, total=False):
    """An epoch's feature figures (``EpochStats["features"]``): the plan's
    reads, the time in the reader (``read_s``) and the rows and GB per
    second delivered over it (the reads' own rate)."""

    plan_s: float
    reorder: Dict[str, Any]
    reads: FeatureReads
    read_s: float
    gbps: float
    rows_per_s: float
    o_direct: bool
    labels: int


class DirectStats(TypedDict, total=False):
    """Minibatches whose rows were read outside the epoch's plan: sample
    replies, a split's minibatches, minibatches of the other semantics."""

    batches: int
    seeds: int
    edges: int
    wall_s: float
    ms_per_batch: float
    assemble_s: float
    sample_s: float
    sample_bytes_read: int
    row_bytes: int
    rows: int
    reads: int
    bytes_read: int
    read_s: float
    rows_per_s: float
    gbps: float
    labels: int


class SplitStats(DirectStats, total=False):
    """A split's minibatches served in an epoch (``split``: its id)."""

    split: int


class EpochStats(TypedDict, total=False):
    """An epoch's figures as the server delivered it (epoch_info's
    ``stats`` and ``previous_stats``, docs/PROTOCOL.md): minibatches,
    seeds and edges handed out; ``wall_s`` from the first to the last,
    ``ms_per_batch`` over it (features included); assembly's time and its
    own edges/s; the epoch's sampling; ``features``; whether it is
    ``complete``; ``failed`` minibatches; ``other_semantics``, ``samples``
    and ``splits``, read directly."""

    epoch: int
    num_batches: int
    batches: int
    seeds: int
    edges: int
    wall_s: float
    ms_per_batch: float
    assemble_s: float
    edges_per_s: float
    sample_s: float
    bytes_read: int
    read_gbps: float
    graph_bytes: int
    overlapped: bool
    features: FeatureStats
    complete: bool
    failed: int
    other_semantics: DirectStats
    samples: DirectStats
    splits: List[SplitStats]

#: Training nodes: a node-id file (text or .npy) or the ids themselves.
TrainNodes = Union[PathArg, Sequence[int], npt.NDArray[np.integer[Any]]]

#: A received payload: the decoded arrays are views of it.
Buffer = Union[bytes, bytearray, memoryview]
