"""A reference for PyG's NeighborLoader in plain torch, PyG's semantics.

torch_geometric's own NeighborLoader needs pyg-lib or torch-sparse to
sample, and neither is installed on the GPU machine, so the reference the
accuracy check compares with is this: the same constructor and the same
``Data`` fields, written from PyG's documented semantics. Hop 1 samples
the seeds' in-neighbors; hop h+1 samples only the nodes hop h reached
first; each node draws min(degree, fanout) distinct neighbors uniformly
and afresh for every minibatch (PyG's, not one sample per epoch as
streamsampler's); n_id is the seeds, then each hop's new nodes in order of
first appearance; edge_index holds local ids, row 0 the neighbor.
"""

import torch
from torch_geometric.data import Data


class NeighborLoader:
    """``NeighborLoader(data, num_neighbors, input_nodes, batch_size,
    shuffle, drop_last)`` over an in-memory ``Data``."""

    def __init__(self, data, num_neighbors, input_nodes=None, batch_size=1, shuffle=False, drop_last=False,
                 generator=None, **kwargs):
        self.data = data
        self.fanouts = list(num_neighbors)
        n = data.num_nodes
        if input_nodes is None:
            input_nodes = torch.arange(n)
        elif input_nodes.dtype == torch.bool:
            input_nodes = input_nodes.nonzero().view(-1)
        self.input_nodes = input_nodes
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self.g = generator or torch.Generator().manual_seed(0)
        src, dst = data.edge_index
        order = torch.argsort(dst * n + src, stable=True)  # in-edges of each node, by source
        self.col, self.eid = src[order], order
        self.rowptr = torch.zeros(n + 1, dtype=torch.long)
        self.rowptr[1:] = torch.cumsum(torch.bincount(dst, minlength=n), 0)
        self.mark = torch.full((n,), -1, dtype=torch.long)

    def __len__(self):
        n = len(self.input_nodes)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        idx = torch.randperm(len(self.input_nodes), generator=self.g) if self.shuffle else torch.arange(len(self.input_nodes))
        for i in range(len(self)):
            input_id = idx[i * self.batch_size:(i + 1) * self.batch_size]
            yield self.sample(self.input_nodes[input_id], input_id)

    def ranks(self, pos, hop):
        """A uniform random rank for each candidate in-edge (stored
        position ``pos``) at hop ``hop``: fresh draws, PyG's (a node's
        first k by rank are its samples)."""
        return torch.rand(len(pos), generator=self.g)

    def sample(self, seeds, input_id):
        n_id, expand = seeds, seeds
        self.mark[seeds] = torch.arange(len(seeds))
        rows, cols, eids, num_nodes, num_edges = [], [], [], [len(seeds)], []
        lo = 0
        for hop, k in enumerate(self.fanouts):
            start = self.rowptr[expand]
            deg = self.rowptr[expand + 1] - start
            grp = torch.repeat_interleave(torch.arange(len(expand)), deg)
            first = torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
            pos = torch.repeat_interleave(start, deg) + torch.arange(int(deg.sum())) - first
            # A uniform random rank inside each node's neighbor list; keep the first k.
            r = self.ranks(pos, hop)
            perm = torch.argsort(r)
            perm = perm[torch.argsort(grp[perm], stable=True)]
            keep = (torch.arange(len(perm)) - first) < k
            e_grp, e_pos = grp[perm][keep], pos[perm][keep]
            nb = self.col[e_pos]
            # New nodes in order of first appearance.
            fresh = self.mark[nb] < 0
            uniq, inv = torch.unique(nb[fresh], return_inverse=True)
            firstpos = torch.full((len(uniq),), len(inv), dtype=torch.long).scatter_reduce(
                0, inv, torch.arange(len(inv)), reduce="amin")
            new = uniq[torch.argsort(firstpos)]
            self.mark[new] = torch.arange(len(n_id), len(n_id) + len(new))
            rows.append(self.mark[nb])
            cols.append(lo + e_grp)
            eids.append(self.eid[e_pos])
            num_nodes.append(len(new))
            num_edges.append(len(nb))
            lo = len(n_id)
            n_id = torch.cat([n_id, new])
            expand = new
        self.mark[n_id] = -1
        batch = Data(edge_index=torch.stack([torch.cat(rows), torch.cat(cols)]), num_nodes=len(n_id))
        batch.x, batch.y = self.data.x[n_id], self.data.y[n_id]
        batch.n_id, batch.e_id, batch.input_id = n_id, torch.cat(eids), input_id
        batch.batch_size = len(seeds)
        batch.num_sampled_nodes, batch.num_sampled_edges = num_nodes, num_edges
        return batch
