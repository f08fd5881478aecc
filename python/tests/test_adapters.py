"""PyG and DGL index conventions, checked by hand (numpy only)."""

import importlib.util
import sys
import types
import unittest
from unittest import mock

import numpy as np

from streamsampler import dgl_arrays, pyg_arrays, to_dgl, to_pyg
from streamsampler.batch import Batch, Hop


def hand_batch():
    # Seeds 10, 20. Hop 1 samples 30, 40 for 10 and 30 for 20.
    # Hop 2 samples 50 for 40 and 10 for 30.
    h1 = Hop(np.array([10, 20], np.uint32), np.array([10, 20, 30, 40], np.uint32),
             np.array([2, 3, 2], np.int32), np.array([0, 0, 1], np.int32))
    h2 = Hop(np.array([10, 20, 30, 40], np.uint32), np.array([10, 20, 30, 40, 50], np.uint32),
             np.array([0, 4], np.int32), np.array([2, 3], np.int32))
    return Batch(0, np.array([10, 20], np.uint32), [h1, h2], index=0)


class PyG(unittest.TestCase):
    def test_hand_made(self):
        a = pyg_arrays(hand_batch())
        self.assertEqual(a["n_id"].tolist(), [10, 20, 30, 40, 50])
        self.assertEqual(a["n_id"].dtype, np.int64)
        # row 0 = source (neighbor), row 1 = destination; hop 1 first.
        self.assertEqual(a["edge_index"].tolist(), [[2, 3, 2, 0, 4], [0, 0, 1, 2, 3]])
        self.assertEqual(a["edge_index"].dtype, np.int64)
        self.assertEqual(a["num_sampled_nodes"], [2, 2, 1])
        self.assertEqual(a["num_sampled_edges"], [3, 2])
        self.assertEqual(a["batch_size"], 2)
        self.assertEqual(a["sizes_per_hop"], [(4, 2), (5, 4)])
        self.assertEqual([e.tolist() for e in a["edge_index_per_hop"]],
                         [[[2, 3, 2], [0, 0, 1]], [[0, 4], [2, 3]]])
        # In global ids: (neighbor, target) pairs.
        n = a["n_id"]
        pairs = list(zip(n[a["edge_index"][0]].tolist(), n[a["edge_index"][1]].tolist()))
        self.assertEqual(pairs, [(30, 10), (40, 10), (30, 20), (10, 30), (50, 40)])

    def test_counts_are_consistent(self):
        a = pyg_arrays(hand_batch())
        self.assertEqual(sum(a["num_sampled_nodes"]), len(a["n_id"]))
        self.assertEqual(sum(a["num_sampled_edges"]), a["edge_index"].shape[1])
        # trim_to_layer keeps, at layer l, the first sum(num_sampled_*[:L-l+1])
        # nodes and edges: hop 1's edges must only touch the kept nodes.
        kept = sum(a["num_sampled_nodes"][:2])
        hop1 = a["edge_index"][:, :a["num_sampled_edges"][0]]
        self.assertLess(hop1.max(), kept)
        self.assertLess(hop1[1].max(), a["batch_size"])

    def test_no_hops(self):
        b = Batch(0, np.array([4, 5], np.uint32), [])
        a = pyg_arrays(b)
        self.assertEqual(a["n_id"].tolist(), [4, 5])
        self.assertEqual(a["edge_index"].shape, (2, 0))
        self.assertEqual(a["num_sampled_nodes"], [2])


class DGL(unittest.TestCase):
    def test_hand_made(self):
        blocks = dgl_arrays(hand_batch())
        # Outermost hop first, as DGL's samplers return blocks.
        self.assertEqual(len(blocks), 2)
        b0, b1 = blocks
        self.assertEqual((b0["num_src_nodes"], b0["num_dst_nodes"]), (5, 4))
        self.assertEqual((b1["num_src_nodes"], b1["num_dst_nodes"]), (4, 2))
        self.assertEqual(b0["src_ids"].tolist(), [10, 20, 30, 40, 50])
        self.assertEqual(b1["dst_ids"].tolist(), [10, 20])
        self.assertEqual((b0["edge_src"].tolist(), b0["edge_dst"].tolist()), ([0, 4], [2, 3]))
        self.assertEqual((b1["edge_src"].tolist(), b1["edge_dst"].tolist()), ([2, 3, 2], [0, 0, 1]))
        # Each block's dst nodes are the first of its src nodes, and the
        # next block's src nodes are this block's dst nodes.
        for b in blocks:
            np.testing.assert_array_equal(b["src_ids"][:b["num_dst_nodes"]], b["dst_ids"])
        np.testing.assert_array_equal(b0["dst_ids"], b1["src_ids"])


class WithoutTorch(unittest.TestCase):
    """to_pyg and to_dgl without the libraries they wrap say what is
    missing and which numpy-only function works instead. The libraries
    are hidden through sys.modules, so this runs whether or not they are
    installed."""

    def check(self, call, missing, needs, instead):
        with self.assertRaises(ImportError) as cm:
            call(hand_batch())
        msg = str(cm.exception)
        self.assertIn(needs, msg)
        self.assertIn("importing %s failed" % missing, msg)
        self.assertIn("%s(batch)" % instead, msg)
        self.assertEqual(cm.exception.name, missing)

    def test_no_torch(self):
        with mock.patch.dict(sys.modules, {"torch": None}):
            self.check(to_pyg, "torch", "to_pyg needs torch and torch_geometric", "pyg_arrays")
            self.check(to_dgl, "torch", "to_dgl needs torch and dgl", "dgl_arrays")

    def test_torch_without_pyg_or_dgl(self):
        fake_torch = types.ModuleType("torch")
        with mock.patch.dict(sys.modules, {"torch": fake_torch, "torch_geometric": None, "dgl": None}):
            self.check(to_pyg, "torch_geometric", "to_pyg needs torch and torch_geometric", "pyg_arrays")
            self.check(to_dgl, "dgl", "to_dgl needs torch and dgl", "dgl_arrays")


@unittest.skipUnless(importlib.util.find_spec("torch") and importlib.util.find_spec("torch_geometric"),
                     "torch_geometric is not importable (not packaged in Debian; pip install "
                     "torch_geometric to run this)")
class TorchPyG(unittest.TestCase):
    def test_to_pyg(self):
        import torch

        from streamsampler import to_pyg
        x = torch.arange(60, dtype=torch.float32).reshape(60, 1)
        d = to_pyg(hand_batch(), x=x)
        self.assertEqual(d.n_id.tolist(), [10, 20, 30, 40, 50])
        self.assertEqual(d.x[:, 0].tolist(), [10, 20, 30, 40, 50])
        self.assertEqual(d.edge_index.tolist(), [[2, 3, 2, 0, 4], [0, 0, 1, 2, 3]])
        self.assertEqual(d.num_sampled_nodes, [2, 2, 1])

    def test_to_pyg_batch_features(self):
        """A batch from a server with --features brings data.x (its rows of
        n_id, its dtype) and data.y (the seeds' labels, int64); explicit
        x= / y= still win."""
        import torch

        from streamsampler import to_pyg
        b = hand_batch()
        b.x = np.arange(10, dtype=np.float16).reshape(5, 2)
        b.y = np.array([3, -1], np.int32)
        d = to_pyg(b)
        self.assertEqual(d.x.dtype, torch.float16)
        self.assertEqual(d.x.tolist(), b.x.tolist())
        self.assertEqual(d.y.dtype, torch.int64)
        self.assertEqual(d.y.tolist(), [3, -1])
        x = torch.arange(60, dtype=torch.float32).reshape(60, 1)
        self.assertEqual(to_pyg(b, x=x).x[:, 0].tolist(), [10, 20, 30, 40, 50])


@unittest.skipUnless(importlib.util.find_spec("dgl"),
                     "dgl is not importable (not packaged in Debian; pip install dgl to run this)")
class TorchDGL(unittest.TestCase):
    def test_to_dgl(self):
        from streamsampler import to_dgl
        inp, out, blocks = to_dgl(hand_batch())
        self.assertEqual(inp.tolist(), [10, 20, 30, 40, 50])
        self.assertEqual(out.tolist(), [10, 20])
        self.assertEqual([b.num_edges() for b in blocks], [2, 3])

    def test_to_dgl_batch_features(self):
        from streamsampler import to_dgl
        b = hand_batch()
        b.x = np.arange(10, dtype=np.float32).reshape(5, 2)
        b.y = np.array([3, 1], np.int32)
        _, _, blocks = to_dgl(b)
        self.assertEqual(blocks[0].srcdata["feat"].tolist(), b.x.tolist())
        self.assertEqual(blocks[-1].dstdata["label"].tolist(), [3, 1])


if __name__ == "__main__":
    unittest.main()
