"""The framework loaders (streamsampler.pyg, streamsampler.dgl and the
NodeLoader of streamsampler.loader they share) against a live server built from this checkout,
numpy only: PyG's hop semantics against an independent rendering of the
algorithm, edge ids against the stored CSR and edge_index, epochs per
iter(), splits from the same server, input_id, drop_last and len; the DGL
blocks' arrays against dgl.create_block's conventions by hand."""

import os
import shutil
import tempfile
import unittest

import numpy as np

import streamsampler
from streamsampler.batch import Batch, Hop
from streamsampler.dgl import DataLoader, MultiLayerFullNeighborSampler, NeighborSampler
from streamsampler.loader.dgl_loader import as_sampler
from streamsampler.graph import read_csr
from streamsampler.loader import NodeLoader
from streamsampler.pyg import NeighborLoader
from tests.test_live import build_tools

N = 600
FANOUTS = [5, 3]

try:
    import torch  # noqa: F401
    import torch_geometric.data  # noqa: F401
    HAVE_PYG = True
except ImportError:
    HAVE_PYG = False


def pyg_reference(seeds, samples):
    """PyG's NeighborLoader semantics from issue 13's statement, on the
    given per-hop samples (node -> its sampled neighbors in slot order):
    n_id starts with the seeds; for each hop, each node first reached at
    the previous hop (the seeds at hop 1) in n_id order, each of its
    samples: a new node is appended to n_id; the edge (sample -> node) is
    emitted in local ids. Returns n_id, edge_index [2, E], the new nodes
    and edges per hop, and each edge's (node, slot)."""
    n_id = [int(s) for s in seeds]
    local = {v: i for i, v in enumerate(n_id)}
    src, dst, slots = [], [], []
    nodes, edges = [len(n_id)], []
    lo, hi = 0, len(n_id)
    for h, hop in enumerate(samples):
        e0 = len(src)
        for i in range(lo, hi):
            for t, u in enumerate(hop[n_id[i]]):
                if u not in local:
                    local[u] = len(n_id)
                    n_id.append(u)
                src.append(local[u])
                dst.append(i)
                slots.append((h, n_id[i], t))
        nodes.append(len(n_id) - hi)
        edges.append(len(src) - e0)
        lo, hi = hi, len(n_id)
    return n_id, np.array([src, dst], dtype=np.int64).reshape(2, -1), nodes, edges, slots


def hop_samples(dgl_batch):
    """Each hop's samples (node -> sampled neighbors in slot order) as a
    DGL-semantics minibatch shows them: every node a hop expands, with
    its edges in slot order."""
    out = []
    for h in dgl_batch.hops:
        s = {int(v): [] for v in h.dst}
        for es, ed in zip(h.edge_src.tolist(), h.edge_dst.tolist()):
            s[int(h.dst[ed])].append(int(h.src[es]))
        out.append(s)
    return out


class Loaders(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-loaders-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        rng = np.random.default_rng(5)
        # A directed multigraph: repeated edges (so a neighbor id does not
        # tell which stored edge was sampled) and self-loops.
        u = rng.integers(0, N, 5000)
        v = rng.integers(0, N, 5000)
        u[:300], v[:300] = u[300:600], v[300:600]  # 300 repeated columns
        cls.edge_index = np.stack([u, v])
        cls.x = rng.standard_normal((N, 6)).astype(np.float32)
        cls.y = rng.integers(0, 4, N)
        perm = rng.permutation(N)
        cls.train, cls.val, cls.test = np.sort(perm[:200]), perm[200:330], np.sort(perm[330:400])
        cls.graph = os.path.join(cls.tmp, "g")
        streamsampler.from_arrays(cls.edge_index, N, cls.graph, x=cls.x, y=cls.y,
                                  masks={"train": cls.train, "val": cls.val, "test": cls.test},
                                  chunkify=cls.chunkify, chunk_size="16KiB")
        cls.indptr, cls.indices = read_csr(cls.graph)
        cls.edge_perm = streamsampler.load_edge_perm(cls.graph)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def loader(self, nodes, shuffle, semantics="pyg", batch_size=32, drop_last=False, fanouts=FANOUTS, seed=3,
               fresh=None):
        lo = NodeLoader(self.graph, fanouts, batch_size, nodes, shuffle, drop_last, semantics, None, seed=seed,
                        binary=self.ss, fresh=fresh)
        self.addCleanup(lo.close)
        return lo

    def check_edge_ids(self, batch):
        """Every edge's id is a stored edge from the edge's source to its
        destination (in-edges: the source is in the destination's
        adjacency), and edge_perm maps it to such a column of edge_index."""
        if not batch.has_edge_ids:
            self.skipTest("the server sends no edge ids")
        a = streamsampler.pyg_arrays(batch)
        n_id, ei, e_id = a["n_id"], a["edge_index"], a["e_id"]
        s, d = n_id[ei[0]], n_id[ei[1]]
        row = np.searchsorted(self.indptr, e_id, side="right") - 1
        np.testing.assert_array_equal(row, d)
        np.testing.assert_array_equal(self.indices[e_id], s)
        cols = self.edge_perm[e_id]
        np.testing.assert_array_equal(self.edge_index[0, cols], s)
        np.testing.assert_array_equal(self.edge_index[1, cols], d)

    def test_pyg_semantics_against_reference(self):
        lo = self.loader(self.train, shuffle=True)
        c = lo.client()
        n = 0
        for b in lo.batches():
            self.assertEqual(b.semantics, "pyg")
            # The same seeds with DGL semantics from the same epoch show
            # every node's samples; the reference runs on them.
            d = c.sample(b.seeds, epoch=b.epoch, semantics="dgl")
            n_id, ei, nodes, edges, slots = pyg_reference(b.seeds, hop_samples(d))
            a = streamsampler.pyg_arrays(b)
            self.assertEqual(a["n_id"].tolist(), n_id)
            np.testing.assert_array_equal(a["edge_index"], ei)
            self.assertEqual((a["num_sampled_nodes"], a["num_sampled_edges"]), (nodes, edges))
            self.assertEqual(a["batch_size"], len(b.seeds))
            np.testing.assert_array_equal(lo.nodes[b.input_id], b.seeds)
            # The feature rows are n_id's.
            np.testing.assert_array_equal(b.x, self.x[a["n_id"]])
            np.testing.assert_array_equal(b.y, self.y[b.seeds])
            if b.has_edge_ids:
                self.check_edge_ids(b)
                # The same (node, slot) has the same edge id in both.
                dgl_ids = {}
                for h, hop in enumerate(d.hops):
                    seen = {}
                    for es, ed, e in zip(hop.edge_src.tolist(), hop.edge_dst.tolist(), hop.e_id.tolist()):
                        v = int(hop.dst[ed])
                        t = seen.get(v, 0)
                        seen[v] = t + 1
                        dgl_ids[(h, v, t)] = e
                self.assertEqual(a["e_id"].tolist(), [dgl_ids[s] for s in slots])
            n += 1
        self.assertEqual(n, len(lo))

    def test_epochs_len_and_break(self):
        lo = self.loader(self.train, shuffle=True, batch_size=30)
        self.assertEqual(len(lo), 7)
        epochs = []
        seeds = []
        for b in lo:
            seeds += b.seeds.tolist()
            epochs.append(b.epoch)
        self.assertEqual(sorted(seeds), self.train.tolist())
        self.assertEqual(set(epochs), {epochs[0]})
        for i, b in enumerate(lo):  # left part-way ...
            if i == 2:
                break
        again = [b.epoch for b in lo]  # ... the next iter() is a whole new epoch
        self.assertEqual(len(again), 7)
        self.assertEqual(set(again), {epochs[0] + 2})
        dl = self.loader(self.train, shuffle=True, batch_size=30, drop_last=True, seed=4)
        got = [len(b.seeds) for b in dl]
        self.assertEqual((len(dl), got), (6, [30] * 6))

    def test_splits_from_the_same_server(self):
        tr = self.loader(self.train, shuffle=True)
        va = self.loader(self.val, shuffle=False, batch_size=50)
        mask = np.zeros(N, np.bool_)
        mask[self.test] = True
        te = self.loader(mask, shuffle=False, batch_size=16)
        self.assertIs(tr.server, va.server)
        self.assertIs(tr.server, te.server)
        next(iter(tr))
        self.assertEqual((len(va), len(te)), (3, 5))
        for lo, nodes in ((va, self.val), (te, self.test)):
            for _ in range(2):  # unshuffled, the same every epoch
                got, ids = [], []
                for b in lo:
                    got += b.seeds.tolist()
                    ids += b.input_id.tolist()
                    np.testing.assert_array_equal(b.x, self.x[b.n_id])
                self.assertEqual(got, nodes.tolist())
                self.assertEqual(ids, list(range(len(nodes))))
        self.assertIs(tr.server.local, va.server.local)
        dl = self.loader(self.val, shuffle=False, batch_size=50, drop_last=True)
        self.assertEqual([len(b.seeds) for b in dl], [50, 50])

    def test_fresh_equals_split(self):
        """An evaluation loader sampling by random reads (fresh=True:
        sample_fresh) gives the split's minibatches bit for bit, rows and
        edge ids included, in both semantics and after the server's epoch
        moves on; the automatic choice takes random reads for a small
        reach only, and never for a training stream."""
        tr = self.loader(self.train, shuffle=True)
        for sem in ("pyg", "dgl"):
            for ep in range(2):
                fr = self.loader(self.test, shuffle=False, semantics=sem, batch_size=16, fresh=True)
                sp = self.loader(self.test, shuffle=False, semantics=sem, batch_size=16, fresh=False)
                self.assertIs(fr.server, sp.server)
                got, want = list(fr), list(sp)
                self.assertEqual(len(got), len(want))
                self.assertEqual(len(got), len(fr))
                for g, w in zip(got, want):
                    self.assertEqual(g.epoch, w.epoch)
                    np.testing.assert_array_equal(g.seeds, w.seeds)
                    np.testing.assert_array_equal(g.input_id, w.input_id)
                    np.testing.assert_array_equal(g.x, w.x)
                    np.testing.assert_array_equal(g.y, w.y)
                    self.assertEqual(len(g.hops), len(w.hops))
                    for gh, wh in zip(g.hops, w.hops):
                        for f in ("dst", "src", "edge_src", "edge_dst", "e_id"):
                            np.testing.assert_array_equal(getattr(gh, f), getattr(wh, f), err_msg=f)
                if ep == 0:
                    for _ in tr:  # the next training epoch moves the server's current epoch on
                        pass
        # The automatic choice: reach <= 1% of N = 6 nodes.
        self.assertFalse(self.loader(self.test, shuffle=False).fresh)
        self.assertTrue(self.loader(np.array([7]), shuffle=False, fanouts=[1]).fresh)  # reach 2 <= 6
        self.assertFalse(self.loader(np.array([7]), shuffle=False, fanouts=[-1]).fresh)
        self.assertFalse(self.loader(self.train, shuffle=True).fresh)
        with self.assertRaises(ValueError):
            self.loader(self.train, shuffle=True, fresh=True)

    def test_dgl_loader_blocks(self):
        sampler = NeighborSampler(FANOUTS[::-1])
        self.assertEqual(sampler.hop_fanouts, FANOUTS)
        dl = DataLoader(self.graph, self.train, sampler, batch_size=40, shuffle=True, seed=8, binary=self.ss)
        self.addCleanup(dl.close)
        for b in dl.batches():
            self.assertEqual(b.semantics, "dgl")
            blocks = streamsampler.dgl_arrays(b, self.edge_perm)
            self.assertEqual(len(blocks), 2)
            for blk in blocks:
                np.testing.assert_array_equal(blk["src_ids"][:blk["num_dst_nodes"]], blk["dst_ids"])
                if blk["edge_ids"] is not None:
                    cols = blk["edge_ids"]
                    np.testing.assert_array_equal(self.edge_index[0, cols], blk["src_ids"][blk["edge_src"]])
                    np.testing.assert_array_equal(self.edge_index[1, cols], blk["dst_ids"][blk["edge_dst"]])
            np.testing.assert_array_equal(blocks[0]["feat"], self.x[blocks[0]["src_ids"]])
            np.testing.assert_array_equal(blocks[-1]["label"], self.y[blocks[-1]["dst_ids"]])
            self.check_edge_ids(b)

    @unittest.skipUnless(HAVE_PYG, "torch_geometric is not importable (not packaged in Debian; pip install "
                                   "torch_geometric to run this)")
    def test_pyg_neighbor_loader_data(self):
        """NeighborLoader yields PyG's Data: x and y of n_id, edge_index in
        PyG semantics, e_id as columns of the input edge_index, input_id,
        batch_size, the per-hop counts, the split masks of n_id."""
        import torch

        torch.manual_seed(1)
        train = torch.zeros(N, dtype=torch.bool)
        train[torch.from_numpy(self.train)] = True
        lo = NeighborLoader(self.graph, num_neighbors=FANOUTS, input_nodes=train, batch_size=64, shuffle=True,
                            binary=self.ss, num_workers=4)
        self.addCleanup(lo.close)
        val = NeighborLoader(self.graph, num_neighbors=FANOUTS, input_nodes=torch.from_numpy(self.val),
                             batch_size=64, binary=self.ss)
        self.addCleanup(val.close)
        self.assertIs(lo.server, val.server)
        seeds = []
        for data in lo:
            n_id = data.n_id.numpy()
            self.assertEqual(data.n_id.dtype, torch.long)
            np.testing.assert_array_equal(data.x.numpy(), self.x[n_id])
            np.testing.assert_array_equal(data.y.numpy(), self.y[n_id])
            bs = data.batch_size
            np.testing.assert_array_equal(np.flatnonzero(train.numpy())[data.input_id.numpy()], n_id[:bs])
            self.assertEqual(sum(data.num_sampled_nodes), len(n_id))
            self.assertEqual(sum(data.num_sampled_edges), data.edge_index.shape[1])
            ei = data.edge_index.numpy()
            cols = data.e_id.numpy()
            np.testing.assert_array_equal(self.edge_index[0, cols], n_id[ei[0]])
            np.testing.assert_array_equal(self.edge_index[1, cols], n_id[ei[1]])
            np.testing.assert_array_equal(data.train_mask.numpy(), np.isin(n_id, self.train))
            np.testing.assert_array_equal(data.val_mask.numpy(), np.isin(n_id, self.val))
            seeds += n_id[:bs].tolist()
        self.assertEqual(sorted(seeds), self.train.tolist())
        got = [int(v) for d in val for v in d.n_id[:d.batch_size]]
        self.assertEqual(got, self.val.tolist())

    def check_full_hop(self, hop):
        """A hop with fanout -1: each destination's edges, in order, are
        its whole stored adjacency (the CSR from read_csr, not the
        server's epoch), each edge id indptr[v] + position, once."""
        dst = np.asarray(hop.dst)
        src = np.asarray(hop.src)
        es, ed = np.asarray(hop.edge_src), np.asarray(hop.edge_dst)
        self.assertTrue(np.all(np.diff(ed) >= 0))
        e = 0
        for i, v in enumerate(dst.tolist()):
            lo, hi = int(self.indptr[v]), int(self.indptr[v + 1])
            d = hi - lo
            np.testing.assert_array_equal(ed[e:e + d], i)
            np.testing.assert_array_equal(src[es[e:e + d]], self.indices[lo:hi])
            if hop.e_id is not None:
                np.testing.assert_array_equal(np.asarray(hop.e_id)[e:e + d], np.arange(lo, hi))
            e += d
        self.assertEqual(e, len(es))

    def test_full_neighborhoods(self):
        """num_neighbors=[-1] (PyG's layer-wise inference loader) and
        [-1, 3]: every hop with fanout -1 holds every in-edge of every node
        it expands, under PyG's semantics (against pyg_reference on the
        stored CSR itself) and DGL's, over the validation split (unshuffled,
        every node once) and the shuffled training stream."""
        for fanouts in ([-1], [-1, 3], [3, -1]):
            for semantics in ("pyg", "dgl"):
                for nodes, shuffle in ((self.val, False), (self.train, True)):
                    lo = self.loader(nodes, shuffle, semantics=semantics, batch_size=37, fanouts=fanouts)
                    c = lo.client()
                    seen = []
                    for b in lo.batches():
                        seen += b.seeds.tolist()
                        # A full hop's every node has its whole row, under
                        # either semantics (a PyG hop expands a part of
                        # what the DGL hop does).
                        for h, k in enumerate(fanouts):
                            if k == -1:
                                self.check_full_hop(b.hops[h])
                        if semantics == "pyg" and shuffle:
                            # The training epoch's DGL blocks of the same
                            # seeds show every node's samples.
                            d = c.sample(b.seeds, epoch=b.epoch, semantics="dgl")
                            for h, k in enumerate(fanouts):
                                if k == -1:
                                    self.check_full_hop(d.hops[h])
                            # PyG's hop order on the DGL blocks' samples:
                            # where the first hop is full, the seeds' own
                            # adjacencies.
                            samples = hop_samples(d)
                            if fanouts[0] == -1:
                                for v in b.seeds.tolist():
                                    lo_, hi_ = int(self.indptr[v]), int(self.indptr[v + 1])
                                    self.assertEqual(samples[0][v], self.indices[lo_:hi_].tolist())
                            n_id, ei, _, _, _ = pyg_reference(b.seeds, samples)
                            a = streamsampler.pyg_arrays(b)
                            self.assertEqual(a["n_id"].tolist(), n_id)
                            np.testing.assert_array_equal(a["edge_index"], ei)
                            np.testing.assert_array_equal(b.x, self.x[a["n_id"]])
                        if b.has_edge_ids:
                            self.check_edge_ids(b)
                    self.assertEqual(sorted(seen), sorted(nodes.tolist()))
                    lo.close()

    def test_dgl_full_neighbor_samplers(self):
        """MultiLayerFullNeighborSampler(n) is NeighborSampler([-1] * n);
        DGL's own samplers (recognised by class name and module, DGL not
        needed) are taken with their fanouts, replace and edge_dir, and
        what streamsampler does not do is still refused."""
        s = MultiLayerFullNeighborSampler(2)
        self.assertIsInstance(s, NeighborSampler)
        self.assertEqual((s.fanouts, s.hop_fanouts), ([-1, -1], [-1, -1]))
        self.assertIs(as_sampler(s), s)
        self.assertEqual(NeighborSampler([10, -1]).hop_fanouts, [-1, 10])

        def dgl_class(name):
            return type(name, (), {"__module__": "dgl.dataloading.neighbor_sampler"})

        full = dgl_class("MultiLayerFullNeighborSampler")()
        full.fanouts, full.edge_dir, full.prob, full.replace = [-1, -1, -1], "in", None, False
        got = as_sampler(full)
        self.assertEqual((got.fanouts, got.replace), ([-1, -1, -1], False))
        mixed = dgl_class("NeighborSampler")()
        mixed.fanouts, mixed.edge_dir, mixed.replace = [5, -1], "in", True
        got = as_sampler(mixed)
        self.assertEqual((got.hop_fanouts, got.replace), ([-1, 5], True))
        out = dgl_class("NeighborSampler")()
        out.fanouts, out.edge_dir = [5], "out"
        with self.assertRaises(NotImplementedError):
            as_sampler(out)
        with self.assertRaises(TypeError):
            as_sampler(object())
        with self.assertRaises(TypeError):
            as_sampler(type("NeighborSampler", (), {})())  # not DGL's
        # The DataLoader takes DGL's sampler where it takes ours.
        dl = DataLoader(self.graph, self.val, full, batch_size=64, binary=self.ss)
        self.addCleanup(dl.close)
        self.assertEqual(dl.fanouts, [-1, -1, -1])
        for b in dl.batches():
            for hop in b.hops:
                self.check_full_hop(hop)

    def test_pyg_neighbor_loader_full(self):
        """streamsampler.pyg.NeighborLoader takes num_neighbors=[-1] and
        [-1, 3] (PyG's layer-wise inference loader), its batches' full
        hops every in-edge of the nodes they expand (torch_geometric is
        needed only to build Data, not for the batches)."""
        for fanouts in ([-1], [-1, 3]):
            lo = NeighborLoader(self.graph, num_neighbors=fanouts, input_nodes=self.val, batch_size=64,
                                binary=self.ss)
            self.assertEqual(lo.fanouts, fanouts)
            seen = []
            for b in lo.batches():
                self.assertEqual(b.semantics, "pyg")
                self.check_full_hop(b.hops[0])
                seen += b.seeds.tolist()
            self.assertEqual(seen, self.val.tolist())
            lo.close()

    def test_servers_stop_with_their_loaders(self):
        a = NodeLoader(self.graph, [2], 10, self.val, False, False, "pyg", None, seed=99, binary=self.ss)
        b = NodeLoader(self.graph, [2], 10, self.test, False, False, "dgl", None, seed=99, binary=self.ss)
        self.assertIs(a.server, b.server)
        next(iter(a))
        proc = a.server.local.proc
        a.close()
        self.assertIsNone(proc.poll())
        b.close()
        self.assertIsNotNone(proc.poll())

    def test_argument_errors(self):
        with self.assertRaises(ValueError):
            self.loader([3, 3], shuffle=False)
        with self.assertRaises(ValueError):
            self.loader([N], shuffle=False)
        with self.assertRaises(ValueError):
            self.loader(np.zeros(N - 1, np.bool_), shuffle=False)
        with self.assertRaises(ValueError):
            self.loader(self.val, shuffle=False, fanouts=[-2])
        with self.assertRaises(ValueError):
            NeighborSampler([10, -2])
        with self.assertRaises(ValueError):
            NeighborSampler([0])
        with self.assertRaises(ValueError):
            NeighborSampler([])
        with self.assertRaises(ValueError):
            MultiLayerFullNeighborSampler(0)
        with self.assertRaisesRegex(ValueError, "graph is homogeneous"):  # a (type, nodes) input: issue 27
            NeighborLoader(self.graph, [2], input_nodes=("paper", self.val), binary=self.ss)
        with self.assertRaises(NotImplementedError):
            NeighborLoader(self.graph, [2], disjoint=True, binary=self.ss)
        with self.assertRaises(TypeError):
            NeighborLoader(self.graph, [2], bogus=1, binary=self.ss)


class BundledGraphs(unittest.TestCase):
    """PyG semantics on the bundled real graphs (Cora and CiteSeer need
    scipy for their pickles; musae-facebook does not): for minibatches of
    each, the server's PyG assembly equals pyg_reference on the samples
    its DGL assembly of the same seeds shows, and every edge id names a
    column of edge_index from the edge's source to its destination."""

    def test_pyg_semantics(self):
        from streamsampler import datasets as D

        try:
            import scipy.sparse  # noqa: F401
            have_scipy = True
        except ImportError:  # pragma: no cover
            have_scipy = False
        tmp = tempfile.mkdtemp(prefix="ss-bundled-")
        self.addCleanup(shutil.rmtree, tmp, True)
        ss, chunkify = build_tools(tmp)
        root = os.path.join(os.path.dirname(__file__), "..", "..", "testdata")
        for name in ["cora", "citeseer", "musae-facebook"]:
            if name != "musae-facebook" and not have_scipy:
                with self.subTest(dataset=name):
                    self.skipTest("scipy is not importable: it reads the Planetoid pickles of %s "
                                  "(Debian: python3-scipy; scripts/deps.sh installs it)" % name)
                continue
            ds = D.load(name, root=root)
            ei = np.concatenate([ds.edges.T, ds.edges.T[::-1]], axis=1)
            graph = os.path.join(tmp, name)
            streamsampler.from_arrays(ei, ds.num_nodes, graph, chunkify=chunkify)
            perm = streamsampler.load_edge_perm(graph)
            lo = NodeLoader(graph, [10, 10], 64, ds.train, True, False, "pyg", None, seed=1, binary=ss)
            self.addCleanup(lo.close)
            c = lo.client()
            for i, b in enumerate(lo.batches()):
                if i == 6:
                    break
                d = c.sample(b.seeds, epoch=b.epoch, semantics="dgl")
                n_id, want, nodes, edges, _ = pyg_reference(b.seeds, hop_samples(d))
                a = streamsampler.pyg_arrays(b)
                self.assertEqual(a["n_id"].tolist(), n_id, name)
                np.testing.assert_array_equal(a["edge_index"], want)
                self.assertEqual((a["num_sampled_nodes"], a["num_sampled_edges"]), (nodes, edges))
                cols = perm[a["e_id"]]
                np.testing.assert_array_equal(ei[0, cols], a["n_id"][a["edge_index"][0]])
                np.testing.assert_array_equal(ei[1, cols], a["n_id"][a["edge_index"][1]])
            lo.close()


class DGLConventions(unittest.TestCase):
    """dgl_arrays by hand: dgl.create_block takes (src, dst) local ids with
    num_src_nodes/num_dst_nodes; DGL's sampler returns the input layer's
    block first; NID and EID are global node and edge ids."""

    def test_hand_made(self):
        h1 = Hop(np.array([10, 20], np.uint32), np.array([10, 20, 30, 40], np.uint32),
                 np.array([2, 3, 2], np.int32), np.array([0, 0, 1], np.int32), np.array([7, 8, 9], np.int64))
        h2 = Hop(np.array([10, 20, 30, 40], np.uint32), np.array([10, 20, 30, 40, 50], np.uint32),
                 np.array([0, 4], np.int32), np.array([2, 3], np.int32), np.array([1, 0], np.int64))
        b = Batch(0, np.array([10, 20], np.uint32), [h1, h2], index=0,
                  x=np.arange(10, dtype=np.float32).reshape(5, 2), y=np.array([1, 2], np.int32))
        perm = np.array([100, 101, 102, 103, 104, 105, 106, 107, 108, 109], np.int64)[::-1]
        b0, b1 = streamsampler.dgl_arrays(b, perm)
        self.assertEqual((b0["num_src_nodes"], b0["num_dst_nodes"], b1["num_src_nodes"], b1["num_dst_nodes"]),
                         (5, 4, 4, 2))
        self.assertEqual(b0["edge_ids"].tolist(), [108, 109])
        self.assertEqual(b1["edge_ids"].tolist(), [102, 101, 100])
        self.assertEqual(b0["feat"].tolist(), b.x.tolist())
        self.assertEqual((b1["label"].tolist(), b1["label"].dtype), ([1, 2], np.int64))
        b.semantics = "pyg"
        with self.assertRaises(ValueError):
            streamsampler.dgl_arrays(b)


if __name__ == "__main__":
    unittest.main()
