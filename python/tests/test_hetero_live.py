"""A heterogeneous ``streamsampler serve`` (built from this checkout, as
test_live.py builds it) over the bundled testdata/hetero-mini, read with
Client.hetero_batches: every edge of every minibatch is an edge of the
raw data, the seeds of an epoch are the training set once each, per-hop
counts respect the fanouts, and the DGL blocks hold the same edges per
hop as the PyG minibatch of the same seeds."""

import csv
import gzip
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from streamsampler import Client
from streamsampler import protocol as P

from .test_live import REPO, build_tools

RAW = os.path.join(REPO, "testdata", "hetero-mini", "raw")
FANOUTS = [3, 2]
SPECIAL = ("company", "likes", "company")  # --relation-fanouts company___likes___company=1,1


def raw_edges():
    """{(src, rel, dst): set of (u, v)} of the raw relations as --add-reverse
    builds them: rev_ relations added, relations within a type symmetrized."""
    out = {}
    rel_dir = os.path.join(RAW, "relations")
    for name in sorted(os.listdir(rel_dir)):
        s, r, d = name.split("___")
        with gzip.open(os.path.join(rel_dir, name, "edge.csv.gz"), "rt") as f:
            pairs = {(int(a), int(b)) for a, b in csv.reader(f)}
        if s == d:
            # PyG's ToUndirected (and --add-reverse) makes a relation
            # within one type undirected in place.
            pairs |= {(b, a) for a, b in pairs}
        out[(s, r, d)] = pairs
        if s != d:
            out[(d, "rev_" + r, s)] = {(b, a) for a, b in pairs}
    return out


def serve_socket(tc, argv, sock):
    """Start ``argv`` (a ``streamsampler serve`` command) on the Unix
    socket ``sock``, wait for its ready line (failing ``tc`` with its
    stderr otherwise), stop it when ``tc`` ends; returns ``sock``."""
    p = subprocess.Popen(argv + ["--socket", sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        tc.fail("serve did not start: %r %s" % (line, p.stderr.read()))

    def stop():
        p.terminate()
        p.wait(10)
        p.stdout.close()
        p.stderr.close()
    tc.addCleanup(stop)
    return sock


class HeteroLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-hetero-live-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        cls.graph = os.path.join(cls.tmp, "het")
        subprocess.run([cls.chunkify, "build", "--ogb-raw", os.path.join(REPO, "testdata", "hetero-mini"), "-o", cls.graph,
                        "--add-reverse"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.train = np.arange(0, 600, 3)
        cls.train_file = os.path.join(cls.tmp, "train.txt")
        np.savetxt(cls.train_file, cls.train, fmt="%d")
        cls.edges = raw_edges()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, semantics, features=False):
        sock = os.path.join(self.tmp, "s-%s-%d.sock" % (semantics, features))
        return serve_socket(self, [self.ss, "serve", "--graph", self.graph, "--train-type", "company",
                                   "--train", self.train_file, "--fanouts", ",".join(map(str, FANOUTS)),
                                   "--relation-fanouts", "___".join(SPECIAL) + "=1,1", "--batch-size", "32",
                                   "--seed", "5", "--semantics", semantics, "--edge-ids"]
                            + (["--features"] if features else []), sock)

    def fanout(self, et, hop):
        return 1 if et == SPECIAL else FANOUTS[hop]

    def test_pyg(self):
        with Client(self.serve("pyg")) as c:
            info = c.epoch_info()
            self.assertEqual(info["protocol"], P.PROTOCOL)
            schema = c.hetero_schema()
            self.assertEqual(set(schema.edge_types), set(self.edges))
            seen = []
            for b in c.hetero_batches():
                self.assertEqual(b.semantics, "pyg")
                self.assertIsNotNone(b["company"].n_id)
                seeds = b["company"].n_id[:b["company"].batch_size]
                seen.extend(seeds.tolist())
                for t in schema.node_types:
                    n = b[t]
                    self.assertEqual(len(np.unique(n.n_id)), len(n.n_id), t)
                    self.assertEqual(int(n.num_sampled_nodes.sum()), len(n.n_id))
                    if t != "company":
                        self.assertEqual(n.batch_size, 0)
                for et in schema.edge_types:
                    e = b[et]
                    src = b[et[0]].n_id[e.edge_index[0]]
                    dst = b[et[2]].n_id[e.edge_index[1]]
                    missing = [p for p in zip(src.tolist(), dst.tolist()) if p not in self.edges[et]]
                    self.assertEqual(missing, [], et)
                    self.assertEqual(len(e.e_id), e.edge_index.shape[1])
                    # Hop 1 expands only the seeds (of type company).
                    if et[2] != "company":
                        self.assertEqual(int(e.num_sampled_edges[0]), 0, et)
                    else:
                        self.assertLessEqual(int(e.num_sampled_edges[0]), self.fanout(et, 0) * len(seeds))
            self.assertEqual(sorted(seen), self.train.tolist())
            self.assertEqual(c.epoch_info()["epoch"], 1)

    def test_dgl(self):
        with Client(self.serve("dgl")) as c:
            schema = c.hetero_schema()
            seen = []
            for b in c.hetero_batches(max_batches=3):
                self.assertEqual((b.semantics, len(b.blocks)), ("dgl", 2))
                seen.extend(b.blocks[0].dst_n_id["company"].tolist())
                for h, blk in enumerate(b.blocks):
                    for t in schema.node_types:
                        n = len(blk.dst_n_id[t])
                        np.testing.assert_array_equal(blk.src_n_id[t][:n], blk.dst_n_id[t])
                    if h > 0:
                        for t in schema.node_types:
                            np.testing.assert_array_equal(blk.dst_n_id[t], b.blocks[h - 1].src_n_id[t])
                    for et, (es, ed, eid) in blk.edges.items():
                        u = blk.src_n_id[et[0]][es]
                        v = blk.dst_n_id[et[2]][ed]
                        missing = [p for p in zip(u.tolist(), v.tolist()) if p not in self.edges[et]]
                        self.assertEqual(missing, [], et)
                        # At most min(degree, fanout) per dst node.
                        if len(ed):
                            self.assertLessEqual(int(np.bincount(ed).max()), self.fanout(et, h))
                        self.assertEqual(len(eid), len(es))
            self.assertEqual(len(set(seen)), len(seen))
            self.assertTrue(set(seen) <= set(self.train.tolist()))

    def test_features(self):
        """x of each type is the raw node-feat rows at n_id (PyG) or the
        last hop's src nodes (DGL), as float32."""
        feats = {}
        for t in os.listdir(os.path.join(RAW, "node-feat")):
            with gzip.open(os.path.join(RAW, "node-feat", t, "node-feat.csv.gz"), "rt") as f:
                feats[t] = np.array([[float(v) for v in row] for row in csv.reader(f)], dtype=np.float32)
        for sem in ("pyg", "dgl"):
            with Client(self.serve(sem, features=True)) as c:
                n = 0
                for b in c.hetero_batches(max_batches=2, advance=False):
                    n += 1
                    self.assertEqual(set(b.x), set(feats))
                    for t, x in b.x.items():
                        ids = b.nodes[t].n_id if sem == "pyg" else b.blocks[-1].src_n_id[t]
                        self.assertEqual(x.dtype, np.float32)
                        np.testing.assert_array_equal(x, feats[t][ids])
                        if sem == "pyg":
                            self.assertIs(b.nodes[t].x, x)
                self.assertEqual(n, 2)

    def test_homogeneous_reader_refused(self):
        with Client(self.serve("pyg")) as c:
            with self.assertRaisesRegex(P.ProtocolError, "heterogeneous"):
                c.next_batch()


if __name__ == "__main__":
    unittest.main()
