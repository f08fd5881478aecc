"""The plain-torch reference of PyG's heterogeneous NeighborLoader
(python/examples/reference_hetero_loader.py) against a HeteroData
stand-in (tests/hetero_fakes.py; torch_geometric is not installed here):

* every sampled edge of every edge type is the ``edge_index`` column
  ``e_id`` of its relation, ``edge_index`` row 0 the neighbor's local id in
  the source type's ``n_id``, row 1 the expanded node's in the
  destination type's;
* hop semantics as pyg-lib's: each hop's edges start at the nodes first
  reached at the previous hop (seeds at hop 0), each such node of type d
  draws exactly min(degree, k) distinct in-edges per relation into d (all
  of them for k = -1), ``n_id`` per type is the seeds then each hop's new
  nodes in order of first appearance over the edge types in
  ``data.edge_types`` order, its segments the ``num_sampled_nodes``;
* ``batch_size``/``input_id`` on the seed type, x/y/masks sliced by n_id,
  shuffle covers each input once;
* a node's draws are uniform (chi-square) and fresh for every minibatch;
  with ``per_epoch_samples`` one per epoch.
"""

import importlib
import os
import sys
import types
import unittest
from unittest import mock

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "examples")


# A stand-in for torch_geometric.data.HeteroData (torch_geometric is not
# installed here): ``data[node_type]`` and ``data[(src, rel, dst)]``
# storages created on first use, in insertion order as ``node_types`` and
# ``edge_types``, attributes set and read as PyG's, ``keys()`` listing
# them, ``num_nodes`` inferred from ``x`` as PyG's NodeStorage does.


class Storage:
    def __init__(self):
        object.__setattr__(self, "_store", {})

    def __setattr__(self, k, v):
        self._store[k] = v

    def __getattr__(self, k):
        store = object.__getattribute__(self, "_store")
        if k in store:
            return store[k]
        if k == "num_nodes" and "x" in store:
            return store["x"].size(0)
        raise AttributeError(k)

    def __contains__(self, k):
        return k in self._store

    def keys(self):
        return list(self._store)


class HeteroData:
    def __init__(self):
        object.__setattr__(self, "_nodes", {})
        object.__setattr__(self, "_edges", {})
        object.__setattr__(self, "_global", {})

    @property
    def node_types(self):
        return list(self._nodes)

    @property
    def edge_types(self):
        return list(self._edges)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self._edges.setdefault(key, Storage())
        return self._nodes.setdefault(key, Storage())

    def __setattr__(self, k, v):
        self._global[k] = v

    def __getattr__(self, k):
        g = object.__getattribute__(self, "_global")
        if k in g:
            return g[k]
        raise AttributeError(k)


def fake_hetero_modules(base=None):
    """sys.modules entries: ``base`` (e.g. fakes.fake_pyg_nn()) with
    torch_geometric.data.HeteroData added, or a bare torch_geometric.data."""
    mods = dict(base or {})
    if "torch_geometric" not in mods:
        pkg = types.ModuleType("torch_geometric")
        data = types.ModuleType("torch_geometric.data")
        pkg.data = data
        mods["torch_geometric"], mods["torch_geometric.data"] = pkg, data
    mods["torch_geometric.data"].HeteroData = HeteroData
    return mods


class RefModule:
    """reference_hetero_loader imported against the stand-in."""

    def __enter__(self):
        self.patch = mock.patch.dict(sys.modules, fake_hetero_modules())
        self.patch.__enter__()
        self.path = mock.patch.object(sys, "path", [EXAMPLES] + sys.path)
        self.path.__enter__()
        sys.modules.pop("reference_hetero_loader", None)
        return importlib.import_module("reference_hetero_loader"), sys.modules["torch_geometric.data"].HeteroData

    def __exit__(self, *exc):
        self.path.__exit__(*exc)
        self.patch.__exit__(*exc)


def graph(HeteroData, seed=0):
    g = torch.Generator().manual_seed(seed)
    d = HeteroData()
    n = {"paper": 120, "author": 90, "term": 15}
    d["paper"].x = torch.randn(n["paper"], 5, generator=g)
    d["paper"].y = torch.randint(0, 4, (n["paper"],), generator=g)
    d["paper"].train_mask = torch.rand(n["paper"], generator=g) < 0.6
    d["author"].x = torch.randn(n["author"], 3, generator=g)
    d["term"].num_nodes = n["term"]
    d["paper", "cites", "paper"].edge_index = torch.randint(0, n["paper"], (2, 500), generator=g)
    d["author", "writes", "paper"].edge_index = torch.stack(
        [torch.randint(0, n["author"], (400,), generator=g), torch.randint(0, n["paper"], (400,), generator=g)])
    d["paper", "rev_writes", "author"].edge_index = d["author", "writes", "paper"].edge_index.flip(0)
    d["term", "in", "paper"].edge_index = torch.stack(
        [torch.randint(0, n["term"], (300,), generator=g), torch.randint(0, n["paper"], (300,), generator=g)])
    d["paper", "has", "term"].edge_index = d["term", "in", "paper"].edge_index.flip(0)
    return d, n


def in_edges(ei, v):
    """Column ids of the in-edges of v."""
    return (ei[1] == v).nonzero().view(-1)


@unittest.skipIf(torch is None, "needs torch")
class ReferenceHeteroLoader(unittest.TestCase):
    def check(self, b, data, n, fan, seed_type="paper"):
        ets = data.edge_types
        L = len(next(iter(fan.values())))
        n_id = {t: b[t].n_id for t in data.node_types}
        seeds = n_id[seed_type][:b[seed_type].batch_size]
        self.assertEqual(b[seed_type].batch_size, len(b[seed_type].input_id))
        for t in data.node_types:
            self.assertEqual(len(torch.unique(n_id[t])), len(n_id[t]), t)
            self.assertEqual(len(b[t].num_sampled_nodes), L + 1)
            self.assertEqual(sum(b[t].num_sampled_nodes), len(n_id[t]))
            if "x" in data[t]:
                self.assertTrue(torch.equal(b[t].x, data[t].x[n_id[t]]))
        self.assertTrue(torch.equal(b["paper"].y, data["paper"].y[n_id["paper"]]))
        self.assertTrue(torch.equal(b["paper"].train_mask, data["paper"].train_mask[n_id["paper"]]))
        # Segment bounds of each type's hops.
        seg = {t: torch.cumsum(torch.tensor([0] + b[t].num_sampled_nodes), 0).tolist() for t in data.node_types}
        seen = {t: set(n_id[t][:seg[t][1]].tolist()) for t in data.node_types}
        eoff = {et: torch.cumsum(torch.tensor([0] + b[et].num_sampled_edges), 0).tolist() for et in ets}
        for h in range(L):
            order = {t: [] for t in data.node_types}
            for et in ets:
                s, _, d = et
                ei, e_id = b[et].edge_index, b[et].e_id
                self.assertEqual(len(b[et].num_sampled_edges), L)
                lo, hi = eoff[et][h], eoff[et][h + 1]
                full = data[et].edge_index
                # Every sampled edge is the column e_id, neighbor -> node.
                self.assertTrue(torch.equal(full[0, e_id[lo:hi]], n_id[s][ei[0, lo:hi]]))
                self.assertTrue(torch.equal(full[1, e_id[lo:hi]], n_id[d][ei[1, lo:hi]]))
                # Only the nodes of d first reached at hop h - 1 are expanded,
                # each by min(degree, k) distinct in-edges.
                col = ei[1, lo:hi]
                self.assertTrue(bool(((col >= seg[d][h]) & (col < seg[d][h + 1])).all()), (et, h))
                k = fan[et][h]
                for loc in range(seg[d][h], seg[d][h + 1]):
                    mine = e_id[lo:hi][col == loc]
                    deg = len(in_edges(full, int(n_id[d][loc])))
                    self.assertEqual(len(mine), deg if k < 0 else min(deg, k), (et, h, loc))
                    self.assertEqual(len(torch.unique(mine)), len(mine))
                for u in n_id[s][ei[0, lo:hi]].tolist():
                    if u not in seen[s]:
                        seen[s].add(u)
                        order[s].append(u)
            for t in data.node_types:
                self.assertEqual(n_id[t][seg[t][h + 1]:seg[t][h + 2]].tolist(), order[t], (t, h))
        return seeds

    def test_fields_and_hops(self):
        with RefModule() as (ref, HeteroData):
            data, n = graph(HeteroData)
            for fan in ([3, 2], {et: [2, -1] for et in data.edge_types}, [5, 0, 2]):
                if isinstance(fan, dict):
                    fan[("paper", "cites", "paper")] = [1]  # shorter: padded with 0
                with self.subTest(fan=fan):
                    lo = ref.NeighborLoader(data, fan, input_nodes=("paper", data["paper"].train_mask),
                                            batch_size=16, shuffle=True)
                    want = {et: (fan[et] if isinstance(fan, dict) else fan) for et in data.edge_types}
                    L = max(len(v) for v in want.values())
                    want = {et: v + [0] * (L - len(v)) for et, v in want.items()}
                    ids = []
                    for b in lo:
                        seeds = self.check(b, data, n, want)
                        self.assertTrue(torch.equal(seeds, lo.input_nodes[b["paper"].input_id]))
                        ids.append(b["paper"].input_id)
                    self.assertTrue(torch.equal(torch.sort(torch.cat(ids)).values,
                                                torch.arange(int(data["paper"].train_mask.sum()))))
            with self.assertRaisesRegex(ValueError, "no entry for edge type"):
                ref.NeighborLoader(data, {("paper", "cites", "paper"): [2]}, input_nodes="paper")
            with self.assertRaisesRegex(ValueError, "node type 'venue'"):
                ref.NeighborLoader(data, [2], input_nodes=("venue", None))

    def test_other_seed_type(self):
        with RefModule() as (ref, HeteroData):
            data, n = graph(HeteroData, 1)
            lo = ref.NeighborLoader(data, [4, 3], input_nodes="author", batch_size=25)
            for b in lo:
                self.check(b, data, n, {et: [4, 3] for et in data.edge_types}, seed_type="author")
                self.assertEqual(b["paper"].num_sampled_nodes[0], 0)

    def test_uniform_and_fresh(self):
        with RefModule() as (ref, HeteroData):
            data = HeteroData()
            data["a"].num_nodes, data["b"].num_nodes = 10, 1
            data["a", "to", "b"].edge_index = torch.stack([torch.arange(10), torch.zeros(10, dtype=torch.long)])
            k, trials = 3, 4000
            for per_epoch in (False, True):
                lo = ref.NeighborLoader(data, [k], input_nodes=("b", torch.zeros(2, dtype=torch.long)), batch_size=1,
                                        generator=torch.Generator().manual_seed(7), per_epoch_samples=per_epoch)
                counts = torch.zeros(10)
                same = 0
                for _ in range(trials // 2):
                    b0, b1 = list(lo)
                    s0 = set(b0["a"].n_id.tolist())
                    same += s0 == set(b1["a"].n_id.tolist())
                    self.assertEqual(len(s0), k)
                    counts[b0["a"].n_id] += 1
                    counts[b1["a"].n_id] += 1
                if per_epoch:
                    self.assertEqual(same, trials // 2)  # one sample per epoch
                else:
                    # Independent draws: P(same set) = 1 / C(10, 3) = 1/120.
                    self.assertLess(same, trials // 2 * 0.03)
                # Each neighbor drawn with probability 3/10: chi-square, 9 dof,
                # 0.999 quantile 27.88.
                exp = trials * k / 10
                chi2 = float(((counts - exp) ** 2 / exp).sum())
                self.assertLess(chi2, 27.88, (per_epoch, counts))

    def test_take_all_in_stored_order(self):
        with RefModule() as (ref, HeteroData):
            data = HeteroData()
            data["a"].num_nodes, data["b"].num_nodes = 6, 2
            data["a", "to", "b"].edge_index = torch.tensor([[5, 2, 4, 0, 3], [0, 0, 0, 1, 1]])
            for k in (-1, 3, 9):
                b = next(iter(ref.NeighborLoader(data, [k], input_nodes="b", batch_size=2)))
                self.assertEqual(b["a"].n_id.tolist(), [2, 4, 5, 0, 3])
                self.assertEqual(b["a", "to", "b"].edge_index.tolist(), [[0, 1, 2, 3, 4], [0, 0, 0, 1, 1]])
                self.assertEqual(b["a", "to", "b"].e_id.tolist(), [1, 2, 0, 3, 4])


if __name__ == "__main__":
    unittest.main()
