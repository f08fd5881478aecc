"""Read a graph directory's adjacency (docs/FORMAT.md) with numpy.

    indptr, indices = read_csr("graph/")
    nbrs = indices[indptr[u]:indptr[u + 1]]   # u's stored neighbors

``read_csr`` returns the whole CSR in memory (8 bytes per node, 4 per
edge), read chunk by chunk through a ``numpy.memmap`` of edges.chunks:
for tests, round trips and whole-graph work on graphs that fit. A graph
built with ``--reverse`` (as :func:`streamsampler.from_pyg` builds) stores
in-neighbors: ``indices[indptr[v]:indptr[v + 1]]`` are the sources u of
the edges (u, v).

It checks what it reads against the manifest (chunk count, node ranges,
offsets, edge counts) and raises :class:`GraphFormatError` naming the file
and what was expected; the chunks' CRCs are ``chunkify verify``'s job.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Tuple

import numpy as np
import numpy.typing as npt

from .typing import PathArg


class GraphFormatError(ValueError):
    """A graph directory that does not follow docs/FORMAT.md; the message
    names the file and what was expected."""


def read_manifest(graph: PathArg) -> Dict[str, Any]:
    """The parsed manifest.json of graph directory ``graph``. Raises
    FileNotFoundError when there is none (docs/FORMAT.md: a directory
    without a manifest is not a graph)."""
    path = os.path.join(os.fspath(graph), "manifest.json")
    if not os.path.exists(path):
        raise FileNotFoundError("%s: no manifest.json, so not a graph (an interrupted build leaves none)" % path)
    with open(path) as f:
        try:
            m: Dict[str, Any] = json.load(f)
        except ValueError as e:
            raise GraphFormatError("%s: not JSON: %s" % (path, e)) from None
    if m.get("version") != 1:
        raise GraphFormatError("%s: version %r, want 1" % (path, m.get("version")))
    return m


def read_csr(graph: PathArg) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
    """(indptr int64 [num_nodes + 1], indices uint32 [num_edges]) of the
    graph directory ``graph``: node u's stored neighbors are
    ``indices[indptr[u]:indptr[u + 1]]``, ascending, as edges.chunks holds
    them."""
    g = os.fspath(graph)
    m = read_manifest(g)
    n, e, cs = int(m["num_nodes"]), int(m["num_edges"]), int(m["chunk_size"])
    chunks = m["chunks"]
    epath = os.path.join(g, "edges.chunks")
    ipath = os.path.join(g, "chunks.info")
    starts = np.fromfile(ipath, dtype="<u4") if os.path.getsize(ipath) else np.empty(0, np.uint32)
    if len(starts) != len(chunks):
        raise GraphFormatError("%s: %d chunk starts, manifest.json lists %d chunks" % (ipath, len(starts), len(chunks)))
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(e, np.uint32)
    words = (np.memmap(epath, dtype="<u4", mode="r") if os.path.getsize(epath)
             else np.empty(0, np.uint32))
    node, edge = 0, 0
    for i, c in enumerate(chunks):
        base = i * (cs // 4)
        if base + 2 > len(words):
            raise GraphFormatError("%s: chunk %d starts past the file's end" % (epath, i))
        nn, start = int(words[base]), int(words[base + 1])
        if (start, nn) != (node, int(c["n_nodes"])) or start != int(starts[i]) or start + nn != int(c["end"]):
            raise GraphFormatError("%s: chunk %d holds nodes [%d, %d), want [%d, %d) (manifest.json, chunks.info %d)"
                                   % (epath, i, start, start + nn, node, int(c["end"]), int(starts[i])))
        off = np.asarray(words[base + 2:base + 3 + nn], dtype=np.int64)
        ne = int(off[-1] - off[0]) if nn else 0
        if (nn and off[0] != 3 + nn) or np.any(np.diff(off) < 0) or ne != int(c["n_edges"]) \
                or base + 3 + nn + ne > len(words) or 4 * (3 + nn + ne) > cs:
            raise GraphFormatError("%s: chunk %d's offsets are not 3 + n_nodes, ascending, %d edges within the chunk"
                                   % (epath, i, int(c["n_edges"])))
        indptr[start + 1:start + nn + 1] = edge + (off[1:] - off[0])
        indices[edge:edge + ne] = words[base + 3 + nn:base + 3 + nn + ne]
        node, edge = start + nn, edge + ne
    if (node, edge) != (n, e):
        raise GraphFormatError("%s: chunks hold %d nodes and %d edges, manifest.json says %d and %d"
                               % (epath, node, edge, n, e))
    return indptr, indices
