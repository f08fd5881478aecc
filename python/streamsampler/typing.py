"""The type aliases of the package's signatures, in one place (as
``torch_geometric.typing``): what the public functions accept, spelled
out for type checkers and readers.

numpy arrays are ``numpy.typing.NDArray[...]``; torch tensors, which the
package never needs to import to accept, are :class:`TensorLike` (a
structural type: anything with ``detach().cpu().numpy()``).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Protocol, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__all__ = [
    "Address", "Buffer", "EpochInfo", "GraphSource", "NodeIds", "Nodes", "PathArg", "PyGData", "TensorLike",
    "TrainNodes",
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
#: (docs/PROTOCOL.md lists the keys).
EpochInfo = Dict[str, Any]

#: Training nodes: a node-id file (text or .npy) or the ids themselves.
TrainNodes = Union[PathArg, Sequence[int], npt.NDArray[np.integer[Any]]]

#: A received payload: the decoded arrays are views of it.
Buffer = Union[bytes, bytearray, memoryview]
