"""Trainer-side client of ``streamsampler serve``.

    with streamsampler.serve_local("graph/", "train.txt", [15, 10, 5], 1024) as srv:
        with srv.client() as client:
            for epoch in range(10):
                for batch in client.batches():
                    data = streamsampler.to_pyg(batch, x=features)

Pure Python over numpy; torch, torch_geometric and dgl are imported only
inside the functions that need them (``to_pyg``, ``to_dgl``, the
framework loaders' minibatches). ``pip install ./python`` builds the Go
executables (``streamsampler``, ``chunkify``) into the package. See
docs/PYTHON.md (the module layout too) and docs/PROTOCOL.md.
"""

from .adapters import dgl_arrays, pyg_arrays, to_dgl, to_pyg
from .batch import Batch, Hop
from .client import Client
from .convert import GraphInfo, OutputExistsError, from_arrays, from_pyg, load_edge_perm, read_info
from .delta import DeltaPlan, DeltaPlanner, DeltaStats, DeltaTransfer
from .executables import find_binary
from .graph import GraphFormatError, read_csr
from .loader import Loader
from .local import LocalServer, serve_local
from .protocol import NotInFrontierError, ProtocolError, ServerError, UnauthorizedError, UnknownEpochError

__all__ = [
    "Batch", "Client", "DeltaPlan", "DeltaPlanner", "DeltaStats", "DeltaTransfer", "Hop", "Loader", "LocalServer", "NotInFrontierError",
    "ProtocolError", "ServerError", "UnauthorizedError", "UnknownEpochError", "dgl_arrays",
    "find_binary", "pyg_arrays", "serve_local", "to_dgl", "to_pyg",
    "GraphInfo", "GraphFormatError", "OutputExistsError", "from_arrays", "from_pyg", "load_edge_perm",
    "read_csr", "read_info",
]
__version__ = "0.1.0"
