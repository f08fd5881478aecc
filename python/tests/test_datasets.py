"""Dataset loaders: bundled Cora against PyG's known numbers, CiteSeer's
isolated-test-node handling and musae-facebook parsing on synthetic
files, and prepare() (with chunkify when it can be built)."""

import collections
import json
import os
import pickle
import shutil
import subprocess
import tempfile
import contextlib
import io
import unittest
from unittest import mock

import numpy as np

from streamsampler import datasets as D

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUNDLED = os.path.join(REPO, "testdata")

try:
    import scipy.sparse as sp
except ImportError:  # pragma: no cover
    sp = None


@unittest.skipIf(sp is None, "scipy needed to read the Planetoid pickles")
class Cora(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            cls.ds = D.load_planetoid("cora", root=BUNDLED)

    def test_sizes_match_pyg(self):
        ds = self.ds
        # PyG's Planetoid('Cora'): 2708 nodes, 10556 directed edges,
        # 1433 features, 7 classes, 140/500/1000.
        self.assertEqual((ds.num_nodes, ds.num_directed_edges, ds.x.shape, ds.num_classes),
                         (2708, 10556, (2708, 1433), 7))
        self.assertEqual(np.bincount(ds.y).tolist(), [351, 217, 418, 818, 426, 298, 180])
        self.assertEqual(ds.train.tolist(), list(range(140)))
        self.assertEqual(np.bincount(ds.y[ds.train]).tolist(), [20] * 7)
        self.assertEqual(ds.val.tolist(), list(range(140, 640)))
        self.assertEqual(len(ds.test), 1000)
        self.assertTrue(np.all(np.diff(ds.test) > 0))
        self.assertEqual(int(ds.x.sum()), 49216)
        self.assertTrue(np.all(ds.edges[:, 0] < ds.edges[:, 1]))

    def test_test_rows_reordered(self):
        # Row test.index[i] holds tx[i]: the features of the i-th test
        # entry land at its node id.
        d = os.path.join(BUNDLED, "planetoid")
        tx = D._dense(D._load_pickle(os.path.join(d, "ind.cora.tx")))
        with open(os.path.join(d, "ind.cora.test.index")) as f:
            idx = [int(l) for l in f]
        for i in (0, 1, 500, 999):
            np.testing.assert_array_equal(self.ds.x[idx[i]], tx[i])


def write_planetoid(d, name, x, y, tx, ty, allx, ally, graph, test_index):
    for part, obj in (("x", x), ("y", y), ("tx", tx), ("ty", ty), ("allx", allx), ("ally", ally),
                      ("graph", graph)):
        with open(os.path.join(d, "ind.%s.%s" % (name, part)), "wb") as f:
            pickle.dump(obj, f, protocol=2)
    with open(os.path.join(d, "ind.%s.test.index" % name), "w") as f:
        f.write("\n".join(map(str, test_index)) + "\n")


@unittest.skipIf(sp is None, "scipy needed")
class CiteSeerQuirk(unittest.TestCase):
    def test_isolated_test_ids(self):
        """A test.index range with holes (ids 7 and 9 missing): they get
        zero features and label 0 and are in no split, as in PyG."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        onehot = lambda labels, k=3: np.eye(k, dtype=np.int32)[labels]
        allx = sp.csr_matrix(np.arange(1, 13, dtype=np.float32).reshape(6, 2))  # nodes 0..5
        ally = onehot([0, 1, 2, 1, 2, 2])
        x, y = allx[:2], ally[:2]
        test_index = [10, 6, 8]  # unsorted; 7 and 9 are holes
        tx = sp.csr_matrix(np.array([[100, 100], [60, 60], [80, 80]], np.float32))
        ty = onehot([2, 1, 2])
        graph = collections.defaultdict(list, {i: [(i + 1) % 11] for i in range(11)})
        graph[3].append(3)  # a self-loop, dropped
        write_planetoid(d, "citeseer", x, y, tx, ty, allx, ally, graph, test_index)
        ds = D.load_planetoid("citeseer", root=d)
        self.assertEqual(ds.num_nodes, 11)
        self.assertEqual(ds.x[:, 0].tolist(), [1, 3, 5, 7, 9, 11, 60, 0, 80, 0, 100])
        self.assertEqual(ds.y.tolist(), [0, 1, 2, 1, 2, 2, 1, 0, 2, 0, 2])
        self.assertEqual(ds.train.tolist(), [0, 1])
        self.assertEqual(ds.test.tolist(), [6, 8, 10])
        self.assertIn("2 isolated", ds.notes)
        self.assertEqual(len(ds.edges), 11)  # a ring, self-loop dropped


class Facebook(unittest.TestCase):
    def make(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        n = 50
        with open(os.path.join(d, "facebook_target.csv"), "w", encoding="utf-8") as f:
            f.write("id,facebook_id,page_name,page_type\n")
            for i in reversed(range(n)):
                f.write('%d,%d,"Page, %d 中",%s\n' % (i, 1000 + i, i, ["tvshow", "company", "government"][i % 3]))
        with open(os.path.join(d, "facebook_edges.csv"), "w") as f:
            f.write("id_1,id_2\n")
            for i in range(n):
                f.write("%d,%d\n%d,%d\n" % (i, (i + 1) % n, (i + 1) % n, i))  # both directions
            f.write("4,4\n")
        with open(os.path.join(d, "facebook_features.json"), "w") as f:
            json.dump({str(i): [i % 7, 10, 10] for i in range(n)}, f)
        return d

    def test_parse_and_split(self):
        d = self.make()
        ds = D.load_musae_facebook(root=d, seed=3, feature_dim=None)
        self.assertEqual((ds.num_nodes, len(ds.edges), ds.num_classes), (50, 50, 3))
        self.assertEqual(ds.y[:4].tolist(), [2, 0, 1, 2])  # company < government < tvshow
        self.assertEqual(ds.x.shape, (50, 11))
        self.assertEqual(ds.x[8].nonzero()[0].tolist(), [1, 10])  # duplicates collapse
        self.assertEqual((len(ds.train), len(ds.val), len(ds.test)), (30, 10, 10))
        allsplit = np.concatenate([ds.train, ds.val, ds.test])
        self.assertEqual(sorted(allsplit.tolist()), list(range(50)))
        again = D.load_musae_facebook(root=d, seed=3, feature_dim=None)
        np.testing.assert_array_equal(ds.train, again.train)
        other = D.load_musae_facebook(root=d, seed=4, feature_dim=None)
        self.assertFalse(np.array_equal(ds.train, other.train))
        proj = D.load_musae_facebook(root=d, seed=3, feature_dim=8)
        self.assertEqual(proj.x.shape, (50, 8))
        # Same bag of features, same projected row.
        np.testing.assert_allclose(proj.x[1], proj.x[8])

    def test_bad_header(self):
        d = self.make()
        with open(os.path.join(d, "facebook_edges.csv"), "w") as f:
            f.write("a,b\n0,1\n")
        with self.assertRaisesRegex(ValueError, "header"):
            D.load_musae_facebook(root=d)


class DatasetRoot(unittest.TestCase):
    """No machine path as a default: root=, else $STREAMSAMPLER_DATASETS,
    else an error that says how to give one."""

    def setUp(self):
        env = {k: v for k, v in os.environ.items() if k != D.ROOT_ENV}
        patcher = mock.patch.dict(os.environ, env, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_neither_given(self):
        for call in (D.dataset_root, lambda: D.load_planetoid("cora"), lambda: D.load("musae-facebook")):
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("root=", str(cm.exception))
            self.assertIn("$STREAMSAMPLER_DATASETS", str(cm.exception))

    def test_argument_then_environment(self):
        planetoid = os.path.join(BUNDLED, "planetoid")
        os.environ[D.ROOT_ENV] = planetoid
        self.assertEqual(D.dataset_root(), planetoid)
        self.assertEqual(D.dataset_root(BUNDLED), BUNDLED)
        self.assertEqual(D._root(None, "planetoid"), planetoid)  # laid out flat
        self.assertEqual(D._root(BUNDLED, "planetoid"), planetoid)

    def test_missing_directory(self):
        missing = os.path.join(BUNDLED, "no-such-dir")
        with self.assertRaises(FileNotFoundError) as cm:
            D.dataset_root(missing)
        self.assertIn(repr(missing), str(cm.exception))
        self.assertIn("root=", str(cm.exception))
        os.environ[D.ROOT_ENV] = missing
        with self.assertRaises(FileNotFoundError) as cm:
            D.dataset_root()
        self.assertIn("$STREAMSAMPLER_DATASETS", str(cm.exception))

    def test_command_line_usage_error(self):
        err = io.StringIO()
        with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(err):
            D.main(["cora", os.path.join(BUNDLED, "never-written")])
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("$STREAMSAMPLER_DATASETS", err.getvalue())
        self.assertFalse(os.path.exists(os.path.join(BUNDLED, "never-written")))


class Prepare(unittest.TestCase):
    def test_prepare_files_and_graph(self):
        # Node 6 is isolated and above every edge: --num-nodes keeps it.
        ds = D.Dataset("toy", 7, D.undirected_unique([0, 1, 2, 3, 4, 1], [1, 2, 3, 4, 5, 0], 7),
                       np.eye(7, dtype=np.float32), np.arange(7) % 2, np.array([0, 1]), np.array([2]),
                       np.array([3, 4, 6]), 2)
        self.assertEqual(ds.edges.tolist(), [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]])
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out)
        chunkify = os.environ.get("STREAMSAMPLER_CHUNKIFY")
        if not chunkify and shutil.which("go"):
            chunkify = os.path.join(out, "chunkify")
            r = subprocess.run(["go", "build", "-o", chunkify, "./cmd/chunkify"], cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                chunkify = None
        p = D.prepare(ds, os.path.join(out, "toy"), chunkify=chunkify, build_graph=chunkify is not None)
        self.assertEqual(np.loadtxt(p["train"], dtype=np.int64).tolist(), [0, 1])
        self.assertEqual(np.load(p["labels"]).tolist(), [0, 1, 0, 1, 0, 1, 0])
        with open(p["meta"]) as f:
            meta = json.load(f)
        self.assertEqual(meta["undirected_edges"], 5)
        if chunkify is not None:
            with open(os.path.join(p["graph"], "manifest.json")) as f:
                m = json.load(f)
            self.assertEqual((m["num_nodes"], m["num_edges"]), (7, 10))


if __name__ == "__main__":
    unittest.main()
