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
``hetero_loader.py``       :class:`HeteroNodeLoader`, :class:`HeteroNeighborLoader`:
                           PyG's ``NeighborLoader`` over a ``HeteroData``
                           (what ``streamsampler.pyg.NeighborLoader``
                           returns for heterogeneous input)
``hetero_dgl_loader.py``   :class:`HeteroDataLoader`: DGL's ``DataLoader``
                           over a heterograph (``streamsampler.dgl``)
``link_loader.py``         :class:`LinkLoader`: seed edges from a shared
                           server; PyG's ``LinkNeighborLoader``, DGL's
                           ``as_edge_prediction_sampler`` and its
                           ``DataLoader`` over edge ids
                           (``streamsampler.dgl``): layer-wise inference
``servers.py``             the registry of servers the loaders share
``utils.py``               argument checks, the default seed, a graph
                           directory for a PyG ``Data``
=========================  ====================================================

The link loaders (``link_loader.py``) and the heterogeneous loaders are
:class:`EpochLoader` s over the same shared servers; heterogeneous input
goes to ``NeighborLoader`` / ``DataLoader`` (as in PyG and DGL), which
return the heterogeneous loader for it.
"""

from __future__ import annotations

from .base import EpochLoader
from .client_loader import Loader
from .device import DeviceTransfer, PinnedOutput
from .dgl_loader import DataLoader, NeighborSampler
from .hetero_dgl_loader import HeteroDataLoader
from .hetero_loader import HeteroNeighborLoader, HeteroNodeLoader
from .link_loader import LinkDataLoader, LinkLoader, LinkNeighborLoader
from .neighbor_loader import NeighborLoader
from .node_loader import NodeLoader
from .prefetch import prefetched

__all__ = ["DataLoader", "DeviceTransfer", "EpochLoader", "HeteroDataLoader", "HeteroNeighborLoader",
           "HeteroNodeLoader", "LinkDataLoader", "LinkLoader", "LinkNeighborLoader",
           "Loader", "NeighborLoader", "NeighborSampler", "NodeLoader", "PinnedOutput", "prefetched"]
