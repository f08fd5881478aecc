"""Minibatches delivered on a device (streamsampler/loader/device.py,
streams.py; the loaders' device=, prefetch=, pin_memory=, delta=).

Without a GPU the ring and ordering logic runs against LateStreams
(tests/fakes.py), whose copies run only when something waits for them:
a ring that packed a slot again before its copies ran, a consumer that
did not wait for its minibatch's event, or shared rows let go before
their copy, all show as wrong values; a deliberately broken ring is
checked to be caught. The loaders' arguments are checked on all three
loaders (PyG's and DGL's through stand-in modules), and device="cpu"
against device=None on live servers. What needs CUDA is skipped without
it (python/examples/device_prefetch_check.py is the GPU check)."""

import collections
import mmap
import os
import shutil
import sys
import tempfile
import time
import unittest
import warnings
import weakref
from unittest import mock

import numpy as np

try:
    import torch
    HAVE_TORCH = True
except ImportError:  # pragma: no cover
    HAVE_TORCH = False

import streamsampler
from streamsampler.shm import Registrar

NO_TORCH = "torch is not importable (Debian: python3-torch; scripts/deps.sh installs it)"
CUDA = HAVE_TORCH and torch.cuda.is_available()

if HAVE_TORCH:
    from streamsampler import DeltaTransfer, Loader
    from streamsampler.dgl import DataLoader, NeighborSampler
    from streamsampler.loader import NodeLoader
    from streamsampler.loader.device import DeviceTransfer, PinnedOutput, check_prefetch, host_key, pins, walk
    from streamsampler.pyg import NeighborLoader
    from tests.fakes import Block, Data, LateStreams, assert_same, fake_dgl, fake_pyg

Pair = collections.namedtuple("Pair", "a b")


def host_minibatch(rng, k):
    """A host minibatch of every kind of value, sizes growing with k."""
    rows = 20 + 15 * k
    return {
        "x": torch.from_numpy(rng.standard_normal((rows, 5)).astype(np.float32)),
        "edge_index": torch.from_numpy(rng.integers(0, rows, (2, 3 * rows))),
        "hops": [torch.from_numpy(rng.integers(0, 9, 7).astype(np.int32)), torch.ones(3, dtype=torch.bool)],
        "pair": Pair(torch.tensor(k), torch.arange(4, dtype=torch.uint8)[::2]),  # a 0-d, a strided
        "empty": torch.empty((0, 5)),
        "batch_size": 7,
        "name": "mb%d" % k,
    }


def clone(obj):
    return walk(obj, lambda t: t.clone() if torch.is_tensor(t) else t, lambda o: o)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class Ring(unittest.TestCase):
    """DeviceTransfer against copies that run late."""

    def run_epoch(self, transfer, streams, count=14, ahead=3, seed=0):
        """Produce ``ahead`` minibatches before the consumer takes one;
        the consumer reads each on its stream, which runs now and then.
        Returns (what each step read, what was sent)."""
        rng = np.random.default_rng(seed)
        sent, got, queue = [], {}, collections.deque()
        for k in range(count + ahead):
            if k < count:
                mb = host_minibatch(rng, k)
                sent.append(clone(mb))
                queue.append(transfer.produce(lambda: mb))
                del mb  # the host tensors are the transfer's to keep, or not
            if k >= ahead and queue:
                i = k - ahead
                out = transfer.deliver(queue.popleft())
                streams.on_compute(lambda out=out, i=i: got.__setitem__(i, clone(out)))
                if rng.random() < 0.3:
                    streams.compute.run()
        streams.run_all()
        return got, sent

    def test_values_under_late_copies(self):
        streams = LateStreams()
        transfer = DeviceTransfer(torch.device("cpu"), streams=streams, slots=2)
        got, sent = self.run_epoch(transfer, streams)
        self.assertEqual(sorted(got), list(range(len(sent))))
        for i, mb in enumerate(sent):
            assert_same(self, got[i], mb, "minibatch %d" % i)
        st = transfer.stats
        self.assertEqual(st.minibatches, len(sent))
        self.assertGreater(st.slot_waits, 0, "the copies never ran late: the test tests nothing")
        self.assertLessEqual(st.pinned_allocations, 6, "the ring grows only when a minibatch does not fit")
        self.assertEqual(st.bytes_direct, 0)

    def test_a_ring_that_does_not_wait_is_caught(self):
        """The same epoch through a ring that packs a slot again without
        waiting for its copies gives wrong values: the check above checks."""

        class Hasty(DeviceTransfer):
            def _acquire(self, nbytes):
                slot = self._ring[self._turn]
                slot.event = None
                return DeviceTransfer._acquire(self, nbytes)

        streams = LateStreams()
        got, sent = self.run_epoch(Hasty(torch.device("cpu"), streams=streams), streams)
        wrong = 0
        for i, mb in enumerate(sent):
            try:
                assert_same(self, got[i], mb)
            except AssertionError:
                wrong += 1
        self.assertGreater(wrong, 0)

    def test_consumer_waits_only_for_its_minibatch(self):
        streams = LateStreams()
        transfer = DeviceTransfer(torch.device("cpu"), streams=streams)
        rng = np.random.default_rng(1)
        a, b = host_minibatch(rng, 0), host_minibatch(rng, 1)
        want = clone(a)
        da, db = transfer.produce(lambda: a), transfer.produce(lambda: b)
        side = transfer.stream
        self.assertEqual(side.done, 0, "a copy ran before anything waited for it")
        out = transfer.deliver(da)
        self.assertEqual(side.done, 0, "the consumer's thread waited for the copies")
        seen = []
        streams.on_compute(lambda: seen.append(clone(out)))
        streams.compute.run()
        assert_same(self, seen[0], want)
        self.assertLess(side.done, len(side.ops), "the step waited for the next minibatch's copies too")
        for t in (out["x"], out["edge_index"], out["hops"][0], out["pair"].b):
            self.assertEqual(streams.recorded.get(id(t)), [streams.compute], "not recorded on the consumer's stream")
        transfer.deliver(db)
        streams.run_all()

    def test_registered_rows_are_held_until_copied(self):
        """Rows in registered memory (the server's shared buffers) are copied
        from where they are, and held until that copy ran: a server that
        writes a buffer again once nothing views it (the lease) never
        overwrites rows a late copy has still to read."""
        streams = LateStreams()
        transfer = DeviceTransfer(torch.device("cpu"), streams=streams)
        pool = []  # [array, weakref to the last view handed out]

        def serve(rows):
            for entry in pool:
                if entry[1] is None or entry[1]() is None:
                    break
            else:
                entry = [np.empty((64, 5), np.float32), None]
                streams.registered.append((entry[0].__array_interface__["data"][0], entry[0].nbytes))
                pool.append(entry)
            view = entry[0][:len(rows)]
            view[:] = rows
            entry[1] = weakref.ref(view)
            return view

        rng = np.random.default_rng(2)
        sent, deliveries = [], []
        for k in range(6):
            rows = rng.standard_normal((10 + k, 5)).astype(np.float32)
            x = torch.from_numpy(serve(rows))
            sent.append(rows)
            deliveries.append(transfer.produce(lambda: {"x": x, "batch_size": 3}))
            del x
        self.assertEqual(len(pool), 6, "a buffer was written again while its rows were still to be copied")
        self.assertEqual(transfer.held, 6)
        self.assertEqual(transfer.stats.bytes_direct, sum(r.nbytes for r in sent))
        seen = []
        for d in deliveries:
            out = transfer.deliver(d)
            streams.on_compute(lambda out=out: seen.append(out["x"].clone()))
        streams.run_all()
        transfer.reap()
        self.assertEqual(transfer.held, 0, "rows held after their copies ran")
        for got, rows in zip(seen, sent):
            np.testing.assert_array_equal(got.numpy(), rows)
        serve(sent[0])
        self.assertEqual(len(pool), 6, "a buffer was not let go once copied")

    def test_failure_part_way_keeps_what_copies_read(self):
        """A minibatch whose move fails part-way (here its route) still
        marks what the copies issued so far read: the slot and the held
        rows are not reused before those copies ran."""
        streams = LateStreams()
        transfer = DeviceTransfer(torch.device("cpu"), streams=streams, slots=1)
        rows = np.arange(40, dtype=np.float32).reshape(8, 5)
        streams.registered.append((rows.__array_interface__["data"][0], rows.nbytes))
        x = np.ones((3, 2), np.float32)
        key = host_key(x.__array_interface__["data"][0], x.shape, x.itemsize)

        def fail():
            raise RuntimeError("route failed")

        with self.assertRaisesRegex(RuntimeError, "route failed"):
            transfer.produce(lambda: {"a": torch.from_numpy(rows), "b": torch.arange(5), "x": torch.from_numpy(x)},
                             {key: fail})
        self.assertEqual(transfer.held, 1)
        side = transfer.stream
        self.assertLess(side.done, len(side.ops))
        transfer.produce(lambda: {"b": torch.arange(6)})  # the one slot again: waits for the failed one's copies
        self.assertGreaterEqual(transfer.stats.slot_waits, 1)
        streams.run_all()
        transfer.reap()
        self.assertEqual(transfer.held, 0)

    def test_route_delta(self):
        streams = LateStreams()
        delta = DeltaTransfer("cpu")
        transfer = DeviceTransfer(torch.device("cpu"), streams=streams, delta=delta)
        rng = np.random.default_rng(3)
        x_all = rng.standard_normal((100, 4)).astype(np.float32)
        prev = np.arange(30)
        for k in range(5):
            n_id = np.concatenate([prev[10:], rng.choice(np.arange(30, 100), 10, replace=False)])
            prev = n_id
            x = x_all[n_id]
            key = host_key(x.__array_interface__["data"][0], x.shape, x.itemsize)
            d = transfer.produce(lambda: {"x": torch.from_numpy(x), "n": torch.from_numpy(n_id)},
                                 {key: lambda: delta(n_id, x, epoch=0)})
            out = transfer.deliver(d)
            streams.run_all()
            np.testing.assert_array_equal(out["x"].numpy(), x)
            np.testing.assert_array_equal(out["n"].numpy(), n_id)
        self.assertEqual(transfer.stats.bytes_routed, 5 * 30 * 4 * 4)
        self.assertGreater(delta.stats.bytes_avoided, 0)

    def test_pyg_data_dgl_blocks_and_late_objects(self):
        """A PyG Data moves through its apply; an object that moves with .to
        and can be recorded (a DGL graph) moves in the background; one that
        cannot (a SparseTensor) moves in the consumer's thread; blocks made
        by finish are recorded on the consumer's stream."""
        import threading

        class Sparse:
            device = torch.device("cpu")

            def __init__(self):
                self.moved_in = None

            def to(self, device):
                s = Sparse()
                s.moved_in = threading.get_ident()
                return s

        streams = LateStreams()
        transfer = DeviceTransfer(torch.device("cpu"), streams=streams)
        x = torch.randn(6, 3)
        data = Data(x=x, edge_index=torch.randint(0, 6, (2, 9)), per_hop=[torch.arange(3)], batch_size=2,
                    adj_t=Sparse())
        want = clone(data._store)
        block = Block(torch.arange(4), torch.arange(4), 4, 4)
        d = transfer.produce(lambda: {"data": data, "blk": block},
                             finish=lambda o: (o, Block(o["data"].x[:, 0], o["data"].x[:, 1], 6, 6)))
        self.assertTrue(d.late)
        out, made = transfer.deliver(d)
        self.assertEqual(out["data"].adj_t.moved_in, threading.get_ident())
        self.assertIsNot(out["blk"], block, "the recordable object was not moved")
        self.assertEqual(made.recorded, [streams.compute])
        self.assertEqual(out["blk"].recorded, [streams.compute])
        streams.run_all()
        for k in ("x", "edge_index", "per_hop", "batch_size"):
            assert_same(self, out["data"][k], want[k], k)
        np.testing.assert_array_equal(made.edges[0].numpy(), x[:, 0].numpy())

    def test_pinned_output(self):
        streams = LateStreams()
        pinned = PinnedOutput(streams)
        already = streams.pinned(64)[:16].view(torch.float32)
        rng = np.random.default_rng(4)
        for k in range(3):
            mb = host_minibatch(rng, k)
            mb["already"] = already
            want = clone(mb)
            out = pinned.produce(lambda: mb)
            assert_same(self, out, want)
            self.assertIs(out["already"], already)
            for t in (out["x"], out["edge_index"], out["hops"][1], out["pair"].a):
                self.assertTrue(streams.is_pinned(t))
        # A block of torch's allocator a tensor (x, edge_index, two hops, a pair), each at its start.
        self.assertEqual(pinned.stats.pinned_allocations, 3 * 6)
        self.assertEqual(out["x"].storage_offset(), 0)
        self.assertEqual(streams.copies, 0)

    def test_walk(self):
        t = torch.arange(3)
        out = walk({"a": [t, (t, 1)], "p": Pair(t, "s"), "n": None}, lambda v: v + 1, lambda o: o)
        self.assertIsInstance(out["p"], Pair)
        self.assertEqual(out["p"].b, "s")
        self.assertEqual(out["a"][1][1], 1)
        self.assertEqual(out["a"][0].tolist(), [1, 2, 3])

    def test_bad_slots(self):
        with self.assertRaises(ValueError):
            DeviceTransfer(torch.device("cpu"), streams=LateStreams(), slots=0)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class Arguments(unittest.TestCase):
    """device=, prefetch=, pin_memory= and delta= on every loader: the
    errors come before any server or graph is touched."""

    def makers(self):
        sampler = NeighborSampler([2])
        return {
            "Loader": lambda **kw: Loader("/nonexistent.sock", transform=lambda b: b, **kw),
            "NodeLoader": lambda **kw: NodeLoader("/nonexistent", [2], 4, None, True, False, "pyg",
                                                  lambda b: b, **kw),
            "NeighborLoader": lambda **kw: NeighborLoader("/nonexistent", [2], **kw),
            "DataLoader": lambda **kw: DataLoader("/nonexistent", None, sampler, **kw),
        }

    def test_errors(self):
        bad = [
            (dict(device="mps"), ValueError, "'cuda'"),
            (dict(device="not-a-device"), ValueError, "not a device"),
            (dict(prefetch=0), ValueError, "at least 1"),
            (dict(prefetch=-2, device="cpu"), ValueError, "at least 1"),
            (dict(prefetch=2.5), TypeError, "want an int"),
            (dict(prefetch=True), TypeError, "want an int"),
            (dict(pin_memory="yes"), TypeError, "pin_memory"),
            (dict(delta=True), ValueError, "needs device="),
            (dict(delta="yes", device="cpu"), TypeError, "delta="),
            (dict(delta=DeltaTransfer("cpu"), device="meta"), ValueError, "'cuda'"),
        ]
        if not CUDA:
            bad.append((dict(device="cuda"), ValueError, "is_available"))
            bad.append((dict(device=torch.device("cuda", 0)), ValueError, "is_available"))
        for name, make in self.makers().items():
            for kw, exc, msg in bad:
                with self.subTest(loader=name, **{k: repr(v) for k, v in kw.items()}):
                    with self.assertRaisesRegex(exc, msg) as cm:
                        make(**kw)
                    self.assertIn(name, str(cm.exception))

    def test_prefetch_values(self):
        for given, want in ((None, 4), (1, 1), (np.int64(3), 3)):
            self.assertEqual(check_prefetch(given, 4, "X"), want)
            self.assertIs(type(check_prefetch(given, 4, "X")), int)

    def test_device_needs_a_transform(self):
        with self.assertRaisesRegex(ValueError, "transform"):
            Loader("/nonexistent.sock", device="cpu")
        with self.assertRaisesRegex(ValueError, "transform"):
            NodeLoader("/nonexistent", [2], 4, None, True, False, "pyg", None, device="cpu")

    def test_pin_memory(self):
        """Settled at the first iter(): pinned by default where CUDA is,
        never with pin_memory=False or a device; pin_memory=True without
        CUDA warns, as torch's DataLoader does, and pins nothing."""
        self.assertEqual(pins(None, None, "X"), CUDA)
        self.assertFalse(pins(False, None, "X"))
        self.assertFalse(pins(True, torch.device("cpu"), "X"))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(pins(True, None, "X"), CUDA)
        self.assertEqual(any("X: pin_memory=True, but CUDA is not available" in str(x.message) for x in w),
                         not CUDA)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class Live(unittest.TestCase):
    """device="cpu" (the device path: moved in the background thread,
    through the ring) gives what device=None gives, on the three loaders,
    for several epochs; and the Loader through LateStreams, with the
    server's shared buffers registered and a slow consumer."""

    @classmethod
    def setUpClass(cls):
        from tests.test_live import build_tools
        cls.tmp = tempfile.mkdtemp(prefix="ss-device-")
        cls.ss, ck = build_tools(cls.tmp)
        rng = np.random.default_rng(11)
        n = 500
        ei = rng.integers(0, n, (2, 4000))
        cls.x = rng.standard_normal((n, 6)).astype(np.float32)
        cls.y = rng.integers(0, 5, n)
        cls.train, cls.val = np.sort(rng.permutation(n)[:160]), np.arange(200, 260)
        cls.graph = os.path.join(cls.tmp, "g")
        streamsampler.from_arrays(ei, n, cls.graph, x=cls.x, y=cls.y, masks={"train": cls.train, "val": cls.val},
                                  chunkify=ck, chunk_size="16KiB")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pair(self, make):
        """The loader made twice, on two servers of the same seed (the
        server arguments differ and mean nothing here)."""
        a = make(device="cpu", server_args=["--max-inflight", "300MiB"])
        b = make(server_args=["--max-inflight", "301MiB"])
        for lo in (a, b):
            self.addCleanup(lo.close)
        self.assertIsNot(a.server, b.server)
        return a, b

    def compare(self, a, b, epochs=3):
        for e in range(epochs):
            n = 0
            want = iter(b)
            for got in a:
                assert_same(self, got, next(want), "epoch %d minibatch %d" % (e, n))
                n += 1
            self.assertIsNone(next(want, None), "device=None has more minibatches")
            self.assertEqual(n, len(b))
        self.assertEqual(a.transfer.stats.minibatches, epochs * len(a))
        if not CUDA:
            self.assertIsNone(b.transfer)

    def test_neighbor_loader(self):
        with mock.patch.dict(sys.modules, fake_pyg()):
            for shuffle, nodes in ((True, self.train), (False, self.val)):
                a, b = self.pair(lambda **kw: NeighborLoader(self.graph, [4, 3], input_nodes=nodes, batch_size=32,
                                                             shuffle=shuffle, seed=5, binary=self.ss, **kw))
                self.assertEqual((a.prefetch, b.prefetch), (2, 4))
                self.compare(a, b)

    def test_neighbor_loader_device_table(self):
        """With the store held on the device (device_features; on the CPU
        here, as resolve allows only CUDA, patched): the same minibatches,
        masks and labels included, and the server reads no rows."""
        from streamsampler.loader import device_table
        with mock.patch.dict(sys.modules, fake_pyg()), \
                mock.patch.object(device_table, "resolve", lambda f, d, *a: d is not None and f is not False):
            a, b = self.pair(lambda **kw: NeighborLoader(self.graph, [4, 3], input_nodes=self.train, batch_size=32,
                                                         shuffle=True, seed=8, binary=self.ss, **kw))
            self.assertTrue(a.device_features)
            self.assertFalse(b.device_features)
            self.compare(a, b, epochs=2)
            self.assertFalse(a.server.rows)
            self.assertTrue(b.server.rows)
            self.assertIsNotNone(a.table())
            self.assertEqual(a.transfer.stats.bytes_direct, 0)

    def test_neighbor_loader_delta(self):
        with mock.patch.dict(sys.modules, fake_pyg()):
            a, b = self.pair(lambda **kw: NeighborLoader(self.graph, [4, 3], input_nodes=self.train, batch_size=32,
                                                         shuffle=True, seed=6, binary=self.ss,
                                                         **dict(kw, delta=True) if "device" in kw else kw))
            self.compare(a, b, epochs=2)
            self.assertGreater(a.transfer.stats.bytes_routed, 0)
            self.assertEqual(a.transfer.delta.stats.rows, a.transfer.stats.bytes_routed // (6 * 4))

    def test_dgl_loader(self):
        with mock.patch.dict(sys.modules, fake_dgl()):
            a, b = self.pair(lambda **kw: DataLoader(self.graph, self.train, NeighborSampler([3, 4]), batch_size=40,
                                                     shuffle=True, seed=7, binary=self.ss, **kw))
            self.compare(a, b)
            _, _, blocks = next(iter(a))
            self.assertEqual(len(blocks), 2)

    def test_dgl_loader_device_table(self):
        """DGL's blocks with the store held on the device (patched onto the
        CPU, as in the PyG test): feat and label gathered there, equal to
        the server's."""
        from streamsampler.loader import device_table
        with mock.patch.dict(sys.modules, fake_dgl()), \
                mock.patch.object(device_table, "resolve", lambda f, d, *a: d is not None and f is not False):
            a, b = self.pair(lambda **kw: DataLoader(self.graph, self.train, NeighborSampler([3, 4]), batch_size=40,
                                                     shuffle=True, seed=10, binary=self.ss, **kw))
            self.assertTrue(a.device_features)
            self.compare(a, b, epochs=2)
            self.assertFalse(a.server.rows)
            _, _, blocks = next(iter(a))
            self.assertIn("feat", blocks[0].srcdata)
            self.assertIn("label", blocks[-1].dstdata)

    def test_loader(self):
        def tensors(b):
            return {"n_id": torch.from_numpy(b.n_id.astype(np.int64)), "x": torch.from_numpy(b.x),
                    "y": torch.from_numpy(b.y.astype(np.int64)),
                    "hops": [torch.from_numpy(h.edge_src) for h in b.hops]}

        servers = []
        for _ in range(2):
            srv = streamsampler.LocalServer(self.graph, self.train, [4, 3], 25, seed=9, binary=self.ss,
                                            extra_args=["--features"]).start()
            self.addCleanup(srv.stop)
            servers.append(srv)
        ca, cb = servers[0].client(shared_rows=True), servers[1].client()
        self.addCleanup(ca.close)
        self.addCleanup(cb.close)
        a = Loader(ca, transform=tensors, device="cpu", delta=True)
        b = Loader(cb, transform=tensors)
        self.assertEqual((a.prefetch, b.prefetch), (2, 8))
        self.compare(a, b)

    def test_loader_late_copies_registered_rows_slow_consumer(self):
        """A Loader whose copies run late (LateStreams), with the server's
        shared buffers counted as registered (copied from where they are),
        a consumer that sleeps and runs its stream only now and then: every
        minibatch's rows are the store's rows of its n_id."""
        srv = streamsampler.LocalServer(self.graph, self.train, [4, 3], 20, seed=10, binary=self.ss,
                                        extra_args=["--features"]).start()
        self.addCleanup(srv.stop)
        client = srv.client(shared_rows=True)
        self.addCleanup(client.close)
        streams = LateStreams()

        class Reg(Registrar):
            def register(self, addr, size):
                streams.registered.append((addr, size))
                return True

            def unregister(self, addr):
                streams.registered[:] = [r for r in streams.registered if r[0] != addr]

        lo = Loader(client, transform=lambda b: {"n_id": torch.from_numpy(b.n_id.astype(np.int64)),
                                                 "x": torch.from_numpy(b.x)}, device="cpu", prefetch=3)
        lo.register_rows = False  # the stand-in registers instead
        lo.transfer = DeviceTransfer(torch.device("cpu"), streams=streams)
        self.assertTrue(client.register_shared_rows(Reg()))
        seen = []
        for epoch in range(2):
            for i, mb in enumerate(lo):
                streams.on_compute(lambda mb=mb: seen.append((mb["n_id"].clone(), mb["x"].clone())))
                time.sleep(0.002)
                if i % 3 == 2:
                    streams.compute.run()
        streams.run_all()
        self.assertEqual(len(seen), 2 * len(lo))
        for n_id, x in seen:
            np.testing.assert_array_equal(x.numpy(), self.x[n_id.numpy()])
        st = lo.transfer.stats
        self.assertGreater(st.bytes_direct, 0, "no rows were copied from the shared buffers")
        self.assertGreater(len(streams.registered), 0)


@unittest.skipUnless(CUDA, "CUDA is not available (python/examples/device_prefetch_check.py is the GPU check)")
class Cuda(unittest.TestCase):
    """On a GPU: CudaStreams' ring equals the host values; PinnedOutput's
    tensors are pinned (pin_memory() is the tensor itself); a registered
    mapping is copied from directly."""

    def test_ring(self):
        transfer = DeviceTransfer(torch.device("cuda", torch.cuda.current_device()))
        rng = np.random.default_rng(0)
        for k in range(6):
            mb = host_minibatch(rng, k)
            want = clone(mb)
            out = transfer.deliver(transfer.produce(lambda: mb))
            self.assertEqual(out["x"].device.type, "cuda")
            assert_same(self, out, want)

    def test_pinned_output(self):
        from streamsampler.streams import CudaStreams
        pinned = PinnedOutput(CudaStreams(torch.device("cuda", torch.cuda.current_device())))
        out = pinned.produce(lambda: {"x": torch.randn(100, 8)})
        self.assertTrue(out["x"].is_pinned())
        self.assertIs(out["x"].pin_memory(), out["x"])

    def test_registrar(self):
        from streamsampler.streams import CudaRegistrar
        mm = mmap.mmap(-1, 1 << 20)
        a = np.frombuffer(mm, np.float32)
        a[:] = np.arange(len(a))
        reg = CudaRegistrar(torch.cuda.current_device())
        addr = a.__array_interface__["data"][0]
        self.assertTrue(reg.register(addr, len(mm)), reg.errors)
        t = torch.from_numpy(a)
        self.assertTrue(t.is_pinned())
        self.assertTrue(torch.equal(t.to("cuda", non_blocking=True).cpu(), t))
        torch.cuda.synchronize()
        del t
        reg.unregister(addr)
        self.assertEqual(reg.errors, [])
        del a
        mm.close()


if __name__ == "__main__":
    unittest.main()
