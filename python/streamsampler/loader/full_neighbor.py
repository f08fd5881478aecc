"""DGL's ``MultiLayerFullNeighborSampler`` for the DGL drop-in
(:mod:`streamsampler.dgl`): every in-neighbor of every node, the sampler of
DGL's layer-wise inference loop::

    # from dgl.dataloading import DataLoader, MultiLayerFullNeighborSampler
    from streamsampler.dgl import DataLoader, MultiLayerFullNeighborSampler

    sampler = MultiLayerFullNeighborSampler(1)
    loader = DataLoader("graph/", torch.arange(num_nodes), sampler, batch_size=4096, shuffle=False)
    for layer in model.layers:
        y = torch.empty(num_nodes, layer_out_dim)
        for input_nodes, output_nodes, blocks in loader:
            y[output_nodes] = layer(blocks[0], feat[input_nodes])
        feat = y

With one layer, over every node in order and without shuffling, the
minibatches are the server's full scan: ``batch_size`` consecutive nodes
with all of their in-neighbors, made by one sequential pass over the
graph's chunks (:class:`~streamsampler.loader.NodeLoader`). Any other use
of -1 fanouts is refused here (ValueError).
"""

from __future__ import annotations

from typing import Any

from .dgl_loader import NeighborSampler

__all__ = ["MultiLayerFullNeighborSampler"]


class MultiLayerFullNeighborSampler(NeighborSampler):
    """DGL's ``MultiLayerFullNeighborSampler(num_layers, edge_dir="in",
    ...)``: every in-neighbor at each of ``num_layers`` hops (fanout -1).
    The prefetch arguments are accepted for compatibility, as by
    :class:`~streamsampler.dgl.NeighborSampler`."""

    def __init__(self, num_layers: int, edge_dir: str = "in", prefetch_node_feats: Any = None,
                 prefetch_labels: Any = None, prefetch_edge_feats: Any = None, output_device: Any = None) -> None:
        if edge_dir != "in":
            raise NotImplementedError("MultiLayerFullNeighborSampler(edge_dir=%r): streamsampler samples in-edges "
                                      "(store out-edges by building the graph without --reverse)" % edge_dir)
        if int(num_layers) < 1:
            raise ValueError("MultiLayerFullNeighborSampler: num_layers %r, want >= 1" % (num_layers,))
        # The fanouts are checked by the loader, which serves -1 on its
        # full-scan route only.
        self.fanouts = [-1] * int(num_layers)
        self.replace = False
        self.output_device = output_device
