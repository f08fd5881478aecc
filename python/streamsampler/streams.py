"""Where the device loaders' copies run, behind one small interface:
streams, events, page-locked host memory, device tensors and host memory
registered with CUDA.

:class:`CudaStreams` is torch's CUDA (a side stream, ``torch.cuda.Event``,
``pin_memory=True``, ``record_stream``); :class:`HostStreams` is the CPU,
where every copy is complete when it returns and events are always done.
The loaders' ring and ordering logic (:mod:`streamsampler.loader.device`)
is written against this interface only, so that it runs, and is tested
with a stand-in whose copies run late, on a machine without a GPU
(python/tests/test_device.py).

:class:`CudaRegistrar` page-locks the server's shared-rows buffers
(``cudaHostRegister`` through ``torch.cuda.cudart()``) so that a copy to
the GPU reads the rows where the server wrote them.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, ContextManager, Dict, List, Optional, Sequence, Tuple

from .shm import Registrar

__all__ = ["CudaRegistrar", "CudaStreams", "Event", "HostStreams", "Streams", "streams_for"]


class Event:
    """A point in a stream's work: ``record(stream)`` marks it,
    ``query()`` tells whether the work before it is done,
    ``synchronize()`` waits for it on the host. This one (the CPU's) is
    always done."""

    def record(self, stream: Any) -> None:
        """Mark the work issued to ``stream`` so far."""

    def query(self) -> bool:
        """Whether the marked work is done."""
        return True

    def synchronize(self) -> None:
        """Wait on the host until the marked work is done."""


class Streams:
    """The operations the device loaders need, for one device.

    This base class is the CPU (:class:`HostStreams`): no streams (None),
    copies complete when they return, events always done, "pinned"
    buffers plain memory, nothing pinned or registered. Subclasses:
    :class:`CudaStreams`; the tests' stand-in with late copies."""

    #: Whether a copy may still be running when ``copy`` returns.
    asynchronous = False

    def __init__(self, device: Any) -> None:
        self.device = device

    def new_stream(self) -> Any:
        """A stream for the loader's copies, beside the trainer's."""
        return None

    def current_stream(self) -> Any:
        """The calling thread's current stream on the device (the
        trainer's compute stream, when the consumer asks)."""
        return None

    def use(self, stream: Any) -> ContextManager[Any]:
        """Make ``stream`` (and its device) current in this thread."""
        return contextlib.nullcontext()

    def event(self) -> Event:
        """A new event."""
        return Event()

    def wait(self, stream: Any, event: Event) -> None:
        """Make ``stream``'s later work wait for ``event`` (on the device:
        the host does not wait)."""

    def pinned(self, nbytes: int) -> Any:
        """A uint8 tensor of ``nbytes`` in page-locked host memory (plain
        memory on the CPU)."""
        import torch
        return torch.empty(nbytes, dtype=torch.uint8)

    def empty(self, shape: Sequence[int], dtype: Any) -> Any:
        """An uninitialised tensor on the device."""
        import torch
        return torch.empty(tuple(shape), dtype=dtype, device=self.device)

    def copy(self, dst: Any, src: Any) -> None:
        """Copy ``src`` into ``dst`` on the current stream (asynchronously
        where that can be: a page-locked ``src`` to a GPU)."""
        dst.copy_(src, non_blocking=self.asynchronous)

    def record_stream(self, obj: Any, stream: Any) -> None:
        """Tell the allocator that ``obj`` (a device tensor, or a DGL graph)
        is used on ``stream``: its memory is not reused before the work
        issued there so far is done."""

    def is_pinned(self, t: Any) -> bool:
        """Whether host tensor ``t`` is in page-locked (or registered)
        memory, so that a copy from it may run asynchronously."""
        return False

    def owned_pinned(self, t: Any) -> bool:
        """Whether host tensor ``t`` is page-locked memory that torch's
        pinned allocator owns (or the caller's), not a registered
        shared-rows buffer: torch then keeps it from reuse until the
        asynchronous copies reading it are done."""
        return self.is_pinned(t)

    def on_device(self, t: Any) -> bool:
        """Whether ``t`` is on this device already (never, for a CPU
        device: host tensors are copied, so that none views the server's
        buffers)."""
        return False

    def registrar(self) -> Optional[Registrar]:
        """What registers shared-rows buffers for this device (None: none
        can be)."""
        return None


class HostStreams(Streams):
    """The CPU: see :class:`Streams`."""


class CudaStreams(Streams):
    """torch's CUDA, for one device (a ``torch.device`` with its index)."""

    asynchronous = True

    def __init__(self, device: Any) -> None:
        import torch
        super().__init__(device)
        self.torch = torch

    def new_stream(self) -> Any:
        return self.torch.cuda.Stream(self.device)

    def current_stream(self) -> Any:
        return self.torch.cuda.current_stream(self.device)

    def use(self, stream: Any) -> ContextManager[Any]:
        stack = contextlib.ExitStack()
        stack.enter_context(self.torch.cuda.device(self.device))
        stack.enter_context(self.torch.cuda.stream(stream))
        return stack

    def event(self) -> Event:
        ev: Event = self.torch.cuda.Event()
        return ev

    def wait(self, stream: Any, event: Event) -> None:
        stream.wait_event(event)

    def pinned(self, nbytes: int) -> Any:
        return self.torch.empty(nbytes, dtype=self.torch.uint8, pin_memory=True)

    def record_stream(self, obj: Any, stream: Any) -> None:
        obj.record_stream(stream)

    def is_pinned(self, t: Any) -> bool:
        return bool(t.is_pinned())

    def owned_pinned(self, t: Any) -> bool:
        return bool(t.is_pinned()) and not CudaRegistrar.holds(int(t.data_ptr()))

    def on_device(self, t: Any) -> bool:
        return bool(t.device == self.device)

    def registrar(self) -> Optional[Registrar]:
        return CudaRegistrar(self.device.index)


def streams_for(device: Any) -> Streams:
    """The :class:`Streams` of a ``torch.device`` ("cuda" with an index,
    or "cpu")."""
    if device.type == "cuda":
        return CudaStreams(device)
    return HostStreams(device)


class CudaRegistrar(Registrar):
    """Page-locks host memory for CUDA with ``cudaHostRegister`` (torch's
    binding, ``torch.cuda.cudart()``), so that copies from it run
    asynchronously and without a staging copy; ``unregister`` is
    ``cudaHostUnregister``.

    Each call runs in a thread of its own: a failed call leaves the CUDA
    runtime's last-error state set in the thread that made it, and torch
    would report that error at the thread's next kernel launch as if the
    kernel had failed. A registration that fails is reported once as a
    warning (the rows are then staged through the loader's pinned ring)
    and ``errors`` keeps its messages."""

    _lock = threading.Lock()
    _ranges: Dict[int, int] = {}  # every registrar's registered ranges: address -> size

    def __init__(self, device_index: Optional[int]) -> None:
        self.device_index = device_index
        self.errors: List[str] = []
        self.registered = 0  # ranges registered now

    @classmethod
    def holds(cls, addr: int) -> bool:
        """Whether ``addr`` is in a range some registrar registered (the
        server's shared buffers: memory torch counts as pinned but does
        not own)."""
        with cls._lock:
            return any(a <= addr < a + n for a, n in cls._ranges.items())

    def _call(self, fn: Callable[[], Tuple[int, str]]) -> Tuple[int, str]:
        out: List[Tuple[int, str]] = []

        def run() -> None:
            try:
                out.append(fn())
            except Exception as e:  # reported to the caller
                out.append((-1, "%s: %s" % (type(e).__name__, e)))

        t = threading.Thread(target=run, name="streamsampler-cuda-register", daemon=True)
        try:
            t.start()
        except RuntimeError as e:  # interpreter shutdown: no new threads
            return -1, str(e)
        t.join()
        return out[0] if out else (-1, "no result")

    def _cudart(self, name: str, *args: int) -> Tuple[int, str]:
        import torch

        if self.device_index is not None:
            torch.cuda.set_device(self.device_index)  # this thread only: the context, not device 0's
        rt = torch.cuda.cudart()
        err = getattr(rt, name)(*args)
        code = _error_code(err)
        return code, ("" if code == 0 else "%s: %s" % (name, rt.cudaGetErrorString(err)))

    def register(self, addr: int, size: int) -> bool:
        code, msg = self._call(lambda: self._cudart("cudaHostRegister", addr, size, 0))
        if code != 0:
            if not self.errors:
                import warnings
                warnings.warn("streamsampler: cannot page-lock a shared-rows buffer (%s); its rows are copied "
                              "through the loader's pinned buffers instead" % msg, RuntimeWarning, stacklevel=2)
            self.errors.append(msg)
            return False
        self.registered += 1
        with self._lock:
            self._ranges[addr] = size
        return True

    def unregister(self, addr: int) -> None:
        with self._lock:
            self._ranges.pop(addr, None)
        code, msg = self._call(lambda: self._cudart("cudaHostUnregister", addr))
        if code == 0:
            self.registered -= 1
        else:
            self.errors.append(msg)


def _error_code(err: Any) -> int:
    """A cudaError_t from torch's binding (a pybind11 enum) as an int."""
    try:
        return int(err)
    except (TypeError, ValueError):
        return int(getattr(err, "value", -1))
