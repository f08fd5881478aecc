"""The convergence datasets through the feature store, live: Cora, CiteSeer
and musae-facebook as ``datasets.prepare`` packs them (from the copies
bundled under testdata/), served by ``streamsampler serve --features``
over an epoch, with and without ``--reorder match``, over the byte stream
and in memory files: every delivered row equals the source matrix's row
byte for byte, and every label the source's. Then the convergence script's
torch-free ``--dry-run`` on the same folders. Also the Python reader of the
store (streamsampler.featstore) and its errors."""

import hashlib
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from streamsampler import Client, LocalServer
from streamsampler import datasets as D
from streamsampler.featstore import FeatureStore, StoreError, crc32c, graph_fingerprint
from tests.test_live import build_tools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUNDLED = os.path.join(REPO, "testdata")
SCRIPT = os.path.join(REPO, "python", "convergence.py")

try:
    import scipy.sparse  # noqa: F401  (the Planetoid pickles hold scipy matrices)
    HAVE_SCIPY = True
except ImportError:  # pragma: no cover
    HAVE_SCIPY = False

ALL_NAMES = ["cora", "citeseer", "musae-facebook"]
# Cora and CiteSeer are Planetoid pickles, which need scipy: without it
# they are named skips (skip_missing), not silently absent.
NAMES = ALL_NAMES if HAVE_SCIPY else ["musae-facebook"]
MISSING = {name: "scipy is not importable: it reads the Planetoid pickles of %s (Debian: python3-scipy; "
                 "scripts/deps.sh installs it)" % name for name in ALL_NAMES if name not in NAMES}


def skip_missing(test):
    """A named skip (a subtest of ``test``) for each dataset that cannot
    be loaded here."""
    for name, why in MISSING.items():
        with test.subTest(dataset=name):
            test.skipTest(why)
# (fanouts, batch size) as python/convergence.py trains them.
CONFIG = {"cora": ([10, 10], 32), "citeseer": ([10, 10], 32), "musae-facebook": ([10, 10], 512)}


class BundledCopies(unittest.TestCase):
    """The gzip copies decompress to the origin's bytes (the sha256 values
    their README.md lists)."""

    def test_sha256(self):
        for folder in ("planetoid", "musae-facebook"):
            d = os.path.join(BUNDLED, folder)
            with open(os.path.join(d, "README.md")) as f:
                listed = dict((name, digest) for digest, name in
                              re.findall(r"^([0-9a-f]{64})  (\S+)$", f.read(), re.M))
            gz = sorted(n for n in os.listdir(d) if n.endswith(".gz") and not n.startswith("cora."))
            self.assertGreaterEqual(len(gz), 3)
            for n in gz:
                with gzip.open(os.path.join(d, n), "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
                self.assertEqual(got, listed.get(n[:-3]), n)


class StoreLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-conv-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        cls.ds, cls.paths = {}, {}
        for name in NAMES:
            cls.ds[name] = D.load(name, BUNDLED)
            cls.paths[name] = D.prepare(cls.ds[name], os.path.join(cls.tmp, name), chunkify=cls.chunkify)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_reader_equals_source(self):
        skip_missing(self)
        for name in NAMES:
            ds, store = self.ds[name], FeatureStore(self.paths[name]["graph"])
            self.assertEqual(store.x.shape, ds.x.shape, name)
            self.assertEqual(store.x.dtype, np.float32)
            self.assertEqual(store.x.tobytes(), ds.x.tobytes(), name)
            np.testing.assert_array_equal(store.y, ds.y)
            self.assertEqual(store.num_classes, ds.num_classes)

    def test_epoch_rows_and_labels(self):
        """One epoch per dataset, reorder mode and transport: each
        minibatch's x is the source rows of its n_id and y the source
        labels of its seeds; the seeds are the training nodes, each once."""
        skip_missing(self)
        for name in NAMES:
            ds = self.ds[name]
            fanouts, batch_size = CONFIG[name]
            src = ds.x.astype(np.float32)
            for reorder, shared in (("none", False), ("match", True)):
                with self.subTest(dataset=name, reorder=reorder, shared=shared):
                    srv = LocalServer(self.paths[name]["graph"], self.paths[name]["train"], fanouts, batch_size,
                                      seed=3, binary=self.ss, extra_args=["--features", "--reorder", reorder])
                    with srv, srv.client(shared_rows=shared) as c:
                        self.assertEqual(c._shared, shared)
                        self.assertEqual(c.epoch_info()["features"],
                                         {"dim": src.shape[1], "dtype": "float32", "row_bytes": 4 * src.shape[1],
                                          "labels": True})
                        seeds = []
                        for b in c.batches(0, advance=False):
                            n_id = b.n_id.astype(np.int64)
                            self.assertEqual(b.x.dtype, np.float32)
                            self.assertEqual(b.x.shape, (len(n_id), src.shape[1]))
                            self.assertEqual(np.ascontiguousarray(b.x).tobytes(), src[n_id].tobytes())
                            np.testing.assert_array_equal(b.y, ds.y[b.seeds])
                            seeds.append(b.seeds)
                        np.testing.assert_array_equal(np.sort(np.concatenate(seeds)), ds.train)

    def test_convergence_dry_run(self):
        """The convergence script's prepare layout and its torch-free dry
        run: every minibatch's model input equals the store's rows (row-
        normalized where the script normalizes), for both reorder modes."""
        skip_missing(self)
        data = os.path.join(self.tmp, "conv")
        os.makedirs(data)
        for name in NAMES:
            # What `convergence.py prepare` leaves: the store, no .npy.
            d = os.path.join(data, name)
            shutil.copytree(os.path.join(self.tmp, name), d)
            for f in ("features.npy", "labels.npy"):
                os.remove(os.path.join(d, f))
        out = os.path.join(self.tmp, "dry.json")
        r = subprocess.run([sys.executable, SCRIPT, "--data", data, "--binary", self.ss, "--datasets",
                            ",".join(NAMES), "--seeds", "0", "--reorder", "none,match", "--dry-run", "--out", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout.decode()[-2000:])
        with open(out) as f:
            res = json.load(f)["results"]
        self.assertEqual([(x["dataset"], x["sampler"]) for x in res],
                         [(n, s) for n in NAMES for s in ("ours/store", "ours/store+match")])
        self.assertTrue(all(x["checked"] and x["batches"] > 0 for x in res))


class StoreErrors(unittest.TestCase):
    """FeatureStore refuses what it cannot trust, naming the file."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-store-")
        _, cls.chunkify = build_tools(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def graph(self, name, edges, n, x=None, y=None):
        d = os.path.join(self.tmp, name)
        ef = d + ".edges"
        np.savetxt(ef, edges, fmt="%d")
        subprocess.run([self.chunkify, "build", ef, "-o", d, "--symmetrize", "--num-nodes", str(n), "-q"],
                       check=True)
        if x is not None:
            np.save(d + ".x.npy", x)
            cmd = [self.chunkify, "features", d + ".x.npy", "-o", d, "-q"]
            if y is not None:
                np.save(d + ".y.npy", y)
                cmd += ["--labels", d + ".y.npy"]
            subprocess.run(cmd, check=True)
        return d

    def test_errors(self):
        x = np.arange(40, dtype=np.float16).reshape(10, 4)
        y = np.array([0, 1, 2, -1, 0, 1, 2, 0, 1, 2], np.int64)
        ring = np.array([[i, (i + 1) % 10] for i in range(10)])
        g = self.graph("ring", ring, 10, x, y)
        s = FeatureStore(g)
        self.assertEqual(s.x.dtype, np.float16)
        self.assertEqual(s.x.tobytes(), x.tobytes())
        np.testing.assert_array_equal(s.y, y)
        self.assertEqual(s.num_classes, 3)
        # No labels packed: y is None.
        nolab = self.graph("nolab", ring, 10, x)
        self.assertIsNone(FeatureStore(nolab).y)
        # No store at all.
        bare = self.graph("bare", ring, 10)
        with self.assertRaisesRegex(FileNotFoundError, "no feature store"):
            FeatureStore(bare)
        # The store copied beside another graph (same node count).
        other = self.graph("other", np.array([[i, (i + 2) % 10] for i in range(10)]), 10)
        for f in os.listdir(g):
            if f.startswith(("features", "labels")):
                shutil.copy(os.path.join(g, f), other)
        with self.assertRaisesRegex(StoreError, "packed for graph") as cm:
            FeatureStore(other)
        self.assertIn(os.path.join(other, "features.json"), str(cm.exception))
        # A truncated data file.
        with open(os.path.join(g, "features.json")) as f:
            fname = json.load(f)["features"]["file"]
        with open(os.path.join(g, fname), "r+b") as f:
            f.truncate(79)
        with self.assertRaisesRegex(StoreError, "79 bytes, want 80") as cm:
            FeatureStore(g)
        self.assertIn(os.path.join(g, fname), str(cm.exception))

    def test_fingerprint_matches_chunkify(self):
        """graph_fingerprint computes what chunkify recorded (a multi-chunk
        graph, so the CRC covers several chunk CRCs)."""
        rng = np.random.default_rng(2)
        e = rng.integers(0, 3000, (20000, 2))
        d = os.path.join(self.tmp, "chunks")
        np.savetxt(d + ".edges", e, fmt="%d")
        subprocess.run([self.chunkify, "build", d + ".edges", "-o", d, "--chunk-size", "16KiB", "-q"], check=True)
        np.save(d + ".x.npy", np.zeros((3000, 2), np.uint8))
        subprocess.run([self.chunkify, "features", d + ".x.npy", "-o", d, "-q"], check=True)
        with open(os.path.join(d, "features.json")) as f:
            recorded = json.load(f)["graph"]
        self.assertGreater(recorded["chunks"], 3)
        self.assertEqual(graph_fingerprint(d), recorded)
        self.assertEqual(crc32c(b"123456789"), 0xE3069283)  # the CRC-32C check value
        self.assertEqual(FeatureStore(d).x.dtype, np.uint8)


if __name__ == "__main__":
    unittest.main()
