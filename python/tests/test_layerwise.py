"""Layer-wise inference (issue 25, item 2) against a live server built
from this checkout: the full-scan route of PyG's NeighborLoader
(input_nodes=None, num_neighbors=[-1], shuffle=False) and of DGL's
MultiLayerFullNeighborSampler(1), checked against an independent
rendering of PyG's semantics from the input edge_index; PyG's
model.inference loop and DGL's layer-wise loop run unchanged and equal a
whole-graph computation; -1 off the route is not the scan; layerwise_inference
out of core equals the same model in memory. torch_geometric and dgl are
stand-ins (tests/fakes.py)."""

import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

import streamsampler
from streamsampler import protocol as P
from streamsampler.featstore import FeatureStore
from streamsampler.layerwise import layerwise_inference
from tests import fakes
from tests.test_live import build_tools

try:
    import torch
except ImportError:  # the loaders' tests need torch for the models only
    torch = None

N = 500


def reference_scan(edge_index, num_nodes, a, b):
    """PyG's NeighborLoader(input_nodes=None, num_neighbors=[-1],
    shuffle=False) minibatch of seeds a..b-1, from the input edge_index
    (columns (source, destination): in-edges): n_id is the seeds, then
    for each seed in order its in-neighbors by ascending source (PyG's CSC
    order), each new one appended; edge_index local (neighbor, seed); the
    edges' columns as e_id (ties between repeated edges in column order)."""
    src, dst = edge_index
    cols = np.flatnonzero((dst >= a) & (dst < b))
    cols = cols[np.lexsort((cols, src[cols], dst[cols]))]
    n_id = list(range(a, b))
    local = {v: v - a for v in n_id}
    ls, ld = [], []
    for j in cols:
        u = int(src[j])
        if u not in local:
            local[u] = len(n_id)
            n_id.append(u)
        ls.append(local[u])
        ld.append(int(dst[j]) - a)
    return np.array(n_id), np.array([ls, ld], dtype=np.int64).reshape(2, -1), cols


def mean_conv_full(x, edge_index, w_l, w_r):
    """A SAGE layer (mean aggregation, PyG's SAGEConv: lin_l on the mean of
    the in-neighbors, lin_r on the node) over the whole graph, by a dense
    adjacency matrix: the independent full-neighborhood computation."""
    n = x.shape[0]
    adj = np.zeros((n, n))
    np.add.at(adj, (edge_index[1], edge_index[0]), 1.0)
    deg = adj.sum(1, keepdims=True)
    mean = np.divide(adj @ x, deg, out=np.zeros((n, x.shape[1])), where=deg > 0)
    return mean @ w_l + x @ w_r


class MeanConv:
    """The same layer as PyG calls a conv, conv(x, edge_index), in torch by
    scatter (index_add): what model.inference runs per minibatch."""

    def __init__(self, w_l, w_r):
        self.w_l = torch.from_numpy(w_l)
        self.w_r = torch.from_numpy(w_r)

    def __call__(self, x, edge_index):
        x = x.double()
        agg = torch.zeros_like(x).index_add_(0, edge_index[1], x[edge_index[0]])
        deg = torch.zeros(x.shape[0], dtype=x.dtype).index_add_(0, edge_index[1], torch.ones(edge_index.shape[1],
                                                                                              dtype=x.dtype))
        mean = agg / deg.clamp(min=1).unsqueeze(1)
        return mean @ self.w_l + x @ self.w_r


@unittest.skipIf(torch is None, "torch is not installed")
class LayerwiseInference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-layerwise-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        rng = np.random.default_rng(25)
        # A directed multigraph with hubs, repeated edges and self-loops,
        # in chunks of 4 KiB: a minibatch spans several chunks.
        u = np.concatenate([rng.integers(0, N, 4000), rng.integers(0, 5, 600)])
        v = np.concatenate([rng.integers(0, N, 4000), rng.integers(0, N, 600)])
        u[:200], v[:200] = u[200:400], v[200:400]
        cls.edge_index = np.stack([u, v])
        cls.x = rng.standard_normal((N, 5)).astype(np.float32)
        cls.y = rng.integers(0, 3, N)
        cls.graph = os.path.join(cls.tmp, "g")
        streamsampler.from_arrays(cls.edge_index, N, cls.graph, x=cls.x, y=cls.y, chunkify=cls.chunkify,
                                  chunk_size="4KiB")
        cls.edge_perm = streamsampler.load_edge_perm(cls.graph)
        cls.w = [rng.standard_normal((5, 4)), rng.standard_normal((5, 4)), rng.standard_normal((4, 3)),
                 rng.standard_normal((4, 3))]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def full_model(self):
        """Two SAGE layers with a relu between, over the whole graph."""
        h = np.maximum(mean_conv_full(self.x.astype(np.float64), self.edge_index, self.w[0], self.w[1]), 0)
        return mean_conv_full(h, self.edge_index, self.w[2], self.w[3])

    def test_pyg_full_scan_against_reference(self):
        """Every minibatch equals the reference rendering: n_id, edge_index,
        e_id (columns of the input edge_index), batch_size, input_id, x and
        y of n_id, the counts; every node a seed once, in order."""
        with mock.patch.dict(sys.modules, fakes.fake_pyg()):
            from streamsampler.pyg import NeighborLoader
            lo = NeighborLoader(self.graph, input_nodes=None, num_neighbors=[-1], batch_size=64, shuffle=False,
                                binary=self.ss)
            self.addCleanup(lo.close)
            self.assertTrue(lo.full_scan)
            self.assertEqual(len(lo), 8)
            start = 0
            for data in lo:
                bs = data.batch_size
                n_id, ei, cols = reference_scan(self.edge_index, N, start, min(start + 64, N))
                np.testing.assert_array_equal(data.n_id.numpy(), n_id)
                np.testing.assert_array_equal(data.edge_index.numpy(), ei)
                self.assertEqual(bs, min(64, N - start))
                np.testing.assert_array_equal(data.input_id.numpy(), np.arange(start, start + bs))
                np.testing.assert_array_equal(data.x.numpy(), self.x[n_id])
                np.testing.assert_array_equal(data.y.numpy(), self.y[n_id])
                self.assertEqual(data.num_sampled_nodes, [bs, len(n_id) - bs])
                self.assertEqual(data.num_sampled_edges, [ei.shape[1]])
                # e_id: the columns, each once; repeated edges may take
                # each other's column.
                e_id = data.e_id.numpy()
                self.assertEqual(sorted(e_id.tolist()), sorted(cols.tolist()))
                np.testing.assert_array_equal(self.edge_index[0, e_id], n_id[ei[0]])
                np.testing.assert_array_equal(self.edge_index[1, e_id], n_id[ei[1]])
                start += bs
            self.assertEqual(start, N)
            # A second iter() is a whole pass again.
            self.assertEqual(sum(d.batch_size for d in lo), N)

    def test_model_inference_unchanged(self):
        """PyG's model.inference loop, as its examples write it, runs with
        the drop-in and gives what the whole-graph computation gives."""
        with mock.patch.dict(sys.modules, fakes.fake_pyg()):
            from streamsampler.pyg import NeighborLoader
            mask = torch.ones(N, dtype=torch.bool)  # every node, as a mask: the same route
            loader = NeighborLoader(self.graph, input_nodes=mask, num_neighbors=[-1], batch_size=100,
                                    shuffle=False, binary=self.ss)
            self.addCleanup(loader.close)
            convs = [MeanConv(self.w[0], self.w[1]), MeanConv(self.w[2], self.w[3])]
            x_all = torch.from_numpy(self.x).double()
            with torch.no_grad():  # PyG's SAGE.inference, verbatim but for the convs
                for i, conv in enumerate(convs):
                    xs = []
                    for batch in loader:
                        x = x_all[batch.n_id]
                        x = conv(x, batch.edge_index)
                        if i < len(convs) - 1:
                            x = x.relu_()
                        xs.append(x[:batch.batch_size])
                    x_all = torch.cat(xs, dim=0)
            np.testing.assert_allclose(x_all.numpy(), self.full_model(), rtol=1e-9, atol=1e-9)

    def test_pyg_example_edits_loader_data(self):
        """PyG's reddit.py prepares its inference loader by editing
        loader.data (del x and y, num_nodes, n_id) and reads
        len(loader.dataset): all of it runs with the drop-in, minibatches
        then carry no x and no y, the scan asks the server for no rows, and
        n_id set on the data is sliced per minibatch; model.inference
        still equals the whole-graph computation."""
        from streamsampler.client import Client
        with mock.patch.dict(sys.modules, fakes.fake_pyg()):
            from streamsampler.pyg import NeighborLoader
            loader = NeighborLoader(self.graph, input_nodes=None, num_neighbors=[-1], batch_size=100,
                                    shuffle=False, binary=self.ss)
            self.addCleanup(loader.close)
            np.testing.assert_array_equal(np.asarray(loader.data.x), self.x)
            np.testing.assert_array_equal(np.asarray(loader.data.y), self.y)
            del loader.data.x, loader.data.y
            loader.data.num_nodes = N
            loader.data.n_id = torch.arange(N)
            with self.assertRaises(ValueError):
                loader.data.num_nodes = N + 1
            with self.assertRaises(AttributeError):
                loader.data.x
            with self.assertRaises(AttributeError):
                del loader.data.x
            self.assertEqual(len(loader.dataset), N)
            asked = []
            scan = Client.scan

            def spy(c, *a, **kw):
                asked.append(kw.get("rows"))
                return scan(c, *a, **kw)
            convs = [MeanConv(self.w[0], self.w[1]), MeanConv(self.w[2], self.w[3])]
            x_all = torch.from_numpy(self.x).double()
            with mock.patch.object(Client, "scan", spy), torch.no_grad():
                for i, conv in enumerate(convs):
                    xs = []
                    for batch in loader:
                        self.assertNotIn("x", batch.keys())
                        self.assertNotIn("y", batch.keys())
                        x = x_all[batch.n_id]
                        x = conv(x, batch.edge_index)
                        if i < len(convs) - 1:
                            x = x.relu_()
                        xs.append(x[:batch.batch_size])
                    x_all = torch.cat(xs, dim=0)
            self.assertEqual(asked, [False, False])
            np.testing.assert_allclose(x_all.numpy(), self.full_model(), rtol=1e-9, atol=1e-9)
            # Putting x back (here: other rows) makes the minibatches carry them.
            loader.data.x = torch.from_numpy(-self.x)
            batch = next(iter(loader))
            np.testing.assert_array_equal(batch.x.numpy(), -self.x[batch.n_id.numpy()])

    def test_dgl_layerwise_loop(self):
        """DGL's layer-wise loop (MultiLayerFullNeighborSampler(1) over
        torch.arange(N)) runs unchanged: one block per minibatch, dst the
        consecutive seeds, src their n_id, feat and label; the layer
        computed on the blocks equals the whole-graph computation."""
        with mock.patch.dict(sys.modules, fakes.fake_dgl()):
            from streamsampler.dgl import DataLoader, MultiLayerFullNeighborSampler
            sampler = MultiLayerFullNeighborSampler(1)
            dl = DataLoader(self.graph, torch.arange(N), sampler, batch_size=128, shuffle=False, binary=self.ss)
            self.addCleanup(dl.close)
            self.assertTrue(dl.full_scan)
            conv = MeanConv(self.w[0], self.w[1])
            y = torch.empty(N, 4, dtype=torch.float64)
            for input_nodes, output_nodes, blocks in dl:
                self.assertEqual(len(blocks), 1)
                blk = blocks[0]
                n_id, ei, _ = reference_scan(self.edge_index, N, int(output_nodes[0]), int(output_nodes[-1]) + 1)
                np.testing.assert_array_equal(input_nodes.numpy(), n_id)
                np.testing.assert_array_equal(output_nodes.numpy(), n_id[:blk.num_dst])
                np.testing.assert_array_equal(np.stack([blk.edges[0].numpy(), blk.edges[1].numpy()]), ei)
                np.testing.assert_array_equal(blk.srcdata["feat"].numpy(), self.x[n_id])
                np.testing.assert_array_equal(blk.dstdata["label"].numpy(), self.y[output_nodes.numpy()])
                h = conv(blk.srcdata["feat"], torch.stack(blk.edges).long())[:blk.num_dst]
                y[output_nodes[0]:output_nodes[-1] + 1] = h
            want = mean_conv_full(self.x.astype(np.float64), self.edge_index, self.w[0], self.w[1])
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-9, atol=1e-9)

    def test_minus_one_off_the_route(self):
        """The full scan is taken for every node in order without
        shuffling, one -1 hop, only; any other -1 loader is an epoch's full
        layers (the general -1, test_loaders.test_full_neighborhoods)."""
        from streamsampler.dgl import DataLoader, MultiLayerFullNeighborSampler
        from streamsampler.pyg import NeighborLoader
        for kw in (dict(input_nodes=np.arange(10)), dict(shuffle=True), dict(num_neighbors=[-1, -1]),
                   dict(num_neighbors=[-1, 5]), dict(input_nodes=np.arange(N)[::-1].copy())):
            args = dict(input_nodes=None, num_neighbors=[-1], batch_size=8, shuffle=False, binary=self.ss)
            args.update(kw)
            lo = NeighborLoader(self.graph, **args)
            self.addCleanup(lo.close)
            self.assertFalse(lo.full_scan, msg=str(kw))
        dl = DataLoader(self.graph, np.arange(N), MultiLayerFullNeighborSampler(2), batch_size=8, binary=self.ss)
        self.addCleanup(dl.close)
        self.assertFalse(dl.full_scan)
        with self.assertRaises(ValueError):
            MultiLayerFullNeighborSampler(0)

    def test_client_scan_requests(self):
        """The Client's scan requests: the info, minibatches by index, the
        end, each minibatch once, unknown and dropped scans."""
        with streamsampler.serve_local(self.graph, np.array([0]), fanouts=[1], batch_size=1,
                                       binary=self.ss) as srv, srv.client() as c:
            info = c.scan(200, rows=False, edge_ids=False, semantics="pyg")
            self.assertEqual((info["num_nodes"], info["num_batches"], info["batch_size"]), (N, 3, 200))
            self.assertEqual(info["num_edges"], self.edge_index.shape[1])
            b = c.scan_batch(info["scan"], 1)
            n_id, ei, _ = reference_scan(self.edge_index, N, 200, 400)
            np.testing.assert_array_equal(b.hops[0].src, n_id)
            self.assertIsNone(b.x)
            self.assertFalse(b.has_edge_ids)
            self.assertIsNone(c.scan_batch(info["scan"], 3))
            with self.assertRaises(P.ServerError) as e:
                c.scan_batch(info["scan"], 1)
            self.assertEqual(e.exception.code, P.CODE_BAD_REQUEST)
            c.drop_scan(info["scan"])
            with self.assertRaises(P.ServerError) as e:
                c.scan_batch(info["scan"], 0)
            self.assertEqual(e.exception.code, P.CODE_UNKNOWN_SCAN)
            got = []
            info = c.scan(64, rows=True)
            for bt in c.scan_batches(info["scan"], depth=3):
                got += bt.seeds.tolist()
                np.testing.assert_array_equal(bt.x, self.x[bt.hops[0].src])
            self.assertEqual(got, list(range(N)))

    def test_cora_example(self):
        """python/examples/pyg_sage.py on the bundled Cora, a few epochs:
        it trains through the drop-in, then its layer-wise inference
        (num_neighbors=[-1], model.inference) equals the model over the
        whole graph, logits and test accuracy (torch_geometric's Data and
        SAGEConv are stand-ins here: tests/fakes.py)."""
        import importlib

        examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
        root = os.path.join(os.path.dirname(os.path.dirname(examples)), "testdata")
        with mock.patch.dict(sys.modules, fakes.fake_pyg_nn()), mock.patch.object(sys, "path", [examples] + sys.path):
            sys.modules.pop("pyg_sage", None)
            ex = importlib.import_module("pyg_sage")
            try:
                data = ex.pyg_data("cora", root)
                info = streamsampler.from_pyg(data, os.path.join(self.tmp, "cora"), chunkify=self.chunkify)
                cfg = dict(ex.CONFIGS["cora"], epochs=4)
                with mock.patch.dict(os.environ, {"STREAMSAMPLER_BIN": self.ss}):
                    out = ex.run("ours", data, info.path, cfg, 0, torch.device("cpu"))
            finally:
                sys.modules.pop("pyg_sage", None)
        lw = out["layerwise"]
        self.assertTrue(lw["match"], lw)
        self.assertLess(lw["max_abs_diff"], 1e-4)
        self.assertEqual(lw["test_layerwise"], lw["test_full"])
        self.assertGreater(lw["test_full"], 0.3)  # trained: well above 1/7, chance on Cora's 7 classes

    def test_layerwise_inference_out_of_core(self):
        """layerwise_inference writes each layer's outputs to a store of the
        graph and reads them back for the next: the last store equals the
        two-layer model over the whole graph; the first store is gone."""
        out = os.path.join(self.tmp, "work")
        convs = [MeanConv(self.w[0], self.w[1]), MeanConv(self.w[2], self.w[3])]
        path = layerwise_inference(self.graph, convs, out, batch_size=70, activation=torch.relu, binary=self.ss,
                                   chunkify=self.chunkify)
        self.assertEqual(path, os.path.join(out, "layer-2"))
        self.assertFalse(os.path.exists(os.path.join(out, "layer-1")))
        got = np.array(FeatureStore(path).x)
        self.assertEqual(got.shape, (N, 3))
        np.testing.assert_allclose(got, self.full_model(), rtol=1e-5, atol=1e-5)  # float32 stores
        # float16 outputs, layers kept.
        path = layerwise_inference(self.graph, convs[:1], os.path.join(self.tmp, "work16"), batch_size=500,
                                   binary=self.ss, chunkify=self.chunkify, dtype="float16", keep=True)
        got = np.array(FeatureStore(path).x)
        self.assertEqual(got.dtype, np.float16)
        want = mean_conv_full(self.x.astype(np.float64), self.edge_index, self.w[0], self.w[1])
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3)


class ScanPayloads(unittest.TestCase):
    def test_bytes(self):
        """The scan requests' bytes, as docs/PROTOCOL.md gives them (the
        first is serve/testdata/fuzz/FuzzDecodeScanRequest/seed-pyg-rows)."""
        from streamsampler import wire as W
        self.assertEqual(W.scan_payload(4096, True, True, "pyg"), b"\x00\x10\x00\x00\x03\x01")
        self.assertEqual(W.scan_payload(1, False, False, None, "/tmp/layer-1"), b"\x01\x00\x00\x00\x00\xff/tmp/layer-1")
        self.assertEqual(W.scan_payload(7, True, False, "dgl"), b"\x07\x00\x00\x00\x01\x00")
        self.assertEqual(W.scan_batch_payload(5, 9), b"\x05\x00\x00\x00\x09\x00\x00\x00")
        self.assertEqual(W.drop_scan_payload(3), b"\x03\x00\x00\x00")
        with self.assertRaises(ValueError):
            W.scan_payload(8, True, True, "torch")


if __name__ == "__main__":
    unittest.main()
