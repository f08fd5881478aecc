"""The bytes of docs/PROTOCOL.md, in numpy: frames, arrays, request
payloads, minibatch replies and error replies.

Every message, either way::

    u32 length   bytes after this field (6 + len(payload))
    u8  op
    u8  status   0 in requests; 0 ok, 1 error, 2 end of epoch in replies
    u32 id       chosen by the client, echoed by the server
    payload

all little-endian. Arrays are ``u8 dtype, u8 ndim, u64 shape[ndim]`` and
the raw little-endian elements. The numbers (op codes, statuses, dtypes,
flags) are :mod:`streamsampler.protocol`'s.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from .batch import Batch, Hop
from .hetero import HeteroBatch, HeteroBlock, HeteroEdges, HeteroNodes, HeteroSchema
from .link import NEG_BINARY, NEG_NONE, NEG_TRIPLET, LinkFields
from .protocol import (BATCH_EDGE_IDS, BATCH_HETERO, BATCH_HETERO_X, BATCH_HETERO_Y, BATCH_LINK, BATCH_PYG, CODE_BAD_REQUEST, CURRENT_EPOCH, DTYPE_CODES, DTYPES,
                       FEATURE_DTYPES, FEATURE_SHARED, FEATURE_X, FEATURE_Y, FRESH_EDGE_IDS, FRESH_REPLACE,
                       MAX_TOKEN, SCAN_EDGE_IDS, SCAN_ROWS, SEMANTICS, STATUS_OK, WALK_MODES, ProtocolError, ServerError,
                       error_class)
from .shm import SharedBuffers
from .typing import Buffer, NodeIds

__all__ = [
    "HEADER", "HEADER_SIZE", "decode_array", "decode_blocks", "decode_error", "decode_hetero", "hetero_split_payload", "is_hetero", "encode_array", "encode_blocks",
    "encode_frame", "epoch_payload", "link_split_payload", "sample_payload", "semantics_byte", "split_batch_payload", "split_payload",
    "token_payload", "walks_payload",
]

HEADER = struct.Struct("<IBBI")
HEADER_SIZE = HEADER.size  # 10

_U32 = struct.Struct("<I")
_ARRAY1 = struct.Struct("<BBQ")


def encode_frame(op: int, rid: int, payload: bytes = b"", status: int = STATUS_OK) -> bytes:
    """One frame: header and payload."""
    return HEADER.pack(HEADER_SIZE - 4 + len(payload), op, status, rid) + bytes(payload)


def encode_array(a: NodeIds, dtype: npt.DTypeLike) -> bytes:
    """A 1-D array in the wire format, converted to ``dtype`` (checked:
    values that do not fit raise ValueError)."""
    dt = np.dtype(dtype).newbyteorder("<")
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError("expected a 1-D array, got shape %s" % (arr.shape,))
    if arr.size and arr.dtype != dt:
        info = np.iinfo(dt)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError("expected integers, got dtype %s" % arr.dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise ValueError("values outside %s: [%d, %d]" % (dt, arr.min(), arr.max()))
    out = np.ascontiguousarray(arr, dtype=dt)
    return _ARRAY1.pack(DTYPE_CODES[dt], 1, out.size) + out.tobytes()


def decode_array(buf: Buffer, off: int) -> Tuple[npt.NDArray[Any], int]:
    """Decode one array at ``off`` of ``buf``; returns (array, next offset).
    The array is a view of ``buf`` (writeable when buf is a bytearray)."""
    if len(buf) - off < 2:
        raise ProtocolError("truncated array header at byte %d" % off)
    code, ndim = int(buf[off]), int(buf[off + 1])
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


def decode_blocks(payload: Buffer, fd: Optional[int] = None, bufs: Optional[SharedBuffers] = None) -> Batch:
    """Decode a minibatch reply payload into a Batch whose arrays are views
    of ``payload``. On a connection with shared rows, ``bufs`` are its
    shared buffers and ``fd`` the memory file passed with the reply, if
    any: ``batch.x`` is then a view of a shared buffer (SharedBuffers)."""
    if len(payload) < 10:
        raise ProtocolError("truncated minibatch reply (%d bytes)" % len(payload))
    epoch, index, nhops, flags = struct.unpack_from("<IiBB", payload, 0)
    if flags & BATCH_HETERO:
        raise ProtocolError("a heterogeneous minibatch (flag bit 3): decode it with decode_hetero and the server's schema")
    if flags & ~(BATCH_PYG | BATCH_EDGE_IDS | BATCH_LINK):
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
    if flags & BATCH_LINK:
        num_nodes = len(hops[-1].src) if hops else len(arrays[0])
        batch.link, off = _decode_link(payload, off, num_nodes)
    if off != len(payload):
        off = _decode_features(payload, off, batch, fd, bufs)
    elif fd is not None:
        os.close(fd)
    if off != len(payload):
        raise ProtocolError("%d trailing bytes in minibatch reply" % (len(payload) - off))
    return batch


_LINK_MODES = (NEG_NONE, NEG_BINARY, NEG_TRIPLET)
_LINK_FIXED = struct.Struct("<BId")


def _link_array(payload: Buffer, off: int, name: str, ndim: int, dtypes: Sequence[str]) -> Tuple[npt.NDArray[Any], int]:
    a, off = decode_array(payload, off)
    if a.ndim != ndim or a.dtype not in [np.dtype(d) for d in dtypes]:
        raise ProtocolError("link field %s: dtype %s, %d dimensions; want %s, %d" % (name, a.dtype, a.ndim, "/".join(dtypes), ndim))
    return a, off


def _decode_link(payload: Buffer, off: int, num_nodes: int) -> Tuple[LinkFields, int]:
    """The link section of a minibatch (docs/PROTOCOL.md, "Link minibatches"):
    ``u8 mode, u32 P, f64 amount``, input_id, then edge_label_index [2, M]
    and edge_label (modes none and binary) or src_index, dst_pos_index and
    dst_neg_index [P, K] (triplet). Every local id is checked against the
    minibatch's ``num_nodes``."""
    if len(payload) - off < _LINK_FIXED.size:
        raise ProtocolError("truncated link fields at byte %d" % off)
    mode, num_pos, _amount = _LINK_FIXED.unpack_from(payload, off)
    if mode >= len(_LINK_MODES):
        raise ProtocolError("link mode %d at byte %d" % (mode, off))
    off += _LINK_FIXED.size
    input_id, off = _link_array(payload, off, "input_id", 1, ["<i8"])
    if len(input_id) != num_pos:
        raise ProtocolError("input_id has %d elements for %d positives" % (len(input_id), num_pos))
    if _LINK_MODES[mode] == NEG_TRIPLET:
        src_index, off = _link_array(payload, off, "src_index", 1, ["<i8"])
        dst_pos_index, off = _link_array(payload, off, "dst_pos_index", 1, ["<i8"])
        dst_neg_index, off = _link_array(payload, off, "dst_neg_index", 2, ["<i8"])
        if len(src_index) != num_pos or len(dst_pos_index) != num_pos or dst_neg_index.shape[0] != num_pos:
            raise ProtocolError("triplet fields of %d, %d and %d rows for %d positives" % (
                len(src_index), len(dst_pos_index), dst_neg_index.shape[0], num_pos))
        fields = LinkFields(NEG_TRIPLET, input_id, src_index=src_index, dst_pos_index=dst_pos_index,
                            dst_neg_index=dst_neg_index)
        local = [src_index, dst_pos_index, dst_neg_index]
    else:
        index, off = _link_array(payload, off, "edge_label_index", 2, ["<i8"])
        label, off = _link_array(payload, off, "edge_label", 1, ["<f4", "<i8"])
        if index.shape[0] != 2 or index.shape[1] < num_pos or len(label) != index.shape[1]:
            raise ProtocolError("edge_label_index %s and edge_label of %d for %d positives" % (
                index.shape, len(label), num_pos))
        fields = LinkFields(_LINK_MODES[mode], input_id, edge_label_index=index, edge_label=label)
        local = [index]
    for a in local:
        if a.size and (a.min() < 0 or a.max() >= num_nodes):
            raise ProtocolError("link field local id outside the minibatch's %d nodes" % num_nodes)
    return fields, off


def _encode_link(link: LinkFields) -> bytes:
    """The link section of a minibatch (for tests and fakes). LinkFields
    carries no amount: the section says 1.0, or K for triplet fields (the
    decoder does not read it back)."""
    amount = float(link.dst_neg_index.shape[1]) if link.mode == NEG_TRIPLET and link.dst_neg_index is not None else 1.0
    parts = [_LINK_FIXED.pack(_LINK_MODES.index(link.mode), link.num_pos, amount), encode_array(link.input_id, "<i8")]

    def two_d(a: npt.NDArray[Any], dt: str) -> bytes:
        a = np.ascontiguousarray(a, dtype=dt)
        return struct.pack("<BBQQ", DTYPE_CODES[np.dtype(dt)], 2, a.shape[0], a.shape[1]) + a.tobytes()

    if link.mode == NEG_TRIPLET:
        assert link.src_index is not None and link.dst_pos_index is not None and link.dst_neg_index is not None
        parts += [encode_array(link.src_index, "<i8"), encode_array(link.dst_pos_index, "<i8"),
                  two_d(link.dst_neg_index.reshape(link.num_pos, -1), "<i8")]
    else:
        assert link.edge_label_index is not None and link.edge_label is not None
        label = np.asarray(link.edge_label)
        dt = "<i8" if np.issubdtype(label.dtype, np.integer) else "<f4"
        lab = np.ascontiguousarray(label, dtype=dt)
        parts += [two_d(link.edge_label_index, "<i8"),
                  _ARRAY1.pack(DTYPE_CODES[np.dtype(dt)], 1, lab.size) + lab.tobytes()]
    return b"".join(parts)


def _decode_features(payload: Buffer, off: int, batch: Batch, fd: Optional[int] = None,
                     bufs: Optional[SharedBuffers] = None) -> int:
    """Decode the features after a minibatch's hops into ``batch.x`` (one
    row per node of ``n_id``) and ``batch.y`` (one label per seed)."""
    flags = int(payload[off])
    off += 1
    shared = bool(flags & FEATURE_SHARED)
    if not flags & FEATURE_X or flags & ~(FEATURE_X | FEATURE_Y | FEATURE_SHARED) or (fd is not None and not shared):
        if fd is not None:
            os.close(fd)
        raise ProtocolError("feature flags %#x at byte %d%s" % (
            flags, off - 1, " with a memory file" if fd is not None else ""))
    if shared:
        x, off = _decode_shared_x(payload, off, fd, bufs)
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


def _decode_shared_x(payload: Buffer, off: int, fd: Optional[int],
                     bufs: Optional[SharedBuffers]) -> Tuple[npt.NDArray[Any], int]:
    """The x of a shared-rows reply: its header and location from the
    payload, its bytes in a shared buffer (``fd``, where one came with the
    reply, is that buffer's memory file, and is closed)."""
    try:
        if bufs is None:
            raise ProtocolError("a shared-rows reply on a connection without shared buffers")
        if len(payload) - off < 18 + 16:
            raise ProtocolError("truncated header of shared array x at byte %d" % off)
        code, ndim = int(payload[off]), int(payload[off + 1])
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
    if batch.link is not None:
        flags |= BATCH_LINK
    parts = [struct.pack("<IiBB", batch.epoch, batch.index, len(batch.hops), flags),
             encode_array(batch.seeds, "<u4")]
    for h in batch.hops:
        parts += [encode_array(h.dst, "<u4"), encode_array(h.src, "<u4"),
                  encode_array(h.edge_src, "<i4"), encode_array(h.edge_dst, "<i4")]
        if flags & BATCH_EDGE_IDS:
            if h.e_id is None:
                raise ValueError("encode_blocks: hop 1 has edge ids and a later hop has none")
            parts.append(encode_array(h.e_id, "<i8"))
    if batch.link is not None:
        parts.append(_encode_link(batch.link))
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
    return error_class(code)(code, msg)


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


def fresh_payload(seeds: NodeIds, fanouts: Sequence[int], seed: int = 0, epoch: int = 0, replace: bool = False,
                  edge_ids: bool = False, semantics: Optional[str] = None) -> bytes:
    """The payload of a sample_fresh request (docs/PROTOCOL.md)."""
    if len(fanouts) == 0:
        raise ValueError("fanouts: need at least one layer")
    flags = (FRESH_REPLACE if replace else 0) | (FRESH_EDGE_IDS if edge_ids else 0)
    return (struct.pack("<QIB", int(seed) & (2**64 - 1), int(epoch), flags) +
            encode_array(np.asarray(list(fanouts), dtype=np.int64), "<i4") + encode_array(seeds, "<u4") +
            semantics_byte(semantics))


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


def hetero_split_payload(type_index: int, nodes: NodeIds, batch_size: int) -> bytes:
    """The payload of a split request to a heterogeneous server: the batch
    size, the node type's index in epoch_info's ``hetero.node_types`` and
    the nodes (local ids of that type)."""
    if not 0 <= int(type_index) < 1 << 16:
        raise ValueError("node type index %d outside u16" % int(type_index))
    return struct.pack("<IH", int(batch_size), int(type_index)) + encode_array(nodes, "<u4")


def link_split_payload(edges: Any, batch_size: int, labels: Optional[Any] = None, neg_sampling: str = NEG_NONE,
                       amount: float = 1.0, seed: int = 0) -> bytes:
    """A link_split request: ``edges`` int (2, E) (row 0 the sources),
    ``labels`` [E] (float: f32, integer: i64) or None, the negative
    sampling mode (``"none"``, ``"binary"``, ``"triplet"``), its amount and
    the seed of the split's negatives."""
    e = np.asarray(edges)
    if e.ndim != 2 or e.shape[0] != 2:
        raise ValueError("link_split: edges of shape %s, want (2, E)" % (e.shape,))
    if neg_sampling not in _LINK_MODES:
        raise ValueError("link_split: neg_sampling %r, want one of %s" % (neg_sampling, ", ".join(_LINK_MODES)))
    head = struct.pack("<IBdQB", int(batch_size), _LINK_MODES.index(neg_sampling), float(amount),
                       int(seed) & (2**64 - 1), 0 if labels is None else 1)
    parts = [head, encode_array(e[0], "<u4"), encode_array(e[1], "<u4")]
    if labels is not None:
        lab = np.asarray(labels)
        if lab.shape != (e.shape[1],):
            raise ValueError("link_split: %s labels for %d edges" % (lab.shape, e.shape[1]))
        dt = "<i8" if np.issubdtype(lab.dtype, np.integer) or lab.dtype == np.bool_ else "<f4"
        lab = np.ascontiguousarray(lab, dtype=dt)
        parts.append(_ARRAY1.pack(DTYPE_CODES[np.dtype(dt)], 1, lab.size) + lab.tobytes())
    return b"".join(parts)


def drop_split_payload(split: int) -> bytes:
    """The payload of a drop_split request."""
    return _U32.pack(int(split))


def split_batch_payload(split: int, index: int, semantics: Optional[str] = None) -> bytes:
    """The payload of a split_batch request."""
    return struct.pack("<II", int(split), int(index)) + semantics_byte(semantics)


def scan_payload(batch_size: int, rows: bool, edge_ids: bool, semantics: Optional[str] = None,
                 store: Optional[str] = None) -> bytes:
    """The payload of a scan request (``store``: an absolute path on the
    server's machine, or None for the graph's own feature store)."""
    flags = (SCAN_ROWS if rows else 0) | (SCAN_EDGE_IDS if edge_ids else 0)
    sem = 0xFF if semantics is None else semantics_byte(semantics)[0]
    path = os.fsencode(store) if store is not None else b""
    return _U32.pack(int(batch_size)) + bytes([flags, sem]) + path


def scan_batch_payload(scan: int, index: int) -> bytes:
    """The payload of a scan_batch request."""
    return struct.pack("<II", int(scan), int(index))


def drop_scan_payload(scan: int) -> bytes:
    """The payload of a drop_scan request."""
    return _U32.pack(int(scan))


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


_HETERO_HEAD = struct.Struct("<IiBBHH")


def _presence(payload: Buffer, off: int, name: str) -> Tuple[bool, int]:
    """A node type's presence byte before its rows or labels (0 absent, 1
    present), and the offset after it."""
    if off >= len(payload):
        raise ProtocolError("%s: truncated presence byte" % name)
    has = payload[off]
    if has > 1:
        raise ProtocolError("%s: presence %d" % (name, has))
    return has == 1, off + 1


def _rows(b: HeteroBatch, t: str) -> int:
    """The rows node type ``t`` has in ``b``'s rows and labels: its
    ``n_id`` (PyG) or its last hop's src nodes (DGL)."""
    return len(b.nodes[t].n_id) if b.nodes else len(b.blocks[-1].src_n_id[t])


def _hetero_array(payload: Buffer, off: int, name: str, dtype: str, ndim: int = 1) -> Tuple[npt.NDArray[Any], int]:
    a, off = decode_array(payload, off)
    if a.dtype != np.dtype(dtype) or a.ndim != ndim:
        raise ProtocolError("%s: dtype %s with %d dimensions, want %s with %d" % (name, a.dtype, a.ndim, dtype, ndim))
    return a, off


def decode_hetero(payload: Buffer, schema: HeteroSchema) -> HeteroBatch:
    """Decode a heterogeneous minibatch reply (flag bit 3) against the
    server's schema (epoch_info's ``hetero``); the arrays are views of
    ``payload``. Lengths are checked against each other as the Go decoder
    does (serve.DecodeHeteroBatch)."""
    if len(payload) < _HETERO_HEAD.size:
        raise ProtocolError("truncated heterogeneous minibatch (%d bytes)" % len(payload))
    epoch, index, nhops, flags, T, R = _HETERO_HEAD.unpack_from(payload, 0)
    if not flags & BATCH_HETERO or flags & ~(BATCH_PYG | BATCH_EDGE_IDS | BATCH_HETERO | BATCH_HETERO_X | BATCH_HETERO_Y):
        raise ProtocolError("heterogeneous minibatch flags %#x" % flags)
    if T != len(schema.node_types) or R != len(schema.edge_types):
        raise ProtocolError("%d node types and %d edge types for a schema of %d and %d" % (
            T, R, len(schema.node_types), len(schema.edge_types)))
    eids = bool(flags & BATCH_EDGE_IDS)
    off = _HETERO_HEAD.size
    L = nhops
    if flags & BATCH_PYG:
        b = HeteroBatch(epoch, index, "pyg", L)
        for t in schema.node_types:
            n_id, off = _hetero_array(payload, off, t + " n_id", "<u4")
            nsn, off = _hetero_array(payload, off, t + " num_sampled_nodes", "<u4")
            if len(nsn) != L + 1 or int(nsn.sum()) != len(n_id):
                raise ProtocolError("%s: num_sampled_nodes %s for %d hops and %d n_id" % (t, nsn.tolist(), L, len(n_id)))
            if len(payload) - off < 4:
                raise ProtocolError("%s: truncated batch_size" % t)
            (bs,) = _U32.unpack_from(payload, off)
            off += 4
            if bs != int(nsn[0]):
                raise ProtocolError("%s: batch_size %d for %d seeds" % (t, bs, int(nsn[0])))
            b.nodes[t] = HeteroNodes(n_id, nsn, int(bs))
        for et in schema.edge_types:
            name = "__".join(et)
            ei, off = _hetero_array(payload, off, name + " edge_index", "<i8", 2)
            if ei.shape[0] != 2:
                raise ProtocolError("%s: edge_index of shape %s" % (name, ei.shape))
            ns, nd = len(b.nodes[et[0]].n_id), len(b.nodes[et[2]].n_id)
            if ei.shape[1] and (ei.min() < 0 or ei[0].max() >= ns or ei[1].max() >= nd):
                raise ProtocolError("%s: edge_index outside n_id of %d and %d nodes" % (name, ns, nd))
            e_id = None
            if eids:
                e_id, off = _hetero_array(payload, off, name + " e_id", "<i8")
                if len(e_id) != ei.shape[1]:
                    raise ProtocolError("%s: %d e_id for %d edges" % (name, len(e_id), ei.shape[1]))
            nse, off = _hetero_array(payload, off, name + " num_sampled_edges", "<u4")
            if len(nse) != L or int(nse.sum()) != ei.shape[1]:
                raise ProtocolError("%s: num_sampled_edges %s for %d hops and %d edges" % (name, nse.tolist(), L, ei.shape[1]))
            b.edges[et] = HeteroEdges(ei, nse, e_id)
    else:
        if L == 0:
            raise ProtocolError("DGL heterogeneous minibatch without hops")
        b = HeteroBatch(epoch, index, "dgl", L)
        cur: dict[str, npt.NDArray[Any]] = {}
        for t in schema.node_types:
            cur[t], off = _hetero_array(payload, off, t + " seeds", "<u4")
        for h in range(L):
            blk = HeteroBlock(cur, {}, {})
            for t in schema.node_types:
                src, off = _hetero_array(payload, off, "hop %d %s src" % (h + 1, t), "<u4")
                if len(src) < len(cur[t]) or not np.array_equal(src[:len(cur[t])], cur[t]):
                    raise ProtocolError("hop %d %s: src does not start with the dst nodes" % (h + 1, t))
                blk.src_n_id[t] = src
            for et in schema.edge_types:
                name = "hop %d %s" % (h + 1, "__".join(et))
                es, off = _hetero_array(payload, off, name + " src", "<i4")
                ed, off = _hetero_array(payload, off, name + " dst", "<i4")
                if len(es) != len(ed):
                    raise ProtocolError("%s: %d src and %d dst" % (name, len(es), len(ed)))
                ns, nd = len(blk.src_n_id[et[0]]), len(blk.dst_n_id[et[2]])
                if len(es) and (min(es.min(), ed.min()) < 0 or es.max() >= ns or ed.max() >= nd):
                    raise ProtocolError("%s: edges outside %d src and %d dst nodes" % (name, ns, nd))
                e_id = None
                if eids:
                    e_id, off = _hetero_array(payload, off, name + " e_id", "<i8")
                    if len(e_id) != len(es):
                        raise ProtocolError("%s: %d e_id for %d edges" % (name, len(e_id), len(es)))
                blk.edges[et] = (es, ed, e_id)
            b.blocks.append(blk)
            cur = blk.src_n_id
    if flags & BATCH_HETERO_X:
        for t in schema.node_types:
            has, off = _presence(payload, off, t + " x")
            if not has:
                continue
            x, off = decode_array(payload, off)
            rows = _rows(b, t)
            if x.ndim != 2 or x.dtype not in FEATURE_DTYPES or x.shape[0] != rows:
                raise ProtocolError("%s x: dtype %s shape %s for %d nodes" % (t, x.dtype, x.shape, rows))
            b.x[t] = x
            if b.nodes:
                b.nodes[t].x = x
    if flags & BATCH_HETERO_Y:
        for t in schema.node_types:
            has, off = _presence(payload, off, t + " y")
            if not has:
                continue
            y, off = _hetero_array(payload, off, t + " y", "<i4")
            rows = _rows(b, t)
            if len(y) != rows:
                raise ProtocolError("%s y: %d labels for %d nodes" % (t, len(y), rows))
            if len(y) and int(y.min()) < -1:
                raise ProtocolError("%s y: label %d (want >= 0, or -1 for none)" % (t, int(y.min())))
            b.y[t] = y
            if b.nodes:
                b.nodes[t].y = y
    if off != len(payload):
        raise ProtocolError("%d trailing bytes in heterogeneous minibatch" % (len(payload) - off))
    return b


def is_hetero(payload: Buffer) -> bool:
    """Whether a minibatch reply payload is heterogeneous (flag bit 3)."""
    return len(payload) > 9 and bool(payload[9] & BATCH_HETERO)
