"""Delta transfer of feature rows: keep the previous minibatch's rows on
the consumer's device and send only the rows it did not have.

Consecutive minibatches share nodes (many more with ``serve --reorder
match``, FastGL's Match-Reorder). ``DeltaTransfer`` holds the previous
minibatch's rows on the device; for the next minibatch it sends the rows
of the nodes the previous one lacked, packed contiguously (from pinned
memory on CUDA), plus one int32 index, and assembles the minibatch's
``x`` on the device with one gather: row ``i`` of the new ``x`` is row
``index[i]`` of ``[previous x; sent rows]``. The result equals sending
``x`` whole, element for element; the host→device bytes fall by the
shared fraction, less the index's 4 bytes a row.

The host side (``DeltaPlanner``: which rows of the new ``n_id`` the
previous minibatch had, and where) is numpy only and needs no torch.
It finds them with a position array indexed by node id (4 bytes a node,
grown to the largest id seen, reset after each minibatch): three
scatter/gather passes over ``n_id``, linear in the minibatch. Sorting the
previous ``n_id`` and searching it (``np.searchsorted``) needs no
per-node memory but is O(n log n): for 400,000-row minibatches over 100M
nodes the position array takes about 10 ms a minibatch, the sort about
73 ms (docs/PYTHON.md, *Delta transfer*).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # only for the annotations; imported when called
    import torch
    from torch import Tensor

#: Bytes of one entry of the index sent with a delta (int32).
INDEX_ITEMSIZE = 4


@dataclass
class DeltaPlan:
    """What to send for one minibatch of ``rows`` nodes.

    ``send`` (int64) are the positions in ``n_id`` whose rows are sent,
    in the order they are sent. ``index`` is None when the rows are sent
    whole (the first minibatch, or too few shared rows to pay for the
    index: ``send`` is then every position in order); otherwise int32
    ``[rows]``, row ``i`` of the new ``x`` being row ``index[i]`` of the
    previous minibatch's ``x`` (``index[i] < prev_rows``) or of the sent
    rows (``index[i] - prev_rows``)."""

    rows: int
    prev_rows: int
    send: npt.NDArray[np.int64]
    index: Optional[npt.NDArray[np.int32]]

    @property
    def kept(self) -> int:
        """Rows taken from the previous minibatch's ``x``."""
        return self.rows - len(self.send)


class DeltaPlanner:
    """Matches each minibatch's ``n_id`` against the previous one's.

    ``plan(n_id)`` returns the ``DeltaPlan`` of ``n_id`` and makes it the
    previous minibatch. ``num_nodes`` preallocates the position array
    (else it grows to the largest id seen). Any sequence of ``n_id`` is
    matched exactly, duplicates included (a node repeated in the previous
    minibatch is taken from one of its rows, all equal; one repeated in
    the new minibatch and new to it is sent once per occurrence).

    ``row_bytes`` (the bytes of one row) decides when a delta pays: only
    when the shared rows' bytes exceed the index's, else the rows go
    whole and without index, so a delta never sends more than ``x``."""

    def __init__(self, num_nodes: int = 0, row_bytes: Optional[int] = None) -> None:
        self._pos = np.full(max(0, int(num_nodes)), -1, dtype=np.int32)
        self._prev: Optional[npt.NDArray[np.intp]] = None
        self.row_bytes = row_bytes
        # Work arrays kept between minibatches: fresh multi-megabyte
        # arrays each time cost page faults that, on a virtual machine,
        # took longer than the matching itself. Two id buffers, used in
        # turn: one holds the previous minibatch's ids.
        self._ids = [np.empty(0, np.intp), np.empty(0, np.intp)]
        self._turn = 0
        self._iota = np.empty(0, np.int32)
        self._mask = np.empty(0, np.bool_)

    def reset(self) -> None:
        """Forget the previous minibatch: the next plan sends every row."""
        if self._prev is not None:
            self._pos[self._prev] = -1
        self._prev = None

    def plan(self, n_id: npt.ArrayLike) -> DeltaPlan:
        """The plan for ``n_id`` (1-D non-negative integer node ids)."""
        ids = np.asarray(n_id)
        if ids.ndim != 1:
            raise ValueError("n_id: want a 1-D array of node ids, got shape %s" % (ids.shape,))
        if ids.size and ids.dtype.kind not in "iu":
            raise TypeError("n_id: want integer node ids, got dtype %s" % ids.dtype)
        n = len(ids)
        if n and ids.dtype.kind == "i" and int(ids.min()) < 0:  # unsigned ids need no check
            raise ValueError("n_id: node ids must be non-negative, got %d" % int(ids.min()))
        top = int(ids.max()) + 1 if n else 0
        if top - 1 > np.iinfo(np.intp).max:
            raise ValueError("n_id: node id %d is too large" % (top - 1))
        if top > len(self._pos):
            grown = np.full(max(top, len(self._pos) + len(self._pos) // 2), -1, dtype=np.int32)
            grown[:len(self._pos)] = self._pos
            self._pos = grown
        if len(self._ids[self._turn]) < n:
            self._ids[self._turn] = np.empty(n + n // 4, np.intp)
        if len(self._iota) < n:
            self._iota = np.arange(n + n // 4, dtype=np.int32)
            self._mask = np.empty(len(self._iota), np.bool_)
        cur = self._ids[self._turn][:n]  # not the previous minibatch's buffer
        self._turn ^= 1
        np.copyto(cur, ids, casting="unsafe")  # a copy: the caller may reuse n_id
        prev_rows = 0 if self._prev is None else len(self._prev)
        hit = np.take(self._pos, cur)  # a fresh array: the previous positions, -1 for new nodes
        if self._prev is not None:
            self._pos[self._prev] = -1
        self._pos[cur] = self._iota[:n]
        self._prev = cur
        new = np.less(hit, 0, out=self._mask[:n])
        kept = n - int(np.count_nonzero(new))
        rb = self.row_bytes
        if kept == 0 or (rb is not None and kept * rb <= n * INDEX_ITEMSIZE):
            return DeltaPlan(n, prev_rows, np.arange(n, dtype=np.int64), None)
        send = np.flatnonzero(new).astype(np.int64, copy=False)
        hit[send] = np.arange(prev_rows, prev_rows + len(send), dtype=np.int32)
        return DeltaPlan(n, prev_rows, send, hit)


@dataclass
class DeltaStats:
    """Host→device traffic of ``DeltaTransfer`` over some minibatches.

    ``rows``: rows delivered; ``rows_sent``: rows sent (the rest came from
    the previous minibatch on the device); ``row_bytes_sent`` and
    ``index_bytes_sent``: what crossed to the device; ``full_bytes``: what
    sending every ``x`` whole would have sent; ``plan_seconds``: host time
    matching ``n_id``."""

    batches: int = 0
    rows: int = 0
    rows_sent: int = 0
    row_bytes_sent: int = 0
    index_bytes_sent: int = 0
    full_bytes: int = 0
    plan_seconds: float = 0.0

    @property
    def bytes_sent(self) -> int:
        """Host→device bytes: rows plus index."""
        return self.row_bytes_sent + self.index_bytes_sent

    @property
    def bytes_avoided(self) -> int:
        """The full-transfer bytes not sent (never negative: a delta is
        sent only where it is smaller)."""
        return self.full_bytes - self.bytes_sent

    @property
    def shared_fraction(self) -> float:
        """Rows taken from the previous minibatch, over all rows."""
        return (self.rows - self.rows_sent) / self.rows if self.rows else 0.0

    @property
    def ratio(self) -> float:
        """Bytes sent over the full transfer's (1.0 with no rows)."""
        return self.bytes_sent / self.full_bytes if self.full_bytes else 1.0

    def add(self, other: DeltaStats) -> None:
        """Add ``other``'s counts to these."""
        self.batches += other.batches
        self.rows += other.rows
        self.rows_sent += other.rows_sent
        self.row_bytes_sent += other.row_bytes_sent
        self.index_bytes_sent += other.index_bytes_sent
        self.full_bytes += other.full_bytes
        self.plan_seconds += other.plan_seconds

    def as_dict(self) -> Dict[str, Any]:
        """The counts and the derived figures, for JSON."""
        return {"batches": self.batches, "rows": self.rows, "rows_sent": self.rows_sent,
                "row_bytes_sent": self.row_bytes_sent, "index_bytes_sent": self.index_bytes_sent,
                "bytes_sent": self.bytes_sent, "full_bytes": self.full_bytes,
                "bytes_avoided": self.bytes_avoided, "shared_fraction": self.shared_fraction,
                "ratio": self.ratio, "plan_seconds": self.plan_seconds}


@dataclass
class _Slot:
    """A pinned staging buffer and the event after its last copy."""

    host: Any  # torch uint8 tensor, pinned
    event: Any = None


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise type(e)("DeltaTransfer needs torch; importing %s failed: %s. DeltaPlanner computes the "
                      "same plans with numpy alone" % (e.name or "torch", e), name=e.name) from e
    return torch


class DeltaTransfer:
    """Feature rows onto ``device``, sending only what the previous
    minibatch lacked::

        delta = DeltaTransfer("cuda")
        for batch in client.batches():
            x = delta(batch.n_id, batch.x, epoch=batch.epoch)   # == torch.from_numpy(batch.x).cuda()

    or ``to_pyg(batch, device="cuda", delta=delta)`` (``to_dgl`` too),
    e.g. as a ``Loader``'s transform. Each call returns a new tensor equal
    to ``x``; the holder keeps its own copy of it on the device (one
    device-to-device copy a minibatch), so the consumer may modify what
    it got. Calls must come in minibatch order from one thread (a
    ``Loader``'s transform does). ``x`` is a numpy array ``[len(n_id),
    dim]`` (or a CPU tensor) of any dtype; a change of dim or dtype
    starts over with a whole transfer.

    On CUDA the sent rows and the index are packed into pinned buffers
    (two, used in turn, each reused once its last copy has finished) and
    copied asynchronously on the current stream. ``delta=False`` sends
    every ``x`` whole through the same path: the baseline that
    ``bench/delta_gpu.py`` compares against.

    ``stats`` counts all calls, ``per_epoch[e]`` those given ``epoch=e``
    (``DeltaStats``)."""

    def __init__(self, device: Any = "cuda", num_nodes: int = 0, delta: bool = True,
                 pin: Optional[bool] = None) -> None:
        torch = _torch()
        self.torch = torch
        self.device = torch.device(device)
        self.delta = bool(delta)
        self.pin = (self.device.type == "cuda" and torch.cuda.is_available()) if pin is None else bool(pin)
        self.planner = DeltaPlanner(num_nodes)
        self.stats = DeltaStats()
        self.per_epoch: Dict[int, DeltaStats] = {}
        self._buf: Optional[Tensor] = None  # rows [0, prev_rows): the previous x
        self._prev_rows = 0
        self._kind: Optional[Tuple[int, np.dtype[Any]]] = None  # (dim, numpy dtype) of the previous x
        self._slots: List[_Slot] = []
        self._turn = 0

    def reset(self) -> None:
        """Forget the previous minibatch (and free its device copy)."""
        self.planner.reset()
        self._buf = None
        self._prev_rows = 0
        self._kind = None

    def __call__(self, n_id: npt.ArrayLike, x: Any, epoch: Optional[int] = None) -> torch.Tensor:
        """``x`` (the rows of ``n_id``, in order) on the device."""
        torch = self.torch
        if torch.is_tensor(x):
            x = x.detach().cpu().numpy()
        x = np.asarray(x)
        ids = np.asarray(n_id)
        if x.ndim != 2 or ids.ndim != 1 or len(x) != len(ids):
            raise ValueError("DeltaTransfer: want x [len(n_id), dim] and n_id 1-D, got x %s and n_id %s"
                             % (x.shape, ids.shape))
        kind = (x.shape[1], x.dtype)
        if kind != self._kind:
            self.reset()
            self.planner.row_bytes = x.shape[1] * x.dtype.itemsize
        try:
            return self._transfer(ids, x, kind, epoch)
        except BaseException:
            self.reset()  # the device copy and the planner could disagree
            raise

    def _transfer(self, ids: npt.NDArray[Any], x: npt.NDArray[Any], kind: Tuple[int, np.dtype[Any]],
                  epoch: Optional[int]) -> torch.Tensor:
        torch = self.torch
        t0 = time.perf_counter()
        if self.delta:
            plan = self.planner.plan(ids)
        else:
            plan = DeltaPlan(len(ids), 0, np.arange(len(ids), dtype=np.int64), None)
        plan_sec = time.perf_counter() - t0
        n, dim = x.shape
        tdtype = torch.from_numpy(np.empty(0, x.dtype)).dtype
        rb = dim * x.dtype.itemsize
        m = len(plan.send)
        index_bytes = 0 if plan.index is None else n * INDEX_ITEMSIZE

        index_off = -(-m * rb // 8) * 8  # the index after the rows, aligned for an int32 view
        slot = self._slot(index_off + index_bytes) if self.pin else None
        if plan.index is None:
            rows = self._stage(slot, 0, x, None, m, dim)
            out = torch.empty((n, dim), dtype=tdtype, device=self.device)
            out.copy_(rows, non_blocking=self.pin)
        else:
            rows = self._stage(slot, 0, x, plan.send, m, dim)
            index = self._stage_index(slot, index_off, plan.index)
            p = plan.prev_rows
            buf = self._room(p + m, dim, tdtype, keep=p)
            buf[p:p + m].copy_(rows, non_blocking=self.pin)
            index_dev = torch.empty(n, dtype=torch.int32, device=self.device)
            index_dev.copy_(index, non_blocking=self.pin)
            out = buf[:p + m].index_select(0, index_dev)
        if slot is not None:
            slot.event = torch.cuda.Event()
            slot.event.record()
        if self.delta:
            self._room(n, dim, tdtype, keep=0)[:n].copy_(out)  # the private copy of x
            self._prev_rows = n
            self._kind = kind

        s = DeltaStats(1, n, m, m * rb, index_bytes, n * rb, plan_sec)
        self.stats.add(s)
        if epoch is not None:
            self.per_epoch.setdefault(epoch, DeltaStats()).add(s)
        return out

    def _room(self, rows: int, dim: int, tdtype: Any, keep: int) -> torch.Tensor:
        """The device buffer with room for ``rows`` rows, its first
        ``keep`` rows preserved."""
        torch = self.torch
        buf = self._buf
        if buf is None or buf.shape[0] < rows or buf.shape[1] != dim or buf.dtype != tdtype:
            grown = torch.empty((max(rows, rows + rows // 4, 1), dim), dtype=tdtype, device=self.device)
            if keep and buf is not None:
                grown[:keep].copy_(buf[:keep])
            self._buf = buf = grown
        return buf

    def _slot(self, nbytes: int) -> _Slot:
        """The next pinned staging buffer, free and at least ``nbytes``."""
        torch = self.torch
        size = nbytes + nbytes // 4 + 64
        if len(self._slots) < 2:
            self._slots.append(_Slot(torch.empty(size, dtype=torch.uint8).pin_memory()))
        self._turn = (self._turn + 1) % len(self._slots)
        slot = self._slots[self._turn]
        if slot.event is not None:
            slot.event.synchronize()  # its previous copies have read it
            slot.event = None
        if slot.host.numel() < nbytes:
            slot.host = torch.empty(size, dtype=torch.uint8).pin_memory()
        return slot

    def _stage(self, slot: Optional[_Slot], off: int, x: npt.NDArray[Any], send: Optional[npt.NDArray[np.int64]],
               m: int, dim: int) -> torch.Tensor:
        """The rows to send (``x[send]``, or all of ``x``) as a CPU tensor,
        packed into ``slot`` at byte ``off`` when pinning."""
        torch = self.torch
        # mode="clip": the positions are in range by construction, and
        # take's default mode buffers what it gathers (about 3x slower).
        if slot is None:
            rows = x if send is None else np.take(x, send, axis=0, mode="clip")
            return torch.from_numpy(np.ascontiguousarray(rows))
        nbytes = m * dim * x.dtype.itemsize
        view = slot.host[off:off + nbytes].numpy().view(x.dtype).reshape(m, dim)
        if send is None:
            np.copyto(view, x)
        else:
            np.take(x, send, axis=0, out=view, mode="clip")
        return slot.host[off:off + nbytes].view(torch.from_numpy(view[:0]).dtype).view(m, dim)

    def _stage_index(self, slot: Optional[_Slot], off: int, index: npt.NDArray[np.int32]) -> torch.Tensor:
        torch = self.torch
        if slot is None:
            return torch.from_numpy(index)
        nbytes = len(index) * INDEX_ITEMSIZE
        slot.host[off:off + nbytes].numpy().view(np.int32)[:] = index
        return slot.host[off:off + nbytes].view(torch.int32)


__all__ = ["DeltaPlan", "DeltaPlanner", "DeltaStats", "DeltaTransfer", "INDEX_ITEMSIZE"]
