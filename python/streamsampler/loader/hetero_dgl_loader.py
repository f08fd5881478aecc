"""DGL's ``DataLoader`` over a heterograph (issue 27): what
``streamsampler.dgl.DataLoader`` returns for a heterogeneous graph
directory, yielding ``(input_nodes, output_nodes, blocks)`` with DGL
heterograph blocks::

    from streamsampler.dgl import DataLoader, NeighborSampler

    sampler = NeighborSampler([{("paper", "cites", "paper"): 5, ...},   # DGL order: input layer first
                               10])                                     # an int: every edge type
    loader = DataLoader("graph/", {"paper": train_nids}, sampler, batch_size=1024, shuffle=True)
    for input_nodes, output_nodes, blocks in loader:
        x = blocks[0].srcdata["feat"]          # {ntype: rows}
        y = blocks[-1].dstdata["label"]["paper"]

Fanouts follow DGL's ``sample_neighbors`` (dgl/sampling/neighbor.py): a
layer's int is every edge type's; a layer's dict must name every edge
type of the graph ("Fan-out must be specified for each edge type if a dict
is provided."), each by its canonical ``(src, rel, dst)`` or by its
relation name where that is unique (``g.get_etype_id``); -1 takes every
neighbor, 0 none.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from ..hetero import EdgeType, HeteroBatch
from ..optional import require
from ..typing import PathArg
from .hetero_loader import MAX_FANOUT, HeteroGraph, HeteroNodeLoader
from .utils import ALL_NEIGHBORS, graph_dir

__all__ = ["HeteroDataLoader", "dgl_relation_fanouts", "hetero_blocks"]


def _etype_of(key: Any, edge_types: Sequence[EdgeType]) -> EdgeType:
    """A fanout dict's key as a canonical edge type (DGL's
    ``get_etype_id``): a canonical triple of the graph, or a relation name
    that only one edge type has."""
    if isinstance(key, tuple):
        et = tuple(str(k) for k in key)
        if len(et) == 3 and et in edge_types:
            return (et[0], et[1], et[2])
        raise ValueError("NeighborSampler: edge type %r does not exist (the graph's: %s)"
                         % (key, ", ".join(map(str, edge_types))))
    matches = [et for et in edge_types if et[1] == key]
    if not matches:
        raise ValueError("NeighborSampler: edge type %r does not exist (the graph's: %s)"
                         % (key, ", ".join(map(str, edge_types))))
    if len(matches) > 1:
        raise ValueError("NeighborSampler: edge type %r is ambiguous (%s): use the canonical edge type (srctype, "
                         "etype, dsttype)" % (key, ", ".join(map(str, matches))))
    return matches[0]


def _fanout(v: Any, what: str) -> int:
    f = int(v)
    if not (0 <= f <= MAX_FANOUT or f == ALL_NEIGHBORS):
        raise ValueError("%s: fanout %d, streamsampler samples 0 to %d neighbors, or -1 (every neighbor)"
                         % (what, f, MAX_FANOUT))
    return f


def dgl_relation_fanouts(layers: Sequence[Any], edge_types: Sequence[EdgeType]) -> Dict[EdgeType, List[int]]:
    """DGL's per-layer fanouts (input layer first; each an int or a dict
    over every edge type) as per-edge-type lists in hop order (the seeds'
    hop first, the server's order)."""
    if not layers:
        raise ValueError("NeighborSampler: no layers")
    per_layer: List[Dict[EdgeType, int]] = []
    for i, layer in enumerate(layers):
        what = "NeighborSampler layer %d" % i
        if isinstance(layer, Mapping):
            if len(layer) != len(edge_types):
                raise ValueError("%s: Fan-out must be specified for each edge type if a dict is provided (%d given, "
                                 "the graph has %d edge types)" % (what, len(layer), len(edge_types)))
            d: Dict[EdgeType, int] = {}
            for k, v in layer.items():
                et = _etype_of(k, edge_types)
                if et in d:
                    raise ValueError("%s: edge type %s given twice" % (what, et))
                d[et] = _fanout(v, what)
            per_layer.append(d)
        else:
            f = _fanout(layer, what)
            per_layer.append({et: f for et in edge_types})
    return {et: [lay[et] for lay in reversed(per_layer)] for et in edge_types}


class HeteroDataLoader(HeteroNodeLoader):
    """DGL's ``DataLoader(graph, {ntype: nids}, NeighborSampler(fanouts),
    batch_size, shuffle, drop_last)`` over a heterogeneous graph directory,
    yielding ``(input_nodes, output_nodes, blocks)`` (:func:`hetero_blocks`).
    ``indices``: a dict of one node type (ids or a boolean mask); ``seed``
    fixes the samples and shuffles. ``device`` (as DGL's; default the
    sampler's ``output_device``): the blocks, with their data, are moved
    there in the loader's background thread, ``prefetch`` minibatches
    ahead of the step; without one, the index tensors and blocks' data
    are pinned where torch has CUDA (``pin_memory=False``: not). Refused:
    ``replace=True``, indices of several node types."""

    def __init__(self, graph: Any, indices: Any, graph_sampler: Any, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, device: Any = None, seed: Optional[int] = None,
                 prefetch: Optional[int] = None, server_args: Sequence[str] = (), binary: Optional[PathArg] = None,
                 pin_memory: Optional[bool] = None, **kwargs: Any) -> None:
        from .dgl_loader import as_sampler
        ignored = {"num_workers", "use_uva", "use_ddp", "ddp_seed", "use_prefetch_thread", "use_alternate_streams",
                   "pin_prefetcher", "persistent_workers"}
        for k in ("delta", "device_features", "fresh"):
            if kwargs.pop(k, None) not in (None, False):
                raise NotImplementedError("DataLoader(%s=...): not supported for heterogeneous graphs yet" % k)
        unknown = set(kwargs) - ignored
        if unknown:
            raise TypeError("DataLoader got unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        sampler = as_sampler(graph_sampler)
        self.sampler = sampler
        if sampler.replace:
            raise NotImplementedError("NeighborSampler(replace=True): the heterogeneous server samples without "
                                      "replacement only")
        if not isinstance(indices, Mapping) or len(indices) != 1:
            raise ValueError("DataLoader: indices of a heterogeneous graph: want a dict of one node type {ntype: "
                             "ids} (seeds of several types are not served yet), got %s" % type(indices).__name__)
        (node_type, nodes), = indices.items()
        path = graph_dir(graph)
        fan = dgl_relation_fanouts(sampler.fanouts, HeteroGraph(path).edge_types)
        super().__init__(path, fan, batch_size, str(node_type), nodes, shuffle, drop_last, "dgl", self._to_blocks,
                         seed=seed, prefetch=prefetch, server_args=server_args, binary=binary,
                         device=device if device is not None else sampler.output_device, pin_memory=pin_memory)

    def _to_blocks(self, batch: HeteroBatch) -> Tuple[Dict[str, Any], Dict[str, Any], List[Any]]:
        return hetero_blocks(batch, self)


def _i64(a: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    return np.asarray(a, dtype=np.int64)


def hetero_blocks(batch: HeteroBatch, loader: HeteroNodeLoader) -> Tuple[Dict[str, Any], Dict[str, Any], List[Any]]:
    """A DGL-semantics minibatch as DGL's DataLoader yields it for a
    heterograph: ``(input_nodes, output_nodes, blocks)``, the blocks input
    layer first, each ``dgl.create_block({etype: (src, dst)},
    num_src_nodes={ntype: n}, num_dst_nodes={ntype: n})`` of every edge
    and node type, with ``srcnodes[t].data[dgl.NID]`` and
    ``dstnodes[t].data[dgl.NID]`` (int64 local ids of the type),
    ``edges[etype].data[dgl.EID]`` (mapped through the relation's
    edge_perm.npy where it has one), ``blocks[0].srcnodes[t].data["feat"]``
    (the server's rows) and ``blocks[-1].dstnodes[t].data["label"]`` (the
    type's labels, where it has them). ``input_nodes`` is
    ``{ntype: blocks[0]'s src ids}``, ``output_nodes`` ``{seed type: the
    seeds}``."""
    torch = require("torch", "streamsampler.dgl.DataLoader", "torch and dgl", "the raw HeteroBatch (transform=None)")
    dgl = require("dgl", "streamsampler.dgl.DataLoader", "torch and dgl", "the raw HeteroBatch (transform=None)")
    if batch.semantics != "dgl":
        raise ValueError("hetero_blocks: a %s-semantics minibatch (DGL's blocks need semantics='dgl')"
                         % batch.semantics)
    info = loader.info
    blocks = []
    for blk in reversed(batch.blocks):  # DGL's order: the input layer first
        data = {et: (torch.from_numpy(_i64(blk.edges[et][0])), torch.from_numpy(_i64(blk.edges[et][1])))
                for et in info.edge_types}
        b = dgl.create_block(data, num_src_nodes={t: len(blk.src_n_id[t]) for t in info.node_types},
                             num_dst_nodes={t: len(blk.dst_n_id[t]) for t in info.node_types})
        for t in info.node_types:
            if t in b.srctypes:
                b.srcnodes[t].data[dgl.NID] = torch.from_numpy(_i64(blk.src_n_id[t]))
            if t in b.dsttypes:
                b.dstnodes[t].data[dgl.NID] = torch.from_numpy(_i64(blk.dst_n_id[t]))
        for et in info.edge_types:
            e_id = blk.edges[et][2]
            if e_id is not None:
                perm = info.edge_perm(et)
                e = _i64(e_id)
                b.edges[et].data[dgl.EID] = torch.from_numpy(_i64(perm[e]) if perm is not None else e)
        blocks.append(b)
    if not blocks:
        raise ValueError("hetero_blocks: a minibatch without hops")
    first, last = blocks[0], blocks[-1]
    for t, x in batch.x.items():
        if t in first.srctypes:
            first.srcnodes[t].data["feat"] = torch.from_numpy(np.asarray(x))
    ys = getattr(batch, "y", None) or {}
    hop1 = batch.blocks[0]
    for t in info.node_types:
        if t not in last.dsttypes:
            continue
        dst = _i64(hop1.dst_n_id[t])
        if t in ys:  # the server's: one per src node of the last hop, which start with hop 1's dst nodes
            y = _i64(ys[t][:len(dst)])
        else:
            labels = info.labels(t)
            if labels is None:
                continue
            y = _i64(labels[dst])
        last.dstnodes[t].data["label"] = torch.from_numpy(y)
    input_nodes = {t: torch.from_numpy(_i64(batch.blocks[-1].src_n_id[t])) for t in info.node_types}
    output_nodes = {loader.node_type: torch.from_numpy(_i64(hop1.dst_n_id[loader.node_type]))}
    return input_nodes, output_nodes, blocks
