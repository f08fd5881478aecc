"""Minibatches fetched and transformed in a background thread, ahead of
the training step."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator, Optional, TypeVar

__all__ = ["prefetched"]

T = TypeVar("T")

_END = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def prefetched(items: Iterator[T], transform: Optional[Callable[[T], Any]], prefetch: int) -> Iterator[Any]:
    """Iterate over ``items``, each ``transform``-ed, produced in a
    background thread up to ``prefetch`` ahead of the consumer. The thread
    starts with the first ``next``. An exception there is raised here; a
    consumer that stops early stops the thread (which closes ``items``,
    ending its requests)."""
    q: queue.Queue[Any] = queue.Queue(max(1, int(prefetch)))
    stop = threading.Event()

    def work() -> None:
        try:
            try:
                for b in items:
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
                close = getattr(items, "close", None)
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
