"""The package's one epoch iterator: what :class:`streamsampler.Loader`
and the framework loaders (:class:`NodeLoader` and its PyG and DGL
front ends) are made of."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar, Union

import numpy as np

from ..batch import Batch
from ..client import Client
from ..delta import DeltaTransfer
from .device import (DeviceTransfer, PinnedOutput, Route, check_pin_memory, check_prefetch, host_key, pins,
                     resolve_device)
from .prefetch import prefetched

__all__ = ["EpochLoader"]

_L = TypeVar("_L", bound="EpochLoader")

#: Minibatches made ready ahead of the training step on a device (each
#: holds device memory), unless ``prefetch=`` says otherwise.
DEVICE_PREFETCH = 2


class EpochLoader(ABC):
    """One epoch per ``iter()``: the minibatches of :meth:`batches`, each
    ``transform``-ed, fetched in a background thread (``prefetch`` ahead,
    errors re-raised in the consumer) while the training step runs.

    Where an epoch comes from the server's training stream
    (:meth:`stream`), every ``iter()`` is a whole epoch: at the epoch's end
    the server is advanced, and an iteration left part-way (a ``break``)
    leaves its epoch for good, so that the next ``iter()`` serves the next
    epoch from its start. ``depth`` is the requests kept in flight on the
    connection.

    ``device`` ("cuda", "cuda:N", a ``torch.device``, or "cpu"): each
    minibatch's tensors arrive on it, moved in the background thread
    (:class:`~streamsampler.loader.device.DeviceTransfer`: a ring of
    page-locked buffers, copies on a side stream, an event per minibatch
    that the consumer's stream waits for, ``record_stream``);
    ``prefetch`` minibatches (default 2) are then on the device ahead of
    the step. With ``device=None`` (the default) they stay on the host as
    today, in page-locked memory where torch has CUDA unless
    ``pin_memory=False`` (:class:`~streamsampler.loader.device.PinnedOutput`:
    ``pin_memory()`` and PyG's ``PrefetchLoader`` find them pinned).
    ``delta`` (True, or a :class:`DeltaTransfer` on ``device``): the
    minibatch's feature rows go through the delta transfer, only the rows
    the previous minibatch lacked crossing to the device.

    Subclasses say where an epoch's minibatches come from
    (:meth:`batches`) and how many there are (``len``); the framework
    loaders also how a minibatch is built around moved tensors
    (:meth:`host_minibatch`, :meth:`finish_minibatch`).
    """

    #: ``prefetch``'s default without a device.
    default_prefetch = 4
    #: Whether a loader on a CUDA device registers its connection's
    #: shared-rows buffers with CUDA, so that their rows are copied from
    #: where the server wrote them (else they are packed into the ring
    #: like any host tensor). Set it before the first ``iter()``.
    register_rows = True

    def __init__(self, transform: Optional[Callable[[Batch], Any]], prefetch: Optional[int], depth: int,
                 device: Any = None, pin_memory: Optional[bool] = None,
                 delta: Union[bool, DeltaTransfer, None] = False) -> None:
        who = type(self).__name__
        self.transform = transform
        #: The device minibatches arrive on (a ``torch.device``), or None.
        self.device = resolve_device(device, who)
        self.prefetch = check_prefetch(prefetch, DEVICE_PREFETCH if self.device is not None
                                       else self.default_prefetch, who)
        self.depth = depth
        #: ``pin_memory`` as given (None: pinned where CUDA is available);
        #: whether host minibatches are pinned is settled when the loader
        #: first iterates (so that making a loader imports no torch).
        self.pin_memory = check_pin_memory(pin_memory, who)
        self._pins: Optional[bool] = None
        if delta is not None and not isinstance(delta, (bool, DeltaTransfer)):
            raise TypeError("%s: delta=%r, want True, False or a DeltaTransfer" % (who, delta))
        if delta is not None and delta is not False:
            if self.device is None:
                raise ValueError("%s: delta= moves the feature rows to a device and needs device= (e.g. "
                                 "device='cuda')" % who)
            if isinstance(delta, DeltaTransfer) and (delta.device.type != self.device.type or
                                                     None not in (delta.device.index, self.device.index) and
                                                     delta.device.index != self.device.index):
                raise ValueError("%s: delta= is a DeltaTransfer to %s, but device=%s" % (who, delta.device,
                                                                                        self.device))
        if self.device is not None and transform is None and type(self).host_minibatch is EpochLoader.host_minibatch:
            raise ValueError("%s: device= moves the torch tensors of what transform returns, and without a "
                             "transform minibatches are numpy Batches: pass transform=to_pyg (or to_dgl, or your "
                             "own)" % who)
        self._delta_arg = delta
        self._delta: Optional[DeltaTransfer] = None
        #: The loader's :class:`DeviceTransfer` (``device=``) or
        #: :class:`PinnedOutput` (pinned host minibatches), made on the
        #: first ``iter()``; its ``stats`` say what it moved.
        self.transfer: Union[DeviceTransfer, PinnedOutput, None] = None
        self._last_epoch: Optional[int] = None  # the training-stream epoch the last iter() served

    @abstractmethod
    def __len__(self) -> int:
        """The minibatches of an epoch."""

    @abstractmethod
    def batches(self) -> Iterator[Batch]:
        """The next epoch's raw minibatches (no prefetching, no transform):
        which epoch (or split) is settled when this is called, the
        minibatches are requested as they are iterated."""

    @abstractmethod
    def close(self) -> None:
        """Release what the loader holds (its connection; the last loader
        of a shared server stops it)."""

    def __enter__(self: _L) -> _L:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self) -> Optional[Client]:
        """The connection the minibatches come on (its shared-rows buffers
        are registered for a CUDA device); None if unknown."""
        return None

    def host_minibatch(self, batch: Batch) -> Any:
        """A minibatch as host tensors, before moving (the transform's)."""
        return self.transform(batch) if self.transform is not None else batch

    def finish_minibatch(self, obj: Any) -> Any:
        """What the consumer gets, made from the moved tensors (as they
        are, here; DGL's blocks, made on the device, in the DGL loader)."""
        return obj

    def stream(self, client: Client, semantics: Optional[str] = None) -> Iterator[Batch]:
        """The server's training stream for the next ``iter()``: the
        current epoch, or the one after the epoch the last ``iter()`` served
        when that one was left part-way (the server is advanced past it).
        The returned iterator advances the server at the epoch's end."""
        epoch = int(client.epoch_info()["epoch"])
        if self._last_epoch is not None and epoch <= self._last_epoch:
            epoch = int(client.advance(self._last_epoch)["epoch"])  # the last iter() was left part-way
        self._last_epoch = epoch
        return client.batches(epoch, depth=self.depth, semantics=semantics)

    def _moves(self) -> bool:
        """Whether minibatches go through :attr:`transfer`: on a device, or
        pinned (when the transform gives tensors to pin)."""
        if self.device is not None:
            return True
        if self.transform is None:
            return False
        if self._pins is None:
            self._pins = pins(self.pin_memory, self.device, type(self).__name__)
        return self._pins

    def _transfer(self) -> Union[DeviceTransfer, PinnedOutput]:
        if self.transfer is not None:
            return self.transfer
        mover: Union[DeviceTransfer, PinnedOutput]
        if self.device is not None:
            t = DeviceTransfer(self.device)
            self.device = t.device  # with its index
            if isinstance(self._delta_arg, DeltaTransfer):
                self._delta = self._delta_arg
            elif self._delta_arg:
                self._delta = DeltaTransfer(self.device, num_nodes=int(getattr(self, "num_nodes", 0)))
            t.delta = self._delta
            client = self.connection() if self.register_rows else None
            reg = t.streams.registrar() if client is not None and client.shared_rows else None
            if reg is not None and client is not None and client.register_shared_rows(reg):
                t.registrar = reg
            mover = t
        else:
            import torch

            from ..streams import CudaStreams
            mover = PinnedOutput(CudaStreams(torch.device("cuda", torch.cuda.current_device())))
        self.transfer = mover
        return mover

    def routes(self, batch: Batch) -> Dict[Any, Route]:
        """The host tensors of ``batch`` that do not cross as they are: its
        rows ``x`` through the delta transfer, where there is one."""
        delta, x = self._delta, batch.x
        if delta is None or x is None:
            return {}
        dt: DeltaTransfer = delta
        rows: Any = x
        key = host_key(int(rows.__array_interface__["data"][0]), rows.shape, rows.dtype.itemsize)
        return {key: lambda: dt(batch.n_id, np.asarray(rows), epoch=batch.epoch)}

    def __iter__(self) -> Iterator[Any]:
        if not self._moves():
            return prefetched(self.batches(), self.transform, self.prefetch)
        mover = self._transfer()
        finish = self.finish_minibatch

        def produce(b: Batch) -> Any:
            return mover.produce(lambda: self.host_minibatch(b), self.routes(b), finish)

        return mover.iterate(prefetched(self.batches(), produce, self.prefetch))
