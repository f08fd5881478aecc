"""A stand-in for a link-prediction server (H3's ``serve --train-edges``
and ``Client.link_split``, docs/PROTOCOL.md) for the link loaders' tests:
:class:`FakeLinkClient` answers the calls the loaders make
(``epoch_info``, ``advance``, ``batches``, ``link_split``,
``split_batches``) with link :class:`~streamsampler.Batch` es built the
way the contract says the server builds them, from a graph's adjacency:

* one sample per node per epoch and hop (DESIGN §4): node v's hop-h
  neighbors in epoch e are drawn from a generator seeded by (seed, e, h,
  v), min(degree, fanout) distinct in-edges uniformly
  (:meth:`FakeLinkClient.samples`, which the tests' renderings read);
* a training epoch's seed edges are a seeded permutation, cut into
  ``batch_size`` pieces; negatives are drawn uniformly per minibatch from
  (seed, epoch, index) — binary: ceil(P·amount) (src, dst) pairs;
  triplet: ceil(P·amount) destinations, positive i's at rows
  i·amount … — and recorded (:attr:`FakeLinkClient.log`);
* ``seeds`` = the sorted unique endpoints of positives and negatives;
  hops are a node minibatch's over them (PyG or DGL semantics), with edge
  ids (positions in the CSR); ``link`` the LinkFields in local ids.

Built with Python dicts and loops, apart from the tests' renderings (which
follow PyG's and DGL's own code paths: ``torch.unique(return_inverse)``,
``compact_graphs``'s first-appearance map, ``to_block``).
"""

import math

import numpy as np

from streamsampler.batch import Batch, Hop
from streamsampler.link import LinkFields


class FakeLinkClient:
    def __init__(self, indptr, indices, num_nodes, fanouts, edges, batch_size, seed=0, mode="none", amount=0.0,
                 drop_last=False, x=None):
        self.indptr = np.asarray(indptr, np.int64)
        self.indices = np.asarray(indices, np.int64)
        self.num_nodes = num_nodes
        self.fanouts = list(fanouts)
        self.edges = np.asarray(edges, np.int64)
        self.batch_size = batch_size
        self.seed = seed
        self.mode, self.amount = mode, amount
        self.drop_last = drop_last
        self.x = x
        self.epoch = 0
        self.splits = {}
        self.log = []  # one dict per minibatch handed out
        self.closed = False
        self._cache = {}

    # -- sampling ---------------------------------------------------------

    def samples(self, epoch, hop, v):
        """Node v's hop-``hop`` (0-based) samples in ``epoch``: a list of
        (neighbor, edge id) in slot order."""
        key = (epoch, hop, v)
        hit = self._cache.get(key)
        if hit is None:
            lo, hi = int(self.indptr[v]), int(self.indptr[v + 1])
            k = min(hi - lo, self.fanouts[hop])
            rng = np.random.default_rng([self.seed, epoch, hop, v])
            pos = lo + rng.choice(hi - lo, size=k, replace=False) if k else np.empty(0, np.int64)
            hit = [(int(self.indices[p]), int(p)) for p in pos]
            self._cache[key] = hit
        return hit

    def _hops(self, epoch, seeds, semantics):
        n_id = [int(s) for s in seeds]
        local = {v: i for i, v in enumerate(n_id)}
        hops = []
        expand = list(range(len(n_id)))  # local ids of the nodes the next hop expands
        for h in range(len(self.fanouts)):
            dst = [n_id[i] for i in expand]
            es, ed, eid = [], [], []
            new = []
            for j, v in enumerate(dst):
                for u, e in self.samples(epoch, h, v):
                    if u not in local:
                        local[u] = len(n_id)
                        n_id.append(u)
                        new.append(local[u])
                    es.append(local[u])
                    ed.append(j)
                    eid.append(e)
            hops.append(Hop(np.array(dst, np.uint32), np.array(n_id, np.uint32), np.array(es, np.int32),
                            np.array(ed, np.int32), np.array(eid, np.int64)))
            expand = new if semantics == "pyg" else list(range(len(n_id)))
        return hops

    def _batch(self, epoch, index, input_id, edges, rng, semantics, mode, amount):
        p = len(input_id)
        src, dst = [int(u) for u in edges[0]], [int(v) for v in edges[1]]
        neg_src, neg_dst = [], []
        if mode != "none":
            num_neg = math.ceil(p * amount)
            if mode == "binary":
                neg_src = [int(u) for u in rng.integers(0, self.num_nodes, num_neg)]
            neg_dst = [int(v) for v in rng.integers(0, self.num_nodes, num_neg)]
        seeds = sorted(set(src + dst + neg_src + neg_dst))
        loc = {v: i for i, v in enumerate(seeds)}
        kw = {}
        if mode == "triplet":
            kw["src_index"] = np.array([loc[u] for u in src], np.int64)
            kw["dst_pos_index"] = np.array([loc[v] for v in dst], np.int64)
            kw["dst_neg_index"] = np.array([loc[v] for v in neg_dst], np.int64).reshape(p, -1)
        else:
            kw["edge_label_index"] = np.array([[loc[u] for u in src + neg_src], [loc[v] for v in dst + neg_dst]],
                                              np.int64).reshape(2, -1)
            # What a server might send; the loaders compute their own.
            kw["edge_label"] = np.concatenate([np.ones(p, np.float32), np.zeros(len(neg_src), np.float32)])
        b = Batch(epoch, np.array(seeds, np.uint32), self._hops(epoch, seeds, semantics), index=index,
                  semantics=semantics)
        if self.x is not None:
            b.x = self.x[b.n_id.astype(np.int64)]
        b.link = LinkFields(mode, np.asarray(input_id, np.int64), **kw)
        self.log.append(dict(epoch=epoch, index=index, input_id=np.asarray(input_id, np.int64),
                             pos=np.array([src, dst], np.int64).reshape(2, -1),
                             neg_src=np.array(neg_src, np.int64), neg_dst=np.array(neg_dst, np.int64),
                             semantics=semantics))
        return b

    def _count(self, n, bs, drop_last):
        return n // bs if drop_last else -(-n // bs)

    # -- the Client calls the loaders make -------------------------------

    def epoch_info(self):
        return {"epoch": self.epoch, "num_batches": self._count(self.edges.shape[1], self.batch_size, self.drop_last)}

    def advance(self, epoch=None):
        self.epoch = (self.epoch if epoch is None else epoch) + 1
        return self.epoch_info()

    def batches(self, epoch=None, depth=4, advance=True, max_batches=None, semantics=None):
        epoch = self.epoch if epoch is None else epoch
        perm = np.random.default_rng([self.seed, epoch, 1 << 20]).permutation(self.edges.shape[1])
        n = self._count(len(perm), self.batch_size, self.drop_last)
        for i in range(n):
            ids = perm[i * self.batch_size:(i + 1) * self.batch_size]
            rng = np.random.default_rng([self.seed, epoch, i, 1 << 21])
            yield self._batch(epoch, i, ids, self.edges[:, ids], rng, semantics or "dgl", self.mode, self.amount)
        if advance:
            self.advance(epoch)

    def link_split(self, edges, batch_size, labels=None, neg_sampling="none", amount=1.0, seed=0):
        sid = len(self.splits) + 1
        self.splits[sid] = (np.asarray(edges, np.int64), int(batch_size), neg_sampling, float(amount), int(seed))
        return {"split": sid, "num_batches": self._count(self.splits[sid][0].shape[1], batch_size, False)}

    def split_batches(self, split, depth=4, semantics=None):
        edges, bs, mode, amount, seed = self.splits[split]
        for i in range(self._count(edges.shape[1], bs, False)):
            ids = np.arange(i * bs, min((i + 1) * bs, edges.shape[1]))
            rng = np.random.default_rng([seed, split, i, 1 << 22])
            yield self._batch(self.epoch, i, ids, edges[:, ids], rng, semantics or "dgl", mode, amount)

    def close(self):
        self.closed = True


def adjacency(edge_index, num_nodes):
    """A CSR of in-edges (u stored in v's row), rows sorted by source, as
    ``from_pyg`` stores ``edge_index``; and the stored edge -> column map."""
    u, v = np.asarray(edge_index[0], np.int64), np.asarray(edge_index[1], np.int64)
    perm = np.argsort(v * num_nodes + u, kind="stable")
    indptr = np.zeros(num_nodes + 1, np.int64)
    indptr[1:] = np.cumsum(np.bincount(v, minlength=num_nodes))
    return indptr, u[perm], perm
