"""DGL's names, served by streamsampler: a DGL script swaps its imports
(:mod:`streamsampler.loader.dgl_loader` has the details)::

    # from dgl.dataloading import DataLoader, NeighborSampler
    from streamsampler.dgl import DataLoader, NeighborSampler

    sampler = NeighborSampler([10, 25])          # DGL order: input layer first
    loader = DataLoader("graph/", train_nids, sampler, batch_size=1024, shuffle=True)
    for input_nodes, output_nodes, blocks in loader:
        x = blocks[0].srcdata["feat"]
        y = blocks[-1].dstdata["label"]

Over a heterogeneous graph directory, ``DataLoader(graph, {ntype: nids},
NeighborSampler([{etype: fanout, ...}, ...]))`` yields heterograph blocks
(:mod:`streamsampler.loader.hetero_dgl_loader`).

``MultiLayerFullNeighborSampler(n)`` (every neighbor at each of n layers)
is here too, and DGL's own samplers of both kinds are accepted.

Link prediction (:mod:`streamsampler.loader.link_loader`): DGL's
``as_edge_prediction_sampler`` and ``negative_sampler.Uniform``, and the
same ``DataLoader`` over edge ids::

    sampler = as_edge_prediction_sampler(NeighborSampler([10, 25]), exclude="reverse_id",
                                         reverse_eids=reverse_eids, negative_sampler=negative_sampler.Uniform(5))
    loader = DataLoader("graph/", train_eids, sampler, batch_size=1024, shuffle=True)
    for input_nodes, pair_graph, neg_pair_graph, blocks in loader:
        ...
"""

from __future__ import annotations

from .loader.dgl_loader import DataLoader, MultiLayerFullNeighborSampler, NeighborSampler
from .loader.link_loader import EdgePredictionSampler, Uniform, as_edge_prediction_sampler

__all__ = ["DataLoader", "EdgePredictionSampler", "MultiLayerFullNeighborSampler", "NeighborSampler",
           "as_edge_prediction_sampler", "negative_sampler"]


class negative_sampler:  # noqa: N801 (DGL's module name: ``negative_sampler.Uniform(k)``)
    """DGL's ``dgl.dataloading.negative_sampler``: ``Uniform(k)``."""

    Uniform = Uniform
