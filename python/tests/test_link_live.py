"""Link minibatches from a live ``streamsampler serve`` built from this
checkout: a link split (``Client.link_split``) of evaluation edges on a
node server, every minibatch decoded with its link fields (Batch.link):
the positives in order, the negatives' count, labels and local ids."""

import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from streamsampler import LocalServer, ServerError
from streamsampler.link import NEG_BINARY, NEG_TRIPLET
from tests.test_live import FANOUTS, N, build_tools, random_graph


class LinkLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-link-live-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        rng = np.random.default_rng(8)
        edges, cls.adj = random_graph(rng)
        ef = os.path.join(cls.tmp, "edges.txt")
        np.savetxt(ef, edges, fmt="%d")
        cls.graph = os.path.join(cls.tmp, "graph")
        subprocess.run([cls.chunkify, "build", ef, "-o", cls.graph, "--symmetrize"], check=True,
                       stdout=subprocess.DEVNULL)
        cls.edges = edges[:90].T.astype(np.int64)  # (2, 90): evaluation edges, stored ones

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_link_split(self):
        srv = LocalServer(self.graph, np.arange(0, N, 2), FANOUTS, 16, seed=3, binary=self.ss).start()
        self.addCleanup(srv.stop)
        with srv.client() as c:
            labels = (np.arange(90) % 2).astype(np.int64)
            info = c.link_split(self.edges, 20, labels=labels, neg_sampling=NEG_BINARY, amount=1.5, seed=9)
            self.assertEqual((info["num_edges"], info["batch_size"], info["num_batches"]), (90, 20, 5))
            self.assertEqual(c.link_split(self.edges, 20, labels=labels, neg_sampling=NEG_BINARY, amount=1.5,
                                          seed=9)["split"], info["split"])
            pos = 0
            for i, b in enumerate(c.split_batches(info["split"])):
                link = b.link
                self.assertIsNotNone(link)
                p = link.num_pos
                np.testing.assert_array_equal(link.input_id, np.arange(pos, pos + p))
                m = p + int(np.ceil(p * 1.5))
                self.assertEqual(link.edge_label_index.shape, (2, m))
                self.assertEqual(link.edge_label_index.dtype, np.int64)
                # Seeds: the sorted unique endpoints, n_id's start.
                ends = b.n_id[link.edge_label_index]
                np.testing.assert_array_equal(b.seeds, np.unique(ends))
                np.testing.assert_array_equal(ends[:, :p], self.edges[:, pos:pos + p])
                # Labels: integers shifted by one (their minimum is 0), negatives 0.
                self.assertEqual(link.edge_label.dtype, np.int64)
                np.testing.assert_array_equal(link.edge_label[:p], labels[pos:pos + p] + 1)
                np.testing.assert_array_equal(link.edge_label[p:], 0)
                for hop in b.hops:
                    for s, d in zip(hop.src[hop.edge_src].tolist(), hop.dst[hop.edge_dst].tolist()):
                        self.assertIn(s, self.adj[d])
                pos += p
            self.assertEqual(pos, 90)
            # Triplet: amount destinations per positive, the source kept.
            info = c.link_split(self.edges, 32, neg_sampling=NEG_TRIPLET, amount=3)
            b = next(iter(c.split_batches(info["split"])))
            self.assertEqual(b.link.dst_neg_index.shape, (32, 3))
            np.testing.assert_array_equal(b.n_id[b.link.src_index], self.edges[0, :32])
            np.testing.assert_array_equal(b.n_id[b.link.dst_pos_index], self.edges[1, :32])
            with self.assertRaises(ServerError):
                c.link_split(self.edges, 10, labels=labels, neg_sampling=NEG_TRIPLET, amount=1)
            c.drop_split(info["split"])


if __name__ == "__main__":
    unittest.main()
