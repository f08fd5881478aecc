"""PyG's names, served by streamsampler: a PyG script swaps its imports.

* ``NeighborLoader``: PyG's ``torch_geometric.loader.NeighborLoader``
  over a graph directory (:mod:`streamsampler.loader.neighbor_loader`);
  over a heterogeneous one (or a ``HeteroData``) with
  ``input_nodes=(type, nodes)``, ``HeteroData`` minibatches
  (:mod:`streamsampler.loader.hetero_loader`);
* ``LinkNeighborLoader``: PyG's ``LinkNeighborLoader`` (link prediction:
  seed edges, negatives; :mod:`streamsampler.loader.link_loader`);
* ``Node2Vec``: PyG's ``torch_geometric.nn.Node2Vec`` with its walks from
  a server (:mod:`streamsampler.nn.node2vec`; made on first use, since it
  subclasses PyG's and this module imports without torch);
* ``to_data``: a minibatch as the ``Data`` a NeighborLoader yields;
* ``layerwise_inference``: PyG's layer-wise ``inference`` loop out of
  core, each layer's outputs in a feature store
  (:mod:`streamsampler.layerwise`).

::

    # from torch_geometric.loader import NeighborLoader
    from streamsampler.pyg import NeighborLoader

    loader = NeighborLoader("graph/",            # was: data
                            num_neighbors=[25, 10], batch_size=1024,
                            input_nodes=train_mask, shuffle=True)
    for batch in loader:
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
"""

from __future__ import annotations

from typing import Any

from .layerwise import layerwise_inference
from .loader.link_loader import LinkNeighborLoader
from .loader.neighbor_loader import LoaderData, NeighborLoader, to_data
from .nn.node2vec import node2vec_class

__all__ = ["LinkNeighborLoader", "LoaderData", "NeighborLoader", "layerwise_inference", "to_data"]  # and Node2Vec, made on first use (a star import needs no torch)


def __getattr__(name: str) -> Any:
    """``Node2Vec`` is made on first use: it subclasses
    ``torch_geometric.nn.Node2Vec``, and this module imports without
    torch."""
    if name == "Node2Vec":
        cls = node2vec_class()
        globals()["Node2Vec"] = cls
        return cls
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
