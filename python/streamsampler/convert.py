"""Import a graph from a PyG ``Data`` object or from arrays.

    info = streamsampler.from_pyg(data, "graph/")
    info = streamsampler.from_arrays(edge_index, num_nodes, "graph/", x=x, y=y,
                                     masks={"train": train_mask, "test": test_ids})

write a graph directory that ``streamsampler serve`` samples, with its
feature store and the splits as node-id files:

=====================  ====================================================
``graph/``             ``chunkify build --reverse --dedup=false
                       --self-loops keep --num-nodes N``: edges.chunks,
                       chunks.info, manifest.json
``features.json`` …    ``chunkify features`` (when ``x`` is given): the
                       rows, and ``y`` as the store's labels;
                       :class:`streamsampler.featstore.FeatureStore` reads
                       them, ``serve --features`` delivers them
``labels.npy``         ``y`` as int64 (-1: none), only when ``y`` is given
                       without ``x`` (the store holds labels beside rows)
``splits/NAME.npy``    each mask as sorted int64 node ids (``train_mask``
                       → ``splits/train.npy``), what ``serve --train``
                       reads
``splits/NAME.edges.npy``
                       each edge split (``edge_splits=``: PyG's
                       ``edge_label_index``, e.g. from ``RandomLinkSplit``)
                       as int64 [2, E], row 0 the source, in the given
                       order, what ``serve --train-edges`` reads;
                       ``splits/NAME.edge_label.npy`` its ``edge_label``
                       [E] where given (the dtype kept)
``edge_perm.npy``      int64 [E]: the ``edge_index`` column of each stored
                       edge (see below)
``pyg.json``           what was written (:func:`read_info`), last
=====================  ====================================================

**Edges are sampled as PyG and DGL sample them, as in-edges.** PyG's
``flow="source_to_target"`` and DGL's samplers draw a node's *incoming*
edges: for a column (u, v) of ``edge_index``, u is stored in v's
adjacency. The graph is kept exactly as given: duplicate columns stay
duplicates, self-loops stay, nodes without edges (also above the largest
id) stay. An undirected PyG graph lists both directions, so it is stored
with both.

**Edge ids.** A sampled edge's ``e_id`` is its position in the stored CSR,
which orders edges by (v, then u). ``edge_perm.npy`` maps it back to
``edge_index``: stored edge i is column ``edge_perm[i]`` (a stable sort by
(v, u), so duplicate columns map to distinct columns in input order), and
edge features given per column are ``edge_attr[edge_perm[e_id]]``.
``edge_perm="auto"`` writes it when E ≤ :data:`EDGE_PERM_AUTO_MAX` (2^27):
the sort is in memory, about 20 bytes per edge (3 GiB at the bound);
``True`` writes it at any size, ``False`` never.
:func:`load_edge_perm` memory-maps it.

**Inputs.** Tensors may be torch tensors (``.detach().cpu().numpy()``: a
CUDA tensor is copied to host memory whole), numpy arrays or
``numpy.memmap`` s. Out-of-core inputs are streamed, never loaded whole:
the edges go to ``chunkify build -`` as uint32 pairs, ``x`` to ``chunkify
features`` through a pipe (``/dev/stdin``), ``y`` and the masks to their
files, each in slices of at most ``piece_bytes`` (default
:data:`PIECE_BYTES`, 16 MiB) of input. Only ``edge_perm`` (the sort) and a
CUDA tensor's copy hold a whole array (a CPU tensor's ``.numpy()``
shares its memory, so a tensor over a memory-mapped file streams too).
Measured with tracemalloc on a memory-mapped 76 MiB edge_index and
244 MiB float64 x: Python's allocations peaked at 0.3 MiB with
``piece_bytes`` 256 KiB, 16 MiB with the default, 76 MiB with
``edge_perm`` (5 M edges × 16 bytes).

``x`` [N, F] is stored in its dtype when the store has it (float32,
float16, int8, uint8); **float64 is converted to float32** (slice by
slice) and bool to uint8; other dtypes are refused (convert them
yourself). ``y`` [N] or [N, 1]: class ids, integers or floats with NaN for none (a
non-integer value is refused), stored as int32 in the store, -1 for none
(``labels.npy``: int64).
``from_pyg`` takes every attribute whose name ends in ``_mask`` and
holds a boolean [N] array (``masks=`` names them instead); a
``from_arrays`` mask is a bool [N] array or an array of node ids (sorted
and deduplicated).

**Errors.** Bad input raises ValueError naming what is wrong:
``edge_index`` not [2, E], an id negative or ≥ ``num_nodes`` (the column
is named; checked slice by slice), a mask or ``x`` or ``y`` of the wrong
length, an existing ``out`` without ``force=True`` (:class:`OutputExistsError`,
also a FileExistsError). chunkify's own refusals raise RuntimeError with
its message.

**A HeteroData** (:func:`is_hetero_data`) becomes a heterogeneous graph
directory instead (docs/FORMAT.md, "Heterogeneous graph directories" and
its paragraph on the Python import): one relation directory per edge
type, per-type feature stores, ``splits/TYPE/NAME.npy``, a per-relation
``edge_perm.npy``; see :func:`from_pyg`.

**Nothing half-written.** Everything is written into a hidden sibling
directory of ``out`` (``.NAME.frompyg-XXXX``, removed on any error),
``pyg.json`` last (temporary file, fsync, rename), and the finished
directory is then renamed to ``out``. With ``force=True`` an existing
``out`` is moved aside first and removed after the rename: between the two
renames ``out`` is briefly absent, never partial.
"""

from __future__ import annotations

import json
import operator
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from .executables import find_chunkify
from .typing import PathArg

#: Default bound, in bytes of input, of one slice read from an array.
PIECE_BYTES = 16 << 20

#: ``edge_perm="auto"`` writes edge_perm.npy up to this many edges (its
#: in-memory stable sort needs about 20 bytes per edge).
EDGE_PERM_AUTO_MAX = 1 << 27

#: The metadata file written last.
INFO = "pyg.json"

#: The largest node count the format allows (samples are int32).
MAX_NODES = (1 << 31) - 1

#: Feature dtypes the store keeps as they are.
_STORE_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16",
                 np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")

#: A PyG edge type: (source node type, relation, destination node type).
EdgeType = Tuple[str, str, str]


class OutputExistsError(FileExistsError, ValueError):
    """The output directory exists and ``force`` was not given."""


@dataclass
class GraphInfo:
    """What :func:`from_pyg` / :func:`from_arrays` wrote (or
    :func:`read_info` read back): the graph directory ``path``, its
    counts, ``splits`` (name → path of its node-id .npy), whether it has a
    feature store (``has_features``: ``feature_dtype`` × ``feature_dim``)
    and labels, the path of edge_perm.npy or None, and the edge splits:
    ``edge_splits`` (name → path of its int64 [2, E] ``edge_label_index``)
    and ``edge_labels`` (name → path of its ``edge_label``, for the splits
    that have one)."""

    path: str
    num_nodes: int
    num_edges: int
    splits: Dict[str, str] = field(default_factory=dict)
    has_features: bool = False
    has_labels: bool = False
    edge_perm: Optional[str] = None
    feature_dtype: Optional[str] = None
    feature_dim: int = 0
    source: str = ""
    edge_splits: Dict[str, str] = field(default_factory=dict)
    edge_labels: Dict[str, str] = field(default_factory=dict)
    #: A heterogeneous graph (from a ``HeteroData``): node type → count, in
    #: hetero.json's order (empty for a homogeneous graph; ``num_nodes``
    #: and ``num_edges`` are then the totals over types and relations).
    node_types: Dict[str, int] = field(default_factory=dict)
    #: Relation (src, rel, dst) → its graph directory (a homogeneous one,
    #: docs/FORMAT.md), in hetero.json's order.
    relations: Dict[EdgeType, str] = field(default_factory=dict)
    #: Relation → its edge count.
    relation_edges: Dict[EdgeType, int] = field(default_factory=dict)
    #: Relation → the path of its edge_perm.npy (relations that have one).
    relation_edge_perm: Dict[EdgeType, str] = field(default_factory=dict)
    #: Node type → (split name → path of splits/TYPE/NAME.npy).
    type_splits: Dict[str, Dict[str, str]] = field(default_factory=dict)
    #: Node type → (store dtype, dim) of its feature store features/TYPE/.
    type_features: Dict[str, Tuple[str, int]] = field(default_factory=dict)
    #: Node type → where its labels are: its feature store's features.json,
    #: or labels/TYPE.npy (int64, -1 none) for a type without features.
    type_labels: Dict[str, str] = field(default_factory=dict)

    @property
    def is_hetero(self) -> bool:
        """Whether this is a heterogeneous graph directory (hetero.json)."""
        return bool(self.node_types)


def _numpy(a: Any, what: str) -> npt.NDArray[Any]:
    """``a`` as a numpy array without copying one (a memmap stays a
    memmap); a torch tensor through ``.detach().cpu().numpy()``."""
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    if isinstance(a, np.ndarray):
        return a
    try:
        return np.asarray(a)
    except Exception as e:  # noqa: BLE001 (reported with the input's name)
        raise ValueError("%s: cannot be read as an array (%s: %s)" % (what, type(a).__name__, e)) from None


def _slices(n: int, per: int) -> Iterator[Tuple[int, int]]:
    per = max(1, int(per))
    for s in range(0, n, per):
        yield s, min(n, s + per)


def _check_ids(ids: npt.NDArray[Any], num_nodes: int, what: str, first: int) -> None:
    """Raise ValueError naming the first id of ``ids`` (position
    ``first`` + i of ``what``) that is negative or ≥ num_nodes."""
    if not len(ids):
        return
    lo, hi = ids.min(), ids.max()
    if lo >= 0 and hi < num_nodes:
        return
    bad = int(np.flatnonzero((ids < 0) | (ids >= num_nodes))[0])
    raise ValueError("%s[%d] = %d: node ids must be in 0..%d (num_nodes %d)"
                     % (what, first + bad, int(ids[bad]), num_nodes - 1, num_nodes))


def _write_npy_header(f: Any, dtype: np.dtype[Any], shape: Tuple[int, ...]) -> None:
    # numpy.lib.format has no annotations.
    descr = np.lib.format.dtype_to_descr(dtype)  # type: ignore[no-untyped-call]
    np.lib.format.write_array_header_1_0(  # type: ignore[no-untyped-call]
        f, {"descr": descr, "fortran_order": False, "shape": shape})


def _run_chunkify(cmd: Sequence[str], feed: Optional[Iterable[Any]] = None) -> None:
    """Run chunkify, writing each buffer of ``feed`` to its standard input;
    RuntimeError with its message when it fails."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(list(cmd), stdin=subprocess.PIPE if feed is not None else subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=err)
        broken = False
        try:
            if feed is not None:
                assert p.stdin is not None
                try:
                    for buf in feed:
                        p.stdin.write(buf)
                except BrokenPipeError:
                    broken = True  # chunkify stopped reading: its error says why
                finally:
                    try:
                        p.stdin.close()
                    except BrokenPipeError:
                        broken = True
        except BaseException:  # a bad slice of the input, or an interrupt
            p.kill()
            p.wait()
            raise
        rc = p.wait()
        if rc != 0 or broken:
            err.seek(0)
            msg = err.read().decode(errors="replace").strip()
            raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd[:2]), rc, msg or "no message"))


def _edge_pieces(ei: npt.NDArray[Any], num_nodes: int, piece_bytes: int) -> Iterator[npt.NDArray[np.uint32]]:
    """The columns of ``ei`` as little-endian uint32 (u, v) pairs, a slice
    at a time, each checked."""
    per = piece_bytes // max(1, 2 * ei.dtype.itemsize)
    for s, e in _slices(ei.shape[1], per):
        u = np.asarray(ei[0, s:e])
        v = np.asarray(ei[1, s:e])
        _check_ids(u, num_nodes, "edge_index[0]", s)
        _check_ids(v, num_nodes, "edge_index[1]", s)
        pairs = np.empty((e - s, 2), "<u4")
        pairs[:, 0] = u
        pairs[:, 1] = v
        yield pairs


def _edge_perm(ei: npt.NDArray[Any], num_nodes: int, piece_bytes: int) -> npt.NDArray[np.int64]:
    """The stable argsort of the columns by (v, u): stored edge i is
    column result[i]."""
    e = ei.shape[1]
    key = np.empty(e, np.int64)
    per = piece_bytes // max(1, 2 * ei.dtype.itemsize)
    for s, t in _slices(e, per):
        key[s:t] = np.asarray(ei[1, s:t], np.int64) * num_nodes + np.asarray(ei[0, s:t], np.int64)
    return np.argsort(key, kind="stable").astype(np.int64, copy=False)


def _feature_pieces(x: npt.NDArray[Any], dtype: np.dtype[Any], piece_bytes: int) -> Iterator[npt.NDArray[Any]]:
    """``x`` in slices of ``dtype``; a finite value that the narrowing
    turns into an infinity (float64 beyond float32's range) is an error
    naming it, never a stored inf."""
    per = piece_bytes // max(1, x.shape[1] * x.dtype.itemsize)
    for s, e in _slices(x.shape[0], per):
        src = x[s:e]
        with np.errstate(over="ignore"):
            out = np.ascontiguousarray(src, dtype=dtype)
        if out.dtype.kind == "f" and src.dtype.kind == "f" and out.dtype.itemsize < src.dtype.itemsize:
            bad = np.isinf(out) & np.isfinite(src)
            if bad.any():
                r, c = (int(v[0]) for v in np.nonzero(bad))
                raise ValueError("x[%d, %d] = %r does not fit %s (largest %r): scale or clip x first"
                                 % (s + r, c, float(src[r, c]), out.dtype, float(np.finfo(out.dtype).max)))
        yield out


def _labels(y: npt.NDArray[Any], num_nodes: int) -> npt.NDArray[Any]:
    """``y`` as a 1-D array of integers or floats, checked for shape."""
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != num_nodes:
        raise ValueError("y: shape %s, want [num_nodes] = [%d] (or [%d, 1])" % (tuple(y.shape), num_nodes, num_nodes))
    if y.dtype.kind not in "iubf":
        raise ValueError("y: dtype %s, want integers (or floats with NaN for none)" % y.dtype)
    return y


def _label_pieces(y: npt.NDArray[Any], piece_bytes: int) -> Iterator[npt.NDArray[np.int64]]:
    """``y`` as int64 slices, -1 for none (NaN), each checked: class ids
    are integers in -1..2^31-1."""
    for s, e in _slices(len(y), piece_bytes // max(1, y.dtype.itemsize)):
        p = np.asarray(y[s:e])
        if p.dtype.kind == "f":
            none = np.isnan(p)
            bad = ~none & (p != np.floor(p))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError("y[%d] = %r: labels are class ids, want integers (NaN for none)" % (s + i, float(p[i])))
            p = np.where(none, -1, p)
        q = p.astype("<i8")
        if len(q) and (q.min() < -1 or q.max() > 0x7FFFFFFF):
            i = int(np.flatnonzero((q < -1) | (q > 0x7FFFFFFF))[0])
            raise ValueError("y[%d] = %d: labels are class ids in 0..2^31-1, -1 (or NaN) for none" % (s + i, int(q[i])))
        yield q


def _write_npy(path: str, dtype: np.dtype[Any], count: int, pieces: Iterable[npt.NDArray[Any]]) -> None:
    """A 1-D .npy of ``count`` elements written a piece at a time."""
    with open(path, "wb") as f:
        _write_npy_header(f, dtype, (count,))
        for p in pieces:
            f.write(np.ascontiguousarray(p, dtype=dtype).data)


def _split_ids(name: str, m: Any, num_nodes: int, piece_bytes: int) -> Tuple[int, Iterator[npt.NDArray[np.int64]]]:
    """(count, pieces of sorted int64 node ids) of mask or id array ``m``."""
    a = _numpy(m, "masks[%r]" % name)
    if a.dtype == np.bool_:
        if a.ndim != 1 or a.shape[0] != num_nodes:
            raise ValueError("mask %r: shape %s, want a boolean [num_nodes] = [%d] (one split per mask)"
                             % (name, tuple(a.shape), num_nodes))
        per = piece_bytes
        count = sum(int(np.count_nonzero(a[s:e])) for s, e in _slices(num_nodes, per))

        def gen() -> Iterator[npt.NDArray[np.int64]]:
            for s, e in _slices(num_nodes, per):
                yield np.flatnonzero(np.asarray(a[s:e])).astype("<i8") + s
        return count, gen()
    if a.dtype.kind in "iu" and a.ndim == 1:
        _check_ids(a, num_nodes, "masks[%r]" % name, 0)
        ids = np.unique(a).astype("<i8")
        return len(ids), iter([ids])
    raise ValueError("mask %r: dtype %s shape %s, want a boolean [%d] mask or a 1-D array of node ids"
                     % (name, a.dtype, tuple(a.shape), num_nodes))


#: The file names of an edge split NAME under splits/: its
#: ``edge_label_index`` and its ``edge_label``.
EDGE_SPLIT_SUFFIX = ".edges.npy"
EDGE_LABEL_SUFFIX = ".edge_label.npy"


def _edge_split(name: str, value: Any, num_nodes: int) -> Tuple[npt.NDArray[np.int64], Optional[npt.NDArray[Any]]]:
    """(edge_label_index int64 [2, E], edge_label or None) of an
    ``edge_splits`` entry: a PyG ``Data`` (its ``edge_label_index`` and
    ``edge_label``, as ``RandomLinkSplit`` makes them), a pair
    (edge_label_index, edge_label or None), or an edge_label_index alone."""
    what = "edge_splits[%r]" % name
    if hasattr(value, "edge_label_index"):
        ei, lab = getattr(value, "edge_label_index"), getattr(value, "edge_label", None)
        if ei is None:
            raise ValueError("%s: the Data's edge_label_index is None" % what)
    elif isinstance(value, (tuple, list)) and len(value) == 2 and np.ndim(_numpy(value[0], what)) == 2:
        ei, lab = value
    else:
        ei, lab = value, None
    a = _numpy(ei, what + ".edge_label_index")
    if a.ndim != 2 or a.shape[0] != 2:
        hint = " (an [E, 2] list: pass its transpose)" if a.ndim == 2 and a.shape[1] == 2 else ""
        raise ValueError("%s: edge_label_index of shape %s, want [2, E]%s" % (what, tuple(a.shape), hint))
    if not (a.size == 0 or a.dtype.kind in "iu"):
        raise ValueError("%s: edge_label_index of dtype %s, want integers" % (what, a.dtype))
    a = np.ascontiguousarray(a, dtype=np.int64)
    _check_ids(a[0], num_nodes, what + ".edge_label_index[0]", 0)
    _check_ids(a[1], num_nodes, what + ".edge_label_index[1]", 0)
    if lab is None:
        return a, None
    la = np.ascontiguousarray(_numpy(lab, what + ".edge_label"))
    if la.ndim != 1 or la.shape[0] != a.shape[1]:
        raise ValueError("%s: edge_label of shape %s, want [E] = [%d] (one label per edge_label_index column)"
                         % (what, tuple(la.shape), a.shape[1]))
    if la.dtype.kind not in "biuf":
        raise ValueError("%s: edge_label of dtype %s, want numbers" % (what, la.dtype))
    return a, la


def _write_json_atomic(path: str, obj: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def from_arrays(edge_index: Any, num_nodes: int, out: PathArg, x: Any = None, y: Any = None,
                masks: Optional[Mapping[str, Any]] = None, *, chunk_size: Union[str, int] = "64MiB",
                force: bool = False, chunkify: Optional[PathArg] = None,
                edge_perm: Union[str, bool] = "auto", piece_bytes: int = PIECE_BYTES,
                edge_splits: Optional[Mapping[str, Any]] = None) -> GraphInfo:
    """Write graph directory ``out`` from ``edge_index`` [2, E] (column
    (u, v): u is stored in v's adjacency, as PyG and DGL sample in-edges),
    ``num_nodes``, optional features ``x`` [N, F], labels ``y`` [N] and
    ``masks`` (name → bool [N] mask or node-id array, written as
    splits/NAME.npy). ``chunk_size`` is chunkify's --chunk-size (a node's
    in-edges must fit one chunk), ``chunkify`` its executable
    (:func:`streamsampler.executables.find_chunkify`), ``piece_bytes`` the
    bound of each slice read from an input. ``edge_splits`` (name → PyG
    ``Data`` with ``edge_label_index``/``edge_label``, a pair
    (edge_label_index, edge_label), or an edge_label_index) are written as
    splits/NAME.edges.npy and splits/NAME.edge_label.npy, the link loaders'
    seed edges. See the module's docstring."""
    return _write(edge_index, num_nodes, out, x, y, masks, chunk_size, force, chunkify, edge_perm, piece_bytes,
                  "from_arrays", edge_splits)


def _write(edge_index: Any, num_nodes: int, out: PathArg, x: Any, y: Any, masks: Optional[Mapping[str, Any]],
           chunk_size: Union[str, int], force: bool, chunkify: Optional[PathArg], edge_perm: Union[str, bool],
           piece_bytes: int, source: str, edge_splits: Optional[Mapping[str, Any]] = None) -> GraphInfo:
    """from_arrays, recording ``source`` in pyg.json."""
    if isinstance(edge_perm, str) and edge_perm != "auto":
        raise ValueError("edge_perm=%r: want 'auto', True or False" % edge_perm)
    try:
        if isinstance(num_nodes, bool):
            raise TypeError
        n = operator.index(num_nodes)  # int, numpy or torch integer scalar
    except TypeError:
        raise ValueError("num_nodes=%r: want an integer" % (num_nodes,)) from None
    if not 1 <= n <= MAX_NODES:
        raise ValueError("num_nodes=%d: want 1..%d" % (n, MAX_NODES))
    ei = _numpy(edge_index, "edge_index")
    if ei.ndim != 2 or ei.shape[0] != 2:
        hint = " (an [E, 2] list: pass its transpose)" if ei.ndim == 2 and ei.shape[1] == 2 else ""
        raise ValueError("edge_index: shape %s, want [2, E]%s" % (tuple(ei.shape), hint))
    if ei.dtype.kind not in "iu":
        raise ValueError("edge_index: dtype %s, want integers" % ei.dtype)
    num_edges = int(ei.shape[1])
    xa = None
    if x is not None:
        xa = _numpy(x, "x")
        if xa.ndim != 2 or xa.shape[0] != n or xa.shape[1] < 1:
            raise ValueError("x: shape %s, want [num_nodes, F] = [%d, F]" % (tuple(xa.shape), n))
        xdt: np.dtype[Any]
        if xa.dtype == np.bool_:
            xdt = np.dtype(np.uint8)
        elif xa.dtype == np.float64:
            xdt = np.dtype(np.float32)
        elif xa.dtype in _STORE_DTYPES:
            xdt = xa.dtype
        else:
            raise ValueError("x: dtype %s, want float32, float16, int8, uint8 (float64 is converted to float32): "
                             "convert it first" % xa.dtype)
    ya = None
    if y is not None:
        ya = _labels(_numpy(y, "y"), n)
    splits = {}
    for name, m in (masks or {}).items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError("mask name %r: want letters, digits, '_', '-', '.' (it names splits/NAME.npy)" % (name,))
        if name.endswith((".edges", ".edge_label")):
            raise ValueError("mask name %r: a name ending in '.edges' or '.edge_label' would be read as an edge "
                             "split's file" % (name,))
        splits[name] = _split_ids(name, m, n, piece_bytes)
    esplits = {}
    for name, v in (edge_splits or {}).items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError("edge split name %r: want letters, digits, '_', '-', '.' (it names "
                             "splits/NAME.edges.npy)" % (name,))
        esplits[name] = _edge_split(name, v, n)
    if edge_perm == "auto":
        want_perm = num_edges <= EDGE_PERM_AUTO_MAX
    else:
        want_perm = bool(edge_perm)

    out_s = os.path.abspath(os.fspath(out))
    if os.path.lexists(out_s) and not force:
        raise OutputExistsError("%s exists: pass force=True to replace it" % out_s)
    ck = find_chunkify(chunkify)
    parent = os.path.dirname(out_s)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="." + os.path.basename(out_s) + ".frompyg-", dir=parent)
    try:
        g = os.path.join(work, "graph")
        _run_chunkify([ck, "build", "-", "-o", g, "--format", "bin32", "--reverse", "--dedup=false",
                       "--self-loops", "keep", "--num-nodes", str(n), "--chunk-size", str(chunk_size), "-q"],
                      _edge_pieces(ei, n, piece_bytes))
        with open(os.path.join(g, "manifest.json")) as f:
            m = json.load(f)
        if (m["num_nodes"], m["num_edges"]) != (n, num_edges):
            raise RuntimeError("chunkify built %d nodes and %d edges, want %d and %d"
                               % (m["num_nodes"], m["num_edges"], n, num_edges))
        info: Dict[str, Any] = {"version": 1, "source": source, "num_nodes": n, "num_edges": num_edges,
                                "edges": "in-edges: column (u, v) of edge_index is stored in v's adjacency",
                                "features": None, "labels": None, "splits": {}, "edge_perm": None,
                                "edge_splits": {}}
        labels_npy = None
        if ya is not None:
            # With x the store packs them (int32); without, they stay beside
            # the graph as labels.npy.
            labels_npy = os.path.join(work if xa is not None else g, "labels.npy")
            _write_npy(labels_npy, np.dtype("<i8"), n, _label_pieces(ya, piece_bytes))
            info["labels"] = {"where": "features.json" if xa is not None else "labels.npy",
                              "from_dtype": str(ya.dtype)}
        if xa is not None:
            cmd = [ck, "features", "/dev/stdin", "--dim", str(xa.shape[1]), "--dtype", _STORE_DTYPES[xdt],
                   "-o", g, "-q"]
            if labels_npy is not None:
                cmd += ["--labels", labels_npy]
            _run_chunkify(cmd, _feature_pieces(xa, xdt, piece_bytes))
            info["features"] = {"dtype": _STORE_DTYPES[xdt], "dim": int(xa.shape[1]),
                                "from_dtype": str(xa.dtype)}
        if splits or esplits:
            os.makedirs(os.path.join(g, "splits"))
        for name, (count, pieces) in splits.items():
            rel = "splits/%s.npy" % name
            _write_npy(os.path.join(g, rel), np.dtype("<i8"), count, pieces)
            info["splits"][name] = {"file": rel, "count": count}
        for name, (ei_split, lab) in esplits.items():
            rel = "splits/" + name + EDGE_SPLIT_SUFFIX
            np.save(os.path.join(g, rel), ei_split)
            entry: Dict[str, Any] = {"file": rel, "count": int(ei_split.shape[1]), "labels": None}
            if lab is not None:
                entry["labels"] = "splits/" + name + EDGE_LABEL_SUFFIX
                np.save(os.path.join(g, entry["labels"]), lab)
            info["edge_splits"][name] = entry
        if want_perm:
            perm = _edge_perm(ei, n, piece_bytes)
            np.save(os.path.join(g, "edge_perm.npy"), perm)
            del perm
            info["edge_perm"] = "edge_perm.npy"
        _write_json_atomic(os.path.join(g, INFO), info)
        _install(g, out_s, work, force)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return read_info(out_s)


def _install(g: str, out: str, work: str, force: bool) -> None:
    """Move the finished graph directory g to out; an out that appeared
    meanwhile is replaced only with ``force`` (moved aside into work, and
    put back if the move of g fails)."""
    old = None
    if os.path.lexists(out):
        if not force:
            raise OutputExistsError("%s appeared while it was written: pass force=True to replace it" % out)
        old = os.path.join(work, "old")
        os.rename(out, old)
    try:
        os.rename(g, out)
    except BaseException:
        if old is not None:
            os.rename(old, out)
        raise


def _data_keys(data: Any) -> Sequence[str]:
    """The attribute names of a PyG Data (``keys()`` in PyG ≥ 2.4, a
    ``keys`` property before) or of a plain object."""
    k = getattr(data, "keys", None)
    if callable(k):
        k = k()
    if k is None:
        k = [a for a in vars(data) if not a.startswith("_")]
    return list(k)


def from_pyg(data: Any, out: PathArg, *, chunk_size: Union[str, int] = "64MiB", force: bool = False,
             chunkify: Optional[PathArg] = None, edge_perm: Union[str, bool] = "auto",
             masks: Optional[Sequence[str]] = None, piece_bytes: int = PIECE_BYTES,
             edge_splits: Optional[Mapping[str, Any]] = None, add_reverse: bool = False) -> GraphInfo:
    """Write graph directory ``out`` from a ``torch_geometric.data.Data``
    (or any object with its attributes): ``edge_index``, ``num_nodes``,
    optional ``x`` and ``y``, and each boolean [N] attribute named
    ``NAME_mask`` as splits/NAME.npy (``masks``: the attribute names to
    take instead of every ``*_mask``). ``edge_splits``: link prediction's
    supervision edges, name → the ``Data`` ``RandomLinkSplit`` returned for
    it (its ``edge_label_index`` and ``edge_label``), or a pair
    (edge_label_index, edge_label), or an edge_label_index, each written
    as splits/NAME.edges.npy (+ NAME.edge_label.npy) for
    :class:`streamsampler.pyg.LinkNeighborLoader` (``edge_label_index=NAME``)::

        train_data, val_data, test_data = RandomLinkSplit(...)(data)
        from_pyg(train_data, "graph/", edge_splits={"train": train_data, "val": val_data,
                                                    "test": test_data})

    (the graph is ``data``'s ``edge_index``: pass ``train_data`` so that
    the validation and test edges are not in it). Options as
    :func:`from_arrays`; see the module's docstring.

    A ``HeteroData`` (:func:`is_hetero_data`) becomes a heterogeneous
    graph directory (docs/FORMAT.md, "Heterogeneous graph directories"):
    ``chunkify build --node-types … --relation S,R,D=…`` with one relation
    per ``data.edge_types`` entry, in that order (``add_reverse=True`` adds
    ``--add-reverse``; PyG users usually run ``ToUndirected`` themselves,
    so it is off), each type's ``x``/``y`` packed by ``chunkify features
    --node-type`` (``y`` without ``x`` as labels/TYPE.npy), each type's
    boolean ``*_mask`` as splits/TYPE/NAME.npy, and each given relation's
    edge_perm.npy in its directory. ``edge_splits`` is not supported there
    yet."""
    if is_hetero_data(data):
        if edge_splits:
            raise ValueError("edge_splits: not supported for a HeteroData yet")
        return _write_hetero(data, out, chunk_size, force, chunkify, edge_perm, masks, piece_bytes, add_reverse)
    if add_reverse:
        raise ValueError("add_reverse: only for a HeteroData (for a Data, pass an undirected edge_index)")
    ei = getattr(data, "edge_index", None)
    if ei is None:
        raise ValueError("data has no edge_index")
    x = getattr(data, "x", None)
    n = getattr(data, "num_nodes", None)
    if n is None:
        if x is None:
            raise ValueError("data has neither num_nodes nor x: set data.num_nodes")
        n = len(x)
    names = list(masks) if masks is not None else [k for k in _data_keys(data) if k.endswith("_mask")]
    found: Dict[str, Any] = {}
    for k in names:
        m = getattr(data, k, None)
        if m is None:
            raise ValueError("data has no attribute %r" % k)
        if masks is None and str(getattr(m, "dtype", "")).replace("torch.", "") != "bool":
            continue  # not a boolean mask: not a split
        found[k[:-len("_mask")] if k.endswith("_mask") else k] = m
    return _write(ei, n, out, x, getattr(data, "y", None), found, chunk_size, force, chunkify, edge_perm,
                  piece_bytes, "from_pyg", edge_splits)


def is_hetero_data(data: Any) -> bool:
    """Whether ``data`` looks like a PyG ``HeteroData`` (duck-typed: its
    ``node_types`` and ``edge_types`` lists and ``data[type]`` storages),
    so that :func:`from_pyg` writes a heterogeneous graph directory."""
    if type(data).__name__ == "HeteroData":
        return True
    return (hasattr(data, "node_types") and hasattr(data, "edge_types") and hasattr(data, "__getitem__")
            and not callable(getattr(data, "node_types")))


def _type_name(t: Any, what: str) -> str:
    # Names become directory names (relations/S___R___D, features/T, splits/T).
    if not isinstance(t, str) or not _NAME.match(t) or "___" in t or "," in t or "=" in t:
        raise ValueError("%s %r: want letters, digits, '_', '-', '.' (no '___', ',' or '='): it names a directory "
                         "and a chunkify argument" % (what, t))
    return t


def _storage_masks(st: Any, masks: Optional[Sequence[str]]) -> Dict[str, Any]:
    """split name → mask of one node storage: each boolean ``NAME_mask``
    (or the attributes ``masks`` names, where the storage has them)."""
    found: Dict[str, Any] = {}
    if masks is not None:
        for k in masks:
            m = getattr(st, k, None)
            if m is not None:
                found[k[:-len("_mask")] if k.endswith("_mask") else k] = m
        return found
    for k in _data_keys(st):
        if not k.endswith("_mask"):
            continue
        m = getattr(st, k, None)
        if m is not None and str(getattr(m, "dtype", "")).replace("torch.", "") == "bool":
            found[k[:-len("_mask")]] = m
    return found


def _write_hetero(data: Any, out: PathArg, chunk_size: Union[str, int], force: bool, chunkify: Optional[PathArg],
                  edge_perm: Union[str, bool], masks: Optional[Sequence[str]], piece_bytes: int,
                  add_reverse: bool) -> GraphInfo:
    """from_pyg of a HeteroData: see :func:`from_pyg`."""
    if isinstance(edge_perm, str) and edge_perm != "auto":
        raise ValueError("edge_perm=%r: want 'auto', True or False" % edge_perm)
    if add_reverse and edge_perm is True:
        raise ValueError("edge_perm=True with add_reverse: the added reverse relations have no edge_index "
                         "column to map to (use 'auto' or False)")
    node_types = [_type_name(t, "node type") for t in list(data.node_types)]
    if not node_types:
        raise ValueError("HeteroData has no node types")
    counts: Dict[str, int] = {}
    xs: Dict[str, Tuple[npt.NDArray[Any], np.dtype[Any]]] = {}
    ys: Dict[str, npt.NDArray[Any]] = {}
    splits: Dict[str, Dict[str, Tuple[int, Iterator[npt.NDArray[np.int64]]]]] = {}
    for t in node_types:
        st = data[t]
        x = getattr(st, "x", None)
        n = getattr(st, "num_nodes", None)
        if n is None:
            if x is None:
                raise ValueError("data[%r] has neither num_nodes nor x: set data[%r].num_nodes" % (t, t))
            n = len(x)
        try:
            if isinstance(n, bool):
                raise TypeError
            n = operator.index(n)
        except TypeError:
            raise ValueError("data[%r].num_nodes=%r: want an integer" % (t, n)) from None
        if not 1 <= n <= MAX_NODES:
            raise ValueError("data[%r].num_nodes=%d: want 1..%d" % (t, n, MAX_NODES))
        counts[t] = n
        if x is not None:
            xa = _numpy(x, "data[%r].x" % t)
            if xa.ndim != 2 or xa.shape[0] != n or xa.shape[1] < 1:
                raise ValueError("data[%r].x: shape %s, want [num_nodes, F] = [%d, F]" % (t, tuple(xa.shape), n))
            if xa.dtype == np.bool_:
                xdt: np.dtype[Any] = np.dtype(np.uint8)
            elif xa.dtype == np.float64:
                xdt = np.dtype(np.float32)
            elif xa.dtype in _STORE_DTYPES:
                xdt = xa.dtype
            else:
                raise ValueError("data[%r].x: dtype %s, want float32, float16, int8, uint8 (float64 is converted "
                                 "to float32): convert it first" % (t, xa.dtype))
            xs[t] = (xa, xdt)
        y = getattr(st, "y", None)
        if y is not None:
            try:
                ys[t] = _labels(_numpy(y, "data[%r].y" % t), n)
            except ValueError as err:
                raise ValueError("data[%r].%s" % (t, err)) from None
        sp = {}
        for name, m in _storage_masks(st, masks).items():
            if not _NAME.match(name):
                raise ValueError("data[%r]: mask name %r: want letters, digits, '_', '-', '.'" % (t, name))
            try:
                sp[name] = _split_ids(name, m, n, piece_bytes)
            except ValueError as err:
                raise ValueError("data[%r]: %s" % (t, err)) from None
        if sp:
            splits[t] = sp
    rels: List[Tuple[EdgeType, npt.NDArray[Any]]] = []
    for et in list(data.edge_types):
        if not (isinstance(et, tuple) and len(et) == 3):
            raise ValueError("edge type %r: want a (src, rel, dst) triple" % (et,))
        s, r, d = (_type_name(v, "edge type %r:" % (et,)) for v in et)
        if s not in counts or d not in counts:
            raise ValueError("edge type %r: node type %r is not in data.node_types %s"
                             % (et, s if s not in counts else d, node_types))
        ei = getattr(data[et], "edge_index", None)
        if ei is None:
            raise ValueError("data[%r] has no edge_index" % (et,))
        a = _numpy(ei, "data[%r].edge_index" % (et,))
        if a.ndim != 2 or a.shape[0] != 2:
            hint = " (an [E, 2] list: pass its transpose)" if a.ndim == 2 and a.shape[1] == 2 else ""
            raise ValueError("data[%r].edge_index: shape %s, want [2, E]%s" % (et, tuple(a.shape), hint))
        if a.size and a.dtype.kind not in "iu":
            raise ValueError("data[%r].edge_index: dtype %s, want integers" % (et, a.dtype))
        rels.append(((s, r, d), a))
    if not rels:
        raise ValueError("HeteroData has no edge types")

    out_s = os.path.abspath(os.fspath(out))
    if os.path.lexists(out_s) and not force:
        raise OutputExistsError("%s exists: pass force=True to replace it" % out_s)
    ck = find_chunkify(chunkify)
    parent = os.path.dirname(out_s)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="." + os.path.basename(out_s) + ".frompyg-", dir=parent)
    try:
        g = os.path.join(work, "graph")
        # Each relation's edge_index to a temporary (E, 2) uint32 .npy,
        # checked against its types' counts a slice at a time.
        cmd = [ck, "build", "-o", g, "--node-types", ",".join("%s=%d" % (t, counts[t]) for t in node_types),
               "--dedup=false", "--self-loops", "keep", "--chunk-size", str(chunk_size), "-q"]
        if add_reverse:
            cmd.append("--add-reverse")
        for i, ((s, r, d), a) in enumerate(rels):
            path = os.path.join(work, "rel%d.npy" % i)
            e = int(a.shape[1])
            with open(path, "wb") as f:
                _write_npy_header(f, np.dtype("<u4"), (e, 2))
                per = piece_bytes // max(1, 2 * a.dtype.itemsize)
                for lo, hi in _slices(e, per):
                    u, v = np.asarray(a[0, lo:hi]), np.asarray(a[1, lo:hi])
                    _check_ids(u, counts[s], "data[%r].edge_index[0]" % ((s, r, d),), lo)
                    _check_ids(v, counts[d], "data[%r].edge_index[1]" % ((s, r, d),), lo)
                    pairs = np.empty((hi - lo, 2), "<u4")
                    pairs[:, 0], pairs[:, 1] = u, v
                    f.write(pairs.data)
            cmd += ["--relation", "%s,%s,%s=%s" % (s, r, d, path)]
        _run_chunkify(cmd)
        with open(os.path.join(g, "hetero.json")) as f:
            h = json.load(f)
        built = {(x["src"], x["rel"], x["dst"]): x for x in h["relations"]}
        for (et, a) in rels:
            if et not in built or int(built[et]["graph"]["num_edges"]) != int(a.shape[1]):
                raise RuntimeError("chunkify built relation %r with %s edges, want %d"
                                   % (et, built.get(et, {}).get("graph", {}).get("num_edges"), a.shape[1]))
        info: Dict[str, Any] = {"version": 1, "source": "from_pyg", "hetero": True,
                                "node_types": [{"name": t, "count": counts[t]} for t in node_types],
                                "relations": [], "features": {}, "labels": {}, "splits": {}}
        for x in h["relations"]:
            et = (x["src"], x["rel"], x["dst"])
            info["relations"].append({"src": et[0], "rel": et[1], "dst": et[2], "dir": x["dir"],
                                      "num_edges": int(x["graph"]["num_edges"]), "edge_perm": None,
                                      "reverse_of": x.get("reverse_of")})
        for t in node_types:
            lab = None
            if t in ys:
                lab = os.path.join(work if t in xs else g, "labels-%s.npy" % t)
                _write_npy(lab, np.dtype("<i8"), counts[t], _label_pieces(ys[t], piece_bytes))
                if t not in xs:
                    os.makedirs(os.path.join(g, "labels"), exist_ok=True)
                    rel_lab = "labels/%s.npy" % t
                    os.rename(lab, os.path.join(g, rel_lab))
                    info["labels"][t] = {"where": rel_lab, "from_dtype": str(ys[t].dtype)}
                else:
                    info["labels"][t] = {"where": "features/%s/features.json" % t, "from_dtype": str(ys[t].dtype)}
            if t in xs:
                xa, xdt = xs[t]
                fpath = os.path.join(work, "x-%s.npy" % t)
                _write_npy2(fpath, xdt, xa.shape, _feature_pieces(xa, xdt, piece_bytes))
                fcmd = [ck, "features", fpath, "-o", g, "--node-type", t, "-q"]
                if lab is not None:
                    fcmd += ["--labels", lab]
                _run_chunkify(fcmd)
                os.remove(fpath)
                info["features"][t] = {"dtype": _STORE_DTYPES[xdt], "dim": int(xa.shape[1]),
                                       "from_dtype": str(xa.dtype)}
        for t, sp in splits.items():
            os.makedirs(os.path.join(g, "splits", t))
            info["splits"][t] = {}
            for name, (count, pieces) in sp.items():
                rel = "splits/%s/%s.npy" % (t, name)
                _write_npy(os.path.join(g, rel), np.dtype("<i8"), count, pieces)
                info["splits"][t][name] = {"file": rel, "count": count}
        by_type = {(r["src"], r["rel"], r["dst"]): r for r in info["relations"]}
        for et, a in rels:
            entry = by_type[et]
            e = int(a.shape[1])
            if edge_perm is False or (edge_perm == "auto" and e > EDGE_PERM_AUTO_MAX):
                continue
            # The relation is a homogeneous in-edge graph over max(count(s),
            # count(d)) ids; its stored order is (dst, src) as there.
            rel_perm = entry["dir"] + "/edge_perm.npy"
            np.save(os.path.join(g, rel_perm), _edge_perm(a, max(counts[et[0]], counts[et[2]]), piece_bytes))
            entry["edge_perm"] = rel_perm
        _write_json_atomic(os.path.join(g, INFO), info)
        _install(g, out_s, work, force)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return read_info(out_s)


def _write_npy2(path: str, dtype: np.dtype[Any], shape: Tuple[int, ...], pieces: Iterable[npt.NDArray[Any]]) -> None:
    """A .npy of ``shape`` written a piece (of leading rows) at a time."""
    with open(path, "wb") as f:
        _write_npy_header(f, dtype, tuple(int(v) for v in shape))
        for p in pieces:
            f.write(np.ascontiguousarray(p, dtype=dtype).data)


def read_info(graph: PathArg) -> GraphInfo:
    """The :class:`GraphInfo` of a directory written by :func:`from_pyg` or
    :func:`from_arrays` (its pyg.json)."""
    g = os.path.abspath(os.fspath(graph))
    path = os.path.join(g, INFO)
    with open(path) as f:
        m = json.load(f)
    if m.get("version") != 1:
        raise ValueError("%s: version %r, want 1" % (path, m.get("version")))
    if m.get("hetero"):
        return _read_hetero_info(g, m)
    feat = m.get("features") or {}
    return GraphInfo(path=g, num_nodes=int(m["num_nodes"]), num_edges=int(m["num_edges"]),
                     splits={k: os.path.join(g, v["file"]) for k, v in m.get("splits", {}).items()},
                     has_features=bool(feat), has_labels=m.get("labels") is not None,
                     edge_perm=os.path.join(g, m["edge_perm"]) if m.get("edge_perm") else None,
                     feature_dtype=feat.get("dtype"), feature_dim=int(feat.get("dim", 0)),
                     source=m.get("source", ""),
                     edge_splits={k: os.path.join(g, v["file"]) for k, v in m.get("edge_splits", {}).items()},
                     edge_labels={k: os.path.join(g, v["labels"]) for k, v in m.get("edge_splits", {}).items()
                                  if v.get("labels")})


def _read_hetero_info(g: str, m: Dict[str, Any]) -> GraphInfo:
    """The GraphInfo of a heterogeneous pyg.json ``m`` in ``g``."""
    types = {str(t["name"]): int(t["count"]) for t in m["node_types"]}
    rels: Dict[EdgeType, str] = {}
    redges: Dict[EdgeType, int] = {}
    perms: Dict[EdgeType, str] = {}
    for r in m["relations"]:
        et = (str(r["src"]), str(r["rel"]), str(r["dst"]))
        rels[et] = os.path.join(g, r["dir"])
        redges[et] = int(r["num_edges"])
        if r.get("edge_perm"):
            perms[et] = os.path.join(g, r["edge_perm"])
    return GraphInfo(path=g, num_nodes=sum(types.values()), num_edges=sum(redges.values()),
                     has_features=bool(m.get("features")), has_labels=bool(m.get("labels")), source=m.get("source", ""),
                     node_types=types, relations=rels, relation_edges=redges, relation_edge_perm=perms,
                     type_splits={t: {k: os.path.join(g, v["file"]) for k, v in sp.items()}
                                  for t, sp in m.get("splits", {}).items()},
                     type_features={t: (str(v["dtype"]), int(v["dim"])) for t, v in m.get("features", {}).items()},
                     type_labels={t: os.path.join(g, v["where"]) for t, v in m.get("labels", {}).items()})


def load_edge_perm(graph: PathArg) -> Optional[npt.NDArray[np.int64]]:
    """edge_perm.npy of ``graph`` as a read-only int64 memmap (stored edge
    i is column ``perm[i]`` of the imported ``edge_index``), or None when
    the directory has none."""
    path = os.path.join(os.fspath(graph), "edge_perm.npy")
    if not os.path.exists(path):
        return None
    perm: npt.NDArray[np.int64] = np.load(path, mmap_mode="r")
    return perm


def load_edge_split(graph: PathArg, name: str) -> Tuple[npt.NDArray[np.int64], Optional[npt.NDArray[Any]]]:
    """Edge split ``name`` of ``graph`` (written by ``edge_splits=``): its
    ``edge_label_index`` (int64 [2, E]) and its ``edge_label`` or None.
    A name the graph does not have is a KeyError listing those it has."""
    g = os.fspath(graph)
    path = os.path.join(g, "splits", name + EDGE_SPLIT_SUFFIX)
    if not _NAME.match(name) or not os.path.exists(path):
        have = sorted(f[:-len(EDGE_SPLIT_SUFFIX)] for f in os.listdir(os.path.join(g, "splits"))
                      if f.endswith(EDGE_SPLIT_SUFFIX)) if os.path.isdir(os.path.join(g, "splits")) else []
        raise KeyError("%s has no edge split %r (it has: %s; from_pyg(..., edge_splits=) writes them)"
                       % (g, name, ", ".join(have) or "none"))
    ei: npt.NDArray[np.int64] = np.load(path)
    if ei.ndim != 2 or ei.shape[0] != 2 or ei.dtype != np.int64:
        raise ValueError("%s: shape %s dtype %s, want int64 [2, E]" % (path, ei.shape, ei.dtype))
    lpath = os.path.join(g, "splits", name + EDGE_LABEL_SUFFIX)
    lab = np.load(lpath) if os.path.exists(lpath) else None
    if lab is not None and lab.shape != (ei.shape[1],):
        raise ValueError("%s: shape %s, want [%d] (one label per edge of %s)" % (lpath, lab.shape, ei.shape[1], path))
    return ei, lab
