"""The loaders, laid out as PyG's ``torch_geometric/loader``:

=========================  ====================================================
``base.py``                :class:`EpochLoader`: the one epoch iterator (one
                           epoch per ``iter()``, a loop left early ends its
                           epoch, prefetched in a thread) every loader is
``prefetch.py``            :func:`prefetched`: the background thread
``device.py``              :class:`DeviceTransfer`: minibatches onto the
                           trainer's device (``device=``) through a ring of
                           page-locked buffers on a side stream;
                           :class:`PinnedOutput`: pinned host minibatches
``device_table.py``        :class:`DeviceTable`: the feature store held on the
                           device, its rows CRC-checked there as it loads
``client_loader.py``       :class:`Loader`: over a Client of a server you run
``node_loader.py``         :class:`NodeLoader`: seed nodes from a shared server
                           (training stream or split), ``input_id``
``neighbor_loader.py``     PyG's ``NeighborLoader`` (``streamsampler.pyg``)
``dgl_loader.py``          DGL's ``DataLoader``, ``NeighborSampler``
                           (``streamsampler.dgl``)
                           (``streamsampler.dgl``): layer-wise inference
``servers.py``             the registry of servers the loaders share
``utils.py``               argument checks, the default seed, a graph
                           directory for a PyG ``Data``
=========================  ====================================================

A link loader (PyG's ``LinkNeighborLoader``) belongs beside the node
loader as ``link_loader.py``, an :class:`EpochLoader` over the same
shared servers; heterogeneous input, when graphs have types, is the node
and link loaders' (as in PyG), not a loader of its own.
"""

from __future__ import annotations

from .base import EpochLoader
from .client_loader import Loader
from .device import DeviceTransfer, PinnedOutput
from .dgl_loader import DataLoader, NeighborSampler
from .neighbor_loader import NeighborLoader
from .node_loader import NodeLoader
from .prefetch import prefetched

__all__ = ["DataLoader", "DeviceTransfer", "EpochLoader", "Loader", "NeighborLoader", "NeighborSampler", "NodeLoader",
           "PinnedOutput", "prefetched"]
