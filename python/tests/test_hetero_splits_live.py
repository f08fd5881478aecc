"""Splits and labels on a heterogeneous ``streamsampler serve`` (built from
this checkout) over the bundled testdata/hetero-mini with labels added:
company has rows and labels (raw node-label, packed into its feature
store), politician and government rows only, tvshow labels only
(labels/tvshow.npy, as from_pyg writes a type with y and no x).

Checked: every minibatch's y equals the labels written, row for row (n_id
with PyG, the last hop's src nodes with DGL); a split serves its nodes in
the given order, each once, the last piece short, with batch_size set for
the split's type only; a split's minibatch of the training type equals
the training stream's sample of the same nodes (same epoch key) where the
two meet; the same nodes give the same split; drop_split forgets it; bad
requests are refused naming the node and type."""

import gzip
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from streamsampler import Client
from streamsampler import protocol as P

from .test_hetero_live import serve_socket
from .test_live import REPO, build_tools

FANOUTS = [3, 2]


def company_labels(n):
    y = (np.arange(n) * 7 % 5).astype(np.int64)
    y[::7] = -1
    return y


def tvshow_labels(n):
    y = (np.arange(n) * 7 % 3).astype(np.int64)
    y[::5] = -1
    return y


class HeteroSplitsLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-hetero-splits-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        src = os.path.join(cls.tmp, "mini")
        shutil.copytree(os.path.join(REPO, "testdata", "hetero-mini"), src)
        with gzip.open(os.path.join(src, "raw", "num-node-dict.csv.gz"), "rt") as f:
            names = f.readline().strip().split(",")
            counts = [int(v) for v in f.readline().strip().split(",")]
        cls.counts = dict(zip(names, counts))
        # company: labels beside its rows; tvshow: no rows (labels come
        # as labels/tvshow.npy below).
        cls.labels = {"company": company_labels(cls.counts["company"]), "tvshow": tvshow_labels(cls.counts["tvshow"])}
        os.makedirs(os.path.join(src, "raw", "node-label", "company"))
        with gzip.open(os.path.join(src, "raw", "node-label", "company", "node-label.csv.gz"), "wt") as f:
            f.write("".join(("nan" if v < 0 else str(v)) + "\n" for v in cls.labels["company"]))
        shutil.rmtree(os.path.join(src, "raw", "node-feat", "tvshow"))
        cls.graph = os.path.join(cls.tmp, "het")
        subprocess.run([cls.chunkify, "build", "--ogb-raw", src, "-o", cls.graph, "--add-reverse"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.makedirs(os.path.join(cls.graph, "labels"))
        np.save(os.path.join(cls.graph, "labels", "tvshow.npy"), cls.labels["tvshow"])
        cls.train = np.arange(0, 600, 3)
        cls.train_file = os.path.join(cls.tmp, "train.txt")
        np.savetxt(cls.train_file, cls.train, fmt="%d")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, semantics):
        sock = os.path.join(self.tmp, "s-%s.sock" % semantics)
        return serve_socket(self, [self.ss, "serve", "--graph", self.graph, "--train-type", "company",
                                   "--train", self.train_file, "--fanouts", ",".join(map(str, FANOUTS)),
                                   "--batch-size", "32", "--seed", "5", "--semantics", semantics, "--features"], sock)

    def rows(self, b, t):
        return b.nodes[t].n_id if b.semantics == "pyg" else b.blocks[-1].src_n_id[t]

    def check_labels(self, b, schema):
        self.assertEqual(set(b.y), set(self.labels))
        for t in schema.node_types:
            if t not in self.labels:
                if b.semantics == "pyg":
                    self.assertIsNone(b.nodes[t].y)
                continue
            y = b.y[t]
            self.assertEqual(y.dtype, np.int32)
            np.testing.assert_array_equal(y, self.labels[t][self.rows(b, t)])
            if b.semantics == "pyg":
                self.assertIs(b.nodes[t].y, y)
        self.assertEqual(set(b.x), {"company", "politician", "government"})

    def test_labels_and_splits(self):
        for sem in ("pyg", "dgl"):
            with self.subTest(sem=sem), Client(self.serve(sem)) as c:
                schema = c.hetero_schema()
                info = c.epoch_info()
                self.assertEqual(info["hetero"]["labels"], [t in self.labels for t in schema.node_types])
                for b in c.hetero_batches(max_batches=2, advance=False):
                    self.check_labels(b, schema)
                # A split of tvshow nodes, given out of order.
                nodes = np.arange(self.counts["tvshow"] - 1, 0, -37)
                sp = c.hetero_split("tvshow", nodes, 16)
                self.assertEqual((sp["num_nodes"], sp["batch_size"], sp["num_batches"], sp["node_type"]),
                                 (len(nodes), 16, (len(nodes) + 15) // 16, "tvshow"))
                self.assertEqual(c.hetero_split("tvshow", nodes.astype(np.int64), 16)["split"], sp["split"])
                got = []
                n = 0
                for b in c.hetero_split_batches(sp["split"], depth=3, semantics=sem):
                    self.assertEqual((b.index, b.epoch), (n, info["epoch"]))
                    n += 1
                    self.check_labels(b, schema)
                    if sem == "pyg":
                        bs = b.nodes["tvshow"].batch_size
                        for t in schema.node_types:
                            if t != "tvshow":
                                self.assertEqual(b.nodes[t].batch_size, 0, t)
                        got.extend(b.nodes["tvshow"].n_id[:bs].tolist())
                    else:
                        got.extend(b.blocks[0].dst_n_id["tvshow"].tolist())
                        self.assertEqual(sum(len(v) for k, v in b.blocks[0].dst_n_id.items() if k != "tvshow"), 0)
                self.assertEqual(n, sp["num_batches"])
                self.assertEqual(got, nodes.tolist())
                self.assertIsNone(c.hetero_split_batch(sp["split"], sp["num_batches"]))
                c.drop_split(sp["split"])
                with self.assertRaises(P.ServerError) as cm:
                    c.hetero_split_batch(sp["split"], 0)
                self.assertEqual(cm.exception.code, 12)

    def test_split_of_training_nodes_matches_the_epoch(self):
        """A split minibatch of one training node is what the training
        epoch samples for that node: same epoch key, same neighbors."""
        with Client(self.serve("dgl")) as c:
            b = next(c.hetero_batches(max_batches=1, advance=False))
            seed = int(b.blocks[0].dst_n_id["company"][0])
            sp = c.hetero_split("company", [seed], 1)
            s = c.hetero_split_batch(sp["split"], 0)
            # The training batch's hop-1 edges into the seed (dst 0) are the
            # split's (its only dst), relation by relation.
            for et, (es, ed, _) in b.blocks[0].edges.items():
                if et[2] != "company":
                    continue
                want = sorted(b.blocks[0].src_n_id[et[0]][es[ed == 0]].tolist())
                ss, sd, _ = s.blocks[0].edges[et]
                self.assertEqual(sorted(s.blocks[0].src_n_id[et[0]][ss[sd == 0]].tolist()), want, et)
            c.drop_split(sp["split"])

    def test_bad_splits_refused(self):
        with Client(self.serve("pyg")) as c:
            n = self.counts["politician"]
            for nodes, want in (([1, n], "node %d (position 1) of type \"politician\"" % n),
                                ([4, 2, 4], "node 4 of type \"politician\" at positions 0 and 2")):
                with self.assertRaises(P.ServerError) as cm:
                    c.hetero_split("politician", nodes, 4)
                self.assertEqual(cm.exception.code, 1)
                self.assertIn(want, str(cm.exception))
            with self.assertRaisesRegex(ValueError, "venue"):
                c.hetero_split("venue", [1], 4)
            # Still usable.
            self.assertEqual(c.hetero_split("politician", [3], 4)["num_batches"], 1)


if __name__ == "__main__":
    unittest.main()
