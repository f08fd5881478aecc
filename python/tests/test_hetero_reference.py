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

import numpy as np

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


def fake_hetero_nn():
    """torch_geometric stand-ins for python/examples/pyg_hetero.py: the
    HeteroData above, and ``SAGEConv((-1, -1), out)`` (PyG's defaults in
    plain torch: the mean of the sources through ``lin_l`` with bias, plus
    the destination through ``lin_r`` without; lazy input sizes) and
    ``HeteroConv(convs, aggr="sum")`` (each relation's conv on its
    (source, destination) features, summed per destination type)."""
    import torch.nn as nn

    class SAGEConv(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.lin_l = nn.LazyLinear(out_channels, bias=True)
            self.lin_r = nn.LazyLinear(out_channels, bias=False)

        def forward(self, x, edge_index):
            x_src, x_dst = x
            src, dst = edge_index[0], edge_index[1]
            agg = torch.zeros(x_dst.size(0), x_src.size(1), dtype=x_src.dtype).index_add_(0, dst, x_src[src])
            deg = torch.zeros(x_dst.size(0), dtype=x_src.dtype).index_add_(0, dst, torch.ones(len(dst)))
            return self.lin_l(agg / deg.clamp(min=1).unsqueeze(1)) + self.lin_r(x_dst)

    class HeteroConv(nn.Module):
        def __init__(self, convs, aggr="sum"):
            super().__init__()
            assert aggr == "sum"
            self.keys = list(convs)
            self.convs = nn.ModuleList(convs[k] for k in self.keys)

        def forward(self, x_dict, edge_index_dict):
            out = {}
            for et, conv in zip(self.keys, self.convs):
                if et not in edge_index_dict:
                    continue
                s, _, d = et
                h = conv((x_dict[s], x_dict[d]), edge_index_dict[et])
                out[d] = out[d] + h if d in out else h
            return out

    mods = fake_hetero_modules()
    nn_mod = types.ModuleType("torch_geometric.nn")
    nn_mod.SAGEConv, nn_mod.HeteroConv = SAGEConv, HeteroConv
    mods["torch_geometric"].nn = nn_mod
    mods["torch_geometric.nn"] = nn_mod
    return mods


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


REPO = os.path.dirname(os.path.dirname(HERE))
TESTDATA = os.path.join(REPO, "testdata")
CORA_HETERO_SHA256 = {
    "raw/node-feat/paper/node-feat.csv.gz": "5f0f7b40ecbe16087f448f2bb4e8255c2c841693d07e5431d095860e56ceedc0",
    "raw/node-label/paper/node-label.csv.gz": "6b263ed687d7434348a7ade433fd31e359c9354f642fc4957e8a8bb15ec48928",
    "raw/num-node-dict.csv.gz": "51685f04ae7520716fbcea54ed752efd43a82f7fb8451203ab42aab6aef21cf3",
    "raw/relations/paper___cites___paper/edge.csv.gz":
        "a5c48fdb3b27a05d300cc4d4068aa7550b42e11d498aaeee50a700b1f6bbd317",
    "raw/relations/paper___has___term/edge.csv.gz": "02df3617609306f241645436f5b67ad1469c0732020010b7f19f90e21334f4db",
}


class ExampleModule:
    """pyg_hetero (and the reference loader) imported against the stand-ins."""

    def __enter__(self):
        self.patch = mock.patch.dict(sys.modules, fake_hetero_nn())
        self.patch.__enter__()
        self.path = mock.patch.object(sys, "path", [EXAMPLES] + sys.path)
        self.path.__enter__()
        for m in ("pyg_hetero", "reference_hetero_loader"):
            sys.modules.pop(m, None)
        return importlib.import_module("pyg_hetero")

    def __exit__(self, *exc):
        self.path.__exit__(*exc)
        self.patch.__exit__(*exc)


try:
    import scipy.sparse  # noqa: F401  (the Planetoid pickles hold scipy matrices)
    HAVE_SCIPY = True
except ImportError:  # pragma: no cover
    HAVE_SCIPY = False


@unittest.skipIf(torch is None or not HAVE_SCIPY, "needs torch and scipy")
class HeteroExample(unittest.TestCase):
    def test_dataset(self):
        """cora-hetero as bundled: its sha256s, and what make.py says it
        holds, recomputed from Planetoid Cora."""
        import hashlib

        from streamsampler import datasets

        for rel, want in CORA_HETERO_SHA256.items():
            with open(os.path.join(TESTDATA, "cora-hetero", rel), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), want, rel)
        with ExampleModule() as ex:
            data = ex.pyg_data(TESTDATA)
        ds = datasets.load_planetoid("cora", root=TESTDATA)
        bow = torch.from_numpy(ds.x) != 0
        self.assertTrue(torch.equal(data["term"].x, torch.eye(bow.shape[1])))
        has = data["paper", "has", "term"].edge_index
        got = torch.zeros_like(bow)
        got[has[0], has[1]] = True
        self.assertTrue(torch.equal(got, bow))
        self.assertEqual(has.size(1), int(bow.sum()))
        self.assertTrue(torch.equal(data["term", "rev_has", "paper"].edge_index, has.flip(0)))
        hashed = torch.zeros(ds.num_nodes, 16)
        p, w = bow.nonzero(as_tuple=True)
        hashed.index_put_((p, w % 16), torch.ones(len(p)), accumulate=True)
        self.assertTrue(torch.allclose(data["paper"].x, hashed / hashed.sum(1, keepdim=True).clamp(min=1)))
        self.assertTrue(torch.equal(data["paper"].y, torch.from_numpy(ds.y)))
        cites = data["paper", "cites", "paper"].edge_index
        self.assertEqual(cites.size(1), 2 * len(ds.edges))
        self.assertEqual(set(map(tuple, cites.t().tolist())),
                         {(u, v) for a, b in ds.edges.tolist() for u, v in ((a, b), (b, a))})
        for k in ("train", "val", "test"):
            self.assertEqual(getattr(data["paper"], k + "_mask").nonzero().view(-1).tolist(),
                             getattr(ds, k).tolist())

    def test_reference_runs_and_learns(self):
        with ExampleModule() as ex:
            out = [ex.main(["--root", TESTDATA, "--loader", "reference", "--seed", "3", "--epochs", "3",
                            "--device", "cpu"]) for _ in range(2)]
        self.assertEqual(out[0]["test"], out[1]["test"])  # same seed, same run
        self.assertEqual(out[0]["val"], out[1]["val"])
        # Seven classes: the largest class is 0.319 of the test set; three
        # epochs of 140 seeds learn more.
        self.assertGreater(out[0]["test"], 0.35)
        self.assertEqual(out[0]["loader"], "reference")

    def test_streamsampler_runs(self):
        """--loader streamsampler: from_pyg writes the torch HeteroData's
        graph directory (every relation, the masks as per-type splits),
        then streamsampler.pyg.NeighborLoader serves the same script (only
        the import differs), which learns, and the same seed gives the
        same run."""
        import tempfile

        from streamsampler import read_csr
        from tests.test_live import build_tools

        with tempfile.TemporaryDirectory() as tmp:
            ss, ck = build_tools(tmp)
            with ExampleModule() as ex:
                data = ex.pyg_data(TESTDATA)
                real = ex.streamsampler.from_pyg
                seen = {}

                def spy(d, out, **kw):
                    seen["info"] = real(d, out, **kw)
                    return seen["info"]

                cfg = dict(ex.CONFIG, epochs=8)
                with mock.patch.object(ex.streamsampler, "from_pyg", spy), \
                        mock.patch.dict(os.environ, {"STREAMSAMPLER_BIN": ss}):
                    out = [ex.run("streamsampler", data, 3, torch.device("cpu"), cfg, os.path.join(tmp, str(i)),
                                  chunkify=ck) for i in range(2)]
            self.assertEqual(out[0]["loader"], "streamsampler")
            self.assertEqual((out[0]["test"], out[0]["val"]), (out[1]["test"], out[1]["val"]))
            self.assertGreater(out[0]["test"], 0.35)  # the largest class is 0.319 of the test set
            info = seen["info"]
            self.assertEqual(info.node_types, {"paper": 2708, "term": 1433})
            self.assertEqual(list(info.relations), data.edge_types)
            for et in data.edge_types:
                indptr, indices = read_csr(info.relations[et])
                ei = data[et].edge_index
                self.assertEqual(int(indptr[-1]), ei.size(1))
                perm = torch.from_numpy(np.load(info.relation_edge_perm[et]))
                self.assertTrue(torch.equal(ei[0, perm], torch.from_numpy(indices.astype(np.int64))))
            for k in ("train", "val", "test"):
                self.assertTrue(np.array_equal(np.load(info.type_splits["paper"][k]),
                                               getattr(data["paper"], k + "_mask").nonzero().view(-1).numpy()))
            self.assertEqual(info.type_features, {"paper": ("float32", 16), "term": ("float32", 1433)})


class Runner(unittest.TestCase):
    def test_summary(self):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        try:
            import hetero_accuracy as ha
        finally:
            sys.path.pop(0)
        runs = [dict(loader=lo, test=t, seconds=1.0) for lo, t in
                (("reference", 0.70), ("reference", 0.72), ("reference", 0.74),
                 ("streamsampler", 0.705), ("streamsampler", 0.725), ("streamsampler", 0.745))]
        s = ha.summary(runs, ["reference", "streamsampler"])
        self.assertAlmostEqual(s["reference"]["mean"], 72.0)
        self.assertAlmostEqual(s["reference"]["sd"], 2.0)
        self.assertAlmostEqual(s["diff"], 0.5)
        self.assertTrue(s["pass"])
        runs[3]["test"] = 0.65
        s = ha.summary(runs, ["reference", "streamsampler"])
        self.assertAlmostEqual(s["diff"], 0.5 - 5.5 / 3)
        self.assertFalse(s["pass"])


if __name__ == "__main__":
    unittest.main()
