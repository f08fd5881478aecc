"""Minibatches on the trainer's device before the model asks for them
(the loaders' ``device=``), and in page-locked host memory when they stay
on the host (``pin_memory``).

:class:`DeviceTransfer` (``device=``) moves each minibatch in the
loader's background thread, ``prefetch`` minibatches ahead of the
training step:

* **The copies run on a side stream** of their own, beside the trainer's
  compute stream. Host tensors are first packed into a **ring of
  page-locked buffers** (``slots`` of them, two by default, allocated on
  first use and reused; one grows, by a quarter more than asked, only
  when a minibatch does not fit), then copied asynchronously. A slot is
  packed again only once the copies that read it are done (its event,
  waited on by the background thread, never by the trainer).
* **Rows the server wrote into shared buffers** (a loader's connection
  with ``shared_rows``) are not packed at all where those buffers could
  be registered with CUDA (``cudaHostRegister``,
  :class:`~streamsampler.streams.CudaRegistrar`): they are copied from
  where they are, and the array viewing them is held until its copy is
  done (so the server does not write the buffer again before), then let
  go. Any other host tensor that is already page-locked is copied
  directly the same way.
* **Each minibatch records an event** after its last copy (and after
  anything built from its device tensors in the same thread, DGL's
  blocks); the consumer's step makes its current stream wait for that
  event only, on the device: the trainer's thread never waits for a
  copy, and minibatch k never waits for k+1's copies.
* **record_stream**: every device tensor (and DGL graph) handed to the
  consumer is recorded on the consumer's current stream, so that when
  the trainer drops it the allocator does not give its memory to a later
  copy before the trainer's kernels that read it have run.
* ``delta``: the rows ``x`` go through a
  :class:`~streamsampler.delta.DeltaTransfer` on the side stream instead
  (only the rows the previous minibatch lacked cross the bus).

:class:`PinnedOutput` (``device=None`` on a machine with CUDA): each
minibatch's host tensors are copied, in the background thread, into
page-locked memory from torch's own pinned allocator (a block a tensor,
which the allocator gives out again only once the copies reading it are
done, as torch tracks them; after the first minibatches it pins nothing
new), so
that ``tensor.pin_memory()`` returns the tensor itself and PyG's
``PrefetchLoader`` (or a ``.to(device, non_blocking=True)``) copies it
asynchronously, with no pinning in the trainer's thread. Tensors in
page-locked memory torch owns are left as they are; the server's shared
buffers are copied even where registered: torch would not know to keep
them from the server until such a copy is done.

What is moved: torch tensors, in lists, tuples (named ones too), dicts,
and PyG ``Data``/``HeteroData`` (through their ``apply``). An object with
a ``.to(device)`` and a ``device`` is moved by its ``.to``: in the
background thread where it can also be recorded on the consumer's stream
(a DGL graph's ``record_stream``), else in the consumer's thread on its
stream (a torch_sparse ``SparseTensor``, made by a user transform).
numpy arrays and everything else are left as they are.
"""

from __future__ import annotations

import numbers
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Tuple

import numpy as np

from ..delta import DeltaTransfer
from ..optional import require
from ..shm import Registrar
from ..streams import Event, Streams, streams_for

__all__ = ["ALIGN", "Delivery", "DeviceTransfer", "PinnedOutput", "TransferStats", "check_pin_memory", "host_copy",
           "check_prefetch", "host_key", "pins", "resolve_device", "walk"]

#: Each tensor packed into a slot starts at a multiple of this.
ALIGN = 256

#: Slots grow in steps of this (and by a quarter more than asked).
_GROW_STEP = 1 << 20

#: A route: a function giving the device tensor for a host tensor that is
#: not copied as it is (the delta transfer of x).
Route = Callable[[], Any]


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def resolve_device(device: Any, who: str) -> Any:
    """``device`` as a ``torch.device`` ("cpu", or "cuda" with or without
    an index: without, the loader takes the current device when it first
    iterates, so that a ``torch.cuda.set_device`` after the loader is made
    counts), None for None; ValueError naming ``who`` for anything else,
    or for CUDA without a GPU."""
    if device is None:
        return None
    torch = require("torch", "%s(device=...)" % who, "torch", "device=None")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as e:
        raise ValueError("%s: device=%r is not a device: %s" % (who, device, e)) from None
    if d.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("%s: device=%r, but torch.cuda.is_available() is False (no GPU or no CUDA build of "
                             "torch); use device=None or 'cpu'" % (who, device))
        if d.index is not None and not 0 <= d.index < torch.cuda.device_count():
            raise ValueError("%s: device=%r, but there are %d CUDA devices" % (who, device,
                                                                               torch.cuda.device_count()))
    elif d.type != "cpu":
        raise ValueError("%s: device=%r: minibatches can be delivered to 'cuda' ('cuda:N') or 'cpu'" % (who, device))
    return d


def check_prefetch(prefetch: Any, default: int, who: str) -> int:
    """``prefetch`` (None: ``default``) as an int >= 1, else TypeError or
    ValueError naming ``who``."""
    if prefetch is None:
        return default
    if isinstance(prefetch, bool) or not isinstance(prefetch, numbers.Integral):
        raise TypeError("%s: prefetch=%r, want an int (minibatches made ready ahead of the training step)"
                        % (who, prefetch))
    n = int(prefetch)
    if n < 1:
        raise ValueError("%s: prefetch=%d, want at least 1 (minibatches made ready ahead of the training step)"
                         % (who, n))
    return n


def check_pin_memory(pin_memory: Any, who: str) -> Optional[bool]:
    """``pin_memory`` if it is True, False or None, else TypeError naming
    ``who``."""
    if pin_memory is not None and not isinstance(pin_memory, bool):
        raise TypeError("%s: pin_memory=%r, want True, False or None (pinned where CUDA is available)"
                        % (who, pin_memory))
    return pin_memory


def pins(pin_memory: Optional[bool], device: Any, who: str) -> bool:
    """Whether a loader without ``device`` hands out page-locked host
    tensors: ``pin_memory`` None (the default) or True where torch has
    CUDA, False never. True without CUDA warns, as torch's DataLoader
    does, and pins nothing."""
    if device is not None or pin_memory is False:
        return False
    try:
        import torch
    except ImportError:
        cuda = False
    else:
        cuda = bool(torch.cuda.is_available())
    if pin_memory and not cuda:
        import warnings
        warnings.warn("%s: pin_memory=True, but CUDA is not available: host memory is not pinned" % who,
                      UserWarning, stacklevel=4)
    return cuda


def walk(obj: Any, leaf: Callable[[Any], Any], other: Callable[[Any], Any]) -> Any:
    """``obj`` with every torch tensor replaced by ``leaf(tensor)``, through
    lists, tuples (named ones too), dicts and PyG data objects (their
    ``apply``, in place, which may call ``leaf`` with non-tensors too: it
    must return those as they are); any other object replaced by
    ``other(obj)``."""
    if _is_tensor(obj):
        return leaf(obj)
    if isinstance(obj, list):
        return [walk(v, leaf, other) for v in obj]
    if isinstance(obj, tuple):
        vals = [walk(v, leaf, other) for v in obj]
        return type(obj)(*vals) if hasattr(obj, "_fields") else tuple(vals)
    if isinstance(obj, dict):
        return {k: walk(v, leaf, other) for k, v in obj.items()}
    apply = getattr(obj, "apply", None)
    if callable(apply) and hasattr(obj, "stores"):  # torch_geometric.data.Data, HeteroData, Batch
        apply(leaf)
        return obj
    return other(obj)


def _is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")  # nothing is a tensor where torch was never imported
    return torch is not None and isinstance(obj, torch.Tensor)


def _movable(o: Any) -> bool:
    """An object (no tensor, no container) that moves with ``.to(device)``:
    a DGL graph, a torch_sparse ``SparseTensor``."""
    return callable(getattr(o, "to", None)) and hasattr(o, "device") and not isinstance(o, type)


def _nbytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def host_key(ptr: int, shape: Tuple[int, ...], itemsize: int) -> Tuple[int, Tuple[int, ...], int]:
    """What identifies a host array for a route: its address, shape and
    element size (a tensor made by ``torch.from_numpy`` has its array's)."""
    return ptr, tuple(int(s) for s in shape), int(itemsize)


def host_copy(dst: Any, src: Any) -> None:
    """``dst.copy_(src)`` for two host tensors of one shape and dtype, in
    this thread alone: through numpy where both can be viewed as arrays
    (numpy copies on one core, without the GIL), else torch's. torch's
    own host copy runs on its intra-op thread pool, whose threads spin
    after each parallel region: from the loader's background thread, on
    every minibatch, they took the cores the server and the trainer's
    own Python need (a minibatch's host work went from 4 to 13 ms on a
    32-core H200 host, docs/PERFORMANCE.md)."""
    try:
        d, s = dst.numpy(), src.numpy()
    except (TypeError, RuntimeError):  # a dtype numpy lacks (bfloat16), or a tensor that needs grad
        dst.copy_(src)
        return
    np.copyto(d, s, casting="no")


def _tensor_key(t: Any) -> Tuple[int, Tuple[int, ...], int]:
    return host_key(int(t.data_ptr()), tuple(t.shape), int(t.element_size()))


@dataclass
class TransferStats:
    """What a :class:`DeviceTransfer` or :class:`PinnedOutput` did:
    ``minibatches``; ``bytes_staged`` (host bytes packed into pinned
    memory, then copied), ``bytes_direct`` (copied from memory already
    page-locked or registered: the shared rows), ``bytes_routed`` (the
    host bytes given to a route, the delta transfer); ``slot_waits``
    (times the background thread found the next slot's copies unfinished
    and waited for them); ``pinned_allocations`` and ``pinned_bytes``
    (page-locked buffers allocated, their bytes: the ring's, grown only
    when a minibatch does not fit)."""

    minibatches: int = 0
    bytes_staged: int = 0
    bytes_direct: int = 0
    bytes_routed: int = 0
    slot_waits: int = 0
    pinned_allocations: int = 0
    pinned_bytes: int = 0


@dataclass
class _Slot:
    """A page-locked buffer of the ring and the event after the copies
    that last read it."""

    host: Any = None
    capacity: int = 0
    event: Optional[Event] = None


@dataclass
class Delivery:
    """A minibatch moved in the background thread: the object the
    consumer gets, the event after its copies, and what to record on the
    consumer's stream."""

    obj: Any
    event: Optional[Event]
    records: List[Any] = field(default_factory=list)
    #: Whether objects are left to move in the consumer's thread.
    late: bool = False


class DeviceTransfer:
    """Moves minibatches to ``device`` through a ring of ``slots``
    page-locked buffers on a side stream (see the module's doc).

    :meth:`produce` runs in the loader's background thread, one
    minibatch at a time in order; :meth:`deliver` in the consumer's, for
    each minibatch it takes. ``streams`` (default: CUDA's for a CUDA
    device, else the CPU's) is what the tests replace; ``delta`` a
    :class:`DeltaTransfer` for the routes :meth:`produce` is given."""

    def __init__(self, device: Any, streams: Optional[Streams] = None, slots: int = 2,
                 delta: Optional[DeltaTransfer] = None) -> None:
        if int(slots) < 1:
            raise ValueError("DeviceTransfer: slots=%r, want at least 1" % (slots,))
        if device.type == "cuda" and device.index is None:
            import torch
            device = torch.device("cuda", torch.cuda.current_device())
        #: The device (with its index).
        self.device = device
        self.streams = streams if streams is not None else streams_for(device)
        #: The side stream the copies run on.
        self.stream = self.streams.new_stream()
        self.delta = delta
        self.stats = TransferStats()
        self._ring = [_Slot() for _ in range(int(slots))]
        self._turn = 0
        self._pending: Deque[Tuple[Event, List[Any]]] = deque()  # host memory held until its copies are done
        self._lock = threading.Lock()
        self._late = False
        #: What registered the loader's shared-rows buffers, if anything
        #: did (set by the loader; ``registered``, ``errors``).
        self.registrar: Optional[Registrar] = None

    @property
    def slots(self) -> int:
        """The ring's page-locked buffers."""
        return len(self._ring)

    @property
    def held(self) -> int:
        """Minibatches whose directly copied host memory (shared rows) is
        still held, their copies not known to be done."""
        with self._lock:
            return len(self._pending)

    def produce(self, make: Callable[[], Any], routes: Optional[Dict[Any, Route]] = None,
                finish: Optional[Callable[[Any], Any]] = None) -> Delivery:
        """One minibatch, in the background thread: ``make()`` (the host
        minibatch, made with the side stream current), its tensors moved
        (``routes``: host tensors, by :func:`host_key`, given to a route
        instead), then ``finish`` (e.g. DGL's blocks, built from the
        device tensors) and an event after all of it."""
        self.reap()
        self._late = False
        with self.streams.use(self.stream):
            obj = self._move(make(), routes or {})
            if finish is not None:
                obj = finish(obj)
            records: List[Any] = []
            walk(obj, lambda t: self._record(t, records), lambda o: self._record_other(o, records))
            ev = self.streams.event()
            ev.record(self.stream)
        return Delivery(obj, ev, records, self._late)

    def _record(self, t: Any, records: List[Any]) -> Any:
        if _is_tensor(t) and t.device == self.device:
            records.append(t)
        return t

    def _record_other(self, o: Any, records: List[Any]) -> Any:
        if callable(getattr(o, "record_stream", None)) and not isinstance(o, type):
            records.append(o)  # a DGL graph
        return o

    def _move(self, obj: Any, routes: Dict[Any, Route]) -> Any:
        streams = self.streams
        # Pass 1: the host tensors to pack into a slot, and where.
        staged: Dict[int, Tuple[Any, int]] = {}
        total = 0

        def plan(t: Any) -> Any:
            nonlocal total
            if (_is_tensor(t) and t.device.type == "cpu" and id(t) not in staged and _nbytes(t) > 0
                    and _tensor_key(t) not in routes and not streams.is_pinned(t)):
                staged[id(t)] = (t, total)
                total += _align(_nbytes(t))
            return t

        walk(obj, plan, lambda o: o)
        slot = self._acquire(total) if total else None
        moved: Dict[int, Any] = {}
        holds: List[Any] = []

        def leaf(t: Any) -> Any:
            if not _is_tensor(t):
                return self._other(t)
            done = moved.get(id(t))
            if done is not None:
                return done
            if t.device.type != "cpu":
                out = t if streams.on_device(t) else t.to(self.device)
            else:
                route = routes.get(_tensor_key(t))
                if route is not None:
                    out = route()
                    self.stats.bytes_routed += _nbytes(t)
                else:
                    out = streams.empty(t.shape, t.dtype)
                    n = _nbytes(t)
                    if id(t) in staged:
                        assert slot is not None
                        off = staged[id(t)][1]
                        src = slot.host[off:off + n].view(t.dtype).view(t.shape)
                        host_copy(src, t)  # host → page-locked
                        self.stats.bytes_staged += n
                        if n:
                            streams.copy(out, src)
                    else:  # page-locked already (registered shared rows): read where it is
                        if n:
                            streams.copy(out, t)
                            holds.append(t)
                        self.stats.bytes_direct += n
            moved[id(t)] = out
            return out

        try:
            out = walk(obj, leaf, self._other)
        finally:
            # Also when a route or a .to failed part-way: the copies issued
            # so far still read the slot and the held rows.
            ev = streams.event()
            ev.record(self.stream)
            if slot is not None:
                slot.event = ev
            if holds:
                with self._lock:
                    self._pending.append((ev, holds))
        self.stats.minibatches += 1
        return out

    def _other(self, o: Any) -> Any:
        """An object that is no tensor or container: one that moves with
        ``.to`` and can be recorded on the consumer's stream (a DGL graph)
        moved here; one that cannot (a ``SparseTensor``) is left to the
        consumer's thread (:meth:`deliver`), where its memory is allocated
        on the stream that uses it; anything else as it is."""
        if _movable(o):
            if callable(getattr(o, "record_stream", None)):
                return o.to(self.device)
            self._late = True
        return o

    def _acquire(self, nbytes: int) -> _Slot:
        """The next slot of the ring, its last copies done, with room for
        ``nbytes``."""
        slot = self._ring[self._turn]
        self._turn = (self._turn + 1) % len(self._ring)
        if slot.event is not None:
            if not slot.event.query():
                self.stats.slot_waits += 1
                slot.event.synchronize()
            slot.event = None
        if slot.capacity < nbytes:
            size = -(-(nbytes + nbytes // 4) // _GROW_STEP) * _GROW_STEP
            slot.host = None  # torch's pinned allocator takes the old one back
            slot.host = self.streams.pinned(size)
            slot.capacity = size
            self.stats.pinned_allocations += 1
            self.stats.pinned_bytes += size
        return slot

    def reap(self) -> None:
        """Let go of the host memory (shared rows) whose copies are done."""
        with self._lock:
            while self._pending and self._pending[0][0].query():
                self._pending.popleft()

    def deliver(self, d: Delivery) -> Any:
        """In the consumer's thread: make its current stream wait for this
        minibatch's copies (on the device; the thread does not wait), and
        record its device tensors there; the minibatch."""
        cur = self.streams.current_stream()
        if d.event is not None:
            self.streams.wait(cur, d.event)
        for r in d.records:
            self.streams.record_stream(r, cur)
        d.records = []
        self.reap()
        if d.late:
            def late(o: Any) -> Any:
                if _is_tensor(o) or not _movable(o) or callable(getattr(o, "record_stream", None)):
                    return o
                return o.to(self.device)
            return walk(d.obj, late, late)
        return d.obj

    def iterate(self, deliveries: Iterator[Delivery]) -> Iterator[Any]:
        """The consumer's side of an epoch: each delivery's minibatch."""
        try:
            for d in deliveries:
                yield self.deliver(d)
        finally:
            close = getattr(deliveries, "close", None)
            if close is not None:
                close()
            self.reap()


class PinnedOutput:
    """Hands out host minibatches whose tensors are in page-locked memory
    (see the module's doc): each host tensor is copied, in the background
    thread, into a block of torch's pinned allocator of its own, copied
    from its start: older torch versions find the block a non-blocking
    copy reads, to record its event there, only by the copy's first byte
    (newer ones also by the storage); tensors in page-locked memory torch
    owns stay as they are."""

    def __init__(self, streams: Streams) -> None:
        self.streams = streams
        self.stats = TransferStats()

    def produce(self, make: Callable[[], Any], routes: Optional[Dict[Any, Route]] = None,
                finish: Optional[Callable[[Any], Any]] = None) -> Any:
        """One minibatch: ``make()``'s tensors in page-locked memory, then
        ``finish``."""
        obj = make()
        streams = self.streams
        moved: Dict[int, Any] = {}

        def leaf(t: Any) -> Any:
            if not _is_tensor(t) or t.device.type != "cpu" or _nbytes(t) == 0 or streams.owned_pinned(t):
                return t
            out = moved.get(id(t))
            if out is None:
                n = _nbytes(t)
                out = streams.pinned(n).view(t.dtype).view(t.shape)
                host_copy(out, t)
                self.stats.pinned_allocations += 1
                self.stats.pinned_bytes += n
                self.stats.bytes_staged += n
                moved[id(t)] = out
            return out

        obj = walk(obj, leaf, lambda o: o)
        self.stats.minibatches += 1
        return finish(obj) if finish is not None else obj

    def iterate(self, items: Iterator[Any]) -> Iterator[Any]:
        """The consumer's side: the minibatches as they come."""
        return items
