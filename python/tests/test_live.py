"""The client against a live ``streamsampler serve`` built from this
checkout (``go build`` in setUpClass) on a random graph made by chunkify."""

import json
import mmap
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import numpy as np

import streamsampler
from streamsampler import (Client, Loader, LocalServer, NotInFrontierError, ServerError,
                           UnauthorizedError, UnknownEpochError, pyg_arrays)
from streamsampler import protocol as P

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FANOUTS = [4, 3]
N = 400


def build_tools(out):
    """(streamsampler, chunkify) built from this checkout; chunkify may
    come from $STREAMSAMPLER_CHUNKIFY. Without Go (the GPU machine), both
    from $STREAMSAMPLER_BIN and $STREAMSAMPLER_CHUNKIFY, built elsewhere
    from this checkout; without those either, unittest.SkipTest."""
    go = shutil.which("go")
    if go is None:
        ss, ck = os.environ.get("STREAMSAMPLER_BIN"), os.environ.get("STREAMSAMPLER_CHUNKIFY")
        if ss and ck:
            return ss, ck
        raise unittest.SkipTest("go not on PATH (or set $STREAMSAMPLER_BIN and $STREAMSAMPLER_CHUNKIFY)")
    ss = os.path.join(out, "streamsampler")
    subprocess.run([go, "build", "-o", ss, "./cmd/streamsampler"], cwd=REPO, check=True)
    ck = os.environ.get("STREAMSAMPLER_CHUNKIFY")
    if not ck:
        ck = os.path.join(out, "chunkify")
        r = subprocess.run([go, "build", "-o", ck, "./cmd/chunkify"], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise unittest.SkipTest("cannot build cmd/chunkify: %s" % r.stdout.decode()[-300:])
    return ss, ck


def random_graph(rng):
    """A random undirected graph with isolated nodes, as an edge list and
    its symmetrized, deduplicated adjacency."""
    u = rng.integers(0, N, 1600)
    v = rng.integers(0, N, 1600)
    keep = (u % 13 != 0) & (v % 13 != 0) & (u != v)
    u, v = u[keep], v[keep]
    adj = [set() for _ in range(N)]
    for a, b in zip(u.tolist(), v.tolist()):
        adj[a].add(b)
        adj[b].add(a)
    # Pin the node count: an edge list names its largest node.
    u = np.append(u, N - 1)
    v = np.append(v, N - 2)
    adj[N - 1].add(N - 2)
    adj[N - 2].add(N - 1)
    return np.stack([u, v], 1), adj


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-live-")
        cls.ss, cls.chunkify = build_tools(cls.tmp)
        rng = np.random.default_rng(5)
        edges, cls.adj = random_graph(rng)
        ef = os.path.join(cls.tmp, "edges.txt")
        np.savetxt(ef, edges, fmt="%d")
        cls.graph = os.path.join(cls.tmp, "graph")
        subprocess.run([cls.chunkify, "build", ef, "-o", cls.graph, "--symmetrize"], check=True,
                       stdout=subprocess.DEVNULL)
        cls.train = np.arange(0, N, 2)
        cls.train_file = os.path.join(cls.tmp, "train.txt")
        np.savetxt(cls.train_file, cls.train, fmt="%d")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def server(self, **kw):
        args = dict(graph=self.graph, train=self.train_file, fanouts=FANOUTS, batch_size=16,
                    seed=7, binary=self.ss)
        args.update(kw)
        srv = LocalServer(**args).start()
        self.addCleanup(srv.stop)
        return srv

    def check_batch(self, b):
        """Structure of DESIGN §5 and every edge a sampled graph edge,
        min(degree, fanout) of them per destination."""
        dst = b.seeds
        for h, hop in enumerate(b.hops):
            np.testing.assert_array_equal(hop.dst, dst)
            np.testing.assert_array_equal(hop.src[:len(hop.dst)], hop.dst)
            self.assertEqual(len(np.unique(hop.src)), len(hop.src))
            counts = np.bincount(hop.edge_dst, minlength=len(hop.dst))
            for i, d in enumerate(hop.dst.tolist()):
                self.assertEqual(counts[i], min(len(self.adj[d]), FANOUTS[h]), "hop %d node %d" % (h + 1, d))
            for s, d in zip(hop.src[hop.edge_src].tolist(), hop.dst[hop.edge_dst].tolist()):
                self.assertIn(s, self.adj[d])
            self.assertTrue(np.all(np.diff(hop.edge_dst) >= 0), "edges ordered by destination")
            dst = hop.src

    def test_epochs_cover_training_nodes(self):
        srv = self.server()
        with srv.client() as c:
            info = c.epoch_info()
            self.assertEqual((info["epoch"], info["num_batches"], info["shard_size"]), (0, 13, 200))
            self.assertEqual(info["fanouts"], FANOUTS)
            orders = []
            for e in range(2):
                seen = []
                for i, b in enumerate(c.batches()):
                    self.assertEqual((b.epoch, b.index), (e, i))
                    self.assertTrue(b.hops[-1].src.flags.writeable)  # views of the receive buffer
                    self.check_batch(b)
                    seen.append(b.seeds)
                allseeds = np.concatenate(seen)
                self.assertEqual(sorted(allseeds.tolist()), self.train.tolist())
                orders.append(allseeds)
                self.assertEqual(c.epoch_info()["epoch"], e + 1)
            self.assertFalse(np.array_equal(orders[0], orders[1]), "a new shuffle every epoch")

    def test_sample_matches_cli(self):
        """sample(seeds) equals `streamsampler sample --format json` on a
        state directory prepared with the same configuration."""
        state = os.path.join(self.tmp, "state")
        subprocess.run([self.ss, "prepare", "--state", state, "--graph", self.graph, "--train", self.train_file,
                        "--fanouts", ",".join(map(str, FANOUTS)), "--seed", "7"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([self.ss, "advance", "--state", state], check=True, stdout=subprocess.DEVNULL)
        seeds = [8, 0, 398, 52]
        out = subprocess.run([self.ss, "sample", "--state", state, "--seeds", ",".join(map(str, seeds)),
                              "--format", "json"], check=True, stdout=subprocess.PIPE).stdout
        want = streamsampler.Batch.from_json(out)
        srv = self.server()
        with srv.client() as c:
            got = c.sample(seeds, epoch=0)
        self.assertEqual(got.epoch, want.epoch)
        np.testing.assert_array_equal(got.seeds, seeds)
        self.assertEqual(len(got.hops), len(want.hops))
        for g, w in zip(got.hops, want.hops):
            for name in ("dst", "src", "edge_src", "edge_dst"):
                np.testing.assert_array_equal(getattr(g, name), getattr(w, name), name)
        self.check_batch(got)

    def test_sample_fresh(self):
        """sample_fresh (random reads, no epoch) equals sample for training
        seeds of the current epoch, and `streamsampler sample --graph` for
        any seeds, in both semantics and with edge ids; bad requests raise."""
        srv = self.server()
        with srv.client() as c:
            seeds = [8, 0, 398, 52]
            for sem in ("dgl", "pyg"):
                want = c.sample(seeds, epoch=0, semantics=sem)
                got = c.sample_fresh(seeds, fanouts=FANOUTS, seed=7, epoch=0, semantics=sem)
                self.assertIsInstance(got, streamsampler.Batch)
                self.assertEqual((got.epoch, got.index), (0, -1))
                self.assertEqual(len(got.hops), len(want.hops))
                for g, w in zip(got.hops, want.hops):
                    for name in ("dst", "src", "edge_src", "edge_dst"):
                        np.testing.assert_array_equal(getattr(g, name), getattr(w, name), name)
            # Any nodes (odd ones are not training nodes), another epoch's
            # stream, edge ids: the CLI's random-read sample.
            seeds = [1, 399, 13, 200]
            for sem in ("dgl", "pyg"):
                got = c.sample_fresh(seeds, fanouts=[5, 2], seed=3, epoch=9, replace=True, edge_ids=True,
                                     semantics=sem)
                out = subprocess.run([self.ss, "sample", "--graph", self.graph, "--fanouts", "5,2", "--seed", "3",
                                      "--epoch", "9", "--replace", "--edge-ids", "--semantics", sem, "--seeds",
                                      ",".join(map(str, seeds)), "--format", "json"],
                                     check=True, stdout=subprocess.PIPE).stdout
                want = streamsampler.Batch.from_json(out)
                self.assertEqual(got.epoch, 9)
                for g, w in zip(got.hops, want.hops):
                    for name in ("dst", "src", "edge_src", "edge_dst", "e_id"):
                        np.testing.assert_array_equal(getattr(g, name), getattr(w, name), name)
            with self.assertRaises(ServerError) as cm:
                c.sample_fresh([N], fanouts=[2])
            self.assertEqual(cm.exception.code, P.CODE_BAD_REQUEST)
            self.assertIn("not a node", str(cm.exception))
            with self.assertRaises(ServerError) as cm:
                c.sample_fresh([3, 3], fanouts=[2])
            self.assertEqual(cm.exception.code, P.CODE_DUPLICATE_SEED)
            with self.assertRaises(ValueError):
                c.sample_fresh([3], fanouts=[])
            # A node set in minibatches, pipelined: each equals its own
            # sample_fresh, in order, the last one short.
            nodes = np.arange(1, N, 9)
            got = list(c.fresh_batches(nodes, fanouts=[3, 2], batch_size=10, seed=5, depth=3))
            self.assertEqual([len(b.seeds) for b in got], [10] * (len(nodes) // 10) + [len(nodes) % 10])
            for i, b in enumerate(got):
                w = c.sample_fresh(nodes[10 * i:10 * i + 10], fanouts=[3, 2], seed=5)
                np.testing.assert_array_equal(b.seeds, w.seeds)
                for g, h in zip(b.hops, w.hops):
                    for name in ("dst", "src", "edge_src", "edge_dst"):
                        np.testing.assert_array_equal(getattr(g, name), getattr(h, name), name)
            with self.assertRaises(ValueError):
                list(c.fresh_batches(nodes, fanouts=[3], batch_size=0))
            # The epoch and its cursor are untouched.
            self.assertEqual(c.epoch_info()["served"], 0)

    def test_sharding(self):
        """World size 3 (rank 1 from $RANK/$WORLD_SIZE as torchrun sets
        them): disjoint shards covering the training set, sizes within one,
        and the same number of minibatches on every rank."""
        for e in range(2):
            served, infos = [], []
            for r in range(3):
                if r == 1:
                    old = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
                    os.environ.update(RANK="1", WORLD_SIZE="3")
                    try:
                        srv = self.server(batch_size=7, prepare_at=1.0, extra_args=["--epoch", str(e)])
                    finally:
                        for k, v in old.items():
                            if v is None:
                                os.environ.pop(k, None)
                            else:
                                os.environ[k] = v
                else:
                    srv = self.server(batch_size=7, rank=r, world_size=3, prepare_at=1.0,
                                      extra_args=["--epoch", str(e)])
                with srv.client() as c:
                    info = c.epoch_info()
                    self.assertEqual((info["rank"], info["world_size"], info["epoch"]), (r, 3, e))
                    seeds = [b.seeds for b in c.batches(advance=False)]
                    infos.append(info)
                    served.append(np.concatenate(seeds))
                srv.stop()
            self.assertEqual(len({i["num_batches"] for i in infos}), 1, "equal minibatch counts")
            sizes = [i["shard_size"] for i in infos]
            self.assertLessEqual(max(sizes) - min(sizes), 1)
            self.assertEqual(sum(sizes), len(self.train))
            allserved = np.concatenate(served)
            self.assertEqual(len(np.unique(allserved)), len(allserved), "shards are disjoint")
            dropped = sum(i["dropped"] for i in infos)
            self.assertEqual(len(allserved) + dropped, len(self.train))
            self.assertTrue(set(allserved.tolist()) <= set(self.train.tolist()))
            for i, s in zip(infos, served):
                self.assertEqual(len(s) + i["dropped"], i["shard_size"])

    def test_shared_cursor(self):
        srv = self.server(batch_size=5)
        got, lock = [], threading.Lock()

        def worker():
            with srv.client() as c:
                while True:
                    b = c.next_batch(0)
                    if b is None:
                        return
                    with lock:
                        got.append(b.index)
        ts = [threading.Thread(target=worker) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(sorted(got), list(range(40)))
        with srv.client() as c:
            # The first request for epoch 1 advances the server.
            b = c.next_batch(1)
            self.assertEqual((b.epoch, b.index), (1, 0))

    def test_errors(self):
        srv = self.server(extra_args=["--max-request", "4096"])
        with srv.client() as c:
            with self.assertRaises(NotInFrontierError):
                c.sample([1])  # odd nodes are not training nodes
            with self.assertRaises(UnknownEpochError):
                c.next_batch(5)
            with self.assertRaises(ServerError) as cm:
                c.next_batch(1)
            self.assertEqual(cm.exception.code, P.CODE_EPOCH_NOT_DONE)
            with self.assertRaises(ServerError) as cm:
                c.sample(self.train[:2] * 0 + 2)  # duplicate seed
            self.assertEqual(cm.exception.code, P.CODE_DUPLICATE_SEED)
            # A split dropped is gone: its id is unknown from then on.
            sp = c.split(self.train[:10], 4)["split"]
            self.assertIsNotNone(c.split_batch(sp, 0))
            c.drop_split(sp)
            for call in (lambda: c.split_batch(sp, 0), lambda: c.drop_split(sp)):
                with self.assertRaises(ServerError) as cm:
                    call()
                self.assertEqual(cm.exception.code, P.CODE_UNKNOWN_SPLIT)
            self.assertEqual(c.epoch_info()["epoch"], 0)  # still usable
        big = srv.client()
        with self.assertRaises(ServerError) as cm:
            big.sample(np.arange(0, N, 2).repeat(10))
        self.assertEqual(cm.exception.code, P.CODE_TOO_LARGE)
        big.close()
        with srv.client() as c:
            self.assertEqual(c.epoch_info()["served"], 0)

    def test_loader_and_tcp(self):
        srv = self.server(tcp="127.0.0.1:0", token="s3cret")
        tcp = srv.tcp_address
        self.assertTrue(tcp.startswith("tcp:127.0.0.1:"), srv.ready_line)
        with Client(tcp, token="s3cret") as c, Loader(c, transform=pyg_arrays, prefetch=2) as loader:
            self.assertEqual(len(loader), 13)
            n = 0
            for a in loader:
                self.assertEqual(sum(a["num_sampled_nodes"]), len(a["n_id"]))
                n += 1
            self.assertEqual(n, 13)
            self.assertEqual(c.epoch_info()["epoch"], 1)
            for i, a in enumerate(loader):  # left part-way ...
                if i == 3:
                    break
            self.assertEqual(len(loader), 13)
            self.assertEqual(sum(1 for _ in loader), 13)  # ... the next iter() is a whole new epoch
            self.assertEqual(c.epoch_info()["epoch"], 3)

    def features_graph(self):
        """The graph with a feature store (6 float16 columns, 4 classes),
        built once, and the packed rows and labels."""
        cls = type(self)
        if getattr(cls, "_features", None) is None:
            graph = os.path.join(self.tmp, "graph-features")
            ef = os.path.join(self.tmp, "edges.txt")
            subprocess.run([self.chunkify, "build", ef, "-o", graph, "--symmetrize", "-q"], check=True)
            feat, lab = os.path.join(self.tmp, "feat.npy"), os.path.join(self.tmp, "labels.npy")
            subprocess.run([self.chunkify, "generate", "features", "--graph", graph, "--dim", "6", "--dtype",
                            "float16", "--classes", "4", "--labels", lab, "-o", feat, "-q"], check=True)
            subprocess.run([self.chunkify, "features", feat, "--labels", lab, "-o", graph, "-q"], check=True)
            cls._features = (graph, np.load(feat), np.load(lab))
        return cls._features

    def test_features(self):
        """A server with --features hands every minibatch its nodes' rows
        (batch.x, n_id order) and its seeds' labels (batch.y), exactly the
        packed matrix's, in every epoch and for sample requests."""
        graph, x_all, y_all = self.features_graph()
        srv = self.server(graph=graph, extra_args=["--features", "--feature-cache", "4KiB", "--reorder", "match"])
        with srv.client(shared_rows=False) as c:  # the rows in the stream
            self.assertFalse(c._shared)
            info = c.epoch_info()
            self.assertEqual(info["features"], {"dim": 6, "dtype": "float16", "row_bytes": 12, "labels": True})
            for epoch in (0, 1):
                n = 0
                for b in c.batches(epoch, advance=False):
                    self.check_batch(b)
                    self.assertEqual(b.x.dtype, np.float16)
                    np.testing.assert_array_equal(b.x, x_all[b.n_id])
                    np.testing.assert_array_equal(b.y, y_all[b.seeds])
                    n += 1
                self.assertEqual(n, 13)
                if epoch == 0:
                    c.advance(0)
            b = c.sample([2, 10, 4])
            np.testing.assert_array_equal(b.x, x_all[b.n_id])
            np.testing.assert_array_equal(b.y, y_all[[2, 10, 4]])
        # Shared rows: the same rows, handed over in memory files.
        with srv.client(shared_rows=True) as c:
            self.assertTrue(c._shared)
            b = c.sample([2, 10, 4])
            base = b.x
            while isinstance(base, np.ndarray):
                base = base.base
            if isinstance(base, memoryview):
                base = base.obj
            self.assertIsInstance(base, mmap.mmap)  # a view of the memory file, not a copy
            np.testing.assert_array_equal(b.x, x_all[b.n_id])
            np.testing.assert_array_equal(b.y, y_all[[2, 10, 4]])
            # Rows held stay as they are while later minibatches reuse the
            # connection's buffers (a held one is never reused); dropped
            # rows give their buffer back, so a few buffers serve them all.
            held = b.x[1:]  # a view keeps the rows leased
            held_copy = held.copy()
            del b, base
            n = 0
            for b in c.batches(2, advance=False):  # asking for epoch 2 advances past the used-up 1
                np.testing.assert_array_equal(b.x, x_all[b.n_id])
                n += 1
            self.assertEqual(n, 13)
            np.testing.assert_array_equal(held, held_copy)
            self.assertLessEqual(len(c._bufs._maps), 6)

    def test_epoch_stats(self):
        """epoch_stats(e) is what the server delivered of epoch e: the
        minibatches, seeds and n_id rows this client received (all from
        disk without a feature cache, row_bytes each), ms per minibatch
        over the wall, the split's rows read directly; the current
        epoch's while it runs, the epoch before's once it is left."""
        graph, _, _ = self.features_graph()
        srv = self.server(graph=graph, extra_args=["--features", "--feature-cache", "0"])
        with srv.client() as c:
            self.assertEqual(c.epoch_stats(1), None)  # not yet
            batches = seeds = rows = 0
            for b in c.batches(0, advance=False):
                batches += 1
                seeds += len(b.seeds)
                rows += len(b.n_id)
            st = c.epoch_stats()
            assert st is not None
            self.assertEqual((st["epoch"], st["batches"], st["num_batches"], st["complete"]), (0, 13, 13, True))
            split = c.split(list(range(1, N, 5)), 32)
            split_rows = sum(len(b.n_id) for b in c.split_batches(split["split"]))
            info = c.advance(0)
            self.assertEqual(info["epoch"], 1)
            cur = c.epoch_stats()
            assert cur is not None
            self.assertEqual((cur["epoch"], cur["batches"]), (1, 0))
            self.assertEqual(c.epoch_stats(1), cur)
            prev = c.epoch_stats(0)
            assert prev is not None
            self.assertEqual((prev["batches"], prev["seeds"], prev["failed"]), (13, seeds, 0))
            self.assertEqual(seeds, len(self.train))
            self.assertAlmostEqual(prev["ms_per_batch"], prev["wall_s"] * 1e3 / 13)
            self.assertGreater(prev["sample_s"], 0)
            self.assertGreater(prev["bytes_read"], 0)
            f = prev["features"]
            reads = f["reads"]
            self.assertEqual((reads["rows_needed"], reads["rows_from_disk"], reads["rows_from_cache"]), (rows, rows, 0))
            self.assertEqual(reads["disk_row_bytes"], rows * 12)
            self.assertGreaterEqual(reads["bytes_read"], rows * 12)
            self.assertEqual(f["labels"], seeds)
            self.assertLessEqual(f["read_s"], prev["wall_s"])
            self.assertAlmostEqual(f["rows_per_s"], rows / f["read_s"], delta=1e-6 * f["rows_per_s"])
            (sp,) = prev["splits"]
            self.assertEqual((sp["split"], sp["batches"], sp["seeds"], sp["rows"]),
                             (split["split"], split["num_batches"], split["num_nodes"], split_rows))
            self.assertEqual(c.epoch_stats(5), None)

    def test_access(self):
        """The socket is 0600; TCP (and then the socket too) needs the
        token: without it, or with a wrong one, the server refuses and
        closes; $STREAMSAMPLER_TOKEN is the client's default."""
        with self.assertRaises(RuntimeError) as cm:
            self.server(tcp="127.0.0.1:0")
        self.assertIn("--tcp needs a token", str(cm.exception))
        srv = self.server(tcp="127.0.0.1:0", token="s3cret")
        self.assertEqual(os.stat(srv.socket).st_mode & 0o777, 0o600)
        with open(srv.token_file, "rb") as f:
            self.assertEqual(f.read(), b"s3cret")
        self.assertEqual(os.stat(srv.token_file).st_mode & 0o777, 0o600)
        env = os.environ.pop(P.TOKEN_ENV, None)
        try:
            for addr in (srv.tcp_address, srv.socket):
                c = Client(addr)
                with self.assertRaises(UnauthorizedError) as cm:
                    c.epoch_info()
                self.assertEqual(cm.exception.code, P.CODE_UNAUTHORIZED)
                with self.assertRaises((ConnectionError, OSError)):
                    c.epoch_info()  # closed
                c.close()
                with self.assertRaises(UnauthorizedError):
                    Client(addr, token="wrong")
                os.environ[P.TOKEN_ENV] = "s3cret\n"
                with Client(addr) as c:
                    self.assertEqual(c.epoch_info()["epoch"], 0)
                del os.environ[P.TOKEN_ENV]
            with srv.client() as c:
                self.assertEqual(c.epoch_info()["epoch"], 0)
        finally:
            os.environ.pop(P.TOKEN_ENV, None)
            if env is not None:
                os.environ[P.TOKEN_ENV] = env

    def test_stop_and_bad_start(self):
        srv = LocalServer(self.graph, self.train, FANOUTS, 16, binary=self.ss).start()
        sock = srv.socket
        self.assertTrue(os.path.exists(sock))
        self.assertEqual(srv.stop(), 0)
        self.assertFalse(os.path.exists(sock))
        with self.assertRaises(RuntimeError) as cm:
            LocalServer(os.path.join(self.tmp, "nope"), self.train, FANOUTS, 16, binary=self.ss).start()
        self.assertIn("nope", str(cm.exception))
        with self.assertRaises(FileNotFoundError):
            LocalServer(self.graph, self.train, FANOUTS, 16, binary=os.path.join(self.tmp, "no-binary"))


if __name__ == "__main__":
    unittest.main()
