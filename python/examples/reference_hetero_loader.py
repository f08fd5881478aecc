"""A reference for PyG's heterogeneous NeighborLoader in plain torch.

torch_geometric's NeighborLoader samples a ``HeteroData`` through
pyg-lib's ``hetero_neighbor_sample`` (or torch-sparse), neither installed
on the GPU machine, so the heterogeneous accuracy check compares with
this: the same constructor and the same ``HeteroData`` fields, written
from pyg-lib's pyg_lib/csrc/sampler/cpu/neighbor_kernel.cpp (the hetero
``sample``, csc=True, directed, not disjoint, without replacement) and
PyG's torch_geometric/sampler/neighbor_sampler.py and
loader/neighbor_loader.py / loader/utils.py (``filter_hetero_data``):

* each relation ``(s, r, d)`` is sampled as in-edges: a ``d`` node draws
  among the ``s`` nodes of the columns ``(u, v)`` with ``v`` = it (the CSC
  PyG builds, each column's rows in ascending source order);
* hop ``h`` visits the edge types in ``data.edge_types`` order; for each,
  it expands only the ``d`` nodes first reached at hop ``h − 1`` (the
  seeds at hop 0): ``slice_dict[d]``, fixed for the hop, so a node reached
  during hop ``h`` by one relation is expanded at hop ``h + 1`` by every
  relation into its type;
* a node draws ``min(degree, k)`` distinct neighbors uniformly (``k =
  -1``: all of them; with ``k ≥ degree`` all of them in stored order, as
  pyg-lib does), afresh for every minibatch from the loader's generator;
* ``n_id`` per node type in order of first appearance (the seed type
  starts with the seeds), one id space per type over the whole minibatch
  (a node reached by two relations appears once);
* ``edge_index`` per edge type: row 0 the neighbor's local index in its
  type's ``n_id`` (``s``), row 1 the expanded node's (``d``); ``e_id`` the
  ``edge_index`` column of each sampled edge;
* ``num_sampled_nodes`` per node type (``L + 1`` counts: the seeds at hop
  0 for the seed type, 0 for the others, then each hop's new nodes) and
  ``num_sampled_edges`` per edge type (``L`` counts), set on each storage
  as ``HeteroData.set_value_dict`` does; ``input_id`` and ``batch_size``
  on the seed type; every node attribute (``x``, ``y``, masks: a tensor
  with one row per node) sliced by ``n_id``.

``num_neighbors`` is a list (every edge type) or a dict edge type → list;
a missing edge type is an error (PyG's NumNeighbors without a default),
and shorter lists are padded with 0 to the longest.

``per_epoch_samples=True`` (not PyG's; a diagnostic, as
reference_link_loader.py's) draws one sample per node per relation and
hop per epoch instead, streamsampler's semantics (DESIGN §4): each
``iter()`` draws a rank for every stored edge of every relation and hop,
and a node's samples are its first k by rank in every minibatch.
"""

import torch
from torch_geometric.data import HeteroData


def _keys(store):
    """Attribute names of a PyG storage (``keys()`` a method since 2.4, a
    property before) or of a plain object."""
    k = getattr(store, "keys", None)
    if callable(k):
        k = k()
    if k is None:
        k = [a for a in vars(store) if not a.startswith("_")]
    return list(k)


def _num_nodes(data, t):
    n = getattr(data[t], "num_nodes", None)
    if n is None:
        n = data[t].x.size(0)
    return int(n)


class _Relation:
    """One edge type's CSC: the in-edges of each destination node, by
    source (torch_geometric.utils.sparse index_sort of ``col * N + row``)."""

    def __init__(self, edge_index, n_src, n_dst):
        src, dst = edge_index[0].long(), edge_index[1].long()
        order = torch.argsort(dst * max(n_src, 1) + src, stable=True)
        self.row, self.eid = src[order], order
        self.colptr = torch.zeros(n_dst + 1, dtype=torch.long)
        self.colptr[1:] = torch.cumsum(torch.bincount(dst, minlength=n_dst), 0)


class NeighborLoader:
    """``NeighborLoader(data, num_neighbors, input_nodes=(type, mask|ids),
    batch_size, shuffle, drop_last)`` over an in-memory ``HeteroData``."""

    def __init__(self, data, num_neighbors, input_nodes=None, batch_size=1, shuffle=False, drop_last=False,
                 generator=None, per_epoch_samples=False, **kwargs):
        self.data = data
        self.node_types = list(data.node_types)
        self.edge_types = [tuple(et) for et in data.edge_types]
        self.num_nodes = {t: _num_nodes(data, t) for t in self.node_types}
        if isinstance(num_neighbors, dict):
            missing = [et for et in self.edge_types if et not in num_neighbors]
            if missing:
                raise ValueError("num_neighbors has no entry for edge type %r" % (missing[0],))
            fan = {et: list(num_neighbors[et]) for et in self.edge_types}
        else:
            fan = {et: list(num_neighbors) for et in self.edge_types}
        self.num_hops = max([0] + [len(v) for v in fan.values()])
        self.fanouts = {et: v + [0] * (self.num_hops - len(v)) for et, v in fan.items()}
        if input_nodes is None:
            raise ValueError("input_nodes: want a node type, or (node type, mask or ids)")
        if isinstance(input_nodes, str):
            input_nodes = (input_nodes, None)
        self.input_type, ids = input_nodes
        if self.input_type not in self.num_nodes:
            raise ValueError("input_nodes: node type %r is not in data.node_types %s"
                             % (self.input_type, self.node_types))
        if ids is None:
            ids = torch.arange(self.num_nodes[self.input_type])
        elif ids.dtype == torch.bool:
            ids = ids.nonzero().view(-1)
        self.input_nodes = ids.long()
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self.g = generator or torch.Generator().manual_seed(0)
        self.rel = {}
        for s, r, d in self.edge_types:
            self.rel[(s, r, d)] = _Relation(data[(s, r, d)].edge_index, self.num_nodes[s], self.num_nodes[d])
        self.mark = {t: torch.full((n,), -1, dtype=torch.long) for t, n in self.num_nodes.items()}
        self.per_epoch_samples = per_epoch_samples
        self.epoch_ranks = None

    def __len__(self):
        n = len(self.input_nodes)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        if self.per_epoch_samples:
            self.epoch_ranks = {et: [torch.rand(rel.row.numel(), generator=self.g) for _ in range(self.num_hops)]
                                for et, rel in self.rel.items()}
        n = len(self.input_nodes)
        idx = torch.randperm(n, generator=self.g) if self.shuffle else torch.arange(n)
        for i in range(len(self)):
            input_id = idx[i * self.batch_size:(i + 1) * self.batch_size]
            yield self.sample(self.input_nodes[input_id], input_id)

    def ranks(self, et, pos, hop):
        """A uniform random rank for each candidate in-edge (stored
        position ``pos`` of relation ``et``) at hop ``hop``: fresh draws
        (PyG's), or the epoch's (per_epoch_samples)."""
        if self.epoch_ranks is not None:
            return self.epoch_ranks[et][hop][pos]
        return torch.rand(len(pos), generator=self.g)

    def _draw(self, et, hop, expand, k):
        """(group, stored position) of the sampled in-edges of the nodes
        ``expand`` of relation ``et``: node by node, each node's samples in
        draw order (all of them in stored order when k < 0 or k ≥ degree)."""
        rel = self.rel[et]
        start = rel.colptr[expand]
        deg = rel.colptr[expand + 1] - start
        grp = torch.repeat_interleave(torch.arange(len(expand)), deg)
        first = torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
        off = torch.arange(int(deg.sum())) - first
        pos = torch.repeat_interleave(start, deg) + off
        if k < 0:
            return grp, pos
        all_of = (deg <= k)[grp]
        r = self.ranks(et, pos, hop)
        # Nodes that take every neighbor keep the stored order (a key in
        # [0, 1) increasing with the offset); the others a random order.
        key = torch.where(all_of, off.double() / deg[grp].clamp(min=1).double(), r.double())
        perm = torch.argsort(key)
        perm = perm[torch.argsort(grp[perm], stable=True)]
        keep = (torch.arange(len(perm)) - first) < k
        return grp[perm][keep], pos[perm][keep]

    def sample(self, seeds, input_id):
        n_id = {t: torch.empty(0, dtype=torch.long) for t in self.node_types}
        n_id[self.input_type] = seeds
        self.mark[self.input_type][seeds] = torch.arange(len(seeds))
        sl = {t: (0, 0) for t in self.node_types}
        sl[self.input_type] = (0, len(seeds))
        num_nodes = {t: [len(seeds) if t == self.input_type else 0] for t in self.node_types}
        rows = {et: [] for et in self.edge_types}
        cols = {et: [] for et in self.edge_types}
        eids = {et: [] for et in self.edge_types}
        num_edges = {et: [] for et in self.edge_types}
        for hop in range(self.num_hops):
            for et in self.edge_types:
                s, _, d = et
                lo, hi = sl[d]
                k = self.fanouts[et][hop]
                if hi == lo or k == 0:
                    num_edges[et].append(0)
                    continue
                grp, pos = self._draw(et, hop, n_id[d][lo:hi], k)
                nb = self.rel[et].row[pos]
                # The neighbors new to type s, in order of first appearance.
                fresh = self.mark[s][nb] < 0
                uniq, inv = torch.unique(nb[fresh], return_inverse=True)
                firstpos = torch.full((len(uniq),), len(inv), dtype=torch.long).scatter_reduce(
                    0, inv, torch.arange(len(inv)), reduce="amin")
                new = uniq[torch.argsort(firstpos)]
                self.mark[s][new] = torch.arange(len(n_id[s]), len(n_id[s]) + len(new))
                n_id[s] = torch.cat([n_id[s], new])
                rows[et].append(self.mark[s][nb])
                cols[et].append(lo + grp)
                eids[et].append(self.rel[et].eid[pos])
                num_edges[et].append(len(nb))
            for t in self.node_types:
                sl[t] = (sl[t][1], len(n_id[t]))
                num_nodes[t].append(sl[t][1] - sl[t][0])
        for t in self.node_types:
            self.mark[t][n_id[t]] = -1
        out = HeteroData()
        for t in self.node_types:
            src, dst = self.data[t], out[t]
            n = self.num_nodes[t]
            for key in _keys(src):
                v = getattr(src, key)
                if key != "num_nodes" and torch.is_tensor(v) and v.dim() >= 1 and v.size(0) == n:
                    setattr(dst, key, v[n_id[t]])
            dst.num_nodes = len(n_id[t])
            dst.n_id = n_id[t]
            dst.num_sampled_nodes = num_nodes[t]
        for et in self.edge_types:
            empty = torch.empty(0, dtype=torch.long)
            out[et].edge_index = torch.stack([torch.cat(rows[et]) if rows[et] else empty,
                                              torch.cat(cols[et]) if cols[et] else empty])
            out[et].e_id = torch.cat(eids[et]) if eids[et] else empty
            out[et].num_sampled_edges = num_edges[et]
        out[self.input_type].input_id = input_id
        out[self.input_type].batch_size = len(seeds)
        return out
