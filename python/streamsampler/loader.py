"""A prefetching loader for training loops."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator, Optional, Union

from .client import Address, Client
from .protocol import Batch

_END = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def prefetched(source: Callable[[], Iterator[Any]], transform: Optional[Callable[[Any], Any]],
               prefetch: int) -> Iterator[Any]:
    """Iterate over ``source()``'s items, each ``transform``-ed, produced
    in a background thread up to ``prefetch`` ahead of the consumer. An
    exception there is raised here; a consumer that stops early stops the
    thread (which closes ``source()``'s iterator, ending its requests)."""
    q: queue.Queue[Any] = queue.Queue(max(1, int(prefetch)))
    stop = threading.Event()

    def work() -> None:
        try:
            it = source()
            try:
                for b in it:
                    item = transform(b) if transform else b
                    while not stop.is_set():
                        try:
                            q.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
            finally:
                close = getattr(it, "close", None)
                if close is not None:
                    close()
            q.put(_END)
        except BaseException as e:  # handed to the consumer
            q.put(_Failure(e))

    def consume() -> Iterator[Any]:
        t = threading.Thread(target=work, name="streamsampler-loader", daemon=True)
        t.start()
        try:
            while True:
                item = q.get()
                if item is _END:
                    break
                if isinstance(item, _Failure):
                    raise item.exc
                yield item
        finally:
            stop.set()
            t.join()

    return consume()


class Loader:
    """Iterate one epoch per ``iter()``, with minibatches fetched (and
    ``transform``-ed, e.g. by ``to_pyg``) in a background thread while the
    training step runs::

        loader = Loader(client, transform=to_pyg)
        for epoch in range(10):
            for data in loader:
                ...

    ``client`` is a Client or an address. ``prefetch`` bounds the
    minibatches held ready; ``depth`` is the next_batch requests kept in
    flight on the connection. Every ``iter()`` is a whole epoch: at an
    epoch's end the server is advanced, and an iteration left part-way (a
    ``break``) leaves its epoch for good, so the next ``iter()`` serves the
    next epoch from its start. ``len(loader)`` is the epoch's minibatch
    count (this rank's).
    """

    def __init__(self, client: Union[Client, Address], transform: Optional[Callable[[Batch], Any]] = None,
                 prefetch: int = 8, depth: int = 4) -> None:
        self._own = not isinstance(client, Client)
        self.client: Client = client if isinstance(client, Client) else Client(client)
        self.transform = transform
        self.prefetch = max(1, int(prefetch))
        self.depth = depth
        self._last: Optional[int] = None  # the epoch the last iter() served

    def __len__(self) -> int:
        """The minibatches of an epoch."""
        return int(self.client.epoch_info()["num_batches"])

    def __iter__(self) -> Iterator[Any]:
        epoch = self.client.epoch_info()["epoch"]
        if self._last is not None and epoch <= self._last:
            epoch = self.client.advance(self._last)["epoch"]  # the last iter() was left part-way
        self._last = epoch
        return prefetched(lambda: self.client.batches(epoch, depth=self.depth), self.transform, self.prefetch)

    def close(self) -> None:
        """Close the connection if the loader opened it."""
        if self._own:
            self.client.close()

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
