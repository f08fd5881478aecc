"""Delta transfer of feature rows (streamsampler/delta.py).

The planner (numpy) is checked against a set-based reference on random
sequences of n_id; the device side (torch, skipped without it) against
sending x whole, on the CPU and, where there is one, on CUDA; the live
test runs both against a server with --features --reorder match."""

import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from streamsampler import DeltaPlanner, DeltaStats, Loader, LocalServer
from streamsampler.delta import INDEX_ITEMSIZE

HAVE_TORCH = importlib.util.find_spec("torch") is not None
DTYPES = (np.float32, np.float16, np.int8, np.uint8)


def random_rows(rng, num_nodes, dim, dtype):
    """A feature matrix whose every row differs from the others."""
    if np.issubdtype(dtype, np.floating):
        x = rng.standard_normal((num_nodes, dim)).astype(dtype)
        x[:, 0] = np.arange(num_nodes)  # exact in float16 up to 2048
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max + 1, (num_nodes, dim)).astype(dtype)
    return x


def sequence(rng, num_nodes, count, dup=False):
    """Minibatches of distinct node ids (repeated ones with dup) with
    every kind of overlap with the previous one: none, some, all,
    identical, empty."""
    out, prev = [], np.empty(0, np.int64)
    for i in range(count):
        kind = i % 6
        if kind == 0 or len(prev) == 0:
            b = rng.choice(num_nodes, rng.integers(0, min(num_nodes, 300)), replace=False)
        elif kind == 1:
            b = prev.copy()  # identical
        elif kind == 2:
            b = np.empty(0, np.int64)  # empty
        elif kind == 3:
            b = rng.permutation(prev)[:max(1, len(prev) // 2)]  # a subset, reordered
        else:
            keep = prev[rng.random(len(prev)) < rng.random()]
            b = np.unique(np.concatenate([keep, rng.choice(num_nodes, rng.integers(0, 200))]))
            rng.shuffle(b)
        if dup and len(b) > 2:
            b = np.concatenate([b, b[rng.integers(0, len(b), 3)]])
        out.append(b.astype(rng.choice([np.uint32, np.int64, np.int32])))
        prev = b.astype(np.int64)
    return out


def reference(prev, n_id):
    """Which positions of n_id the previous minibatch lacks, by sets."""
    have = set(prev.tolist())
    return [i for i, v in enumerate(n_id.tolist()) if v not in have]


class Planner(unittest.TestCase):
    def check_sequence(self, seq, x_all, planner):
        """Plans sent exactly the rows the previous minibatch lacked and
        rebuild every x from [previous x; sent rows] (the device step)."""
        prev_ids, prev_x = np.empty(0, np.int64), x_all[:0]
        rb = planner.row_bytes  # None: a delta whenever a row is shared
        for n_id in seq:
            p = planner.plan(n_id)
            x = x_all[n_id.astype(np.int64)]
            missing = reference(prev_ids, n_id)
            self.assertEqual(p.rows, len(n_id))
            self.assertEqual(p.prev_rows, len(prev_ids))
            kept = len(n_id) - len(missing)
            if p.index is None:
                np.testing.assert_array_equal(p.send, np.arange(len(n_id)))
                self.assertTrue(kept == 0 or (rb is not None and kept * rb <= len(n_id) * INDEX_ITEMSIZE),
                                "whole transfer although %d rows of %s bytes were shared" % (kept, rb))
                got = x[p.send]
            else:
                self.assertEqual(p.send.tolist(), missing)
                self.assertEqual(p.kept, kept)
                if rb is not None:
                    self.assertGreater(kept * rb, len(n_id) * INDEX_ITEMSIZE)
                self.assertEqual(p.index.dtype, np.int32)
                self.assertEqual(p.index.shape, (len(n_id),))
                # A kept row comes from a position of the same node.
                idx = p.index.astype(np.int64)
                old = idx < len(prev_ids)
                np.testing.assert_array_equal(prev_ids[idx[old]], n_id[old].astype(np.int64))
                got = np.concatenate([prev_x, x[p.send]])[idx]
            np.testing.assert_array_equal(got, x)
            self.assertEqual(got.dtype, x.dtype)
            prev_ids, prev_x = n_id.astype(np.int64), got

    def test_random_sequences(self):
        rng = np.random.default_rng(3)
        for dtype in DTYPES:
            for dim in (1, 3, 16):
                for dup in (False, True):
                    x_all = random_rows(rng, 700, dim, dtype)
                    seq = sequence(rng, 700, 30, dup)
                    with self.subTest(dtype=np.dtype(dtype).name, dim=dim, dup=dup):
                        self.check_sequence(seq, x_all, DeltaPlanner(row_bytes=dim * np.dtype(dtype).itemsize))
                        # Preallocated, and without the byte rule (row_bytes None: a delta whenever a row is shared).
                        self.check_sequence(seq, x_all, DeltaPlanner(num_nodes=700))

    def test_first_identical_empty(self):
        pl = DeltaPlanner(row_bytes=64)
        ids = np.array([5, 9, 2, 7], np.uint32)
        first = pl.plan(ids)
        self.assertIsNone(first.index)
        self.assertEqual((first.rows, first.prev_rows, first.kept), (4, 0, 4 - 4))
        same = pl.plan(ids[::-1].copy())
        self.assertEqual(same.send.tolist(), [])
        self.assertEqual(same.index.tolist(), [3, 2, 1, 0])
        empty = pl.plan(np.empty(0, np.uint32))
        self.assertEqual((empty.rows, empty.prev_rows, len(empty.send)), (0, 4, 0))
        after = pl.plan(ids)  # after an empty minibatch nothing is shared
        self.assertIsNone(after.index)
        self.assertEqual(after.prev_rows, 0)

    def test_small_rows_go_whole(self):
        """Rows of 4 bytes never pay for a 4-byte index entry; rows of 8
        do once more than half the rows are shared."""
        ids = np.arange(100)
        pl = DeltaPlanner(row_bytes=4)
        pl.plan(ids)
        self.assertIsNone(pl.plan(ids).index)
        pl = DeltaPlanner(row_bytes=8)
        pl.plan(ids)
        self.assertIsNone(pl.plan(np.concatenate([ids[:50], np.arange(200, 250)])).index)  # 50 shared: 400 <= 400
        pl.plan(ids)
        self.assertIsNotNone(pl.plan(np.concatenate([ids[:51], np.arange(200, 249)])).index)

    def test_growth_and_reset(self):
        pl = DeltaPlanner()
        pl.plan(np.array([3, 1]))
        p = pl.plan(np.array([1, 5_000_000, 3]))  # grows the position array past the first minibatch's ids
        self.assertEqual(p.send.tolist(), [1])
        self.assertEqual(p.index.tolist(), [1, 2, 0])
        pl.reset()
        self.assertIsNone(pl.plan(np.array([1, 3])).index)

    def test_caller_reuses_n_id(self):
        """The planner keeps its own copy of the previous n_id: a caller
        that refills its array (same dtype as the planner's) does not
        change what the next plan matches against."""
        pl = DeltaPlanner()
        ids = np.array([7, 8, 9], np.intp)
        pl.plan(ids)
        ids[:] = [100, 101, 102]
        p = pl.plan(np.array([9, 8, 7, 1]))
        self.assertEqual(p.send.tolist(), [3])
        self.assertEqual(p.index.tolist(), [2, 1, 0, 3])
        p = pl.plan(np.array([1, 100]))  # and the reset of the positions cleared 7, 8, 9, not 100..102
        self.assertEqual(p.send.tolist(), [1])
        self.assertEqual(p.index.tolist(), [3, 4])

    def test_bad_input(self):
        pl = DeltaPlanner()
        with self.assertRaisesRegex(ValueError, "n_id: want a 1-D array"):
            pl.plan(np.zeros((2, 2), np.int64))
        with self.assertRaisesRegex(TypeError, "n_id: want integer node ids, got dtype float64"):
            pl.plan(np.array([1.0, 2.0]))
        with self.assertRaisesRegex(ValueError, "non-negative, got -3"):
            pl.plan(np.array([1, -3]))
        with self.assertRaisesRegex(ValueError, "node id 9223372036854775813 is too large"):
            pl.plan(np.array([1, 2**63 + 5], np.uint64))
        self.assertEqual(pl.plan(np.array([4, 1], np.uint64)).rows, 2)  # still usable after an error

    def test_stats(self):
        s = DeltaStats(batches=2, rows=10, rows_sent=4, row_bytes_sent=64, index_bytes_sent=40, full_bytes=160)
        self.assertEqual((s.bytes_sent, s.bytes_avoided), (104, 56))
        self.assertAlmostEqual(s.shared_fraction, 0.6)
        self.assertAlmostEqual(s.ratio, 0.65)
        self.assertEqual(DeltaStats().ratio, 1.0)
        t = DeltaStats()
        t.add(s)
        t.add(s)
        self.assertEqual(t.as_dict()["bytes_sent"], 208)


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (Debian: python3-torch; scripts/deps.sh installs it)")
class Transfer(unittest.TestCase):
    def devices(self):
        import torch
        return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

    def test_equals_whole_transfer(self):
        """Every x equals sending it whole (torch.from_numpy(x).to(device)),
        and the bytes are the new rows' and the index's exactly."""
        import torch

        from streamsampler import DeltaTransfer
        rng = np.random.default_rng(11)
        for device in self.devices():
            for dtype in DTYPES:
                for dim in (1, 3, 32):
                    x_all = random_rows(rng, 500, dim, dtype)
                    rb = dim * np.dtype(dtype).itemsize
                    seq = sequence(rng, 500, 24, dup=dim == 3)
                    dt = DeltaTransfer(device)
                    want = DeltaStats()
                    prev = np.empty(0, np.int64)
                    held = []
                    for i, n_id in enumerate(seq):
                        x = x_all[n_id.astype(np.int64)]
                        got = dt(n_id, x, epoch=i // 10)
                        held.append((got, x))
                        ref = torch.from_numpy(x).to(device)
                        self.assertEqual((got.dtype, got.device.type, tuple(got.shape)),
                                         (ref.dtype, torch.device(device).type, x.shape))
                        self.assertTrue(torch.equal(got, ref), "%s %s dim %d minibatch %d" % (device, dtype, dim, i))
                        missing = len(reference(prev, n_id))
                        kept = len(n_id) - missing
                        delta = kept > 0 and kept * rb > len(n_id) * INDEX_ITEMSIZE
                        sent = missing if delta else len(n_id)
                        want.add(DeltaStats(1, len(n_id), sent, sent * rb, len(n_id) * INDEX_ITEMSIZE if delta else 0,
                                            len(n_id) * rb))
                        got.zero_()  # the consumer may write to what it got: the holder's copy is its own
                        prev = n_id.astype(np.int64)
                    s = dt.stats
                    fields = ("batches", "rows", "rows_sent", "row_bytes_sent", "index_bytes_sent", "full_bytes")
                    self.assertEqual([getattr(s, f) for f in fields], [getattr(want, f) for f in fields])
                    self.assertLessEqual(s.bytes_sent, s.full_bytes)
                    self.assertEqual(sorted(dt.per_epoch), [0, 1, 2])
                    self.assertEqual(sum(e.rows for e in dt.per_epoch.values()), s.rows)

    def test_kind_change_and_whole_mode(self):
        import torch

        from streamsampler import DeltaTransfer
        for device in self.devices():
            dt = DeltaTransfer(device)
            ids = np.arange(50)
            a = np.arange(50 * 8, dtype=np.float32).reshape(50, 8)
            dt(ids, a)
            b = a.astype(np.float16)  # same nodes, another dtype: starts over
            self.assertTrue(torch.equal(dt(ids, b), torch.from_numpy(b).to(device)))
            self.assertEqual(dt.stats.rows_sent, 100)
            self.assertTrue(torch.equal(dt(ids, b), torch.from_numpy(b).to(device)))
            self.assertEqual(dt.stats.rows_sent, 100)
            whole = DeltaTransfer(device, delta=False)
            for _ in range(2):
                self.assertTrue(torch.equal(whole(ids, a), torch.from_numpy(a).to(device)))
            self.assertEqual((whole.stats.rows_sent, whole.stats.index_bytes_sent), (100, 0))
            with self.assertRaisesRegex(ValueError, "want x"):
                dt(ids[:3], a)


@unittest.skipUnless(HAVE_TORCH and importlib.util.find_spec("torch_geometric"),
                     "torch_geometric is not importable (not packaged in Debian; pip install "
                     "torch_geometric to run this)")
class ToPyG(unittest.TestCase):
    def test_to_pyg_delta(self):
        import torch

        from streamsampler import DeltaTransfer, to_pyg
        from tests.test_adapters import hand_batch
        dt = DeltaTransfer("cpu")
        for _ in range(2):
            b = hand_batch()
            b.x = np.arange(10, dtype=np.float32).reshape(5, 2)
            d = to_pyg(b, delta=dt)
            self.assertTrue(torch.equal(d.x, torch.from_numpy(b.x)))
        self.assertEqual(dt.stats.rows_sent, 5)
        with self.assertRaisesRegex(ValueError, "does not combine with x="):
            to_pyg(b, x=torch.zeros(60, 2), delta=dt)
        b.x = None
        with self.assertRaisesRegex(ValueError, "start the server with --features"):
            to_pyg(b, delta=dt)


class Live(unittest.TestCase):
    """Against a real server with --features --reorder match: the plans
    rebuild every batch.x (numpy), and DeltaTransfer equals whole
    transfers (torch, when installed), through a Loader."""

    @classmethod
    def setUpClass(cls):
        from tests.test_live import build_tools, random_graph
        cls.tmp = tempfile.mkdtemp(prefix="ss-delta-")
        ss, ck = build_tools(cls.tmp)
        edges, _ = random_graph(np.random.default_rng(9))
        ef = os.path.join(cls.tmp, "edges.txt")
        np.savetxt(ef, edges, fmt="%d")
        cls.graph = os.path.join(cls.tmp, "graph")
        subprocess.run([ck, "build", ef, "-o", cls.graph, "--symmetrize", "-q"], check=True)
        cls.feat = os.path.join(cls.tmp, "feat.npy")
        subprocess.run([ck, "generate", "features", "--graph", cls.graph, "--dim", "8", "--dtype", "float32",
                        "-o", cls.feat, "-q"], check=True)
        subprocess.run([ck, "features", cls.feat, "-o", cls.graph, "-q"], check=True)
        train = os.path.join(cls.tmp, "train.txt")
        np.savetxt(train, np.arange(0, 400, 2), fmt="%d")
        cls.srv = LocalServer(cls.graph, train, [4, 3], 16, seed=3, binary=ss,
                              extra_args=["--features", "--reorder", "match"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_epoch(self):
        x_all = np.load(self.feat)
        planner = DeltaPlanner(row_bytes=8 * 4)
        dt = None
        if HAVE_TORCH:
            from streamsampler import DeltaTransfer
            dt = DeltaTransfer("cuda" if __import__("torch").cuda.is_available() else "cpu")
        prev_x = x_all[:0]
        shared = batches = 0
        with self.srv.client(shared_rows=True) as c, Loader(c, prefetch=2) as loader:
            for b in loader:
                np.testing.assert_array_equal(b.x, x_all[b.n_id])
                p = planner.plan(b.n_id)
                got = b.x[p.send] if p.index is None else np.concatenate([prev_x, b.x[p.send]])[p.index]
                np.testing.assert_array_equal(got, b.x)
                shared += p.kept if p.index is not None else 0
                prev_x = got
                batches += 1
                if dt is not None:
                    import torch
                    self.assertTrue(torch.equal(dt(b.n_id, b.x, epoch=b.epoch).cpu(), torch.from_numpy(b.x)))
        self.assertEqual(batches, 13)
        self.assertGreater(shared, 0, "Match-Reorder's consecutive minibatches share no node")
        with self.subTest("DeltaTransfer"):
            if dt is None:
                self.skipTest("torch is not importable: DeltaTransfer's checks of this epoch are skipped "
                              "(the numpy planner's ran; Debian: python3-torch)")
            self.assertEqual(dt.per_epoch[0].rows - dt.per_epoch[0].rows_sent, shared)


if __name__ == "__main__":
    unittest.main()
