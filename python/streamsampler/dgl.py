"""DGL's names, served by streamsampler: a DGL script swaps its imports
(:mod:`streamsampler.loader.dgl_loader` has the details)::

    # from dgl.dataloading import DataLoader, NeighborSampler
    from streamsampler.dgl import DataLoader, NeighborSampler

    sampler = NeighborSampler([10, 25])          # DGL order: input layer first
    loader = DataLoader("graph/", train_nids, sampler, batch_size=1024, shuffle=True)
    for input_nodes, output_nodes, blocks in loader:
        x = blocks[0].srcdata["feat"]
        y = blocks[-1].dstdata["label"]
"""

from __future__ import annotations

from .loader.dgl_loader import DataLoader, NeighborSampler
from .loader.full_neighbor import MultiLayerFullNeighborSampler

__all__ = ["DataLoader", "MultiLayerFullNeighborSampler", "NeighborSampler"]
