"""A prefetching loader for training loops."""

import queue
import threading

from .client import Client

_END = object()


class _Failure:
    def __init__(self, exc):
        self.exc = exc


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
    flight on the connection. At an epoch's end the server is advanced,
    so the next ``iter()`` serves the next epoch.
    """

    def __init__(self, client, transform=None, prefetch=8, depth=4):
        self._own = not isinstance(client, Client)
        self.client = Client(client) if self._own else client
        self.transform = transform
        self.prefetch = max(1, int(prefetch))
        self.depth = depth

    def __len__(self):
        info = self.client.epoch_info()
        return info["num_batches"] - info["served"]

    def __iter__(self):
        q = queue.Queue(self.prefetch)
        stop = threading.Event()
        epoch = self.client.epoch_info()["epoch"]

        def work():
            try:
                for b in self.client.batches(epoch, depth=self.depth):
                    item = self.transform(b) if self.transform else b
                    while not stop.is_set():
                        try:
                            q.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(_END)
            except BaseException as e:  # handed to the consumer
                q.put(_Failure(e))

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

    def close(self):
        if self._own:
            self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
