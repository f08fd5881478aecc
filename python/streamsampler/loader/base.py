"""The package's one epoch iterator: what :class:`streamsampler.Loader`
and the framework loaders (:class:`NodeLoader` and its PyG and DGL
front ends) are made of."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterator, Optional

from ..batch import Batch
from ..client import Client
from .prefetch import prefetched

__all__ = ["EpochLoader"]


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

    Subclasses say where an epoch's minibatches come from
    (:meth:`batches`) and how many there are (``len``).
    """

    def __init__(self, transform: Optional[Callable[[Batch], Any]], prefetch: int, depth: int) -> None:
        self.transform = transform
        self.prefetch = max(1, int(prefetch))
        self.depth = depth
        self._last_epoch: Optional[int] = None  # the training-stream epoch the last iter() served

    @abstractmethod
    def __len__(self) -> int:
        """The minibatches of an epoch."""

    @abstractmethod
    def batches(self) -> Iterator[Batch]:
        """The next epoch's raw minibatches (no prefetching, no transform):
        which epoch (or split) is settled when this is called, the
        minibatches are requested as they are iterated."""

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

    def __iter__(self) -> Iterator[Any]:
        return prefetched(self.batches(), self.transform, self.prefetch)
