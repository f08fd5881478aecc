"""streamsampler.from_pyg / from_arrays: graphs imported from a PyG ``Data``
(a stand-in with numpy attributes; the real one where torch_geometric is
importable) round-trip exactly: every edge_index column is stored once, in
its target's adjacency (in-edges), at the position edge_perm.npy says; the
features byte for byte through the feature store; the labels; the masks as
splits/NAME.npy. Memory-mapped inputs are streamed (tracemalloc's peak stays
far below the arrays). Bundled Cora goes through from_pyg and is served by
``serve --train splits/train.npy --features``. Bad input is refused by name
and leaves nothing behind."""

import json
import os
import shutil
import tempfile
import tracemalloc
import unittest

import numpy as np

import streamsampler
from streamsampler import LocalServer, from_arrays, from_pyg, load_edge_perm, read_csr, read_info
from streamsampler import datasets as D
from streamsampler.convert import OutputExistsError
from streamsampler.graph import GraphFormatError
from streamsampler.featstore import FeatureStore
from tests.test_live import build_tools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUNDLED = os.path.join(REPO, "testdata")

try:
    import scipy.sparse  # noqa: F401  (the Planetoid pickles hold scipy matrices)
    HAVE_SCIPY = True
except ImportError:  # pragma: no cover
    HAVE_SCIPY = False

try:
    import torch  # noqa: F401
    import torch_geometric.data  # noqa: F401
    HAVE_PYG = True
except ImportError:
    HAVE_PYG = False


class FakeData:
    """What from_pyg reads of a torch_geometric.data.Data: plain attributes."""

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def reference_perm(ei):
    """Column order of the stored CSR, by an independent route: Python's
    stable sort of the columns by (target, source)."""
    u, v = ei[0].tolist(), ei[1].tolist()
    return np.array(sorted(range(len(u)), key=lambda c: (v[c], u[c])), np.int64)


def messy_graph(rng, n=60, e=700, isolated=12):
    """A directed graph with duplicate columns, self-loops and isolated
    nodes (the last ``isolated`` ids, above the largest endpoint)."""
    u = rng.integers(0, n - isolated, e)
    v = rng.integers(0, n - isolated, e)
    v[:40] = u[:40]                          # self-loops
    u[40:80], v[40:80] = u[100:140], v[100:140]  # duplicates
    return np.stack([u, v]).astype(np.int64)


class RoundTrip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-convert-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def check_edges(self, g, ei, n, perm=True):
        """Stored edge i is column perm[i]: its source is indices[i], its
        target the node whose adjacency holds it; every column once."""
        indptr, indices = read_csr(g)
        self.assertEqual(len(indptr), n + 1)
        self.assertEqual(len(indices), ei.shape[1])
        dst = np.repeat(np.arange(n), np.diff(indptr))
        p = load_edge_perm(g)
        if not perm:
            self.assertIsNone(p)
            key = np.lexsort((ei[0], ei[1]))
            np.testing.assert_array_equal(indices, ei[0, key])
            np.testing.assert_array_equal(dst, ei[1, key])
            return
        self.assertEqual(p.dtype, np.int64)
        np.testing.assert_array_equal(np.sort(p), np.arange(ei.shape[1]))
        np.testing.assert_array_equal(ei[0, p], indices)
        np.testing.assert_array_equal(ei[1, p], dst)
        np.testing.assert_array_equal(p, reference_perm(ei))

    def check_splits(self, info, masks):
        self.assertEqual(sorted(info.splits), sorted(masks))
        for name, m in masks.items():
            self.assertEqual(info.splits[name], os.path.join(info.path, "splits", name + ".npy"))
            ids = np.load(info.splits[name])
            self.assertEqual(ids.dtype, np.int64)
            np.testing.assert_array_equal(ids, np.flatnonzero(m) if m.dtype == bool else np.unique(m))

    def test_fake_data_every_dtype(self):
        """A messy directed graph with x in each dtype: float64 arrives as
        float32, the others as they are, byte for byte."""
        rng = np.random.default_rng(1)
        n = 60
        ei = messy_graph(rng, n)
        y = rng.integers(0, 5, n)
        masks = {"train": rng.random(n) < 0.5, "val": rng.random(n) < 0.2, "test": np.zeros(n, bool)}
        for dtype, stored in ((np.float64, np.float32), (np.float32, np.float32), (np.float16, np.float16),
                              (np.int8, np.int8), (np.uint8, np.uint8), (np.bool_, np.uint8)):
            with self.subTest(dtype=np.dtype(dtype).name):
                x = (rng.standard_normal((n, 7)) * 50).astype(dtype)
                data = FakeData(edge_index=ei, num_nodes=n, x=x, y=y.reshape(n, 1),
                                edge_attr=rng.random(ei.shape[1]),
                                node_type_mask=np.ones(n, np.int64),  # not boolean: not a split
                                **{k + "_mask": m for k, m in masks.items()})
                g = self.out("fake-" + np.dtype(dtype).name)
                info = from_pyg(data, g, chunk_size="1KiB", chunkify=self.chunkify)
                with open(os.path.join(g, "manifest.json")) as f:
                    self.assertGreater(len(json.load(f)["chunks"]), 2)  # read_csr crosses chunks
                self.assertEqual((info.num_nodes, info.num_edges, info.source), (n, ei.shape[1], "from_pyg"))
                self.assertTrue(info.has_features and info.has_labels)
                self.assertEqual((info.feature_dtype, info.feature_dim), (np.dtype(stored).name, 7))
                self.assertEqual(info, read_info(g))
                self.check_edges(g, ei, n)
                self.check_splits(info, masks)
                store = FeatureStore(g)
                self.assertEqual(store.x.dtype, np.dtype(stored))
                self.assertEqual(store.x.tobytes(), x.astype(stored).tobytes())
                np.testing.assert_array_equal(store.y, y)
                # Only the graph directory: no temporary sibling left.
                self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith(".")], [])

    def test_in_edges_by_hand(self):
        """Column (u, v) lands in v's list: 0→1 twice, 2→1, 1→1, 3→0;
        nodes 4 and 5 have no edges."""
        ei = np.array([[0, 2, 0, 1, 3], [1, 1, 1, 1, 0]])
        g = self.out("hand")
        info = from_arrays(ei, 6, g, chunkify=self.chunkify, chunk_size=512)
        indptr, indices = read_csr(g)
        self.assertEqual(indptr.tolist(), [0, 1, 5, 5, 5, 5, 5])
        self.assertEqual(indices.tolist(), [3, 0, 0, 1, 2])
        self.assertEqual(load_edge_perm(g).tolist(), [4, 0, 2, 3, 1])
        self.assertEqual(info.splits, {})
        self.assertFalse(info.has_features or info.has_labels)
        with open(os.path.join(g, "manifest.json")) as f:
            opts = json.load(f)["options"]
        self.assertEqual(opts, {"symmetrize": False, "reverse": True, "dedup": False, "self_loops": "keep"})

    def test_arrays_labels_masks_and_no_edges(self):
        """from_arrays: id-array masks (sorted, deduplicated), float labels
        with NaN (-1), labels without x (labels.npy), no edges at all."""
        n = 9
        y = np.array([0, 1, np.nan, 2, 2, np.nan, 0, 1, 3])
        g = self.out("nolabel-x")
        info = from_arrays(np.zeros((2, 0), np.int32), n, g, y=y, masks={"train": np.array([7, 2, 2, 0])},
                           chunkify=self.chunkify, edge_perm=True)
        self.check_edges(g, np.zeros((2, 0), np.int64), n)
        lab = np.load(os.path.join(g, "labels.npy"))
        self.assertEqual(lab.dtype, np.int64)
        self.assertEqual(lab.tolist(), [0, 1, -1, 2, 2, -1, 0, 1, 3])
        self.assertTrue(info.has_labels)
        self.assertFalse(info.has_features)
        self.assertEqual(np.load(info.splits["train"]).tolist(), [0, 2, 7])
        # The same labels through the store (int32, -1 for none).
        g2 = self.out("label-x")
        from_arrays(np.array([[0], [1]]), n, g2, x=np.ones((n, 2), np.float32), y=y, chunkify=self.chunkify,
                    edge_perm=False)
        self.assertEqual(FeatureStore(g2).y.tolist(), lab.tolist())
        self.assertFalse(os.path.exists(os.path.join(g2, "labels.npy")))
        self.assertIsNone(read_info(g2).edge_perm)

    def test_streams_memmapped_inputs(self):
        """A memory-mapped edge_index (16 MB) and x (12.8 MB) converted in
        256 KiB slices: Python's allocations peak below 2 MiB, and the
        graph is still exact."""
        n, e, f = 50_000, 1_000_000, 32
        rng = np.random.default_rng(5)
        ei = np.lib.format.open_memmap(self.out("ei.npy"), "w+", np.int64, (2, e))
        ei[:] = rng.integers(0, n, (2, e))
        x = np.lib.format.open_memmap(self.out("x.npy"), "w+", np.float64, (n, f))
        x[:] = rng.standard_normal((n, f))
        y = np.lib.format.open_memmap(self.out("y.npy"), "w+", np.int64, (n,))
        y[:] = rng.integers(0, 40, n)
        m = np.lib.format.open_memmap(self.out("m.npy"), "w+", np.bool_, (n,))
        m[:] = rng.random(n) < 0.3
        for a in (ei, x, y, m):
            a.flush()
        del ei, x, y, m
        ei, x, y, m = (np.load(self.out(p), mmap_mode="r") for p in ("ei.npy", "x.npy", "y.npy", "m.npy"))
        g = self.out("streamed")
        tracemalloc.start()
        try:
            info = from_arrays(ei, n, g, x=x, y=y, masks={"train": m}, chunkify=self.chunkify, edge_perm=False,
                               piece_bytes=256 << 10)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        self.assertLess(peak, 2 << 20, "peak %d bytes" % peak)
        if os.environ.get("CONVERT_PEAK"):
            print("streamed: peak %d bytes of Python allocations" % peak)
        self.assertIsNone(info.edge_perm)
        self.check_edges(g, np.asarray(ei), n, perm=False)
        store = FeatureStore(g)
        self.assertEqual(store.x.tobytes(), np.asarray(x, np.float32).tobytes())
        np.testing.assert_array_equal(store.y, y)
        np.testing.assert_array_equal(np.load(info.splits["train"]), np.flatnonzero(m))

    @unittest.skipUnless(HAVE_SCIPY, "scipy reads the Planetoid pickles")
    def test_cora_served(self):
        """Bundled Cora as a PyG Data (both directions of each edge, masks):
        the same adjacency as datasets.prepare's symmetrized graph, and
        `serve --train splits/train.npy --features` serves an epoch whose
        seeds are the train mask, rows and labels the source's."""
        ds = D.load_planetoid("cora", BUNDLED)
        n = ds.num_nodes
        ei = np.concatenate([ds.edges.T, ds.edges[:, ::-1].T], 1)
        masks = {}
        for split in ("train", "val", "test"):
            masks[split] = np.zeros(n, bool)
            masks[split][getattr(ds, split)] = True
        data = FakeData(edge_index=ei, num_nodes=n, x=ds.x, y=ds.y, **{k + "_mask": v for k, v in masks.items()})
        g = self.out("cora")
        info = from_pyg(data, g, chunkify=self.chunkify)
        self.check_edges(g, ei, n)
        self.check_splits(info, masks)
        ref = D.prepare(ds, self.out("cora-prepared"), chunkify=self.chunkify, pack_features=False)["graph"]
        for a, b in zip(read_csr(g), read_csr(ref)):
            np.testing.assert_array_equal(a, b)
        with LocalServer(g, info.splits["train"], [10, 10], 32, seed=1, binary=self.ss,
                         extra_args=["--features"]) as srv, srv.client() as c:
            seeds = []
            for b in c.batches(0, advance=False):
                self.assertEqual(np.ascontiguousarray(b.x).tobytes(), ds.x[b.n_id.astype(np.int64)].tobytes())
                np.testing.assert_array_equal(b.y, ds.y[b.seeds])
                seeds.append(b.seeds)
        np.testing.assert_array_equal(np.sort(np.concatenate(seeds)), ds.train)

    @unittest.skipUnless(HAVE_PYG, "torch_geometric is not importable (not packaged in Debian; pip install "
                                   "torch_geometric to run this)")
    def test_torch_geometric_data(self):
        """A real torch_geometric Data of torch tensors."""
        import torch
        from torch_geometric.data import Data
        rng = np.random.default_rng(7)
        n = 60
        ei = messy_graph(rng, n)
        x = rng.standard_normal((n, 5)).astype(np.float32)
        y = rng.integers(0, 3, n)
        train = rng.random(n) < 0.4
        data = Data(edge_index=torch.from_numpy(ei), x=torch.from_numpy(x), y=torch.from_numpy(y),
                    train_mask=torch.from_numpy(train), num_nodes=n)
        g = self.out("pyg")
        info = from_pyg(data, g, chunkify=self.chunkify)
        self.check_edges(g, ei, n)
        self.check_splits(info, {"train": train})
        store = FeatureStore(g)
        self.assertEqual(store.x.tobytes(), x.tobytes())
        np.testing.assert_array_equal(store.y, y)


class Errors(unittest.TestCase):
    """Bad input raises ValueError naming it, and leaves no directory."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-convert-err-")
        _, cls.chunkify = build_tools(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def refuse(self, regex, *args, exc=ValueError, **kw):
        before = sorted(os.listdir(self.tmp))
        out = os.path.join(self.tmp, "g")
        with self.assertRaisesRegex(exc, regex):
            from_arrays(*args[:2], out, *args[2:], chunkify=self.chunkify, **kw)
        self.assertEqual(sorted(os.listdir(self.tmp)), before)

    def test_errors(self):
        ei = np.array([[0, 1, 2], [1, 2, 0]])
        n = 3
        self.refuse(r"edge_index: shape \(3, 3\), want \[2, E\]$", np.zeros((3, 3), int), n)
        self.refuse(r"shape \(3, 2\), want \[2, E\] \(an \[E, 2\] list: pass its transpose\)", ei.T, n)
        self.refuse(r"edge_index: dtype float64, want integers", ei.astype(float), n)
        # Checked slice by slice: the offender sits in the last of many.
        big = np.zeros((2, 5000), np.int64)
        big[1, 4321] = 3
        self.refuse(r"edge_index\[1\]\[4321\] = 3: node ids must be in 0..2 \(num_nodes 3\)", big, n,
                    piece_bytes=256)
        big[1, 4321], big[0, 17] = 0, -4
        self.refuse(r"edge_index\[0\]\[17\] = -4", big, n, piece_bytes=256)
        self.refuse(r"num_nodes=0: want 1..", ei, 0)
        self.refuse(r"num_nodes=2.5: want an integer", ei, 2.5)
        self.refuse(r"x: shape \(4, 2\), want \[num_nodes, F\] = \[3, F\]", ei, n, np.zeros((4, 2)))
        self.refuse(r"x: dtype int64, want float32", ei, n, np.zeros((3, 2), np.int64))
        # float64 narrowed to float32: a finite value past its range is an
        # error naming it, not a stored inf (numpy would only warn).
        wide = np.zeros((3, 2))
        wide[2, 1] = 1e39
        self.refuse(r"x\[2, 1\] = 1e\+39 does not fit float32", ei, n, wide)
        self.refuse(r"y: shape \(2,\), want \[num_nodes\] = \[3\]", ei, n, None, np.zeros(2, int))
        self.refuse(r"y\[1\] = 0.5: labels are class ids", ei, n, None, np.array([0, 0.5, 1]))
        self.refuse(r"y\[2\] = -2", ei, n, None, np.array([0, 1, -2]))
        self.refuse(r"mask 'train': shape \(4,\), want a boolean \[num_nodes\] = \[3\]", ei, n,
                    masks={"train": np.ones(4, bool)})
        self.refuse(r"masks\['val'\]\[1\] = 3: node ids must be in 0..2", ei, n, masks={"val": np.array([0, 3])})
        self.refuse(r"mask name '../x'", ei, n, masks={"../x": np.ones(3, bool)})
        self.refuse(r"edge_perm='yes'", ei, n, edge_perm="yes")
        # chunkify's refusal (a node's in-edges do not fit one chunk).
        star = np.stack([np.arange(1, 300), np.zeros(299, np.int64)])
        self.refuse(r"chunkify build failed.*chunk", star, 300, exc=RuntimeError, chunk_size=512)
        with self.assertRaisesRegex(ValueError, r"data has no edge_index"):
            from_pyg(FakeData(num_nodes=3), os.path.join(self.tmp, "g"))
        with self.assertRaisesRegex(ValueError, r"mask 'train': shape \(2,\)"):
            from_pyg(FakeData(edge_index=ei, num_nodes=n, train_mask=np.ones(2, bool)), os.path.join(self.tmp, "g"),
                     chunkify=self.chunkify)

    def test_existing_output(self):
        ei = np.array([[0, 1], [1, 0]])
        out = os.path.join(self.tmp, "exists")
        first = from_arrays(ei, 2, out, chunkify=self.chunkify)
        self.assertEqual(first.num_edges, 2)
        with self.assertRaisesRegex(OutputExistsError, "exists: pass force=True") as cm:
            from_arrays(ei[:, :1], 2, out, chunkify=self.chunkify)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertIsInstance(cm.exception, FileExistsError)
        self.assertEqual(read_info(out).num_edges, 2)
        self.assertEqual(from_arrays(ei[:, :1], 3, out, chunkify=self.chunkify, force=True).num_edges, 1)
        self.assertEqual((read_info(out).num_nodes, len(read_csr(out)[1])), (3, 1))
        self.assertEqual(sorted(f for f in os.listdir(self.tmp) if f.startswith(".")), [])

    def test_read_csr_refuses(self):
        """read_csr names a missing manifest and chunks that disagree with it."""
        out = os.path.join(self.tmp, "csr")
        rng = np.random.default_rng(3)
        from_arrays(rng.integers(0, 200, (2, 900)), 200, out, chunkify=self.chunkify, chunk_size="1KiB")
        with self.assertRaisesRegex(GraphFormatError, r"chunks.info: \d+ chunk starts, manifest.json lists"):
            info = os.path.join(out, "chunks.info")
            with open(info, "r+b") as f:
                f.truncate(os.path.getsize(info) - 4)
            read_csr(out)
        os.remove(os.path.join(out, "manifest.json"))
        with self.assertRaisesRegex(FileNotFoundError, "no manifest.json, so not a graph"):
            read_csr(out)

    def test_exported(self):
        for name in ("from_pyg", "from_arrays", "load_edge_perm", "read_csr", "read_info", "GraphInfo"):
            self.assertIn(name, streamsampler.__all__)


if __name__ == "__main__":
    unittest.main()
