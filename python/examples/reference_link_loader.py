"""A reference for PyG's LinkNeighborLoader in plain torch, PyG's semantics.

torch_geometric's own LinkNeighborLoader needs pyg-lib or torch-sparse to
sample (absent on the GPU machine), so the link-prediction accuracy check
compares with this: the same constructor and ``Data`` fields, written from
PyG's code (torch_geometric/loader/link_loader.py, link_neighbor_loader.py;
sampler/neighbor_sampler.py ``edge_sample`` and ``neg_sample``;
sampler/base.py ``NegativeSampling``):

* the seed edges are a ``DataLoader`` over ``range(E)``: ``shuffle`` draws
  a permutation from torch's generator each epoch, ``input_id`` is the
  minibatch's positions;
* given labels are incremented by one in binary mode when their minimum is
  0 (``LinkLoader.__init__``), a triplet loader refuses labels;
* negatives from torch's global generator, fresh for every minibatch:
  binary ``num_neg = ceil(P · amount)`` sources then as many destinations
  (``torch.randint(num_nodes, (num_neg,))`` each, in that order), labels
  ``edge_label.new_zeros``, float ones where none were given; triplet
  ``num_neg`` destinations, positive i's at rows i·amount …;
* ``seed, inverse = torch.cat([src, dst]).unique(return_inverse=True)``:
  the node sampling starts from the sorted unique endpoints (PyG's
  NeighborLoader semantics: reference_loader.NeighborLoader.sample, one
  fresh uniform sample per minibatch), ``edge_label_index =
  inverse.view(2, -1)``; triplet: ``src_index = inverse[:P]``,
  ``dst_pos_index = inverse[P:2P]``, ``dst_neg_index = inverse[2P:]
  .view(P, -1).squeeze(-1)``, and no edge_label fields;
* the ``Data`` carries ``n_id``, ``e_id``, ``edge_index``, ``x``, ``y``,
  ``input_id``, ``num_sampled_nodes``, ``num_sampled_edges`` and the link
  fields (no ``batch_size``: PyG's link loader sets none).

``per_epoch_samples=True`` (not PyG's; a diagnostic) draws one sample per
node per epoch and hop instead, streamsampler's semantics (DESIGN §4):
each ``iter()`` draws a rank for every stored edge and hop, and a node's
samples are its first k by rank in every minibatch of the epoch; the rest
(shuffle, negatives) is unchanged. Comparing it with the default tells
how much of a difference from streamsampler comes from that.
"""

import math

import torch

from reference_loader import NeighborLoader


class _EpochSampler(NeighborLoader):
    """The node sampler with one sample per node per epoch and hop: the
    ranks of an epoch are drawn once for every stored edge and hop."""

    def new_epoch(self):
        e = self.col.numel()
        self.epoch_ranks = [torch.rand(e, generator=self.g) for _ in self.fanouts]

    def ranks(self, pos, hop):
        return self.epoch_ranks[hop][pos]


def _neg_sampling(neg_sampling, neg_sampling_ratio):
    """(mode, amount) as PyG's NegativeSampling.cast reads its argument."""
    if neg_sampling_ratio is not None and neg_sampling_ratio != 0.0:
        neg_sampling = ("binary", neg_sampling_ratio)
    if neg_sampling is None:
        return None, 0.0
    if isinstance(neg_sampling, str):
        mode, amount = neg_sampling, 1
    elif isinstance(neg_sampling, dict):
        mode, amount = neg_sampling["mode"], neg_sampling.get("amount", 1)
    elif isinstance(neg_sampling, (tuple, list)):
        mode, amount = neg_sampling[0], neg_sampling[1] if len(neg_sampling) > 1 else 1
    else:
        mode, amount = neg_sampling.mode, neg_sampling.amount
    mode = str(getattr(mode, "value", mode))
    if mode not in ("binary", "triplet") or amount <= 0:
        raise ValueError("neg_sampling: mode %r amount %r" % (mode, amount))
    if mode == "triplet" and amount != math.ceil(amount):
        raise ValueError("triplet negative sampling needs an integer amount")
    return mode, amount


class LinkNeighborLoader:
    """``LinkNeighborLoader(data, num_neighbors, edge_label_index,
    edge_label, neg_sampling, batch_size, shuffle, drop_last)`` over an
    in-memory ``Data`` (its ``edge_index`` is sampled)."""

    def __init__(self, data, num_neighbors, edge_label_index=None, edge_label=None, neg_sampling=None,
                 neg_sampling_ratio=None, batch_size=1, shuffle=False, drop_last=False, generator=None,
                 per_epoch_samples=False, **kwargs):
        if generator is None:  # the node samples from torch's generator too, so manual_seed fixes them
            generator = torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,))))
        self.nodes = (_EpochSampler if per_epoch_samples else NeighborLoader)(data, num_neighbors,
                                                                              batch_size=batch_size,
                                                                              generator=generator)
        self.data = data
        self.edge_label_index = data.edge_index if edge_label_index is None else edge_label_index
        self.mode, self.amount = _neg_sampling(neg_sampling, neg_sampling_ratio)
        if edge_label is not None and self.mode == "binary" and int(edge_label.min()) == 0:
            edge_label = edge_label + 1
        if edge_label is not None and self.mode == "triplet":
            raise ValueError("'edge_label' needs to be undefined for 'triplet'-based negative sampling")
        self.edge_label = edge_label
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last

    def __len__(self):
        n = self.edge_label_index.size(1)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        if isinstance(self.nodes, _EpochSampler):
            self.nodes.new_epoch()
        n = self.edge_label_index.size(1)
        idx = torch.randperm(n) if self.shuffle else torch.arange(n)
        for i in range(len(self)):
            yield self.sample(idx[i * self.batch_size:(i + 1) * self.batch_size])

    def sample(self, input_id):
        num_nodes = self.data.num_nodes
        src, dst = self.edge_label_index[0, input_id], self.edge_label_index[1, input_id]
        edge_label = None if self.edge_label is None else self.edge_label[input_id]
        p = src.numel()
        if self.mode is not None:
            num_neg = math.ceil(p * self.amount)
            if self.mode == "binary":
                src = torch.cat([src, torch.randint(num_nodes, (num_neg,))])
                dst = torch.cat([dst, torch.randint(num_nodes, (num_neg,))])
                if edge_label is None:
                    edge_label = torch.ones(p)
                edge_label = torch.cat([edge_label, edge_label.new_zeros((num_neg,) + edge_label.size()[1:])])
            else:
                dst = torch.cat([dst, torch.randint(num_nodes, (num_neg,))])
        seed, inverse = torch.cat([src, dst]).unique(return_inverse=True)
        batch = self.nodes.sample(seed, input_id)
        del batch.batch_size  # a node loader's field; PyG's link loader sets none
        if self.mode == "triplet":
            batch.src_index = inverse[:p]
            batch.dst_pos_index = inverse[p:2 * p]
            batch.dst_neg_index = inverse[2 * p:].view(p, -1).squeeze(-1)
        else:
            batch.edge_label_index = inverse.view(2, -1)
            if edge_label is not None:
                batch.edge_label = edge_label
        return batch
