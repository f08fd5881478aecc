"""Heterogeneous minibatches (docs/PROTOCOL.md, "Heterogeneous
minibatches"): what a heterogeneous ``streamsampler serve`` hands out, as
numpy arrays keyed by node type and by edge type ``(src, rel, dst)``.

PyG semantics give each node type ``n_id``, ``num_sampled_nodes`` and
``batch_size`` and each edge type ``edge_index`` ([2, E], row 0 the
source's position in its type's ``n_id``), ``e_id`` and
``num_sampled_edges``, as torch_geometric's NeighborLoader sets them on a
HeteroData minibatch. DGL semantics give ``blocks``, hop 1 first (DGL's
list is the reverse), each with per type ``dst_n_id``/``src_n_id`` and per
edge type ``(src, dst, e_id)`` positions, as dgl.to_block makes them. A server with
``--features`` adds each node type's feature rows (``x``) and labels
(``y``, int32, -1 for none) in the same rows: one per ``n_id`` entry
(PyG) or per src node of the last hop (DGL). A split's minibatches
(``Client.hetero_split``) are HeteroBatches too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from .protocol import ProtocolError

__all__ = ["EdgeType", "HeteroBatch", "HeteroBlock", "HeteroEdges", "HeteroNodes", "HeteroSchema"]

#: An edge type, PyG's canonical (src, rel, dst).
EdgeType = Tuple[str, str, str]


@dataclass(frozen=True)
class HeteroSchema:
    """The node types and edge types of a heterogeneous server, in the
    order minibatches index them (epoch_info's ``hetero``)."""

    node_types: Tuple[str, ...]
    edge_types: Tuple[EdgeType, ...]

    @classmethod
    def from_info(cls, hetero: Mapping[str, Any]) -> "HeteroSchema":
        """The schema of epoch_info's ``hetero`` object."""
        try:
            types = tuple(str(t) for t in hetero["node_types"])
            rels = tuple((str(r[0]), str(r[1]), str(r[2])) for r in hetero["relations"])
        except (KeyError, IndexError, TypeError) as e:
            raise ProtocolError("epoch_info's hetero object: %r" % (e,)) from e
        known = set(types)
        for r in rels:
            if r[0] not in known or r[2] not in known:
                raise ProtocolError("edge type %r names an unknown node type" % (r,))
        return cls(types, rels)


@dataclass
class HeteroNodes:
    """One node type of a PyG heterogeneous minibatch."""

    n_id: npt.NDArray[np.uint32]
    num_sampled_nodes: npt.NDArray[np.uint32]
    batch_size: int
    x: Optional[npt.NDArray[Any]] = None
    #: Labels (int32, -1: none), one per n_id like ``x``; None when the
    #: type has none or the server sends none.
    y: Optional[npt.NDArray[np.int32]] = None


@dataclass
class HeteroEdges:
    """One edge type of a PyG heterogeneous minibatch."""

    edge_index: npt.NDArray[np.int64]
    num_sampled_edges: npt.NDArray[np.uint32]
    e_id: Optional[npt.NDArray[np.int64]] = None


@dataclass
class HeteroBlock:
    """One hop of a DGL heterogeneous minibatch: per node type its dst and
    src nodes (local ids of the type; src starts with dst), per edge type
    its edges as (src positions, dst positions, e_id or None)."""

    dst_n_id: Dict[str, npt.NDArray[np.uint32]]
    src_n_id: Dict[str, npt.NDArray[np.uint32]]
    edges: Dict[EdgeType, Tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], Optional[npt.NDArray[np.int64]]]]


@dataclass
class HeteroBatch:
    """A heterogeneous minibatch: ``nodes``/``edges`` (PyG semantics) or
    ``blocks`` (DGL semantics, hop 1 first)."""

    epoch: int
    index: int
    semantics: str
    num_hops: int
    nodes: Dict[str, HeteroNodes] = field(default_factory=dict)
    edges: Dict[EdgeType, HeteroEdges] = field(default_factory=dict)
    blocks: List[HeteroBlock] = field(default_factory=list)
    #: Feature rows per node type (a server with --features): one row per
    #: n_id (PyG; also ``nodes[t].x``) or per src node of the last hop (DGL).
    x: Dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    #: Labels per node type that has any (a server with --features; int32,
    #: -1: a node without a label), in the rows of ``x``: one per n_id
    #: (PyG; also ``nodes[t].y``) or per src node of the last hop (DGL,
    #: which start with the seeds).
    y: Dict[str, npt.NDArray[np.int32]] = field(default_factory=dict)

    def __getitem__(self, key: Any) -> Any:
        """``batch["paper"]`` or ``batch["author", "writes", "paper"]``, as
        a HeteroData is indexed (PyG semantics)."""
        if isinstance(key, tuple) and len(key) == 3:
            return self.edges[(str(key[0]), str(key[1]), str(key[2]))]
        return self.nodes[key]

    @property
    def node_types(self) -> Sequence[str]:
        return list(self.nodes) if self.nodes else (list(self.blocks[0].dst_n_id) if self.blocks else [])
