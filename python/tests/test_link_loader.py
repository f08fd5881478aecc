"""The link loaders (streamsampler.pyg.LinkNeighborLoader, streamsampler.dgl's
as_edge_prediction_sampler + DataLoader over edge ids) against
independent renderings of PyG's and DGL's semantics, on every bundled
graph, with minibatches from a stand-in server (tests/link_fakes.py)
that follows the link protocol's contract:

* PyG: every field of each ``Data`` equals what PyG's ``edge_sample``
  (``torch.cat([src, dst]).unique(return_inverse=True)``,
  ``inverse.view(2, -1)``, the triplet slices and ``squeeze(-1)``), its
  LinkLoader's label increment and ``filter_fn``, and NeighborLoader's
  hop semantics (tests/test_loaders.pyg_reference) make of the same
  positives, negatives and per-node samples; plus invariants that need no
  rendering (every edge a true edge, each seed edge once per epoch);
* DGL: ``(input_nodes, pair_graph, neg_pair_graph, blocks)`` arrays equal
  ``compact_graphs`` + ``to_block`` rendered with Python dicts from the
  same samples;
* refused arguments; ``neg_sampling`` parsing; ``from_pyg``'s edge splits
  round trip and the loaders reading them.

torch is needed (Debian's); torch_geometric and dgl are replaced by
tests/fakes.py's stand-ins.
"""

import gzip
import json
import os
import shutil
import sys
import tempfile
import types
import unittest
from unittest import mock

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

import streamsampler
from streamsampler import datasets
from streamsampler.convert import load_edge_split
from streamsampler.loader.link_loader import (LinkNeighborLoader, Uniform, as_edge_prediction_sampler,
                                              dgl_link_arrays, neg_sampling_args)
from tests.link_fakes import FakeLinkClient, adjacency

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "testdata")
FANOUTS = [3, 2]


def _pairs(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        a = np.loadtxt(f, dtype=np.int64, comments="#")
    return a.T.copy()


def bundled_graphs():
    """(name, edge_index [2, E], num_nodes) of every bundled graph: the
    SNAP edge lists under testdata/ as directed graphs, Cora, CiteSeer and
    musae-facebook as PyG has them (both directions), and a random
    multigraph with repeated edges and self-loops (test_loaders')."""
    out = []
    for name in ("email-Eu-core.txt.gz", "Wiki-Vote.txt", "facebook_combined.txt.gz"):
        ei = _pairs(os.path.join(TESTDATA, name))
        out.append((name, ei, int(ei.max()) + 1))
    for name in ("cora", "citeseer", "musae-facebook"):
        try:
            ds = datasets.load(name, root=TESTDATA)
        except ImportError:  # the Planetoid pickles need scipy
            continue
        e = ds.edges.T
        out.append((name, np.concatenate([e, e[::-1]], 1), ds.num_nodes))
    rng = np.random.default_rng(5)
    u, v = rng.integers(0, 600, 5000), rng.integers(0, 600, 5000)
    u[:300], v[:300] = u[300:600], v[300:600]
    out.append(("multigraph", np.stack([u, v]), 600))
    return out


def fake_graph(tmp, name, edge_index, num_nodes, labels=None):
    """A graph directory with what the PyG loader reads (manifest,
    edge_perm.npy, labels.npy) and the stand-in server's CSR."""
    g = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
    with open(os.path.join(g, "manifest.json"), "w") as f:
        json.dump({"version": 1, "num_nodes": int(num_nodes)}, f)
    indptr, indices, perm = adjacency(edge_index, num_nodes)
    np.save(os.path.join(g, "edge_perm.npy"), perm)
    if labels is not None:
        np.save(os.path.join(g, "labels.npy"), labels)
    return g, indptr, indices, perm


class Samples:
    """hop -> {node: its sampled neighbors} for test_loaders.pyg_reference,
    read from the stand-in's per-node samples."""

    def __init__(self, fake, epoch, hop):
        self.fake, self.epoch, self.hop = fake, epoch, hop

    def __getitem__(self, v):
        return [u for u, _ in self.fake.samples(self.epoch, self.hop, v)]


def pyg_link_reference(rec, fake, perm, labels, mode, node_labels):
    """PyG's LinkNeighborLoader output for one minibatch, rendered as PyG
    computes it (torch_geometric/sampler/neighbor_sampler.py edge_sample,
    loader/link_loader.py) from the stand-in's positives, negatives and
    samples: a dict of the Data's fields."""
    from tests.test_loaders import pyg_reference

    pos = torch.from_numpy(rec["pos"])
    p = pos.shape[1]
    src, dst = pos[0], pos[1]
    if mode == "binary":
        src = torch.cat([src, torch.from_numpy(rec["neg_src"])])
        dst = torch.cat([dst, torch.from_numpy(rec["neg_dst"])])
    elif mode == "triplet":
        dst = torch.cat([dst, torch.from_numpy(rec["neg_dst"])])
    seed, inverse = torch.cat([src, dst]).unique(return_inverse=True)
    epoch = rec["epoch"]
    n_id, ei, nodes, edges, slots = pyg_reference(seed.tolist(), [Samples(fake, epoch, h) for h in range(len(FANOUTS))])
    n_id_t = torch.tensor(n_id, dtype=torch.int64)
    e_id = torch.tensor([int(perm[fake.samples(epoch, h, v)[t][1]]) for h, v, t in slots], dtype=torch.int64)
    out = {"edge_index": torch.from_numpy(ei), "n_id": n_id_t, "e_id": e_id,
           "input_id": torch.from_numpy(rec["input_id"]), "num_sampled_nodes": nodes, "num_sampled_edges": edges}
    if node_labels is not None:
        out["y"] = torch.from_numpy(node_labels)[n_id_t]
    input_id = torch.from_numpy(rec["input_id"])
    if mode == "triplet":
        out["src_index"] = inverse[:p]
        out["dst_pos_index"] = inverse[p:2 * p]
        out["dst_neg_index"] = inverse[2 * p:].view(p, -1).squeeze(-1)
        return out
    out["edge_label_index"] = inverse.view(2, -1)
    edge_label = None
    if labels is not None:
        edge_label = torch.from_numpy(labels)
        if mode == "binary" and int(edge_label.min()) == 0:
            edge_label = edge_label + 1
        edge_label = edge_label[input_id]
    elif mode == "binary":
        edge_label = torch.ones(p)
    if mode == "binary":
        num_neg = len(rec["neg_src"])
        edge_label = torch.cat([edge_label, edge_label.new_zeros((num_neg,) + edge_label.size()[1:])])
    if edge_label is not None:
        out["edge_label"] = edge_label
    return out


def dgl_link_reference(rec, fake, perm, eids, k):
    """DGL's EdgePredictionSampler.sample for one minibatch, rendered with
    Python dicts: compact_graphs([pair, neg]) numbers nodes by first
    appearance over pair src, pair dst, neg src, neg dst (an IdHashMap,
    dgl graph/transform/compact.cc); each layer samples its dst nodes'
    in-edges (grouped by dst, slot order) and to_block puts the dst nodes
    first, then the other sources by first appearance."""
    ps, pd = rec["pos"][0].tolist(), rec["pos"][1].tolist()
    arrays = [ps, pd]
    if k is not None:
        arrays += [[u for u in ps for _ in range(k)], rec["neg_dst"].tolist()]
    ids = {}
    for arr in arrays:
        for v in arr:
            ids.setdefault(v, len(ids))
    seeds = list(ids)
    out = {"pair": {"src": [ids[u] for u in ps], "dst": [ids[v] for v in pd], "num_nodes": len(seeds),
                    "nid": seeds, "eid": list(eids)}, "neg": None}
    if k is not None:
        out["neg"] = {"src": [ids[u] for u in arrays[2]], "dst": [ids[v] for v in arrays[3]],
                      "num_nodes": len(seeds), "nid": seeds}
    blocks, dst = [], seeds
    for h in range(len(FANOUTS)):
        es, ed, eid = [], [], []
        src = {v: i for i, v in enumerate(dst)}
        for j, v in enumerate(dst):
            for u, e in fake.samples(rec["epoch"], h, v):
                src.setdefault(u, len(src))
                es.append(src[u])
                ed.append(j)
                eid.append(int(perm[e]))
        blocks.append({"src_ids": list(src), "dst_ids": list(dst), "edge_src": es, "edge_dst": ed, "edge_ids": eid,
                       "num_src_nodes": len(src), "num_dst_nodes": len(dst)})
        dst = list(src)
    blocks.reverse()
    out["blocks"] = blocks
    out["input_nodes"] = blocks[0]["src_ids"]
    return out


def as_lists(d):
    if isinstance(d, dict):
        return {k: as_lists(v) for k, v in d.items()}
    if isinstance(d, list):
        return [as_lists(v) for v in d]
    if isinstance(d, np.ndarray):
        return d.tolist()
    return d


@unittest.skipIf(torch is None, "needs torch")
class PygLinkFields(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from tests.fakes import fake_pyg
        cls.tmp = tempfile.mkdtemp(prefix="ss-link-")
        cls.graphs = bundled_graphs()
        cls.modules = fake_pyg()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_loader(self, gname, edge_index, num_nodes, mode, amount, with_labels, shuffle, epochs=1, drop_last=False):
        rng = np.random.default_rng(len(gname) * 7 + int(amount * 10) + shuffle)
        name = "%s-%s-%g-%d-%d" % (gname, mode, amount, with_labels, shuffle)
        node_labels = rng.integers(0, 5, num_nodes)
        g, indptr, indices, perm = fake_graph(self.tmp, name, edge_index, num_nodes, node_labels)
        cols = rng.choice(edge_index.shape[1], size=min(300, edge_index.shape[1]), replace=False)
        eli = edge_index[:, cols]
        labels = rng.integers(0, 3, eli.shape[1]) if with_labels else None  # with 0: PyG increments them
        neg = None if mode == "none" else {"mode": mode, "amount": amount}
        with mock.patch.dict(sys.modules, self.modules):
            lo = LinkNeighborLoader(g, FANOUTS, edge_label_index=torch.from_numpy(eli),
                                    edge_label=None if labels is None else torch.from_numpy(labels),
                                    neg_sampling=neg, batch_size=64, shuffle=shuffle, drop_last=drop_last, seed=11,
                                    pin_memory=False)
            self.addCleanup(lo.close)
            fake = FakeLinkClient(indptr, indices, num_nodes, FANOUTS, eli, 64, seed=11, mode=mode, amount=amount,
                                  drop_last=drop_last)
            lo._client = fake
            out = []
            for _ in range(epochs):
                datas = list(lo)
                self.assertEqual(len(datas), len(lo))
                out.append(datas)
        return lo, fake, eli, labels, node_labels, perm, out

    def check_fields(self, data, ref):
        store = data._store
        want = set(ref) | {"edge_index"}
        self.assertEqual(set(store) - {"num_nodes"}, want)
        self.assertEqual(store["num_nodes"], len(ref["n_id"]))
        for k, v in ref.items():
            got = store[k]
            if torch.is_tensor(v):
                self.assertTrue(torch.is_tensor(got), k)
                self.assertEqual(got.dtype, v.dtype, k)
                self.assertEqual(tuple(got.shape), tuple(v.shape), k)
                self.assertTrue(torch.equal(got, v), k)
            else:
                self.assertEqual(got, v, k)

    def check_invariants(self, data, edge_index, eli, mode):
        """What holds whatever the rendering: n_id starts with the sorted
        unique endpoints, every sampled edge is a true edge (e_id a column
        of edge_index joining its endpoints), and the positives are the
        seed edges of input_id."""
        n_id = data.n_id.numpy()
        ei = data.edge_index.numpy()
        cols = data.e_id.numpy()
        np.testing.assert_array_equal(edge_index[0, cols], n_id[ei[0]])
        np.testing.assert_array_equal(edge_index[1, cols], n_id[ei[1]])
        p = len(data.input_id)
        if mode == "triplet":
            src, dst = n_id[data.src_index.numpy()], n_id[data.dst_pos_index.numpy()]
            ends = np.concatenate([src, dst, n_id[data.dst_neg_index.numpy().reshape(-1)]])
        else:
            lab = data.edge_label_index.numpy()
            src, dst = n_id[lab[0, :p]], n_id[lab[1, :p]]
            ends = n_id[lab].reshape(-1)
        np.testing.assert_array_equal(np.stack([src, dst]), eli[:, data.input_id.numpy()])
        s = data.num_sampled_nodes[0]
        np.testing.assert_array_equal(n_id[:s], np.unique(ends))

    def test_every_field_on_every_bundled_graph(self):
        cases = [("none", 0.0, True), ("binary", 1.0, False), ("binary", 2.5, True), ("triplet", 1.0, False),
                 ("triplet", 3.0, False)]
        for gname, edge_index, n in self.graphs:
            for mode, amount, with_labels in cases:
                with self.subTest(graph=gname, mode=mode, amount=amount):
                    lo, fake, eli, labels, node_labels, perm, epochs = self.run_loader(
                        gname, edge_index, n, mode, amount, with_labels, shuffle=True)
                    datas = epochs[0]
                    self.assertEqual(len(datas), len(fake.log))
                    seen = []
                    for data, rec in zip(datas, fake.log):
                        self.assertEqual(rec["semantics"], "pyg")
                        self.check_fields(data, pyg_link_reference(rec, fake, perm, labels, mode, node_labels))
                        self.check_invariants(data, edge_index, eli, mode)
                        seen.append(data.input_id.numpy())
                    # One epoch: every seed edge once.
                    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(eli.shape[1]))

    def test_split_in_order(self):
        gname, edge_index, n = self.graphs[0]
        for mode, amount in (("none", 0.0), ("binary", 1.0)):
            lo, fake, eli, labels, node_labels, perm, epochs = self.run_loader(gname, edge_index, n, mode, amount,
                                                                              True, shuffle=False)
            self.assertEqual(len(fake.splits), 1)
            edges, bs, m, a, seed = fake.splits[1]
            np.testing.assert_array_equal(edges, eli)
            self.assertEqual((bs, m, a, seed), (64, mode, amount, 11))
            ids = np.concatenate([d.input_id.numpy() for d in epochs[0]])
            np.testing.assert_array_equal(ids, np.arange(eli.shape[1]))
            for data, rec in zip(epochs[0], fake.log):
                self.check_fields(data, pyg_link_reference(rec, fake, perm, labels, mode, node_labels))

    def test_epochs_and_drop_last(self):
        gname, edge_index, n = self.graphs[-1]
        lo, fake, eli, *_ , epochs = self.run_loader(gname, edge_index, n, "binary", 1.0, False, shuffle=True,
                                                     epochs=2, drop_last=True)
        self.assertEqual(len(lo), eli.shape[1] // 64)
        self.assertEqual([rec["epoch"] for rec in fake.log], [0] * len(lo) + [1] * len(lo))
        for datas in epochs:
            self.assertTrue(all(len(d.input_id) == 64 for d in datas))
        # Different epochs, different shuffles and negatives.
        self.assertFalse(np.array_equal(epochs[0][0].input_id.numpy(), epochs[1][0].input_id.numpy()))

    def test_node_minibatch_is_an_error(self):
        gname, edge_index, n = self.graphs[-1]
        g, indptr, indices, perm = fake_graph(self.tmp, "nodebatch", edge_index, n)
        with mock.patch.dict(sys.modules, self.modules):
            lo = LinkNeighborLoader(g, FANOUTS, edge_label_index=edge_index[:, :10], batch_size=4, shuffle=True,
                                    seed=1, pin_memory=False)
            self.addCleanup(lo.close)
            fake = FakeLinkClient(indptr, indices, n, FANOUTS, edge_index[:, :10], 4, seed=1)
            orig = fake._batch

            def node_batch(*a, **kw):
                b = orig(*a, **kw)
                b.link = None
                return b
            fake._batch = node_batch
            lo._client = fake
            with self.assertRaisesRegex(RuntimeError, "node minibatch"):
                list(lo)


class NegSamplingArgs(unittest.TestCase):
    def test_table(self):
        class Mode:
            value = "triplet"

        class NegativeSampling:  # PyG's: mode an enum, amount, weight
            def __init__(self, mode, amount=1, weight=None):
                self.mode, self.amount, self.weight = mode, amount, weight

        ok = [
            ((None, None), ("none", 0.0)),
            (("binary", None), ("binary", 1.0)),
            (("triplet", None), ("triplet", 1.0)),
            (({"mode": "binary", "amount": 2.5}, None), ("binary", 2.5)),
            ((("triplet", 4), None), ("triplet", 4.0)),
            ((("binary", 2, None, None), None), ("binary", 2.0)),
            ((NegativeSampling(Mode(), 2), None), ("triplet", 2.0)),
            ((None, 0.5), ("binary", 0.5)),  # neg_sampling_ratio, PyG's older argument
            ((None, 0.0), ("none", 0.0)),
        ]
        for (ns, ratio), want in ok:
            with self.subTest(ns=ns, ratio=ratio):
                self.assertEqual(neg_sampling_args(ns, ratio), want)
        bad = [
            (("binary", 0.5), ValueError, "not both"),
            (("unary", None), ValueError, "mode"),
            ((("binary", 0), None), ValueError, "> 0"),
            ((("triplet", 1.5), None), ValueError, "integer"),
            ((NegativeSampling("binary", 1, torch.ones(3) if torch is not None else [1.0]), None), NotImplementedError,
             "weighted"),
            (({"mode": "binary", "src_weight": [1.0]}, None), NotImplementedError, "weighted"),
            (({"mode": "binary", "dst_weight": torch.ones(3) if torch is not None else [1.0]}, None),
             NotImplementedError, "weighted"),
            ((("binary", 1, None, [1.0]), None), NotImplementedError, "weighted"),
            ((3, None), TypeError, "neg_sampling"),
        ]
        for (ns, ratio), exc, msg in bad:
            with self.subTest(ns=ns, ratio=ratio):
                with self.assertRaisesRegex(exc, msg):
                    neg_sampling_args(ns, ratio)


@unittest.skipIf(torch is None, "needs torch")
class Refused(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-link-refused-")
        ei = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])
        cls.g, *_ = fake_graph(cls.tmp, "g", ei, 4)
        cls.ei = ei

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_pyg(self):
        ei = self.ei
        cases = [
            (dict(edge_label_time=torch.zeros(4)), NotImplementedError, "temporal"),
            (dict(time_attr="time"), NotImplementedError, "temporal"),
            (dict(disjoint=True), NotImplementedError, "disjoint"),
            (dict(subgraph_type="induced"), NotImplementedError, "directional"),
            (dict(edge_label_index=(("a", "to", "b"), ei)), NotImplementedError, "heterogeneous"),
            (dict(neg_sampling="triplet", edge_label=np.ones(4)), ValueError, "triplet"),
            (dict(edge_label=np.ones(3)), ValueError, "edge_label of shape"),
            (dict(edge_label_index=np.array([[0, 9], [1, 1]])), ValueError, r"edge_label_index\[0, 1\] = 9"),
            (dict(edge_label_index=np.zeros((3, 2), np.int64)), ValueError, r"\[2, E\]"),
            (dict(bogus=1), TypeError, "bogus"),
            (dict(num_neighbors=[0]), ValueError, "fanout"),
            (dict(edge_label_index="nosuch"), KeyError, "no edge split 'nosuch'"),
        ]
        for kw, exc, msg in cases:
            args = dict(data=self.g, num_neighbors=[2], edge_label_index=ei, batch_size=2, seed=0)
            args.update(kw)
            with self.subTest(kw=sorted(kw)):
                with self.assertRaisesRegex(exc, msg):
                    LinkNeighborLoader(**args).close()

    def test_ignored_dataloader_arguments(self):
        lo = LinkNeighborLoader(self.g, [2], edge_label_index=self.ei, batch_size=2, num_workers=4,
                                persistent_workers=True, seed=0)
        lo.close()

    def test_dgl(self):
        from streamsampler.dgl import NeighborSampler

        class PerSourceUniform:
            k = 2
        cases = [
            (dict(exclude=lambda eids: eids), NotImplementedError, "callable"),
            (dict(exclude="reverse_types", reverse_etypes={"a": "b"}), NotImplementedError, "homogeneous"),
            (dict(exclude="reverse_id"), ValueError, "reverse_eids"),
            (dict(exclude="bogus"), ValueError, "exclude"),
            (dict(negative_sampler=PerSourceUniform()), NotImplementedError, "PerSourceUniform"),
        ]
        for kw, exc, msg in cases:
            with self.subTest(kw=sorted(kw)):
                with self.assertRaisesRegex(exc, msg):
                    as_edge_prediction_sampler(NeighborSampler([2]), **kw)
        with self.assertRaisesRegex(ValueError, "k"):
            Uniform(0)

    def test_dgl_own_samplers_recognised(self):
        """DGL's as_edge_prediction_sampler result, NeighborSampler and
        negative_sampler.Uniform (stand-ins with DGL's module names and
        attributes) become ours."""
        from streamsampler.loader.link_loader import EdgePredictionSampler, as_link_sampler

        def dgl_class(name, module, **attrs):
            return type(name, (), dict(attrs, __module__=module))()
        ns = dgl_class("NeighborSampler", "dgl.dataloading.neighbor_sampler", fanouts=[5, 3], replace=False,
                       edge_dir="in", prob=None, mask=None)
        neg = dgl_class("Uniform", "dgl.dataloading.negative_sampler", k=4)
        eps = dgl_class("EdgePredictionSampler", "dgl.dataloading.base", sampler=ns, exclude="self",
                        reverse_eids=None, reverse_etypes=None, negative_sampler=neg)
        got = as_link_sampler(eps)
        self.assertIsInstance(got, EdgePredictionSampler)
        self.assertEqual((got.sampler.fanouts, got.exclude, got.k), ([5, 3], "self", 4))
        self.assertIsNone(as_link_sampler(ns))
        mine = as_edge_prediction_sampler(ns)
        self.assertIs(as_link_sampler(mine), mine)
        self.assertIsNone(mine.k)


@unittest.skipIf(torch is None, "needs torch")
class DglLinkArrays(unittest.TestCase):
    """dgl_link_arrays of the stand-in's DGL-semantics minibatches against
    DGL's compact_graphs + to_block rendered with dicts."""

    def test_every_bundled_graph(self):
        for gname, edge_index, n in bundled_graphs():
            for k in (None, 1, 3):
                with self.subTest(graph=gname, k=k):
                    rng = np.random.default_rng(3)
                    indptr, indices, perm = adjacency(edge_index, n)
                    eids = rng.choice(edge_index.shape[1], size=min(200, edge_index.shape[1]), replace=False)
                    fake = FakeLinkClient(indptr, indices, n, FANOUTS, edge_index[:, eids], 50, seed=4,
                                          mode="none" if k is None else "triplet", amount=float(k or 0),
                                          x=rng.standard_normal((n, 3)).astype(np.float32))
                    for b in fake.batches(semantics="dgl"):
                        rec = fake.log[-1]
                        pos_eids = eids[b.link.input_id]
                        got = dgl_link_arrays(b, pos_eids, perm)
                        want = dgl_link_reference(rec, fake, perm, pos_eids, k)
                        feat = got["blocks"][0].pop("feat")
                        np.testing.assert_array_equal(feat, fake.x[np.asarray(want["input_nodes"])])
                        self.assertEqual(as_lists(got), want)
                        for blk in got["blocks"]:
                            self.assertTrue(all(blk[f].dtype == np.int64 for f in ("src_ids", "dst_ids", "edge_src",
                                                                                  "edge_dst", "edge_ids")))
                            np.testing.assert_array_equal(blk["src_ids"][:blk["num_dst_nodes"]], blk["dst_ids"])

    def test_pyg_semantics_refused(self):
        indptr, indices, perm = adjacency(np.array([[0, 1], [1, 0]]), 2)
        fake = FakeLinkClient(indptr, indices, 2, FANOUTS, np.array([[0], [1]]), 1)
        b = next(fake.batches(semantics="pyg"))
        with self.assertRaisesRegex(ValueError, "semantics"):
            dgl_link_arrays(b, np.array([0]))


def fake_dgl_graphs():
    """fakes.fake_dgl with dgl.graph (a pair graph: edges, num_nodes, ndata, edata)."""
    from tests.fakes import fake_dgl
    mods = fake_dgl()

    class Graph:
        def __init__(self, edges, num_nodes):
            self.edges, self.num_nodes = edges, num_nodes
            self.ndata, self.edata = {}, {}

    def graph(edges, num_nodes):
        assert torch.is_tensor(edges[0]) and torch.is_tensor(edges[1])
        return Graph(edges, num_nodes)
    mods["dgl"].graph = graph
    return mods


@unittest.skipIf(torch is None, "needs torch")
class DglLinkLoader(unittest.TestCase):
    """streamsampler.dgl.DataLoader over edge ids with an edge-prediction
    sampler, on a graph directory written by from_arrays (chunkify)."""

    @classmethod
    def setUpClass(cls):
        from tests.test_live import build_tools
        cls.tmp = tempfile.mkdtemp(prefix="ss-link-dgl-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        rng = np.random.default_rng(8)
        n = 300
        u, v = rng.integers(0, n, 1500), rng.integers(0, n, 1500)
        e = np.stack([u, v])
        cls.edge_index = np.concatenate([e, e[::-1]], 1)  # edge i and i + 1500 are each other's reverse
        cls.n = n
        cls.graph = os.path.join(cls.tmp, "g")
        streamsampler.from_arrays(cls.edge_index, n, cls.graph, chunkify=cls.chunkify, chunk_size="16KiB")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_graph_edge_index_is_the_input(self):
        from streamsampler.loader.link_loader import graph_edge_index
        np.testing.assert_array_equal(graph_edge_index(self.graph), self.edge_index)

    def test_reverse_eids_in_stored_positions(self):
        from streamsampler.graph import read_csr
        from streamsampler.loader.link_loader import LinkDataLoader
        m = self.edge_index.shape[1] // 2
        rev = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
        stored = LinkDataLoader._stored_reverse(self.graph, rev, 2 * m)
        indptr, indices = read_csr(self.graph)
        row = np.repeat(np.arange(self.n), np.diff(indptr))
        # Stored edge i (indices[i] -> row i) has its reverse at stored[i].
        np.testing.assert_array_equal(indices[stored], row)
        np.testing.assert_array_equal(row[stored], indices)

    def test_tuples_and_arrays(self):
        from streamsampler.dgl import DataLoader, NeighborSampler, negative_sampler
        from streamsampler.graph import read_csr
        from streamsampler.loader.link_loader import LinkDataLoader
        indptr, indices = read_csr(self.graph)
        perm = streamsampler.load_edge_perm(self.graph)
        rng = np.random.default_rng(1)
        eids = rng.choice(self.edge_index.shape[1], 120, replace=False)
        m = self.edge_index.shape[1] // 2
        rev = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
        for k in (None, 2):
            with self.subTest(k=k), mock.patch.dict(sys.modules, fake_dgl_graphs()):
                sampler = as_edge_prediction_sampler(
                    NeighborSampler(FANOUTS[::-1]), exclude="reverse_id", reverse_eids=rev,
                    negative_sampler=None if k is None else negative_sampler.Uniform(k))
                lo = DataLoader(self.graph, torch.from_numpy(eids), sampler, batch_size=32, shuffle=True, seed=2,
                                binary=self.ss, pin_memory=False)
                self.addCleanup(lo.close)
                self.assertIsInstance(lo, LinkDataLoader)
                self.assertEqual(len(lo), 4)
                args = lo.server.server_args
                self.assertIn("--train-edges", args)
                self.assertEqual(args[args.index("--neg-sampling") + 1], "none" if k is None else "triplet")
                self.assertEqual(args[args.index("--exclude") + 1], "reverse_id")
                np.testing.assert_array_equal(np.load(args[args.index("--train-edges") + 1]),
                                              self.edge_index[:, eids])
                # --train-eids: each training pair's stored edge (u in v's row).
                stored = np.load(args[args.index("--train-eids") + 1])
                row = np.repeat(np.arange(self.n), np.diff(indptr))
                np.testing.assert_array_equal(np.stack([indices[stored], row[stored]]), self.edge_index[:, eids])
                # serve takes --train-edges instead of --train (not both).
                from streamsampler.loader.link_loader import _LinkLocalServer
                cmd = _LinkLocalServer(self.graph, np.arange(3), [2], 32, binary=self.ss, extra_args=args).args()
                self.assertNotIn("--train", cmd)
                self.assertIn("--train-edges", cmd)
                self.assertEqual(cmd[cmd.index("--batch-size") + 1], "32")
                fake = FakeLinkClient(indptr, indices, self.n, FANOUTS, self.edge_index[:, eids], 32, seed=2,
                                      mode="none" if k is None else "triplet", amount=float(k or 0))
                lo._client = fake
                outs = list(lo)
                self.assertEqual(len(outs), len(fake.log))
                for out, rec in zip(outs, fake.log):
                    self.assertEqual(rec["semantics"], "dgl")
                    self.assertEqual(len(out), 3 if k is None else 4)
                    input_nodes, pair, blocks = out[0], out[1], out[-1]
                    want = dgl_link_reference(rec, fake, perm, eids[rec["input_id"]], k)
                    self.assertEqual(input_nodes.tolist(), want["input_nodes"])
                    self.assertEqual([t.tolist() for t in pair.edges], [want["pair"]["src"], want["pair"]["dst"]])
                    self.assertEqual(pair.ndata["_ID"].tolist(), want["pair"]["nid"])
                    self.assertEqual(pair.edata["_ID"].tolist(), want["pair"]["eid"])
                    if k is not None:
                        neg = out[2]
                        self.assertEqual([t.tolist() for t in neg.edges], [want["neg"]["src"], want["neg"]["dst"]])
                        self.assertEqual(neg.ndata["_ID"].tolist(), want["neg"]["nid"])
                        self.assertEqual(neg.edata, {})
                    self.assertEqual(len(blocks), len(FANOUTS))
                    for blk, wb in zip(blocks, want["blocks"]):
                        self.assertEqual([t.tolist() for t in blk.edges], [wb["edge_src"], wb["edge_dst"]])
                        self.assertEqual((blk.num_src, blk.num_dst), (wb["num_src_nodes"], wb["num_dst_nodes"]))
                        self.assertEqual(blk.srcdata["_ID"].tolist(), wb["src_ids"])
                        self.assertEqual(blk.edata["_ID"].tolist(), wb["edge_ids"])
                    # Every pair-graph edge is its seed edge.
                    nid = pair.ndata["_ID"].numpy()
                    e = self.edge_index[:, pair.edata["_ID"].numpy()]
                    np.testing.assert_array_equal(nid[pair.edges[0].numpy()], e[0])
                    np.testing.assert_array_equal(nid[pair.edges[1].numpy()], e[1])


@unittest.skipIf(torch is None, "needs torch")
class EdgeSplits(unittest.TestCase):
    """from_pyg / from_arrays edge_splits: written, listed, read back, kept
    out of the node masks, and taken by LinkNeighborLoader by name."""

    @classmethod
    def setUpClass(cls):
        from tests.test_live import build_tools
        cls.tmp = tempfile.mkdtemp(prefix="ss-link-splits-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_round_trip(self):
        rng = np.random.default_rng(2)
        n = 50
        ei = rng.integers(0, n, (2, 400))
        train = rng.integers(0, n, (2, 30))
        val_ei, val_lab = rng.integers(0, n, (2, 10)), np.array([1, 0] * 5, np.float32)
        test_ei = torch.from_numpy(rng.integers(0, n, (2, 8)))
        split_data = types.SimpleNamespace(edge_label_index=torch.from_numpy(val_ei),
                                           edge_label=torch.from_numpy(val_lab))
        data = types.SimpleNamespace(edge_index=torch.from_numpy(ei), num_nodes=n,
                                     train_mask=torch.from_numpy(np.arange(n) < 20))
        out = os.path.join(self.tmp, "g")
        info = streamsampler.from_pyg(data, out, chunkify=self.chunkify,
                                      edge_splits={"train": train, "val": split_data, "test": (test_ei, None)})
        self.assertEqual(sorted(info.edge_splits), ["test", "train", "val"])
        self.assertEqual(sorted(info.edge_labels), ["val"])
        self.assertEqual(sorted(info.splits), ["train"])
        self.assertEqual(streamsampler.read_info(out), info)
        for name, want_ei, want_lab in (("train", train, None), ("val", val_ei, val_lab),
                                        ("test", test_ei.numpy(), None)):
            got_ei, got_lab = load_edge_split(out, name)
            self.assertEqual(got_ei.dtype, np.int64)
            np.testing.assert_array_equal(got_ei, want_ei)
            if want_lab is None:
                self.assertIsNone(got_lab)
            else:
                np.testing.assert_array_equal(got_lab, want_lab)
                self.assertEqual(got_lab.dtype, want_lab.dtype)
        # The node loader's masks are the node splits only.
        from streamsampler.pyg import NeighborLoader
        nl = NeighborLoader(out, [2], input_nodes=np.arange(5), batch_size=2, seed=0, binary=self.ss)
        self.addCleanup(nl.close)
        self.assertEqual(sorted(nl.masks), ["train_mask"])
        # The link loader takes a split by name, with its labels and file.
        lo = LinkNeighborLoader(out, [2], edge_label_index="val", neg_sampling="binary", batch_size=4, shuffle=True,
                                seed=0, binary=self.ss)
        self.addCleanup(lo.close)
        np.testing.assert_array_equal(lo.edges, val_ei)
        np.testing.assert_array_equal(lo.edge_label, val_lab + 1)  # binary, min 0: PyG's increment
        self.assertEqual(lo.edge_label.dtype, np.float32)
        args = lo.server.server_args
        self.assertEqual(args[args.index("--train-edges") + 1], os.path.join(out, "splits", "val.edges.npy"))
        self.assertEqual(args[args.index("--neg-amount") + 1], "1.0")

    def test_errors(self):
        n = 10
        ei = np.array([[0, 1], [1, 2]])
        cases = [
            ({"a": np.zeros((3, 4), np.int64)}, r"\[2, E\]"),
            ({"a": np.zeros((4, 2), np.int64)}, "transpose"),
            ({"a": np.array([[0, 10], [1, 1]])}, r"edge_label_index\[0\]\[1\] = 10"),
            ({"a": (np.array([[0, 1], [1, 2]]), np.ones(3))}, "edge_label of shape"),
            ({"a": np.array([[0.5, 1], [1, 2]])}, "integers"),
            ({"a/b": ei}, "edge split name"),
        ]
        for i, (splits, msg) in enumerate(cases):
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(ValueError, msg):
                    streamsampler.from_arrays(ei, n, os.path.join(self.tmp, "bad%d" % i), chunkify=self.chunkify,
                                              edge_splits=splits)
        with self.assertRaisesRegex(ValueError, "would be read as an edge split"):
            streamsampler.from_arrays(ei, n, os.path.join(self.tmp, "badmask"), chunkify=self.chunkify,
                                      masks={"x.edges": np.array([1])})


if __name__ == "__main__":
    unittest.main()


def link_server(tmp):
    """(streamsampler, chunkify) built from this checkout, if its server
    does link prediction (``serve --train-edges``, H3's side of issue 26);
    else unittest.SkipTest."""
    import subprocess
    from tests.test_live import build_tools
    ss, ck = build_tools(tmp)
    p = subprocess.run([ss, "serve", "-h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if "train-edges" not in p.stdout:
        raise unittest.SkipTest("this streamsampler serve has no --train-edges (link prediction not built in)")
    return ss, ck


@unittest.skipIf(torch is None, "needs torch")
class LiveLink(unittest.TestCase):
    """The link loaders against a real server built from this checkout
    (skipped where the server has no link prediction): the same renderings
    as above, the per-node samples read back from the server by a node
    sample of the minibatch's seeds in its epoch (DGL semantics shows every
    node's samples; test_loaders' method)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-link-live-")
        cls.ss, cls.chunkify = link_server(cls.tmp)
        rng = np.random.default_rng(9)
        n = 400
        u, v = rng.integers(0, n, 2000), rng.integers(0, n, 2000)
        e = np.stack([u, v])
        cls.n = n
        cls.edge_index = np.concatenate([e, e[::-1]], 1)  # edge i's reverse is i +- 2000
        cls.x = rng.standard_normal((n, 5)).astype(np.float32)
        cls.train = cls.edge_index[:, rng.choice(4000, 300, replace=False)]
        cls.val = np.concatenate([cls.edge_index[:, :50], rng.integers(0, n, (2, 50))], 1)
        cls.val_label = np.concatenate([np.ones(50), np.zeros(50)]).astype(np.float32)
        cls.graph = os.path.join(cls.tmp, "g")
        streamsampler.from_arrays(cls.edge_index, n, cls.graph, x=cls.x, chunkify=cls.chunkify, chunk_size="16KiB",
                                  edge_splits={"train": cls.train, "val": (cls.val, cls.val_label)})
        cls.perm = streamsampler.load_edge_perm(cls.graph)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def render(self, lo, b, edges, labels, mode):
        """pyg_link_reference's rendering of a live minibatch: positives
        from the loader's edges, negatives as the server drew them, samples
        read back from the server."""
        from tests.test_loaders import hop_samples, pyg_reference
        link = b.link
        p = len(link.input_id)
        seeds = b.seeds.astype(np.int64)
        pos = edges[:, link.input_id]
        src, dst = torch.from_numpy(pos[0]), torch.from_numpy(pos[1])
        if mode == "binary":
            neg = seeds[link.edge_label_index[:, p:]]
            src, dst = torch.cat([src, torch.from_numpy(neg[0])]), torch.cat([dst, torch.from_numpy(neg[1])])
        elif mode == "triplet":
            dst = torch.cat([dst, torch.from_numpy(seeds[np.asarray(link.dst_neg_index).reshape(-1)])])
        seed, inverse = torch.cat([src, dst]).unique(return_inverse=True)
        np.testing.assert_array_equal(seed.numpy(), seeds)
        if lo.shuffle:
            d = lo.client().sample(b.seeds, epoch=b.epoch, semantics="dgl")
        else:  # a split's nodes need not be training nodes: its own minibatch, seen with DGL semantics
            d = lo.client().split_batch(lo._split, b.index, semantics="dgl")
            np.testing.assert_array_equal(d.seeds, b.seeds)
        n_id, ei, nodes, edges_per_hop, _ = pyg_reference(seed.tolist(), hop_samples(d))
        want = {"n_id": np.array(n_id), "edge_index": ei, "num_sampled_nodes": nodes,
                "num_sampled_edges": edges_per_hop, "input_id": np.asarray(link.input_id)}
        if mode == "triplet":
            want.update(src_index=inverse[:p].numpy(), dst_pos_index=inverse[p:2 * p].numpy(),
                        dst_neg_index=inverse[2 * p:].view(p, -1).squeeze(-1).numpy())
        else:
            want["edge_label_index"] = inverse.view(2, -1).numpy()
            if labels is not None:
                want["edge_label"] = np.concatenate([labels[link.input_id],
                                                     np.zeros(want["edge_label_index"].shape[1] - p, labels.dtype)])
            elif mode == "binary":
                want["edge_label"] = np.concatenate([np.ones(p, np.float32),
                                                     np.zeros(want["edge_label_index"].shape[1] - p, np.float32)])
        return want

    def check(self, lo, edges, labels, mode, shuffle):
        from streamsampler.loader.link_loader import pyg_link_arrays
        ids = []
        for b in lo.batches():
            a = pyg_link_arrays(b, lo.edge_label, mode, self.perm)
            want = self.render(lo, b, edges, lo.edge_label, mode)
            for k, v in want.items():
                if isinstance(v, np.ndarray):
                    np.testing.assert_array_equal(a[k], v, err_msg=k)
                else:
                    self.assertEqual(a[k], v, k)
            cols = a["e_id"]
            np.testing.assert_array_equal(self.edge_index[0, cols], a["n_id"][a["edge_index"][0]])
            np.testing.assert_array_equal(self.edge_index[1, cols], a["n_id"][a["edge_index"][1]])
            np.testing.assert_array_equal(np.asarray(b.x), self.x[a["n_id"]])
            ids.append(a["input_id"])
        ids = np.concatenate(ids)
        if shuffle:
            np.testing.assert_array_equal(np.sort(ids), np.arange(edges.shape[1]))
        else:
            np.testing.assert_array_equal(ids, np.arange(edges.shape[1]))

    def test_pyg_training_modes(self):
        for mode, amount in (("none", 0.0), ("binary", 1.0), ("binary", 2.0), ("triplet", 2.0)):
            with self.subTest(mode=mode, amount=amount):
                ns = None if mode == "none" else (mode, amount)
                lo = LinkNeighborLoader(self.graph, FANOUTS, edge_label_index="train", neg_sampling=ns, batch_size=40,
                                        shuffle=True, seed=4, binary=self.ss)
                self.addCleanup(lo.close)
                for _ in range(2):  # two epochs
                    self.check(lo, self.train, None, mode, True)

    def test_pyg_evaluation_split(self):
        train = LinkNeighborLoader(self.graph, FANOUTS, edge_label_index="train", neg_sampling="binary",
                                   batch_size=40, shuffle=True, seed=4, binary=self.ss)
        self.addCleanup(train.close)
        val = LinkNeighborLoader(self.graph, FANOUTS, edge_label_index="val", batch_size=32, binary=self.ss)
        self.addCleanup(val.close)
        self.assertIs(val.server, train.server)  # one server: the training stream and the split
        self.check(val, self.val, self.val_label, "none", False)

    def test_dgl_exclusion(self):
        from streamsampler.dgl import DataLoader, NeighborSampler, negative_sampler
        rev = np.concatenate([np.arange(2000, 4000), np.arange(2000)])
        eids = np.random.default_rng(1).choice(4000, 400, replace=False)
        for exclude in (None, "self", "reverse_id"):
            with self.subTest(exclude=exclude):
                sampler = as_edge_prediction_sampler(NeighborSampler([-1, -1]), exclude=exclude,
                                                     reverse_eids=rev if exclude == "reverse_id" else None,
                                                     negative_sampler=negative_sampler.Uniform(2))
                lo = DataLoader(self.graph, eids, sampler, batch_size=50, shuffle=True, seed=3, binary=self.ss)
                self.addCleanup(lo.close)
                seen = 0
                for b in lo.batches():
                    a = lo.arrays(b)
                    pos = a["pair"]["eid"]
                    banned = set() if exclude is None else set(pos.tolist())
                    if exclude == "reverse_id":
                        banned |= set(rev[pos].tolist())
                    sampled = np.concatenate([blk["edge_ids"] for blk in a["blocks"]])
                    self.assertFalse(banned & set(sampled.tolist()), "excluded edges sampled")
                    if exclude is None:
                        # Full neighborhoods: the seed edges themselves are among the blocks' edges.
                        self.assertTrue(set(pos.tolist()) <= set(sampled.tolist()))
                    np.testing.assert_array_equal(self.edge_index[:, pos],
                                                  a["pair"]["nid"][np.stack([a["pair"]["src"], a["pair"]["dst"]])])
                    seen += len(pos)
                self.assertEqual(seen, 400)


try:
    import torch_geometric.data  # noqa: F401
    HAVE_PYG = True
except ImportError:
    HAVE_PYG = False


@unittest.skipUnless(torch is not None and HAVE_PYG, "needs torch_geometric (the GPU machine has it)")
class RealPygData(unittest.TestCase):
    """The drop-in's minibatches as real torch_geometric Data (the other
    tests use a stand-in): the same fields and values as the rendering,
    and ``batch.to(device)`` keeps them."""

    def test_fields(self):
        tmp = tempfile.mkdtemp(prefix="ss-link-realpyg-")
        self.addCleanup(shutil.rmtree, tmp, True)
        name, edge_index, n = bundled_graphs()[0]
        rng = np.random.default_rng(0)
        node_labels = rng.integers(0, 3, n)
        g, indptr, indices, perm = fake_graph(tmp, "g", edge_index, n, node_labels)
        eli = edge_index[:, rng.choice(edge_index.shape[1], 100, replace=False)]
        for mode, amount in (("binary", 1.0), ("triplet", 2.0)):
            with self.subTest(mode=mode):
                lo = LinkNeighborLoader(g, FANOUTS, edge_label_index=eli, neg_sampling=(mode, amount), batch_size=32,
                                        shuffle=True, seed=2, pin_memory=False)
                self.addCleanup(lo.close)
                fake = FakeLinkClient(indptr, indices, n, FANOUTS, eli, 32, seed=2, mode=mode, amount=amount)
                lo._client = fake
                for data, rec in zip(lo, fake.log):
                    want = pyg_link_reference(rec, fake, perm, None, mode, node_labels)
                    self.assertEqual(sorted(data.keys()), sorted(set(want) | {"edge_index", "num_nodes"})
                                     if "num_nodes" in data.keys() else sorted(set(want) | {"edge_index"}))
                    self.assertEqual(data.num_nodes, len(want["n_id"]))
                    for k, v in want.items():
                        got = data[k]
                        if torch.is_tensor(v):
                            self.assertTrue(torch.equal(got, v), k)
                            self.assertEqual(got.dtype, v.dtype, k)
                        else:
                            self.assertEqual(got, v, k)
                    moved = data.to("cpu")
                    self.assertTrue(torch.equal(moved.n_id, want["n_id"]))
