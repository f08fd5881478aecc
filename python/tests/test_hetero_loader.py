"""The heterogeneous drop-ins (streamsampler.pyg.NeighborLoader over a
HeteroData or a heterogeneous graph directory, streamsampler.dgl.DataLoader
over a heterograph) against a live heterogeneous server built from this
checkout, with fakes of torch_geometric's HeteroData and dgl.create_block
(tests/fakes.py): every field of a minibatch against the raw data the graph
was imported from (n_id maps, edges are raw edges of their relation, e_id
names the raw edge_index column, x/y/mask rows, batch_size/input_id,
num_sampled_* sums, PyG's hop structure), an epoch covers the training set
once, shuffle=False keeps the order, loaders share one server, dict
num_neighbors reach the server as --relation-fanouts; and, without a
server, PyG's and DGL's fanout rules and the dispatch's errors."""

import csv
import gzip
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np
import torch

import streamsampler
import streamsampler.dgl
import streamsampler.pyg
from streamsampler.loader.hetero_dgl_loader import dgl_relation_fanouts
from streamsampler.loader.hetero_loader import HeteroNeighborLoader, relation_fanouts, server_fanouts

from . import fakes
from .test_live import REPO, build_tools

RAW = os.path.join(REPO, "testdata", "hetero-mini", "raw")
FANOUTS = [4, 2]
SPECIAL = ("company", "likes", "politician")


def _csv(path):
    with gzip.open(path, "rt") as f:
        return np.array([[int(float(v)) for v in row] for row in csv.reader(f)], dtype=np.int64)


def mini_hetero_data():
    """testdata/hetero-mini as a (fake) HeteroData: every raw relation and
    its reverse (rev_likes) for relations between two types, x of company
    and tvshow (float32), y of company (its feature 0 mod 5, -1 for every
    7th) and of politician (labels without features), train/val/test masks
    of company."""
    data = fakes.HeteroData()
    with gzip.open(os.path.join(RAW, "num-node-dict.csv.gz"), "rt") as f:
        types, counts = [line.strip().split(",") for line in f.read().strip().splitlines()]
    for t, c in zip(types, counts):
        data[t].num_nodes = int(c)
    for t in ("company", "tvshow"):
        data[t].x = torch.from_numpy(_csv(os.path.join(RAW, "node-feat", t, "node-feat.csv.gz")).astype(np.float32))
    n = data["company"].num_nodes
    y = data["company"].x[:, 0].long() % 5
    y[::7] = -1
    data["company"].y = y
    data["politician"].y = torch.arange(data["politician"].num_nodes) % 3
    rng = np.random.default_rng(0)
    part = rng.integers(0, 3, n)
    for i, name in enumerate(("train", "val", "test")):
        data["company"][name + "_mask"] = torch.from_numpy(part == i)
    rel_dir = os.path.join(RAW, "relations")
    for name in sorted(os.listdir(rel_dir)):
        s, r, d = name.split("___")
        ei = torch.from_numpy(_csv(os.path.join(rel_dir, name, "edge.csv.gz"))).t().contiguous()
        data[s, r, d].edge_index = ei
        if s != d:
            data[d, "rev_" + r, s].edge_index = ei.flip(0)
    return data


def set_up_mini(cls, prefix):
    """A test class's hetero-mini: its temporary directory (cls.tmp), the
    tools built (cls.ss, cls.ck), PyG's and DGL's stand-ins patched in
    (cls.patch, stopped by tear_down_mini), the HeteroData (cls.data) and
    its graph directory (cls.graph)."""
    cls.tmp = tempfile.mkdtemp(prefix=prefix)
    cls.ss, cls.ck = build_tools(cls.tmp)
    cls.patch = mock.patch.dict(sys.modules, {**fakes.fake_pyg_hetero(), **fakes.fake_dgl_hetero()})
    cls.patch.start()
    cls.data = mini_hetero_data()
    cls.graph = streamsampler.from_pyg(cls.data, os.path.join(cls.tmp, "graph"), chunkify=cls.ck,
                                       chunk_size="64KiB").path


def tear_down_mini(cls):
    cls.patch.stop()
    shutil.rmtree(cls.tmp, ignore_errors=True)


class HeteroLoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        set_up_mini(cls, "ss-hetero-loader-")
        cls.edges = {et: cls.data[et].edge_index.numpy() for et in cls.data.edge_types}
        cls.edge_sets = {et: set(zip(e[0].tolist(), e[1].tolist())) for et, e in cls.edges.items()}
        cls.train = np.flatnonzero(cls.data["company"].train_mask.numpy())

    @classmethod
    def tearDownClass(cls):
        tear_down_mini(cls)

    def loader(self, **kw):
        args = dict(num_neighbors=FANOUTS, input_nodes=("company", self.data["company"].train_mask), batch_size=64,
                    shuffle=True, seed=3, binary=self.ss)
        args.update(kw)
        lo = streamsampler.pyg.NeighborLoader(self.graph, **args)
        self.addCleanup(lo.close)
        return lo

    def fanout(self, fan, et, hop):
        return fan[et][hop] if isinstance(fan, dict) else fan[hop]

    def check_data(self, b, nodes, fan=FANOUTS):
        """Every field of HeteroData minibatch ``b`` against the raw data."""
        L = 2
        self.assertEqual(sorted(b.node_types), sorted(self.data.node_types))
        self.assertEqual(sorted(b.edge_types), sorted(self.data.edge_types))
        c = b["company"]
        bs = c.batch_size
        self.assertEqual(c.n_id.dtype, torch.int64)
        np.testing.assert_array_equal(nodes[c.input_id.numpy()], c.n_id[:bs].numpy())
        starts = {}
        for t in b.node_types:
            st, src = b[t], self.data[t]
            n_id = st.n_id.numpy()
            self.assertEqual(len(np.unique(n_id)), len(n_id), t)
            self.assertEqual(len(st.num_sampled_nodes), L + 1, t)
            self.assertEqual(sum(st.num_sampled_nodes), len(n_id), t)
            self.assertEqual(st.num_nodes, len(n_id))
            if t != "company":
                self.assertEqual(st.num_sampled_nodes[0], 0, t)
                self.assertNotIn("batch_size", st.keys())
            starts[t] = np.cumsum([0] + list(st.num_sampled_nodes))
            for key in ("x", "y", "train_mask", "val_mask", "test_mask"):
                if key in src.keys():
                    self.assertIn(key, st.keys(), (t, key))
                    want = src[key][torch.from_numpy(n_id)]
                    self.assertTrue(torch.equal(st[key], want.to(st[key].dtype)), (t, key))
                else:
                    self.assertNotIn(key, st.keys(), (t, key))
        reached = {t: np.zeros(len(b[t].n_id), bool) for t in b.node_types}
        reached["company"][:bs] = True
        for et in b.edge_types:
            s, _, d = et
            st = b[et]
            ei = st.edge_index.numpy()
            self.assertEqual(st.edge_index.dtype, torch.int64)
            self.assertEqual(sum(st.num_sampled_edges), ei.shape[1], et)
            self.assertEqual(len(st.num_sampled_edges), L, et)
            u, v = b[s].n_id.numpy()[ei[0]], b[d].n_id.numpy()[ei[1]]
            # e_id names the imported edge_index's column: exactly (u, v).
            raw = self.edges[et][:, st.e_id.numpy()]
            np.testing.assert_array_equal(raw[0], u, err_msg=str(et))
            np.testing.assert_array_equal(raw[1], v, err_msg=str(et))
            reached[s][ei[0]] = True
            lo = 0
            for h, k in enumerate(st.num_sampled_edges):
                dst, src = ei[1, lo:lo + k], ei[0, lo:lo + k]
                lo += k
                if k == 0:
                    continue
                # PyG: hop h+1 expands the nodes first reached at hop h.
                self.assertTrue(np.all((dst >= starts[d][h]) & (dst < starts[d][h + 1])), (et, h))
                self.assertTrue(np.all(src < starts[s][h + 2]), (et, h))
                f = self.fanout(fan, et, h)
                self.assertLessEqual(int(np.bincount(dst).max()), f if f >= 0 else 1 << 30, (et, h))
                # Sampling without replacement: an edge at most once per node and hop.
                pairs = set(zip(src.tolist(), dst.tolist()))
                self.assertEqual(len(pairs), k, (et, h))
        for t, r in reached.items():
            self.assertTrue(r.all(), "%s: every node of n_id is a seed or a sampled neighbor" % t)
        self.check_order(b, bs)

    def check_order(self, b, bs):
        """PyG's n_id order exactly (pyg-lib's hetero sample, as
        reference_hetero_loader.py renders it): hop by hop, edge type by
        edge type in the graph's order, edge by edge, a source not yet in
        its type's n_id is appended; so each type's new nodes per hop are
        num_sampled_nodes, and the hop's edges are each edge type's
        num_sampled_edges slice."""
        nxt = {t: (bs if t == "company" else 0) for t in b.node_types}
        offs = {et: 0 for et in b.edge_types}
        for h in range(len(b["company"].num_sampled_nodes) - 1):
            before = dict(nxt)
            for et in self.data.edge_types:  # the graph's (from_pyg's) order
                k = b[et].num_sampled_edges[h]
                for u in b[et].edge_index[0, offs[et]:offs[et] + k].tolist():
                    self.assertLessEqual(u, nxt[et[0]], (et, h))
                    if u == nxt[et[0]]:
                        nxt[et[0]] += 1
                offs[et] += k
            for t in b.node_types:
                self.assertEqual(nxt[t] - before[t], b[t].num_sampled_nodes[h + 1], (t, h))

    def test_training_epochs(self):
        lo = self.loader()
        self.assertIsInstance(lo, HeteroNeighborLoader)
        self.assertIsInstance(lo, streamsampler.pyg.NeighborLoader)
        self.assertEqual(len(lo), -(-len(self.train) // 64))
        orders = []
        for _ in range(2):
            seen = []
            for b in lo:
                self.check_data(b, self.train)
                seen.extend(b["company"].n_id[:b["company"].batch_size].tolist())
            self.assertEqual(sorted(seen), self.train.tolist())  # every training node once
            orders.append(seen)
        self.assertNotEqual(orders[0], orders[1])  # a fresh shuffle per epoch

    def test_break_leaves_epoch(self):
        lo = self.loader(seed=11)
        for b in lo:
            break
        seen = [v for b in lo for v in b["company"].n_id[:b["company"].batch_size].tolist()]
        self.assertEqual(sorted(seen), self.train.tolist())
        self.assertEqual(int(lo.client().epoch_info()["epoch"]), 2)

    def test_drop_last(self):
        lo = self.loader(seed=12, drop_last=True)
        self.assertEqual(len(lo), len(self.train) // 64)
        sizes = [b["company"].batch_size for b in lo]
        self.assertEqual(sizes, [64] * (len(self.train) // 64))

    def test_dict_num_neighbors(self):
        fan = {et: [3, 2] for et in self.data.edge_types}
        fan[SPECIAL] = [1, 1]
        del fan[("tvshow", "rev_likes", "company")]
        fan["tvshow__rev_likes__company"] = [2, 2]  # PyG's string form of an edge type
        fan[("nobody", "likes", "nobody")] = [5, 5]  # no such edge type: ignored, as PyG does
        lo = self.loader(num_neighbors=fan, seed=4)
        self.assertIn(("company___likes___politician", (1, 1)), lo.server.relation_fanouts)
        self.assertEqual(lo.server.fanouts, [3, 2])
        want = {et: [3, 2] for et in self.data.edge_types}
        want[SPECIAL] = [1, 1]
        want[("tvshow", "rev_likes", "company")] = [2, 2]
        self.assertEqual(lo.fanouts, want)
        n = 0
        for b in lo:
            self.check_data(b, self.train, fan=want)
            n += 1
        self.assertEqual(n, len(lo))
        info = lo.client().epoch_info()["hetero"]
        served = {tuple(r): f for r, f in zip(info["relations"], info["fanouts"])}
        self.assertEqual(served, want)

    def test_zero_fanout(self):
        # PyG's 0: the edge type is not sampled at that hop; it reaches the
        # server as --relation-fanouts (which takes 0) and no edge of it
        # comes at hop 1.
        fan = {et: [3, 2] for et in self.data.edge_types}
        fan[SPECIAL] = [0, 2]
        lo = self.loader(num_neighbors=fan, seed=5)
        n = 0
        for b in lo:
            self.check_data(b, self.train, fan=fan)
            self.assertEqual(int(b[SPECIAL].num_sampled_edges[0]), 0)
            n += 1
        self.assertEqual(n, len(lo))
        info = lo.client().epoch_info()["hetero"]
        served = {tuple(r): f for r, f in zip(info["relations"], info["fanouts"])}
        self.assertEqual(served[SPECIAL], [0, 2])

    def test_shared_server(self):
        c = self.data["company"]
        train = self.loader(seed=5)
        val = self.loader(seed=5, input_nodes=("company", c.val_mask), shuffle=False)
        test = self.loader(seed=5, input_nodes=("company", c.test_mask.nonzero().view(-1)), shuffle=False)
        other = self.loader(seed=5, num_neighbors=[4, 3])
        self.assertIs(train.server, val.server)
        self.assertIs(train.server, test.server)
        self.assertIsNot(train.server, other.server)
        # One process serves the training stream and both splits.
        next(iter(train))
        val_ids = np.flatnonzero(c.val_mask.numpy())
        got = [v for b in val for v in b["company"].n_id[:b["company"].batch_size].tolist()]
        self.assertEqual(got, val_ids.tolist())
        self.assertIs(train.server.local, val.server.local)
        self.assertEqual(train.client().epoch_info()["hetero"]["train_type"], "company")

    def test_split_order(self):
        c = self.data["company"]
        val_ids = np.flatnonzero(c.val_mask.numpy())[::-1].copy()  # any order: kept
        lo = self.loader(seed=6, input_nodes=("company", val_ids), shuffle=False, batch_size=50)
        self.assertEqual(len(lo), -(-len(val_ids) // 50))
        for _ in range(2):
            seen = []
            for b in lo:
                self.check_data(b, val_ids)
                seen.extend(b["company"].n_id[:b["company"].batch_size].tolist())
            self.assertEqual(seen, val_ids.tolist())

    def test_dgl_split(self):
        dgl = sys.modules["dgl"]
        ids = np.flatnonzero(self.data["company"].test_mask.numpy())[::-1].copy()
        lo = streamsampler.dgl.DataLoader(self.graph, {"company": torch.from_numpy(ids)},
                                          streamsampler.dgl.NeighborSampler([2, 3]), batch_size=100, seed=8,
                                          binary=self.ss)
        self.addCleanup(lo.close)
        self.assertEqual(len(lo), -(-len(ids) // 100))
        for _ in range(2):
            seen = []
            for _, out, blocks in lo:
                seen.extend(out["company"].tolist())
                np.testing.assert_array_equal(blocks[-1].dstnodes["company"].data[dgl.NID].numpy(),
                                              out["company"].numpy())
            self.assertEqual(seen, ids.tolist())

    def test_from_heterodata(self):
        # The HeteroData itself: written to a temporary directory once.
        data = mini_hetero_data()
        with mock.patch.dict(os.environ, {"STREAMSAMPLER_CHUNKIFY": self.ck}):
            lo = streamsampler.pyg.NeighborLoader(data, num_neighbors=[2], input_nodes=("company", None),
                                                  batch_size=1000, shuffle=True, seed=1, binary=self.ss)
            lo2 = streamsampler.pyg.NeighborLoader(data, num_neighbors=[2], input_nodes="company", batch_size=1000,
                                                   shuffle=True, seed=1, binary=self.ss)
        self.addCleanup(lo.close)
        self.addCleanup(lo2.close)
        self.assertEqual(lo.graph, lo2.graph)
        self.assertIs(lo.server, lo2.server)
        b = next(iter(lo))
        self.assertEqual(b["company"].batch_size, 1000)
        self.assertEqual(len(b["company"].num_sampled_nodes), 2)

    def device_pair(self, make, epochs=2):
        """``make(**kw)`` with device="cpu" (the device path: every
        minibatch moved through the ring in the background thread) and
        without, on two servers of the same seed: the same minibatches,
        epoch after epoch."""
        a = make(device="cpu", server_args=["--max-inflight", "300MiB"])
        b = make(server_args=["--max-inflight", "301MiB"])
        for lo in (a, b):
            self.addCleanup(lo.close)
        self.assertIsNot(a.server, b.server)
        for e in range(epochs):
            n = 0
            want = iter(b)
            for got in a:
                fakes.assert_same(self, got, next(want), "epoch %d minibatch %d" % (e, n))
                n += 1
            self.assertIsNone(next(want, None), "device=None has more minibatches")
            self.assertEqual(n, len(b))
        self.assertEqual(a.transfer.stats.minibatches, epochs * len(a))
        self.assertGreater(a.transfer.stats.bytes_staged + a.transfer.stats.bytes_direct, 0)
        return a

    def test_device(self):
        """device= moves each HeteroData through the background thread:
        the same minibatches as without, for training and for a split."""
        for shuffle, nodes in ((True, self.data["company"].train_mask), (False, self.data["company"].val_mask)):
            self.device_pair(lambda **kw: self.loader(input_nodes=("company", nodes), shuffle=shuffle, seed=5, **kw))

    def test_dgl_device(self):
        """DGL's heterograph blocks moved by their .to in the background
        thread: the same blocks."""
        sampler = streamsampler.dgl.NeighborSampler([3, 2])
        a = self.device_pair(lambda **kw: streamsampler.dgl.DataLoader(
            self.graph, {"company": self.train}, sampler, batch_size=64, shuffle=True, seed=9, binary=self.ss, **kw))
        _, _, blocks = next(iter(a))
        self.assertEqual(len(blocks), 2)

    def test_dgl_blocks(self):
        dgl = sys.modules["dgl"]
        layers = [{et: (1 if et == SPECIAL else 3) for et in self.data.edge_types}, 2]  # input layer first
        sampler = streamsampler.dgl.NeighborSampler(layers)
        lo = streamsampler.dgl.DataLoader(self.graph, {"company": self.train}, sampler, batch_size=64, shuffle=True,
                                          seed=7, binary=self.ss)
        self.addCleanup(lo.close)
        self.assertIsInstance(lo, streamsampler.dgl.DataLoader)
        self.assertEqual(lo.fanouts[SPECIAL], [2, 1])  # hop order: the seeds' hop first
        seen = []
        for input_nodes, output_nodes, blocks in lo:
            self.assertEqual(len(blocks), 2)
            self.assertEqual(list(output_nodes), ["company"])
            seeds = output_nodes["company"].numpy()
            seen.extend(seeds.tolist())
            last, first = blocks[-1], blocks[0]
            np.testing.assert_array_equal(last.dstnodes["company"].data[dgl.NID].numpy(), seeds)
            for t in self.data.node_types:
                np.testing.assert_array_equal(input_nodes[t].numpy(), first.srcnodes[t].data[dgl.NID].numpy())
                if t != "company":
                    self.assertEqual(last.num_dst_nodes(t), 0)
                for i, blk in enumerate(blocks):
                    src = blk.srcnodes[t].data[dgl.NID].numpy()
                    dst = blk.dstnodes[t].data[dgl.NID].numpy()
                    np.testing.assert_array_equal(src[:len(dst)], dst)  # to_block: dst nodes first
                    self.assertEqual(len(np.unique(src)), len(src))
                    if i + 1 < len(blocks):
                        np.testing.assert_array_equal(dst, blocks[i + 1].srcnodes[t].data[dgl.NID].numpy())
                feat = first.srcnodes[t].data.get("feat")
                if "x" in self.data[t].keys():
                    self.assertTrue(torch.equal(feat, self.data[t].x[input_nodes[t]]), t)
                else:
                    self.assertIsNone(feat)
                label = last.dstnodes[t].data.get("label")
                if "y" in self.data[t].keys():
                    dst = last.dstnodes[t].data[dgl.NID]
                    self.assertTrue(torch.equal(label, self.data[t].y[dst]), t)
                else:
                    self.assertIsNone(label)
            self.assertTrue(torch.equal(first.srcdata["feat"]["company"], self.data["company"].x[input_nodes["company"]]))
            for h, blk in enumerate(reversed(blocks)):  # hop h+1
                for et in self.data.edge_types:
                    s, _, d = et
                    es, ed = blk.edges_of(et)
                    u = blk.srcnodes[s].data[dgl.NID][es].numpy()
                    v = blk.dstnodes[d].data[dgl.NID][ed].numpy()
                    raw = self.edges[et][:, blk.edges[et].data[dgl.EID].numpy()]
                    np.testing.assert_array_equal(raw[0], u, err_msg=str(et))
                    np.testing.assert_array_equal(raw[1], v, err_msg=str(et))
                    if len(ed):
                        self.assertLessEqual(int(np.bincount(ed.numpy()).max()), lo.fanouts[et][h], (et, h))
        self.assertEqual(sorted(seen), self.train.tolist())


class FanoutRules(unittest.TestCase):
    """PyG's and DGL's per-edge-type fanout rules, without a server."""

    ETS = [("a", "to", "b"), ("b", "rev_to", "a"), ("a", "self", "a")]

    def test_pyg(self):
        ets = self.ETS
        self.assertEqual(relation_fanouts([5, 3], ets), {et: [5, 3] for et in ets})
        got = relation_fanouts({ets[0]: [5, 3], "b__rev_to__a": [0, 2], ets[2]: [-1, 1], ("x", "y", "z"): [1]}, ets)
        self.assertEqual(got, {ets[0]: [5, 3], ets[1]: [0, 2], ets[2]: [-1, 1]})
        self.assertEqual(relation_fanouts({ets[0]: [5, 3]}, ets, default=[1, 1]),
                         {ets[0]: [5, 3], ets[1]: [1, 1], ets[2]: [1, 1]})
        with self.assertRaisesRegex(ValueError, "Missing number of neighbors for edge type"):
            relation_fanouts({ets[0]: [5, 3], ets[1]: [1, 1]}, ets)
        with self.assertRaisesRegex(ValueError, "Number of hops must be the same"):
            relation_fanouts({ets[0]: [5, 3], ets[1]: [1], ets[2]: [1, 1]}, ets)
        with self.assertRaisesRegex(ValueError, "not an edge type"):
            relation_fanouts({("a", "b"): [1]}, ets, default=[1])
        with self.assertRaisesRegex(ValueError, "fanout 65"):
            relation_fanouts([65], ets)
        with self.assertRaisesRegex(ValueError, "default"):
            relation_fanouts([1], ets, default=[1])

        class NumNeighbors:  # PyG's, duck-typed
            def __init__(self, values, default=None):
                self.values, self.default = values, default

        self.assertEqual(relation_fanouts(NumNeighbors({ets[2]: [7]}, default=[2]), ets),
                         {ets[0]: [2], ets[1]: [2], ets[2]: [7]})

    def test_server_flags(self):
        ets = self.ETS
        self.assertEqual(server_fanouts({ets[0]: [5, 3], ets[1]: [5, 3], ets[2]: [1, 1]}),
                         ([5, 3], [("a___self___a", [1, 1])]))
        # 0 is not a --fanouts value: the default comes from the others.
        self.assertEqual(server_fanouts({ets[0]: [0, 3], ets[1]: [2, 2], ets[2]: [0, 3]}),
                         ([2, 2], [("a___to___b", [0, 3]), ("a___self___a", [0, 3])]))
        d1, r1 = server_fanouts({ets[0]: [1], ets[1]: [2], ets[2]: [3]})
        d2, r2 = server_fanouts({ets[2]: [3], ets[1]: [2], ets[0]: [1]})
        self.assertEqual(d1, [1])
        self.assertEqual(d2, [3])  # the first of equally common lists, in the map's order

    def test_dgl(self):
        ets = self.ETS
        # Input layer first; hop order reversed. A unique relation name is a key.
        got = dgl_relation_fanouts([{ets[0]: 1, "rev_to": 2, "self": -1}, 4], ets)
        self.assertEqual(got, {ets[0]: [4, 1], ets[1]: [4, 2], ets[2]: [4, -1]})
        with self.assertRaisesRegex(ValueError, "Fan-out must be specified for each edge type"):
            dgl_relation_fanouts([{ets[0]: 1}], ets)
        with self.assertRaisesRegex(ValueError, "does not exist"):
            dgl_relation_fanouts([{ets[0]: 1, ets[1]: 1, ("a", "zz", "a"): 1}], ets)
        ambiguous = ets + [("b", "to", "b")]
        with self.assertRaisesRegex(ValueError, "ambiguous"):
            dgl_relation_fanouts([{"to": 1, ets[1]: 1, ets[2]: 1, ("b", "to", "b"): 1}], ambiguous)
        with self.assertRaisesRegex(ValueError, "given twice"):
            dgl_relation_fanouts([{ets[0]: 1, "to": 2, ets[2]: 1}], ets)


class Dispatch(unittest.TestCase):
    """NeighborLoader / DataLoader pick the heterogeneous loader, and the
    mismatched arguments are clear errors (no server is started)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-hetero-dispatch-")
        cls.het = os.path.join(cls.tmp, "het")
        os.makedirs(cls.het)
        with open(os.path.join(cls.het, "hetero.json"), "w") as f:
            f.write('{"version": 1, "node_types": [{"name": "a", "count": 4}, {"name": "b", "count": 3}], '
                    '"relations": [{"src": "a", "rel": "to", "dst": "b", "dir": "relations/a___to___b"}]}')
        cls.homo = os.path.join(cls.tmp, "homo")
        _, ck = build_tools(cls.tmp)
        streamsampler.from_arrays(np.array([[0, 1], [1, 2]]), 3, cls.homo, chunkify=ck)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_errors(self):
        NL = streamsampler.pyg.NeighborLoader
        with self.assertRaisesRegex(ValueError, "graph is homogeneous"):
            NL(self.homo, [2], input_nodes=("a", None))
        with self.assertRaisesRegex(ValueError, "graph is homogeneous"):
            NL(self.homo, {("a", "to", "b"): [2]})
        with self.assertRaisesRegex(ValueError, "names no node type"):
            NL(self.het, [2], input_nodes=np.ones(4, bool))
        with self.assertRaisesRegex(ValueError, "needs input_nodes"):
            NL(self.het, [2])
        with self.assertRaisesRegex(ValueError, "not a node type"):
            NL(self.het, [2], input_nodes=("c", None))
        with self.assertRaisesRegex(ValueError, "a mask of shape"):
            NL(self.het, [2], input_nodes=("a", np.ones(3, bool)))
        with self.assertRaisesRegex(NotImplementedError, "replace"):
            NL(self.het, [2], input_nodes="a", replace=True)
        with self.assertRaisesRegex(ValueError, "delivered to 'cuda'"):
            NL(self.het, [2], input_nodes="a", device="meta")
        with self.assertRaisesRegex(TypeError, "pin_memory"):
            NL(self.het, [2], input_nodes="a", pin_memory="yes")
        with self.assertRaisesRegex(TypeError, "unexpected keyword"):
            NL(self.het, [2], input_nodes="a", bogus=1)
        DL, NS = streamsampler.dgl.DataLoader, streamsampler.dgl.NeighborSampler
        with self.assertRaisesRegex(ValueError, "graph is homogeneous"):
            DL(self.homo, {"a": [0]}, NS([2]))
        with self.assertRaisesRegex(ValueError, "dict of one node type"):
            DL(self.het, [0, 1], NS([2]))
        with self.assertRaisesRegex(ValueError, "per-edge-type fanouts"):
            DL(self.homo, [0, 1], NS([{("a", "to", "b"): 2}]))
        with self.assertRaisesRegex(ValueError, "Fan-out must be specified"):
            DL(self.het, {"a": [0]}, NS([{("a", "to", "b"): 2, ("b", "x", "a"): 1}]))


if __name__ == "__main__":
    unittest.main()
