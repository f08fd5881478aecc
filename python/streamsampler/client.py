"""A client of ``streamsampler serve``."""

from __future__ import annotations

import array
import itertools
import json
import os
import socket
import threading
from typing import Any, Callable, Dict, Generator, Iterator, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np
import numpy.typing as npt

from . import protocol as P
from . import wire as W
from .batch import Batch
from .hetero import HeteroBatch, HeteroSchema
from .shm import Registrar, SharedBuffers
from .typing import Address, EpochInfo, EpochStats, NodeIds, PathArg

__all__ = ["Client"]

_B = TypeVar("_B")


def _parse_address(address: Address) -> Tuple[socket.AddressFamily, Any]:
    """(family, sockaddr) of a Unix socket path, "unix:PATH",
    "tcp://HOST:PORT", "tcp:HOST:PORT" or a (host, port) tuple."""
    if isinstance(address, tuple):
        return socket.AF_INET, address
    address = os.fspath(address)
    for prefix in ("tcp://", "tcp:"):
        if address.startswith(prefix):
            host, _, port = address[len(prefix):].rpartition(":")
            if not host or not port.isdigit():
                raise ValueError("bad TCP address %r (want tcp://HOST:PORT)" % address)
            return socket.AF_INET, (host.strip("[]"), int(port))
    if address.startswith("unix:"):
        address = address[len("unix:"):]
    return socket.AF_UNIX, address


class Client:
    """One connection to a server; a context manager.

    Methods are safe to call from several threads (one request at a time);
    ``batches(depth=...)`` keeps several next_batch requests in flight on
    the connection so that the server assembles ahead of the consumer.

    With several clients (say one per DataLoader worker) the server hands
    each minibatch of an epoch to exactly one of them.

    ``token`` (default: $STREAMSAMPLER_TOKEN, if set) is presented to the
    server first, in a hello request: a server listening on TCP requires
    one (``serve --token-file``). A wrong or missing token raises
    UnauthorizedError.

    ``shared_rows=True`` (on a Unix socket to a server with ``--features``;
    recommended there: the rows then reach the consumer 3× faster) asks the server to hand each minibatch's feature rows
    over in buffers both processes map instead of the byte stream:
    ``batch.x`` is then a view of one (writable; the server reuses the
    buffer only once no array refers to its rows any more), with no copy
    through the socket. It costs one request when the client connects. Where
    the server cannot (no feature store, TCP, not Linux), or by default, the
    rows come in the stream.
    """

    def __init__(self, address: Address, timeout: Optional[float] = None,
                 token: Optional[Union[str, bytes]] = None,
                 shared_rows: bool = False) -> None:
        if token is None:
            token = os.environ.get(P.TOKEN_ENV) or None
        family, addr = _parse_address(address)
        self.address = address
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            try:
                # Minibatches are megabytes: fewer, larger reads.
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            except OSError:
                pass
            self._sock.connect(addr)
        except BaseException:
            self._sock.close()
            raise
        self._lock = threading.RLock()
        self._stash: dict[int, tuple[int, int, int, memoryview]] = {}
        self._fds: dict[int, int] = {}  # reply id -> the memory file that came with it
        self._shared = False
        self._bufs: Optional[SharedBuffers] = None
        self._next_id = 0
        self._schema: Optional[HeteroSchema] = None  # a heterogeneous server's, from epoch_info
        self._header = bytearray(W.HEADER_SIZE)
        try:
            if token is not None:
                self._call(P.OP_HELLO, W.token_payload(token))
            if shared_rows and family == socket.AF_UNIX:
                # Read every reply header with recvmsg from here on: a
                # descriptor passed along would be lost to a plain recv.
                self._shared = True
                try:
                    self._call(P.OP_MAP_ROWS)
                    self._bufs = SharedBuffers()
                except P.ServerError:
                    self._shared = False  # no feature store, or not supported: the stream
        except BaseException:
            self._sock.close()
            raise

    @property
    def shared_rows(self) -> bool:
        """Whether this connection's feature rows come in shared buffers
        (``shared_rows=True`` and a server that could)."""
        return self._bufs is not None

    def register_shared_rows(self, registrar: Optional[Registrar]) -> bool:
        """Hand the shared-rows buffers, those mapped now and each one
        mapped later, to ``registrar`` (:class:`streamsampler.shm.Registrar`:
        the device loaders page-lock them with ``cudaHostRegister`` so that
        copies to the GPU read the rows directly; each is unregistered
        before it is unmapped). None: buffers mapped later are not
        registered. Returns False, doing nothing, on a connection without
        shared rows."""
        if self._bufs is None:
            return False
        self._bufs.register_with(registrar)
        return True

    # -- framing ---------------------------------------------------------
    # Requests carry ids and replies may be read by whichever caller holds
    # the lock: a reply for another request is kept in _stash until its
    # owner asks. So several requests (a pipelined iteration, an
    # epoch_info from the loop body, other threads) can share the
    # connection.
    def _send(self, op: int, payload: bytes = b"") -> int:
        with self._lock:
            self._next_id = (self._next_id + 1) & 0xFFFFFFFF
            rid = self._next_id
            self._sock.sendall(W.encode_frame(op, rid, payload))
            return rid

    def _recv_exact(self, buf: memoryview) -> None:
        view = buf.cast("B")
        got = 0
        while got < len(view):
            n = self._sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionError("server closed the connection")
            got += n

    def _recv_header(self) -> list[int]:
        """Read a reply header into self._header; with shared rows also the
        descriptors passed along with it."""
        if not self._shared:
            self._recv_exact(memoryview(self._header))
            return []
        view = memoryview(self._header)
        got = 0
        fds: list[int] = []
        while got < len(self._header):
            n, anc, _, _ = self._sock.recvmsg_into([view[got:]], socket.CMSG_SPACE(4 * 4))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.extend(array.array("i", data[:len(data) - len(data) % 4]))
            if n == 0:
                for fd in fds:
                    os.close(fd)
                raise ConnectionError("server closed the connection")
            got += n
        return fds

    def _recv(self) -> tuple[int, int, int, memoryview]:
        """One reply frame: (op, status, id, payload as a memoryview)."""
        fds = self._recv_header()
        length, op, status, rid = W.HEADER.unpack(self._header)
        for fd in fds[1:]:
            os.close(fd)  # one file per reply at most
        if fds:
            self._fds[rid] = fds[0]
        if length < W.HEADER_SIZE - 4 or length + 4 > P.MAX_REPLY:
            raise P.ProtocolError("reply frame length %d" % length)
        # An uninitialised numpy buffer (a bytearray would be zero-filled
        # first); the decoded arrays are views of it.
        payload = np.empty(length - (W.HEADER_SIZE - 4), dtype=np.uint8)
        body = payload.data  # a memoryview of its bytes
        self._recv_exact(body)
        return op, status, rid, body

    def _wait(self, op: int, rid: int) -> tuple[int, memoryview]:
        """The reply to request ``rid``: (status, payload); error replies
        raise."""
        with self._lock:
            while rid not in self._stash:
                frame = self._recv()
                if frame[2] == 0 and frame[1] == P.STATUS_ERROR:
                    # The server could not read a request's header (too
                    # large, malformed) and closes the connection.
                    raise W.decode_error(frame[3])
                self._stash[frame[2]] = frame
            rop, status, _, body = self._stash.pop(rid)
        if rop != op:
            raise P.ProtocolError("reply op %d to request op %d id %d" % (rop, op, rid))
        if status == P.STATUS_ERROR:
            raise W.decode_error(body)
        if status not in (P.STATUS_OK, P.STATUS_END):
            raise P.ProtocolError("reply status %d" % status)
        return status, body

    def _call(self, op: int, payload: bytes = b"") -> tuple[int, memoryview]:
        return self._wait(op, self._send(op, payload))

    # -- requests --------------------------------------------------------
    def epoch_info(self) -> EpochInfo:
        """The current epoch: a dict with ``epoch``, ``num_batches``,
        ``served``, ``batch_size``, ``shard_size``, ``rank``,
        ``world_size``, ``fanouts``, ``next_ready`` and more
        (docs/PROTOCOL.md)."""
        _, body = self._call(P.OP_EPOCH_INFO)
        info: EpochInfo = json.loads(bytes(body))
        return info

    def epoch_stats(self, epoch: Optional[int] = None) -> Optional[EpochStats]:
        """The figures of ``epoch`` (None: the current one) as the server
        delivered it, from ``epoch_info()``: the current epoch's so far
        (``stats``), or the epoch before's (``previous_stats``, complete
        once nothing of it is in flight: after ``batches()`` has advanced
        the server, the epoch it iterated). Minibatches, seeds, edges, the
        wall and ms per minibatch (features included), assembly, sampling,
        the feature rows needed, from the cache and from disk, bytes,
        rows/s, and the samples' and splits' rows read directly
        (:class:`streamsampler.typing.EpochStats`, docs/PROTOCOL.md). None
        for an older epoch, or from a server that does not report them."""
        info = self.epoch_info()
        for key in ("stats", "previous_stats"):
            st: Optional[EpochStats] = info.get(key)
            if st is not None and (epoch is None or st.get("epoch") == epoch):
                return st
            if epoch is None:
                break
        return None

    def _decode(self, rid: int, body: memoryview) -> Batch:
        """The Batch of reply ``rid``, with its memory file if one came."""
        with self._lock:
            fd = self._fds.pop(rid, None)
        if W.is_hetero(body):
            if fd is not None:
                os.close(fd)
            raise P.ProtocolError("the server is heterogeneous: read its minibatches with hetero_batches() "
                                  "or next_hetero_batch()")
        return W.decode_blocks(body, fd, self._bufs)

    def hetero_schema(self) -> HeteroSchema:
        """A heterogeneous server's node and edge types (epoch_info's
        ``hetero``), asked once; ProtocolError from a homogeneous server."""
        if self._schema is None:
            hetero = self.epoch_info().get("hetero")
            if hetero is None:
                raise P.ProtocolError("the server is not heterogeneous (epoch_info has no hetero schema)")
            self._schema = HeteroSchema.from_info(hetero)
        return self._schema

    def _decode_hetero(self, rid: int, body: memoryview) -> HeteroBatch:
        with self._lock:
            fd = self._fds.pop(rid, None)
        if fd is not None:
            os.close(fd)  # heterogeneous minibatches carry no rows yet
        return W.decode_hetero(body, self.hetero_schema())

    def next_hetero_batch(self, epoch: Optional[int] = None, semantics: Optional[str] = None) -> Optional[HeteroBatch]:
        """next_batch of a heterogeneous server: a HeteroBatch
        (docs/PROTOCOL.md, "Heterogeneous minibatches"), or None at the
        epoch's end."""
        schema = self.hetero_schema()
        rid = self._send(P.OP_NEXT_BATCH, W.epoch_payload(epoch, semantics))
        status, body = self._wait(P.OP_NEXT_BATCH, rid)
        if status == P.STATUS_END:
            return None
        return W.decode_hetero(body, schema)

    def hetero_batches(self, epoch: Optional[int] = None, depth: int = 4, advance: bool = True,
                       max_batches: Optional[int] = None, semantics: Optional[str] = None) -> Iterator[HeteroBatch]:
        """batches() of a heterogeneous server: its HeteroBatches of
        ``epoch`` (None: the current one), ``depth`` requests in flight,
        then (``advance``) leave the epoch."""
        self.hetero_schema()
        if epoch is None:
            epoch = self.epoch_info()["epoch"]
        payload = W.epoch_payload(epoch, semantics)
        n = itertools.count() if max_batches is None else range(int(max_batches))
        stream = self._stream(P.OP_NEXT_BATCH, (payload for _ in n), depth, self._decode_hetero)
        ended = yield from stream
        if advance and ended:
            self.advance(epoch)

    def hetero_split(self, node_type: str, nodes: NodeIds, batch_size: int) -> Dict[str, Any]:
        """Register a split on a heterogeneous server (docs/PROTOCOL.md,
        "Heterogeneous minibatches"): ``nodes``, distinct local ids of
        ``node_type``, served in this order cut into ``batch_size`` pieces
        (the last one short), each the seeds of one minibatch sampled from
        the current epoch's random stream, as :meth:`split` on a
        homogeneous server. Returns ``{"split", "num_nodes", "batch_size",
        "num_batches", "node_type"}``; the same type, nodes and batch size
        give the same split. Read it with :meth:`hetero_split_batches`,
        forget it with :meth:`drop_split`."""
        schema = self.hetero_schema()
        try:
            t = schema.node_types.index(str(node_type))
        except ValueError:
            raise ValueError("node type %r is not one of the server's %s" % (node_type, list(schema.node_types))) from None
        _, body = self._call(P.OP_SPLIT, W.hetero_split_payload(t, nodes, batch_size))
        info: Dict[str, Any] = json.loads(bytes(body))
        return info

    def hetero_split_batch(self, split: int, index: int, semantics: Optional[str] = None) -> Optional[HeteroBatch]:
        """Minibatch ``index`` of a heterogeneous split, or None past its
        last."""
        schema = self.hetero_schema()
        rid = self._send(P.OP_SPLIT_BATCH, W.split_batch_payload(split, index, semantics))
        status, body = self._wait(P.OP_SPLIT_BATCH, rid)
        if status == P.STATUS_END:
            return None
        return W.decode_hetero(body, schema)

    def hetero_split_batches(self, split: int, depth: int = 4, semantics: Optional[str] = None) -> Iterator[HeteroBatch]:
        """A heterogeneous split's minibatches in index order, ``depth``
        requests in flight, until the server answers the end."""
        self.hetero_schema()
        payloads = (W.split_batch_payload(split, i, semantics) for i in itertools.count())
        yield from self._stream(P.OP_SPLIT_BATCH, payloads, depth, self._decode_hetero)

    def next_batch(self, epoch: Optional[int] = None, semantics: Optional[str] = None) -> Optional[Batch]:
        """The next minibatch of ``epoch`` (None: the current one), or None
        once that epoch's minibatches are all handed out. Asking for the
        epoch after an exhausted one advances the server. ``semantics``:
        "pyg", "dgl" or None (the server's ``--semantics``)."""
        rid = self._send(P.OP_NEXT_BATCH, W.epoch_payload(epoch, semantics))
        status, body = self._wait(P.OP_NEXT_BATCH, rid)
        if status == P.STATUS_END:
            return None
        return self._decode(rid, body)

    def sample(self, seeds: NodeIds, epoch: Optional[int] = None, semantics: Optional[str] = None) -> Batch:
        """Blocks of the given seeds (training nodes of this rank's shard)
        from ``epoch`` (None: the current one)."""
        rid = self._send(P.OP_SAMPLE, W.sample_payload(epoch, seeds, semantics))
        _, body = self._wait(P.OP_SAMPLE, rid)
        return self._decode(rid, body)

    def sample_fresh(self, seeds: NodeIds, fanouts: Sequence[int], seed: int = 0, epoch: int = 0,
                     replace: bool = False, edge_ids: bool = False, semantics: Optional[str] = None) -> Batch:
        """Blocks of any distinct ``seeds``, sampled there and then by the
        server's random-read sampler (docs/PROTOCOL.md, ``sample_fresh``):
        no prepared epoch, no training set; the neighbors are those a
        prepared epoch ``epoch`` of seed ``seed`` (``replace``) with these
        ``fanouts`` gives them, bit for bit, so a training node's batch is
        ``sample``'s. For evaluating or querying a few nodes at a time.
        ``edge_ids``: each hop carries ``e_id``; ``semantics``: "pyg",
        "dgl" or None (the server's). The same :class:`Batch` as
        :meth:`sample`, with the server's features when it has them."""
        rid = self._send(P.OP_SAMPLE_FRESH, W.fresh_payload(seeds, fanouts, seed, epoch, replace, edge_ids, semantics))
        _, body = self._wait(P.OP_SAMPLE_FRESH, rid)
        return self._decode(rid, body)

    def fresh_batches(self, nodes: NodeIds, fanouts: Sequence[int], batch_size: int, seed: int = 0,
                      epoch: int = 0, replace: bool = False, edge_ids: bool = False,
                      semantics: Optional[str] = None, depth: int = 4) -> Iterator[Batch]:
        """Iterate over ``nodes`` (distinct; in this order, cut into
        ``batch_size`` pieces, the last one short) as :meth:`sample_fresh`
        minibatches, ``depth`` requests in flight: the evaluation of a
        node set (validation, test, a query) without an epoch or a split,
        by random reads. The same arguments give the same minibatches."""
        ids = np.asarray(nodes)
        if ids.ndim != 1:
            raise ValueError("nodes: expected a 1-D array, got shape %s" % (ids.shape,))
        if int(batch_size) < 1:
            raise ValueError("batch_size %d, want at least 1" % int(batch_size))
        step = int(batch_size)
        payloads = (W.fresh_payload(ids[i:i + step], fanouts, seed, epoch, replace, edge_ids, semantics)
                    for i in range(0, len(ids), step))
        yield from self._stream(P.OP_SAMPLE_FRESH, payloads, depth, self._decode)

    def walks(self, starts: NodeIds, length: int, walks_per_node: int = 1, mode: str = "deepwalk",
              seed: int = 0, restart: float = 0.0, stop_at_restart: bool = False, p: float = 1.0,
              q: float = 1.0) -> npt.NDArray[np.int32]:
        """Random walks from ``starts`` (DESIGN §3, "Walks"): int32
        ``[walks_per_node * len(starts), length + 1]``, walk ``r * n + i``
        from ``starts[i]``, -1 after a walk ends. ``mode``: "deepwalk",
        "ppr" (``restart`` probability; ``stop_at_restart``) or
        "node2vec" (``p``, ``q``). The same arguments give the same walks
        on every backend."""
        _, body = self._call(P.OP_WALKS, W.walks_payload(starts, length, walks_per_node, mode, seed, restart,
                                                         stop_at_restart, p, q))
        a, off = W.decode_array(body, 0)
        if off != len(body) or a.ndim != 2 or a.dtype != np.dtype("<i4") or a.shape[1] != length + 1:
            raise P.ProtocolError("walks reply: %s array %s, want int32 [walks, %d]" % (a.dtype, a.shape, length + 1))
        return a

    def split(self, nodes: NodeIds, batch_size: int) -> Dict[str, int]:
        """Register a node list served beside the training stream (the
        validation or test nodes, any list of distinct nodes): its
        minibatches are the nodes in this order cut into ``batch_size``
        pieces, every node once, nothing dropped, sampled from the current
        epoch's random stream. Returns ``{"split", "num_nodes",
        "batch_size", "num_batches"}``; the same nodes and batch size give
        the same split."""
        _, body = self._call(P.OP_SPLIT, W.split_payload(nodes, batch_size))
        info: Dict[str, int] = json.loads(bytes(body))
        return info

    def link_split(self, edges: Any, batch_size: int, labels: Optional[Any] = None, neg_sampling: str = "none",
                   amount: float = 1.0, seed: int = 0) -> Dict[str, int]:
        """Register supervision edges served beside the training stream
        (PyG's validation or test ``edge_label_index``, int (2, E), with
        ``labels`` [E] or None): their minibatches are the edges in this
        order cut into ``batch_size`` pieces, each with its negatives
        (``neg_sampling`` ``"none"``, ``"binary"`` or ``"triplet"``,
        ``amount`` per positive) drawn from ``seed``: the same every epoch.
        Returns ``{"split", "num_edges", "num_nodes", "batch_size",
        "num_batches"}``; :meth:`split_batches` then yields link Batches
        (``Batch.link``), :meth:`drop_split` forgets it."""
        _, body = self._call(P.OP_LINK_SPLIT, W.link_split_payload(edges, batch_size, labels, neg_sampling, amount, seed))
        info: Dict[str, int] = json.loads(bytes(body))
        return info

    def drop_split(self, split: int) -> None:
        """Forget a split: the server gives back the memory it holds (its
        nodes and its sample count against ``--max-inflight``), and its id
        is unknown from then on. Splits are shared: drop one only when no
        worker still reads it."""
        self._call(P.OP_DROP_SPLIT, W.drop_split_payload(split))

    def split_batch(self, split: int, index: int, semantics: Optional[str] = None) -> Optional[Batch]:
        """Minibatch ``index`` of a split, or None past its last."""
        rid = self._send(P.OP_SPLIT_BATCH, W.split_batch_payload(split, index, semantics))
        status, body = self._wait(P.OP_SPLIT_BATCH, rid)
        if status == P.STATUS_END:
            return None
        return self._decode(rid, body)

    def split_batches(self, split: int, depth: int = 4, semantics: Optional[str] = None,
                      start: int = 0) -> Iterator[Batch]:
        """Iterate over a split's minibatches from ``start``, in order,
        keeping ``depth`` requests in flight."""
        payloads = (W.split_batch_payload(split, i, semantics) for i in itertools.count(start))
        yield from self._stream(P.OP_SPLIT_BATCH, payloads, depth, self._decode)

    def scan(self, batch_size: int, rows: bool = True, edge_ids: bool = True, semantics: Optional[str] = None,
             store: Optional[PathArg] = None) -> Dict[str, Any]:
        """Open a full scan: a pass of layer-wise inference over every node
        with all of its in-neighbors, ``batch_size`` consecutive node ids
        per minibatch (PyG's ``NeighborLoader(input_nodes=None,
        num_neighbors=[-1], shuffle=False)``), read by one sequential pass
        over the graph's chunks (docs/PROTOCOL.md, "Full scans"). ``rows``:
        every minibatch carries its nodes' feature rows (and its seeds'
        labels) from the graph's feature store, or from ``store``, another
        store of the same graph (a directory, as the server sees it: a
        layer's outputs, :func:`streamsampler.pyg.layerwise_inference`).
        Returns ``{"scan", "num_nodes", "num_edges", "batch_size",
        "num_batches", "features", "resident"}``. A connection has at most
        two scans open; close them with :meth:`drop_scan`."""
        path = None if store is None else os.path.abspath(os.fspath(store))
        _, body = self._call(P.OP_SCAN, W.scan_payload(batch_size, rows, edge_ids, semantics, path))
        info: Dict[str, Any] = json.loads(bytes(body))
        return info

    def scan_batch(self, scan: int, index: int) -> Optional[Batch]:
        """Minibatch ``index`` of a scan (one hop: the seeds, n_id, every
        in-edge), or None past its last. Each minibatch is handed out once."""
        rid = self._send(P.OP_SCAN_BATCH, W.scan_batch_payload(scan, index))
        status, body = self._wait(P.OP_SCAN_BATCH, rid)
        if status == P.STATUS_END:
            return None
        return self._decode(rid, body)

    def scan_batches(self, scan: int, depth: int = 4, start: int = 0) -> Iterator[Batch]:
        """Iterate over a scan's minibatches from ``start``, in order,
        keeping ``depth`` requests in flight."""
        payloads = (W.scan_batch_payload(scan, i) for i in itertools.count(start))
        yield from self._stream(P.OP_SCAN_BATCH, payloads, depth, self._decode)

    def drop_scan(self, scan: int) -> None:
        """Close a scan: the server stops its pass and gives back what it
        holds (its chunk buffers, its rows)."""
        self._call(P.OP_DROP_SCAN, W.drop_scan_payload(scan))

    def advance(self, epoch: Optional[int] = None) -> EpochInfo:
        """Leave ``epoch`` (None: the current one) and return the new
        epoch's info; asking again for an epoch already left is harmless."""
        _, body = self._call(P.OP_ADVANCE, W.epoch_payload(epoch))
        info: EpochInfo = json.loads(bytes(body))
        return info

    def batches(self, epoch: Optional[int] = None, depth: int = 4, advance: bool = True,
                max_batches: Optional[int] = None, semantics: Optional[str] = None) -> Iterator[Batch]:
        """Iterate over the minibatches of ``epoch`` (None: the current
        one) that the server hands this client, in epoch order, keeping
        ``depth`` requests in flight; then (``advance``) leave the epoch.
        With ``max_batches`` it stops after that many (and does not
        advance unless the epoch ended). ``semantics`` as for next_batch.
        """
        if epoch is None:
            epoch = self.epoch_info()["epoch"]
        payload = W.epoch_payload(epoch, semantics)
        n = itertools.count() if max_batches is None else range(int(max_batches))
        stream = self._stream(P.OP_NEXT_BATCH, (payload for _ in n), depth, self._decode)
        ended = yield from stream
        if advance and ended:
            self.advance(epoch)

    def _stream(self, op: int, payloads: Iterator[bytes], depth: int,
                decode: Callable[[int, memoryview], _B]) -> Generator[_B, None, bool]:
        """Send the requests of ``payloads`` keeping ``depth`` in flight and
        yield their minibatches in order (decoded by ``decode``: _decode,
        or _decode_hetero) until one answers the end; return whether one
        did."""
        depth = max(1, int(depth))
        inflight: list[int] = []
        ended = False
        try:
            while True:
                while not ended and len(inflight) < depth:
                    p = next(payloads, None)
                    if p is None:
                        break
                    inflight.append(self._send(op, p))
                if not inflight:
                    break
                rid = inflight.pop(0)
                status, body = self._wait(op, rid)
                if status == P.STATUS_END:
                    ended = True
                    continue
                yield decode(rid, body)
        finally:
            # An abandoned iteration still reads its replies, so that the
            # connection stays in step (those minibatches are lost).
            for rid in inflight:
                try:
                    status, body = self._wait(op, rid)
                    if status == P.STATUS_OK and self._bufs is not None:
                        # Decoded and dropped: a shared buffer it brings is
                        # kept, and its lease given back.
                        self._decode(rid, body)
                except (OSError, P.ServerError, P.ProtocolError):
                    pass
                with self._lock:
                    fd = self._fds.pop(rid, None)
                if fd is not None:
                    os.close(fd)
        return ended

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            if self._bufs is not None:
                self._bufs.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Batch]:
        return self.batches()
