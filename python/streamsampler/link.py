"""A link minibatch's supervision: the fields a link-prediction minibatch
carries beside its hops (``Batch.link``), as PyG's ``LinkNeighborLoader``
and DGL's edge-prediction sampler hand them to a training step.

A link minibatch's seeds (``Batch.seeds``, the start of ``n_id``) are the
sorted unique endpoints of its positive edges and of its negatives; every
index below is a position in ``n_id`` (a local id), as PyG's
``edge_label_index`` is.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

__all__ = ["LinkFields", "NEG_NONE", "NEG_BINARY", "NEG_TRIPLET"]

#: No negatives: the minibatch's supervision edges are its positives only.
NEG_NONE = "none"
#: PyG's ``neg_sampling="binary"``: negatives are extra supervision edges
#: labelled 0, after the positives in ``edge_label_index``.
NEG_BINARY = "binary"
#: PyG's ``neg_sampling="triplet"``: every positive has ``amount``
#: negative destinations (``dst_neg_index``), sources shared.
NEG_TRIPLET = "triplet"


class LinkFields:
    """The supervision of one link minibatch.

    ``input_id`` (int64 [P]): the positives' positions in the training
    edge set (PyG's ``input_id``). ``mode``: :data:`NEG_NONE`,
    :data:`NEG_BINARY` or :data:`NEG_TRIPLET`.

    Without negatives or with binary ones, ``edge_label_index`` (int64
    [2, M]) holds the supervision edges in local ids, row 0 the source:
    the P positives in ``input_id``'s order, then the negatives, and
    ``edge_label`` ([M]) their labels: the given labels (shifted by one in
    binary mode, as PyG does, so that 0 means negative) or ones, then
    zeros for the negatives; float32 ones where no labels were given,
    else the given labels' dtype. In triplet mode ``src_index`` and
    ``dst_pos_index`` (int64 [P]) are each positive's endpoints and
    ``dst_neg_index`` (int64 [P, amount]) its negative destinations, all
    local; ``edge_label_index`` and ``edge_label`` are None.
    """

    __slots__ = ("mode", "input_id", "edge_label_index", "edge_label", "src_index", "dst_pos_index",
                 "dst_neg_index")

    def __init__(self, mode: str, input_id: npt.NDArray[np.int64],
                 edge_label_index: Optional[npt.NDArray[np.int64]] = None,
                 edge_label: Optional[npt.NDArray[Any]] = None,
                 src_index: Optional[npt.NDArray[np.int64]] = None,
                 dst_pos_index: Optional[npt.NDArray[np.int64]] = None,
                 dst_neg_index: Optional[npt.NDArray[np.int64]] = None) -> None:
        if mode not in (NEG_NONE, NEG_BINARY, NEG_TRIPLET):
            raise ValueError("LinkFields: mode %r, want %r, %r or %r" % (mode, NEG_NONE, NEG_BINARY, NEG_TRIPLET))
        self.mode = mode
        self.input_id = input_id
        self.edge_label_index = edge_label_index
        self.edge_label = edge_label
        self.src_index = src_index
        self.dst_pos_index = dst_pos_index
        self.dst_neg_index = dst_neg_index

    @property
    def num_pos(self) -> int:
        """P, the minibatch's positive edges."""
        return len(self.input_id)

    def __repr__(self) -> str:
        return "LinkFields(mode=%s, positives=%d)" % (self.mode, self.num_pos)
