"""Minibatches as PyG and DGL expect them.

The index computations are plain numpy (``pyg_arrays``, ``dgl_arrays``)
and tested without torch; ``to_pyg`` and ``to_dgl`` only wrap them in
torch tensors, a ``torch_geometric.data.Data`` and ``dgl.create_block``
blocks, importing those libraries when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

from .batch import Batch
from .delta import DeltaTransfer
from .optional import require

if TYPE_CHECKING:  # only for the annotations; imported when called
    import dgl
    import torch
    from torch_geometric.data import Data


def pyg_arrays(batch: Batch) -> Dict[str, Any]:
    """The index arrays of PyG's NeighborLoader output for ``batch``.

    Returns a dict of numpy arrays and lists:

    * ``n_id`` (int64): every node, the seeds first, then each hop's new
      nodes in order of first appearance; local index i is ``n_id[i]``.
    * ``edge_index`` (int64, [2, E]): all hops' edges, hop 1 first; row 0
      the source (the sampled neighbor), row 1 the destination, local
      indices into ``n_id`` -- PyG's ``source_to_target`` flow.
    * ``e_id`` (int64, [E]): each edge's position in the stored CSR, in
      ``edge_index``'s order; None when the server sends no edge ids.
    * ``edge_index_per_hop``: hop order (hop 1 first), each [2, E_h] in
      ``n_id`` indices; with DGL semantics layer ``l`` of an L-layer
      block-wise model uses hop ``L - l``'s edges (``size=(num_src,
      num_dst)`` from ``sizes_per_hop``).
    * ``sizes_per_hop``: (num_src, num_dst) of each hop.
    * ``num_sampled_nodes``: [batch_size, new nodes of hop 1, …],
      ``num_sampled_edges``: [edges of hop 1, …], as NeighborLoader sets
      them.
    * ``batch_size``: the number of seeds, the first rows of ``n_id``.

    Each hop's src is a prefix of ``n_id``, so local source indices are
    already indices into ``n_id``; a hop's dst is ``n_id[lo:lo+len(dst)]``
    with ``lo = len(previous src) - len(dst)`` (0 with DGL semantics,
    where dst is the previous src; the nodes the previous hop reached
    first with PyG semantics), so the destination index is ``lo +
    edge_dst``. With a batch of PyG semantics (``semantics="pyg"``),
    ``model(x, edge_index)[:batch_size]`` computes what it computes on
    PyG's NeighborLoader output.
    """
    seeds = batch.seeds
    hops = batch.hops
    n_id = (hops[-1].src if hops else seeds).astype(np.int64)
    per_hop: List[npt.NDArray[np.int64]] = []
    sizes: List[Tuple[int, int]] = []
    num_nodes = [len(seeds)]
    num_edges: List[int] = []
    prev = len(seeds)
    for h in hops:
        lo = prev - len(h.dst)
        ei = np.empty((2, len(h.edge_src)), dtype=np.int64)
        ei[0] = h.edge_src
        np.add(h.edge_dst, lo, out=ei[1], casting="unsafe")
        per_hop.append(ei)
        sizes.append((len(h.src), len(h.dst)))
        num_nodes.append(len(h.src) - prev)
        num_edges.append(len(h.edge_src))
        prev = len(h.src)
    edge_index = np.concatenate(per_hop, axis=1) if per_hop else np.empty((2, 0), np.int64)
    e_id = None
    if batch.has_edge_ids:
        e_id = np.concatenate([h.e_id for h in hops]).astype(np.int64, copy=False)
    return {
        "n_id": n_id,
        "edge_index": edge_index,
        "e_id": e_id,
        "edge_index_per_hop": per_hop,
        "sizes_per_hop": sizes,
        "num_sampled_nodes": num_nodes,
        "num_sampled_edges": num_edges,
        "batch_size": len(seeds),
    }


def to_pyg(batch: Batch, x: Any = None, y: Any = None, device: Any = None,
           delta: Optional[DeltaTransfer] = None) -> Data:
    """A ``torch_geometric.data.Data`` shaped like NeighborLoader's output:
    ``n_id``, ``edge_index``, ``num_sampled_nodes``, ``num_sampled_edges``,
    ``batch_size``, ``input_id``-free; plus ``edge_index_per_hop`` and
    ``sizes_per_hop`` for block-wise (DGL-style) layers. ``x`` and ``y``
    (whole-graph tensors or arrays) are gathered by ``n_id``; without them,
    a batch from a server with ``--features`` brings its own: ``data.x``
    (its rows of ``n_id``) and ``data.y`` (int64 labels of the seeds, the
    first ``batch_size`` nodes: ``out[:batch_size]`` against ``y``).

    ``delta`` (a ``DeltaTransfer``, one per stream of minibatches) puts
    the batch's own ``x`` on its device sending only the rows the
    previous minibatch lacked; ``device`` then defaults to its device."""
    needs = "torch and torch_geometric"
    torch = require("torch", "to_pyg", needs, "pyg_arrays")
    require("torch_geometric", "to_pyg", needs, "pyg_arrays")  # names the package when it is missing
    Data = require("torch_geometric.data", "to_pyg", needs, "pyg_arrays").Data

    a = pyg_arrays(batch)
    n_id = torch.from_numpy(a["n_id"])
    data = Data(edge_index=torch.from_numpy(a["edge_index"]), num_nodes=len(n_id))
    data.n_id = n_id
    data.batch_size = a["batch_size"]
    data.num_sampled_nodes = a["num_sampled_nodes"]
    data.num_sampled_edges = a["num_sampled_edges"]
    if a["e_id"] is not None:
        data.e_id = torch.from_numpy(a["e_id"])
    data.edge_index_per_hop = [torch.from_numpy(e) for e in a["edge_index_per_hop"]]
    data.sizes_per_hop = a["sizes_per_hop"]
    if delta is not None:
        data.x = _delta_x(delta, batch, x, a["n_id"], "to_pyg")
        if device is None:
            device = delta.device
    elif x is not None:
        data.x = _gather(x, n_id)
    elif batch.x is not None:
        data.x = torch.from_numpy(np.asarray(batch.x))
    if y is not None:
        data.y = _gather(y, n_id)
    elif batch.y is not None:
        data.y = torch.from_numpy(batch.y.astype(np.int64))
    if device is not None:
        data = data.to(device)
        data.edge_index_per_hop = [e.to(device) for e in data.edge_index_per_hop]
    return data


def _delta_x(delta: DeltaTransfer, batch: Batch, x: Any, n_id: npt.NDArray[Any], caller: str) -> torch.Tensor:
    """The batch's own rows through ``delta``."""
    if x is not None:
        raise ValueError("%s: delta= moves the batch's own rows (serve --features); it does not "
                         "combine with x=" % caller)
    if batch.x is None:
        raise ValueError("%s: delta= needs the batch's rows, and this batch has none (start the "
                         "server with --features)" % caller)
    return delta(n_id, batch.x, epoch=batch.epoch)


def _gather(t: Any, idx: torch.Tensor) -> torch.Tensor:
    import torch

    if not torch.is_tensor(t):
        t = torch.from_numpy(np.asarray(t))
    return t[idx.to(t.device)]


def dgl_arrays(batch: Batch, edge_perm: Optional[npt.NDArray[np.integer[Any]]] = None) -> List[Dict[str, Any]]:
    """The blocks of ``batch`` in DGL's order, outermost hop first (the
    input layer's block first, the seeds' block last), each a dict with
    ``src_ids``/``dst_ids`` (int64 global ids), ``edge_src``/``edge_dst``
    (int64 local ids), ``edge_ids`` (int64 positions in the stored CSR,
    DGL's ``dgl.EID``, mapped through ``edge_perm`` when given: stored
    position to input ``edge_index`` column; None without),
    ``num_src_nodes``, ``num_dst_nodes``; where the batch has them, the
    first block also ``feat`` (the input nodes' rows) and the last
    ``label`` (the seeds' labels, int64). Blocks need DGL semantics (each
    block's dst nodes are the first of its src nodes): a batch of PyG
    semantics is refused with ValueError."""
    if batch.semantics != "dgl":
        raise ValueError("dgl_arrays: a batch of %s semantics has no DGL blocks (each block's dst nodes "
                         "must be its first src nodes); ask the server for semantics='dgl'" % batch.semantics)
    out = []
    for h in reversed(batch.hops):
        eid = None
        if h.e_id is not None:
            eid = h.e_id.astype(np.int64, copy=False)
            if edge_perm is not None:
                eid = np.asarray(edge_perm[eid], dtype=np.int64)
        out.append({
            "src_ids": h.src.astype(np.int64),
            "dst_ids": h.dst.astype(np.int64),
            "edge_src": h.edge_src.astype(np.int64),
            "edge_dst": h.edge_dst.astype(np.int64),
            "edge_ids": eid,
            "num_src_nodes": len(h.src),
            "num_dst_nodes": len(h.dst),
        })
    if out and batch.x is not None:
        out[0]["feat"] = np.asarray(batch.x)
    if out and batch.y is not None:
        out[-1]["label"] = batch.y.astype(np.int64)
    return out


def to_dgl(batch: Batch, device: Any = None, delta: Optional[DeltaTransfer] = None,
           edge_perm: Optional[npt.NDArray[np.integer[Any]]] = None) -> Tuple[torch.Tensor, torch.Tensor, List[dgl.DGLGraph]]:
    """``(input_nodes, output_nodes, blocks)`` as DGL's DataLoader with a
    neighbor sampler yields them: blocks made by ``dgl.create_block``,
    outermost hop first, with ``srcdata[dgl.NID]``/``dstdata[dgl.NID]``
    holding global ids; a batch from a server with ``--features`` also
    sets ``blocks[0].srcdata["feat"]`` (the input nodes' rows) and
    ``blocks[-1].dstdata["label"]`` (the seeds' labels, int64), DGL's
    usual names; ``edata[dgl.EID]`` the edge ids (through ``edge_perm``,
    as ``dgl_arrays``). ``delta``: the input nodes' rows through a
    ``DeltaTransfer``, as in ``to_pyg``; ``device`` defaults to its."""
    needs = "torch and dgl"
    torch = require("torch", "to_dgl", needs, "dgl_arrays")
    dgl = require("dgl", "to_dgl", needs, "dgl_arrays")

    if delta is not None and device is None:
        device = delta.device
    arrays = dgl_arrays(batch, edge_perm)
    if arrays and delta is not None:
        arrays[0].pop("feat", None)
    tensors = [{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in b.items()} for b in arrays]
    input_nodes, output_nodes, blocks = dgl_blocks(tensors, torch.from_numpy(batch.seeds.astype(np.int64)))
    if device is not None and blocks:
        blocks = [blk.to(device) for blk in blocks]
        input_nodes, output_nodes = blocks[0].srcdata[dgl.NID], blocks[-1].dstdata[dgl.NID]
    if blocks and delta is not None:
        blocks[0].srcdata["feat"] = _delta_x(delta, batch, None, batch.n_id, "to_dgl")
    return input_nodes, output_nodes, blocks


def dgl_blocks(arrays: List[Dict[str, Any]], seeds: torch.Tensor
               ) -> Tuple[torch.Tensor, torch.Tensor, List[dgl.DGLGraph]]:
    """``(input_nodes, output_nodes, blocks)`` from :func:`dgl_arrays`'s
    dicts with torch tensors in place of the arrays (on any device: the
    blocks are made there by ``dgl.create_block``); ``seeds`` (int64) are
    the input and output nodes of a minibatch without hops."""
    dgl = require("dgl", "dgl_blocks", "dgl", "dgl_arrays")
    blocks = []
    for b in arrays:
        blk = dgl.create_block((b["edge_src"], b["edge_dst"]), num_src_nodes=b["num_src_nodes"],
                               num_dst_nodes=b["num_dst_nodes"])
        blk.srcdata[dgl.NID] = b["src_ids"]
        blk.dstdata[dgl.NID] = b["dst_ids"]
        if b["edge_ids"] is not None:
            blk.edata[dgl.EID] = b["edge_ids"]
        if "feat" in b:
            blk.srcdata["feat"] = b["feat"]
        if "label" in b:
            blk.dstdata["label"] = b["label"]
        blocks.append(blk)
    input_nodes = blocks[0].srcdata[dgl.NID] if blocks else seeds
    output_nodes = blocks[-1].dstdata[dgl.NID] if blocks else input_nodes
    return input_nodes, output_nodes, blocks
