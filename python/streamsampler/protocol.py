"""The framed binary protocol of docs/PROTOCOL.md, in numpy.

Every message, either way::

    u32 length   bytes after this field (6 + len(payload))
    u8  op
    u8  status   0 in requests; 0 ok, 1 error, 2 end of epoch in replies
    u32 id       chosen by the client, echoed by the server
    payload

all little-endian. Arrays are ``u8 dtype, u8 ndim, u64 shape[ndim]`` and
the raw little-endian elements.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

HEADER = struct.Struct("<IBBI")
HEADER_SIZE = HEADER.size  # 10

OP_EPOCH_INFO = 1
OP_NEXT_BATCH = 2
OP_SAMPLE = 3
OP_ADVANCE = 4
OP_HELLO = 5  # payload: the token; the first request where the server requires one
OP_MAP_ROWS = 6  # empty: from then on feature rows come in memory files (Unix sockets)
OP_SPLIT = 7  # u32 batch size, array nodes: register a node list served beside training
OP_SPLIT_BATCH = 8  # u32 split, u32 index[, u8 semantics]: one of its minibatches
OP_WALKS = 9  # a walk configuration and array starts: random walks, i32 [walks, length+1]
OP_DROP_SPLIT = 10  # u32 split: forget a split, giving back the memory it holds

#: Walk modes of a walks request (walk.Mode).
WALK_MODES = {"deepwalk": 0, "ppr": 1, "node2vec": 2}

#: The protocol version this client speaks (epoch_info's "protocol").
PROTOCOL = 2

#: A request's semantics byte (docs/PROTOCOL.md): left out, the server's.
SEMANTICS = {"dgl": 0, "pyg": 1}
#: Minibatch flags, the byte after a minibatch's hop count.
BATCH_PYG = 1
BATCH_EDGE_IDS = 2

STATUS_OK = 0
STATUS_ERROR = 1
STATUS_END = 2

CURRENT_EPOCH = 0xFFFFFFFF
NO_BATCH = -1

# The error codes of a STATUS_ERROR reply: the Code* constants of
# serve/protocol.go and the table of docs/PROTOCOL.md, same names and
# values (serve/python_protocol_test.go checks all three agree).
CODE_BAD_REQUEST = 1      # malformed payload or frame
CODE_UNKNOWN_OP = 2
CODE_UNKNOWN_EPOCH = 3    # neither the current epoch nor a prepared next one
CODE_NOT_IN_FRONTIER = 4  # a sample seed is not a training node of this epoch's shard
CODE_EPOCH_NOT_DONE = 5   # next_batch for epoch e+1 while epoch e has minibatches left
CODE_INTERNAL = 6         # preparing the epoch or assembling a minibatch failed
CODE_SHUTTING_DOWN = 7
CODE_TOO_LARGE = 8        # the request exceeds the server's cap; the connection is closed
CODE_DUPLICATE_SEED = 9   # a sample request names a seed twice
CODE_UNAUTHORIZED = 10    # no hello with the server's token first; the connection is closed
CODE_OVER_BUDGET = 11     # the reply could exceed the connection's share of the in-flight budget
CODE_UNKNOWN_SPLIT = 12   # split_batch or drop_split names a split the server does not have
CODE_TIMED_OUT = 13       # a walks request ran past the server's bound (--walk-timeout) and was stopped

#: The environment variable that holds the token, for the server and clients.
TOKEN_ENV = "STREAMSAMPLER_TOKEN"
#: The longest token a hello may carry, in bytes.
MAX_TOKEN = 1024

DTYPES = {
    1: np.dtype("<u4"),
    2: np.dtype("<i4"),
    3: np.dtype("<i8"),
    4: np.dtype("<u8"),
    5: np.dtype("<f4"),
    6: np.dtype("<f2"),
    7: np.dtype("<i1"),
    8: np.dtype("<u1"),
}
DTYPE_CODES = {v: k for k, v in DTYPES.items()}

#: Largest reply the client accepts (the server's replies are minibatches).
MAX_REPLY = 1 << 30

#: Node ids as the requests accept them: any 1-D integer sequence whose
#: values fit in uint32.
NodeIds = Union[Sequence[int], "npt.NDArray[np.integer[Any]]"]

#: A received payload: the decoded arrays are views of it.
Buffer = Union[bytes, bytearray, memoryview, "np.ndarray"]

_U32 = struct.Struct("<I")
_ARRAY1 = struct.Struct("<BBQ")


class ProtocolError(Exception):
    """A reply that does not follow the protocol."""


class ServerError(Exception):
    """An error reply: ``code`` is one of the CODE_* constants."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__("server error %d: %s" % (code, message))
        self.code = code
        self.message = message


class UnknownEpochError(ServerError):
    """The epoch asked for is neither current nor a prepared next one."""


class NotInFrontierError(ServerError, KeyError):
    """A seed is not a training node of this epoch's shard."""


class UnauthorizedError(ServerError, PermissionError):
    """The server requires a token and got none, or a wrong one; it has
    closed the connection."""


_ERROR_CLASSES = {
    CODE_UNKNOWN_EPOCH: UnknownEpochError,
    CODE_NOT_IN_FRONTIER: NotInFrontierError,
    CODE_UNAUTHORIZED: UnauthorizedError,
}


def encode_frame(op: int, rid: int, payload: bytes = b"", status: int = STATUS_OK) -> bytes:
    """One frame: header and payload."""
    return HEADER.pack(HEADER_SIZE - 4 + len(payload), op, status, rid) + bytes(payload)


def encode_array(a: NodeIds, dtype: npt.DTypeLike) -> bytes:
    """A 1-D array in the wire format, converted to ``dtype`` (checked:
    values that do not fit raise ValueError)."""
    dt = np.dtype(dtype).newbyteorder("<")
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError("expected a 1-D array, got shape %s" % (a.shape,))
    if a.size and a.dtype != dt:
        info = np.iinfo(dt)
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError("expected integers, got dtype %s" % a.dtype)
        if a.min() < info.min or a.max() > info.max:
            raise ValueError("values outside %s: [%d, %d]" % (dt, a.min(), a.max()))
    out = np.ascontiguousarray(a, dtype=dt)
    return _ARRAY1.pack(DTYPE_CODES[dt], 1, out.size) + out.tobytes()


def decode_array(buf: Buffer, off: int) -> tuple[np.ndarray, int]:
    """Decode one array at ``off`` of ``buf``; returns (array, next offset).
    The array is a view of ``buf`` (writeable when buf is a bytearray)."""
    if len(buf) - off < 2:
        raise ProtocolError("truncated array header at byte %d" % off)
    code, ndim = buf[off], buf[off + 1]
    dt = DTYPES.get(code)
    if dt is None:
        raise ProtocolError("unknown dtype %d at byte %d" % (code, off))
    off += 2
    if len(buf) - off < 8 * ndim:
        raise ProtocolError("truncated array shape at byte %d" % off)
    shape = struct.unpack_from("<%dQ" % ndim, buf, off)
    off += 8 * ndim
    count = 1
    for s in shape:
        count *= s
    nbytes = count * dt.itemsize
    if nbytes > len(buf) - off:
        raise ProtocolError("array of %d elements overruns the payload at byte %d" % (count, off))
    a = np.frombuffer(buf, dtype=dt, count=count, offset=off).reshape(shape)
    return a, off + nbytes


class Hop:
    """One hop of a minibatch: edges run from ``src`` to ``dst``.

    ``dst`` (the nodes this hop expands) and ``src`` (every node known
    after it: the previous hop's src, the seeds at hop 1, then the new
    neighbors in order of first appearance) are global node ids (uint32).
    ``edge_src``/``edge_dst`` (int32) are local indices into ``src`` and
    ``dst``, ordered by destination, then sample slot. With DGL semantics
    ``dst`` is the previous hop's src (``src[:len(dst)] == dst``); with
    PyG semantics it is the nodes first reached at the previous hop,
    ``src[lo:lo + len(dst)]`` for ``lo = len(previous src) - len(dst)``.
    ``e_id`` (int64), where the server sends edge ids, is each edge's
    position in the stored CSR.
    """

    __slots__ = ("dst", "src", "edge_src", "edge_dst", "e_id")

    def __init__(self, dst: npt.NDArray[np.uint32], src: npt.NDArray[np.uint32],
                 edge_src: npt.NDArray[np.int32], edge_dst: npt.NDArray[np.int32],
                 e_id: Optional[npt.NDArray[np.int64]] = None) -> None:
        self.dst = dst
        self.src = src
        self.edge_src = edge_src
        self.edge_dst = edge_dst
        self.e_id = e_id

    def __repr__(self) -> str:
        return "Hop(dst=%d, src=%d, edges=%d)" % (len(self.dst), len(self.src), len(self.edge_src))


class Batch:
    """One minibatch: ``hops[0]`` is hop 1 (its dst are the seeds); with
    ``semantics == "dgl"`` ``hops[h+1].dst`` equals ``hops[h].src``, with
    ``"pyg"`` it is the nodes hop h reached first (see Hop); arrays exactly
    as ``streamsampler sample --format json`` gives them. ``index`` is the
    minibatch's position in its epoch or split (-1 for a sample
    request)."""

    __slots__ = ("epoch", "index", "seeds", "hops", "x", "y", "semantics", "input_id")

    def __init__(self, epoch: int, seeds: npt.NDArray[np.uint32], hops: List[Hop],
                 index: int = NO_BATCH, x: Optional[np.ndarray] = None,
                 y: Optional[npt.NDArray[np.int32]] = None, semantics: str = "dgl") -> None:
        self.epoch = epoch
        self.index = index
        self.seeds = seeds
        self.hops = hops
        #: "dgl" or "pyg": which nodes each hop expands.
        self.semantics = semantics
        #: The seeds' positions in the node list a loader iterates (int64),
        #: set by the framework loaders; None otherwise.
        self.input_id: Optional[np.ndarray] = None
        #: The feature rows of ``n_id``, in order (``[len(n_id), dim]``, the
        #: store's dtype), from a server started with ``--features``; None
        #: otherwise.
        self.x = x
        #: The seeds' labels (int32, -1 for none) when the feature store
        #: has labels; None otherwise.
        self.y = y

    @property
    def n_id(self) -> npt.NDArray[np.uint32]:
        """Every node of the minibatch: seeds first, then each hop's new
        nodes (the last hop's src)."""
        return self.hops[-1].src if self.hops else self.seeds

    @property
    def has_edge_ids(self) -> bool:
        """Whether the hops carry ``e_id``."""
        return bool(self.hops) and self.hops[0].e_id is not None

    @property
    def num_edges(self) -> int:
        """The sampled edges of every hop."""
        return sum(len(h.edge_src) for h in self.hops)

    @classmethod
    def from_json(cls, obj: Union[str, bytes, Dict[str, Any]], index: int = NO_BATCH) -> Batch:
        """A Batch from the JSON of ``streamsampler sample --format json``
        (a dict, or its text); without a "seeds" key the seeds are hop 1's
        dst."""
        if isinstance(obj, (str, bytes)):
            obj = json.loads(obj)
        hops = [
            Hop(
                np.asarray(h["dst"], dtype=np.uint32),
                np.asarray(h["src"], dtype=np.uint32),
                np.asarray(h["edge_src"], dtype=np.int32),
                np.asarray(h["edge_dst"], dtype=np.int32),
                np.asarray(h["e_id"], dtype=np.int64) if "e_id" in h else None,
            )
            for h in obj["hops"]
        ]
        if "seeds" in obj:
            seeds = np.asarray(obj["seeds"], dtype=np.uint32)
        elif hops:
            seeds = hops[0].dst  # hop 1's destinations are the seeds
        else:
            seeds = np.empty(0, np.uint32)
        return cls(int(obj["epoch"]), seeds, hops, index, semantics=obj.get("semantics", "dgl"))

    def __repr__(self) -> str:
        return "Batch(epoch=%d, index=%d, seeds=%d, hops=%r)" % (
            self.epoch, self.index, len(self.seeds), self.hops)


def decode_blocks(payload: Buffer, fd: Optional[int] = None, bufs: Optional["SharedBuffers"] = None) -> Batch:
    """Decode a minibatch reply payload into a Batch whose arrays are views
    of ``payload``. On a connection with shared rows, ``bufs`` are its
    shared buffers and ``fd`` the memory file passed with the reply, if
    any: ``batch.x`` is then a view of a shared buffer (SharedBuffers)."""
    if len(payload) < 10:
        raise ProtocolError("truncated minibatch reply (%d bytes)" % len(payload))
    epoch, index, nhops, flags = struct.unpack_from("<IiBB", payload, 0)
    if flags & ~(BATCH_PYG | BATCH_EDGE_IDS):
        raise ProtocolError("minibatch flags %#x" % flags)
    per = 5 if flags & BATCH_EDGE_IDS else 4
    off = 10
    arrays = []
    for _ in range(1 + per * nhops):
        a, off = decode_array(payload, off)
        if a.ndim != 1:
            raise ProtocolError("minibatch array with %d dimensions" % a.ndim)
        arrays.append(a)
    hop_dtypes = [np.dtype("<u4"), np.dtype("<u4"), np.dtype("<i4"), np.dtype("<i4"), np.dtype("<i8")][:per]
    want = [np.dtype("<u4")] + hop_dtypes * nhops
    for i, (a, dt) in enumerate(zip(arrays, want)):
        if a.dtype != dt:
            raise ProtocolError("minibatch array %d has dtype %s, want %s" % (i, a.dtype, dt))
    hops = [Hop(*arrays[1 + per * h: 1 + per * (h + 1)]) for h in range(nhops)]
    for h, hop in enumerate(hops):
        if hop.e_id is not None and len(hop.e_id) != len(hop.edge_src):
            raise ProtocolError("hop %d has %d edge ids for %d edges" % (h + 1, len(hop.e_id), len(hop.edge_src)))
    batch = Batch(epoch, arrays[0], hops, index, semantics="pyg" if flags & BATCH_PYG else "dgl")
    if off != len(payload):
        off = _decode_features(payload, off, batch, fd, bufs)
    elif fd is not None:
        os.close(fd)
    if off != len(payload):
        raise ProtocolError("%d trailing bytes in minibatch reply" % (len(payload) - off))
    return batch


#: Feature flags: the byte before a reply's feature arrays.
FEATURE_X = 1
FEATURE_Y = 2
FEATURE_SHARED = 4  # x's bytes are in a shared buffer (its location after x's header)
#: The dtypes feature rows come in.
FEATURE_DTYPES = (np.dtype("<f4"), np.dtype("<f2"), np.dtype("<i1"), np.dtype("<u1"))


def _decode_features(payload: Buffer, off: int, batch: Batch, fd: Optional[int] = None,
                     bufs: Optional["SharedBuffers"] = None) -> int:
    """Decode the features after a minibatch's hops into ``batch.x`` (one
    row per node of ``n_id``) and ``batch.y`` (one label per seed)."""
    flags = payload[off]
    off += 1
    shared = bool(flags & FEATURE_SHARED)
    if not flags & FEATURE_X or flags & ~(FEATURE_X | FEATURE_Y | FEATURE_SHARED) or (fd is not None and not shared):
        if fd is not None:
            os.close(fd)
        raise ProtocolError("feature flags %#x at byte %d%s" % (
            flags, off - 1, " with a memory file" if fd is not None else ""))
    if shared:
        x, off = _map_rows(payload, off, fd, bufs)
    else:
        x, off = decode_array(payload, off)
    if x.ndim != 2 or x.dtype not in FEATURE_DTYPES:
        raise ProtocolError("feature array x has shape %s and dtype %s" % (x.shape, x.dtype))
    if x.shape[0] != len(batch.n_id):
        raise ProtocolError("feature array x has %d rows for %d nodes" % (x.shape[0], len(batch.n_id)))
    batch.x = x
    if flags & FEATURE_Y:
        y, off = decode_array(payload, off)
        if y.ndim != 1 or y.dtype != np.dtype("<i4") or len(y) != len(batch.seeds):
            raise ProtocolError("label array y has shape %s and dtype %s for %d seeds" % (y.shape, y.dtype, len(batch.seeds)))
        batch.y = y
    return off


_MADV_POPULATE_READ = 22  # Linux 5.14; not in the mmap module of Python 3.11
_populate_ok = hasattr(mmap.mmap, "madvise")
#: Where SharedRows.retire names no buffer.
NO_BUFFER = 0xFFFFFFFF


def _populate_read(mm: mmap.mmap) -> None:
    """Maps every page of mm in one call (MADV_POPULATE_READ) instead of
    one page fault per 4 KiB as numpy first reads them. Older kernels
    refuse: then the faults happen as before."""
    global _populate_ok
    if not _populate_ok:
        return
    try:
        mm.madvise(_MADV_POPULATE_READ)
    except OSError:
        _populate_ok = False


class SharedBuffers:
    """The client's side of a connection's shared-rows buffers
    (docs/PROTOCOL.md): each buffer's memory file is mapped once, from the
    reply that brings its descriptor, and unmapped when a reply retires it.
    A reply's ``x`` is a view of its buffer; when the last reference to it
    (or to any view of it, a torch tensor from ``torch.from_numpy``
    included) is gone, the buffer's lease word is cleared and the server
    may write the rows of a later minibatch there. Until then the rows
    stay as they are: hold ``x`` as long as you like."""

    def __init__(self) -> None:
        self._maps: dict[int, mmap.mmap] = {}

    def view(self, buf: int, offset: int, retire: int, fd: Optional[int], dt: np.dtype,
             rows: int, dim: int) -> np.ndarray:
        try:
            if fd is not None:
                if buf in self._maps:
                    raise ProtocolError("shared buffer %d sent twice" % buf)
                size = os.fstat(fd).st_size
                mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
                _populate_read(mm)
                self._maps[buf] = mm
        finally:
            if fd is not None:
                os.close(fd)
        if retire != NO_BUFFER:
            old = self._maps.pop(retire, None)
            if old is None:
                raise ProtocolError("retired shared buffer %d unknown" % retire)
            try:
                old.close()
            except BufferError:
                pass  # a view is still alive: the mapping goes with it
        mm = self._maps.get(buf)
        if mm is None:
            raise ProtocolError("shared buffer %d never sent" % buf)
        n = rows * dim * dt.itemsize
        if offset < 8 or offset + n > len(mm):
            raise ProtocolError("x of %d bytes at byte %d of a shared buffer of %d" % (n, offset, len(mm)))
        base = np.frombuffer(mm, dtype=dt, count=rows * dim, offset=offset)
        # Views of base keep base alive (numpy stops collapsing bases at
        # an array whose base is not an array), so base dies last.
        weakref.finalize(base, _release, mm)
        return base.reshape(rows, dim)

    def close(self) -> None:
        for mm in self._maps.values():
            try:
                mm.close()
            except BufferError:
                pass
        self._maps.clear()


def _release(mm: mmap.mmap) -> None:
    """Clears a shared buffer's lease word: the server may reuse it."""
    if not mm.closed:
        struct.pack_into("<Q", mm, 0, 0)


def _map_rows(payload: Buffer, off: int, fd: Optional[int], bufs: Optional[SharedBuffers]) -> tuple[np.ndarray, int]:
    """The x of a shared-rows reply: its header and location from the
    payload, its bytes in a shared buffer (``fd``, where one came with the
    reply, is that buffer's memory file, and is closed)."""
    try:
        if bufs is None:
            raise ProtocolError("a shared-rows reply on a connection without shared buffers")
        if len(payload) - off < 18 + 16:
            raise ProtocolError("truncated header of shared array x at byte %d" % off)
        code, ndim = payload[off], payload[off + 1]
        dt = DTYPES.get(code)
        if dt is None or ndim != 2:
            raise ProtocolError("shared array x with dtype %d and %d dimensions" % (code, ndim))
        rows, dim = struct.unpack_from("<QQ", payload, off + 2)
        buf, offset, retire = struct.unpack_from("<IQI", payload, off + 18)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    return bufs.view(buf, offset, retire, fd, dt, rows, dim), off + 18 + 16


def encode_blocks(batch: Batch, op: int, rid: int) -> bytes:
    """The server's reply frame for a Batch (for tests and fakes)."""
    flags = (BATCH_PYG if batch.semantics == "pyg" else 0) | (BATCH_EDGE_IDS if batch.has_edge_ids else 0)
    parts = [struct.pack("<IiBB", batch.epoch, batch.index, len(batch.hops), flags),
             encode_array(batch.seeds, "<u4")]
    for h in batch.hops:
        parts += [encode_array(h.dst, "<u4"), encode_array(h.src, "<u4"),
                  encode_array(h.edge_src, "<i4"), encode_array(h.edge_dst, "<i4")]
        if flags & BATCH_EDGE_IDS:
            parts.append(encode_array(h.e_id, "<i8"))
    if batch.x is not None:
        x = np.ascontiguousarray(batch.x)
        dt = x.dtype.newbyteorder("<") if x.dtype.byteorder not in "|" else x.dtype
        parts.append(struct.pack("<BBBQQ", FEATURE_X | (FEATURE_Y if batch.y is not None else 0),
                                 DTYPE_CODES[np.dtype(dt)], 2, x.shape[0], x.shape[1]))
        parts.append(x.astype(dt, copy=False).tobytes())
        if batch.y is not None:
            parts.append(encode_array(batch.y, "<i4"))
    return encode_frame(op, rid, b"".join(parts))


def decode_error(payload: Buffer) -> ServerError:
    """The ServerError (or subclass) of an error reply payload."""
    if len(payload) < 2:
        return ServerError(CODE_BAD_REQUEST, "malformed error reply")
    (code,) = struct.unpack_from("<H", payload, 0)
    msg = bytes(payload[2:]).decode("utf-8", "replace")
    return _ERROR_CLASSES.get(code, ServerError)(code, msg)


def semantics_byte(semantics: Optional[str]) -> bytes:
    """A request's optional semantics byte: none for the server's."""
    if semantics is None:
        return b""
    if semantics not in SEMANTICS:
        raise ValueError("semantics %r, want 'pyg' or 'dgl'" % (semantics,))
    return bytes([SEMANTICS[semantics]])


def epoch_payload(epoch: Optional[int], semantics: Optional[str] = None) -> bytes:
    """The payload of next_batch (with ``semantics``: "pyg", "dgl" or
    None, the server's) or advance."""
    return _U32.pack(CURRENT_EPOCH if epoch is None else int(epoch)) + semantics_byte(semantics)


def sample_payload(epoch: Optional[int], seeds: NodeIds, semantics: Optional[str] = None) -> bytes:
    """The payload of a sample request."""
    return epoch_payload(epoch) + encode_array(seeds, "<u4") + semantics_byte(semantics)


def walks_payload(starts: NodeIds, length: int, walks_per_node: int = 1, mode: str = "deepwalk",
                  seed: int = 0, restart: float = 0.0, stop_at_restart: bool = False, p: float = 1.0,
                  q: float = 1.0) -> bytes:
    """The payload of a walks request (docs/PROTOCOL.md)."""
    if mode not in WALK_MODES:
        raise ValueError("walk mode %r, want one of %s" % (mode, ", ".join(WALK_MODES)))
    return struct.pack("<BBIIQddd", WALK_MODES[mode], 1 if stop_at_restart else 0, int(length), int(walks_per_node),
                       int(seed) & (2**64 - 1), float(restart), float(p), float(q)) + encode_array(starts, "<u4")


def split_payload(nodes: NodeIds, batch_size: int) -> bytes:
    """The payload of a split request."""
    return _U32.pack(int(batch_size)) + encode_array(nodes, "<u4")


def drop_split_payload(split: int) -> bytes:
    """The payload of a drop_split request."""
    return _U32.pack(int(split))


def split_batch_payload(split: int, index: int, semantics: Optional[str] = None) -> bytes:
    """The payload of a split_batch request."""
    return struct.pack("<II", int(split), int(index)) + semantics_byte(semantics)


def token_payload(token: Union[str, bytes]) -> bytes:
    """The payload of a hello: the token, UTF-8 encoded if a str, with
    surrounding whitespace removed (as the server removes it from its token
    file and $STREAMSAMPLER_TOKEN)."""
    raw = token.encode("utf-8") if isinstance(token, str) else bytes(token)
    raw = raw.strip()
    if not raw:
        raise ValueError("empty token")
    if len(raw) > MAX_TOKEN:
        raise ValueError("token of %d bytes, at most %d" % (len(raw), MAX_TOKEN))
    return raw
