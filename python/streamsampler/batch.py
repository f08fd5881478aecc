"""The minibatch model: a :class:`Batch` of :class:`Hop` s, as a server's
reply (:func:`streamsampler.wire.decode_blocks`) and ``streamsampler
sample --format json`` give it."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

import numpy as np
import numpy.typing as npt

from .link import LinkFields
from .protocol import NO_BATCH

__all__ = ["Batch", "Hop"]


class Hop:
    """One hop of a minibatch: edges run from ``src`` to ``dst``.

    ``dst`` (the nodes this hop expands) and ``src`` (every node known
    after it: the previous hop's src, the seeds at hop 1, then the new
    neighbors in order of first appearance) are global node ids (uint32).
    ``edge_src``/``edge_dst`` (int32) are local indices into ``src`` and
    ``dst``, ordered by destination, then sample slot. With DGL semantics
    ``dst`` is the previous hop's src (``src[:len(dst)] == dst``); with
    PyG semantics it is the nodes first reached at the previous hop,
    ``src[lo:lo + len(dst)]`` for ``lo = len(previous src) - len(dst)``.
    ``e_id`` (int64), where the server sends edge ids, is each edge's
    position in the stored CSR.
    """

    __slots__ = ("dst", "src", "edge_src", "edge_dst", "e_id")

    def __init__(self, dst: npt.NDArray[np.uint32], src: npt.NDArray[np.uint32],
                 edge_src: npt.NDArray[np.int32], edge_dst: npt.NDArray[np.int32],
                 e_id: Optional[npt.NDArray[np.int64]] = None) -> None:
        self.dst = dst
        self.src = src
        self.edge_src = edge_src
        self.edge_dst = edge_dst
        self.e_id = e_id

    def __repr__(self) -> str:
        return "Hop(dst=%d, src=%d, edges=%d)" % (len(self.dst), len(self.src), len(self.edge_src))


class Batch:
    """One minibatch: ``hops[0]`` is hop 1 (its dst are the seeds); with
    ``semantics == "dgl"`` ``hops[h+1].dst`` equals ``hops[h].src``, with
    ``"pyg"`` it is the nodes hop h reached first (see Hop); arrays exactly
    as ``streamsampler sample --format json`` gives them. ``index`` is the
    minibatch's position in its epoch or split (-1 for a sample
    request)."""

    __slots__ = ("epoch", "index", "seeds", "hops", "x", "y", "semantics", "input_id", "link")

    def __init__(self, epoch: int, seeds: npt.NDArray[np.uint32], hops: List[Hop],
                 index: int = NO_BATCH, x: Optional[npt.NDArray[Any]] = None,
                 y: Optional[npt.NDArray[np.int32]] = None, semantics: str = "dgl") -> None:
        self.epoch = epoch
        self.index = index
        self.seeds = seeds
        self.hops = hops
        #: "dgl" or "pyg": which nodes each hop expands.
        self.semantics = semantics
        #: The seeds' positions in the node list a loader iterates (int64),
        #: set by the framework loaders; None otherwise.
        self.input_id: Optional[npt.NDArray[np.int64]] = None
        #: The feature rows of ``n_id``, in order (``[len(n_id), dim]``, the
        #: store's dtype), from a server started with ``--features``; None
        #: otherwise.
        self.x = x
        #: The seeds' labels (int32, -1 for none) when the feature store
        #: has labels; None otherwise.
        self.y = y
        #: A link minibatch's supervision (:class:`~streamsampler.link.LinkFields`:
        #: its positive and negative edges in local ids, their labels);
        #: None for a node minibatch.
        self.link: Optional[LinkFields] = None

    @property
    def n_id(self) -> npt.NDArray[np.uint32]:
        """Every node of the minibatch: seeds first, then each hop's new
        nodes (the last hop's src)."""
        return self.hops[-1].src if self.hops else self.seeds

    @property
    def has_edge_ids(self) -> bool:
        """Whether the hops carry ``e_id``."""
        return bool(self.hops) and self.hops[0].e_id is not None

    @property
    def num_edges(self) -> int:
        """The sampled edges of every hop."""
        return sum(len(h.edge_src) for h in self.hops)

    @classmethod
    def from_json(cls, obj: Union[str, bytes, Dict[str, Any]], index: int = NO_BATCH) -> Batch:
        """A Batch from the JSON of ``streamsampler sample --format json``
        (a dict, or its text); without a "seeds" key the seeds are hop 1's
        dst."""
        d: Dict[str, Any] = json.loads(obj) if isinstance(obj, (str, bytes)) else obj
        hops = [
            Hop(
                np.asarray(h["dst"], dtype=np.uint32),
                np.asarray(h["src"], dtype=np.uint32),
                np.asarray(h["edge_src"], dtype=np.int32),
                np.asarray(h["edge_dst"], dtype=np.int32),
                np.asarray(h["e_id"], dtype=np.int64) if "e_id" in h else None,
            )
            for h in d["hops"]
        ]
        if "seeds" in d:
            seeds = np.asarray(d["seeds"], dtype=np.uint32)
        elif hops:
            seeds = hops[0].dst  # hop 1's destinations are the seeds
        else:
            seeds = np.empty(0, np.uint32)
        return cls(int(d["epoch"]), seeds, hops, index, semantics=d.get("semantics", "dgl"))

    def __repr__(self) -> str:
        return "Batch(epoch=%d, index=%d, seeds=%d, hops=%r)" % (
            self.epoch, self.index, len(self.seeds), self.hops)
