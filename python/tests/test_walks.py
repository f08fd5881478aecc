"""Random walks from a live server (Client.walks) against the in-memory
reference walker (`streamsampler walk --in-memory`), every mode; the
request's errors."""

import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from streamsampler import LocalServer, ServerError
from streamsampler import protocol as P
from tests.test_live import build_tools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Walks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-walks-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        cls.graph = os.path.join(cls.tmp, "g")
        subprocess.run([cls.chunkify, "build", os.path.join(REPO, "testdata", "email-Eu-core.txt.gz"), "-o",
                        cls.graph, "--chunk-size", "64KiB", "-q"], check=True)
        cls.srv = LocalServer(cls.graph, [0, 1, 2], [2], 2, binary=cls.ss).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def reference(self, starts, length, walks_per_node, args):
        sf = os.path.join(self.tmp, "starts.txt")
        np.savetxt(sf, starts, fmt="%d")
        out = os.path.join(self.tmp, "ref.npy")
        subprocess.run([self.ss, "walk", "--graph", self.graph, "--start", sf, "--length", str(length),
                        "--walks-per-node", str(walks_per_node), "--in-memory", "-q", "-o", out] + args, check=True)
        return np.load(out)

    def test_every_mode(self):
        starts = [5, 0, 1004, 5, 77, 300]
        with self.srv.client() as c:
            for kw, args in [
                (dict(mode="deepwalk", seed=3), ["--seed", "3"]),
                (dict(mode="ppr", seed=4, restart=0.25), ["--mode", "ppr", "--restart", "0.25", "--seed", "4"]),
                (dict(mode="ppr", seed=4, restart=0.25, stop_at_restart=True),
                 ["--mode", "ppr", "--restart", "0.25", "--stop-at-restart", "--seed", "4"]),
                (dict(mode="node2vec", seed=5, p=0.5, q=2.0), ["--mode", "node2vec", "--p", "0.5", "--q", "2", "--seed", "5"]),
            ]:
                got = c.walks(starts, 9, walks_per_node=3, **kw)
                self.assertEqual((got.shape, got.dtype), ((18, 10), np.dtype("<i4")))
                np.testing.assert_array_equal(got, self.reference(starts, 9, 3, args), err_msg=str(kw))
                np.testing.assert_array_equal(got[:6, 0], starts)

    def test_errors(self):
        with self.srv.client() as c:
            with self.assertRaises(ServerError) as cm:
                c.walks([5000], 3)
            self.assertEqual(cm.exception.code, P.CODE_BAD_REQUEST)
            with self.assertRaises(ValueError):
                c.walks([1], 3, mode="metapath")
            self.assertEqual(c.walks([1], 2).shape, (1, 3))  # still usable


if __name__ == "__main__":
    unittest.main()
