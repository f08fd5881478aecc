"""A prefetching loader over a :class:`streamsampler.Client` (a server you
started), for training loops."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Union

from ..batch import Batch
from ..client import Client
from ..delta import DeltaTransfer
from ..typing import Address
from .base import EpochLoader

__all__ = ["Loader"]


class Loader(EpochLoader):
    """Iterate one epoch per ``iter()``, with minibatches fetched (and
    ``transform``-ed, e.g. by ``to_pyg``) in a background thread while the
    training step runs::

        loader = Loader(client, transform=to_pyg)
        for epoch in range(10):
            for data in loader:
                ...

    ``client`` is a Client or an address. ``prefetch`` bounds the
    minibatches held ready (default 8, 2 with a device); ``depth`` is the
    next_batch requests kept in flight on the connection. Every ``iter()``
    is a whole epoch: at an epoch's end the server is advanced, and an
    iteration left part-way (a ``break``) leaves its epoch for good, so the
    next ``iter()`` serves the next epoch from its start
    (:class:`EpochLoader`). ``len(loader)`` is the epoch's minibatch count
    (this rank's).

    ``device`` (e.g. "cuda"): the torch tensors of what ``transform``
    returns arrive there, copied in the background thread ahead of the
    step (:class:`EpochLoader`; a transform is needed: ``to_pyg``, say);
    ``pin_memory``, ``delta``: see :class:`EpochLoader`. A client made
    with ``shared_rows=True`` has its rows copied to a GPU from where the
    server wrote them.
    """

    default_prefetch = 8

    def __init__(self, client: Union[Client, Address], transform: Optional[Callable[[Batch], Any]] = None,
                 prefetch: Optional[int] = None, depth: int = 4, device: Any = None,
                 pin_memory: Optional[bool] = None, delta: Union[bool, DeltaTransfer, None] = False) -> None:
        super().__init__(transform, prefetch, depth, device=device, pin_memory=pin_memory, delta=delta)
        self._own = not isinstance(client, Client)
        self.client: Client = client if isinstance(client, Client) else Client(client)

    def __len__(self) -> int:
        """The minibatches of an epoch."""
        return int(self.client.epoch_info()["num_batches"])

    def connection(self) -> Optional[Client]:
        """The loader's connection."""
        return self.client

    def batches(self) -> Iterator[Batch]:
        """The next epoch's raw minibatches, from the server's training
        stream (see the class doc)."""
        return self.stream(self.client)

    def close(self) -> None:
        """Close the connection if the loader opened it."""
        if self._own:
            self.client.close()
