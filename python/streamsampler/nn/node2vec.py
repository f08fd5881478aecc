"""PyG's ``Node2Vec`` (``torch_geometric/nn/models/node2vec.py``) with its
walks from a streamsampler server.

The class subclasses ``torch_geometric.nn.Node2Vec``, so it is made on
first use (:func:`node2vec_class`; ``streamsampler.pyg.Node2Vec`` and
``streamsampler.nn.Node2Vec`` ask for it): the package imports without
torch.
"""

from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

import numpy as np

from ..loader.servers import acquire, release
from ..loader.utils import graph_dir, graph_num_nodes
from ..optional import require
from ..typing import GraphSource, PathArg

__all__ = ["node2vec_class"]

_lock = threading.Lock()
_made: Optional[type] = None


def node2vec_class() -> type:
    """The ``Node2Vec`` class (made once; needs torch and
    torch_geometric, ImportError naming them otherwise)."""
    global _made
    with _lock:
        if _made is None:
            _made = _make()
        return _made


def _make() -> type:
    torch = require("torch", "streamsampler.pyg.Node2Vec", "torch and torch_geometric", "Client.walks")
    nn = require("torch_geometric.nn", "streamsampler.pyg.Node2Vec", "torch and torch_geometric", "Client.walks")

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

        def __init__(self, graph: GraphSource, embedding_dim: int, walk_length: int, context_size: int,
                     walks_per_node: int = 1, p: float = 1.0, q: float = 1.0, num_negative_samples: int = 1,
                     num_nodes: Optional[int] = None, sparse: bool = False, binary: Optional[PathArg] = None,
                     server_args: Sequence[str] = ()) -> None:
            torch.nn.Module.__init__(self)  # PyG's __init__ looks for torch_cluster / pyg-lib
            if walk_length < context_size:
                raise ValueError("walk_length %d < context_size %d" % (walk_length, context_size))
            self.graph = graph_dir(graph)
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
            self._server: Any = acquire(self.graph, [1], False, 0, None, server_args, binary)
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
            if self._client is not None:
                self._client.close()
                self._client = None
            if self._server is not None:
                release(self._server)
                self._server = None

    return Node2Vec
