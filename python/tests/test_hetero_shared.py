"""Shared rows for the heterogeneous loaders (docs/PROTOCOL.md, "Shared
rows of a heterogeneous minibatch"): against a live heterogeneous server
built from this checkout, with the fakes of torch_geometric's HeteroData
and dgl.create_block (tests/fakes.py), a loader whose connection takes
shared rows (the default) gives, field for field, the minibatches of the
same loader over a server of its own whose connection takes them inline
— training epochs and a split, PyG and DGL —; its rows really come
through the shared buffers; the device path copies them straight from
the buffers once registered (a stand-in for cudaHostRegister); and the
leases are given back, so the pool stays at a few buffers over many
minibatches."""

import itertools
import mmap
import os
import unittest

import numpy as np
import torch

import streamsampler
import streamsampler.dgl
import streamsampler.pyg
from streamsampler.loader import DeviceTransfer
from streamsampler.shm import Registrar

from . import fakes
from .test_hetero_loader import FANOUTS, set_up_mini, tear_down_mini

# A server flag that changes nothing the minibatches carry: a loader given
# it gets a server of its own (loaders share a server only with the same
# flags), sampling as the default one does.
OWN_SERVER = ("--max-inflight", "512MiB")


def flat_pyg(d):
    """Every field of a (fake) HeteroData: {(type, key): value}."""
    out = {}
    for t in list(d.node_types) + list(d.edge_types):
        st = d[t]
        for k in st.keys():
            out[(t, k)] = st[k]
    return out


def flat_dgl(item):
    """Every field of a heterogeneous DGL minibatch (input_nodes,
    output_nodes, blocks), as {path: value}."""
    inputs, outputs, blocks = item
    out = {("in", t): v for t, v in inputs.items()}
    out.update({("out", t): v for t, v in outputs.items()})
    for i, b in enumerate(blocks):
        out[(i, "types")] = (b.srctypes, b.dsttypes, b.canonical_etypes)
        for t in b.srctypes:
            out[(i, "nsrc", t)] = b.num_src_nodes(t)
            out.update({(i, "src", t, k): v for k, v in b.srcnodes[t].data.items()})
        for t in b.dsttypes:
            out[(i, "ndst", t)] = b.num_dst_nodes(t)
            out.update({(i, "dst", t, k): v for k, v in b.dstnodes[t].data.items()})
        for et in b.canonical_etypes:
            out[(i, "edges", et)] = b.edges_of(et)
            out.update({(i, "edata", et, k): v for k, v in b.edges[et].data.items()})
    return out


def same(a, b):
    if torch.is_tensor(a):
        return torch.is_tensor(b) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


@unittest.skipUnless(hasattr(os, "memfd_create"), "shared rows need Linux")
class HeteroSharedRows(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        set_up_mini(cls, "ss-hetero-shared-")

    @classmethod
    def tearDownClass(cls):
        tear_down_mini(cls)

    def inline(self, lo):
        """Make loader ``lo``'s connection one without shared rows."""
        c = lo.server.start(lo.nodes).client(shared_rows=False)
        self.addCleanup(c.close)
        lo._client = c
        self.assertFalse(lo.client().shared_rows)
        return lo

    def pyg(self, seed, **kw):
        args = dict(num_neighbors=FANOUTS, input_nodes=("company", self.data["company"].train_mask), batch_size=16,
                    shuffle=True, seed=seed, binary=self.ss)
        args.update(kw)
        lo = streamsampler.pyg.NeighborLoader(self.graph, **args)
        self.addCleanup(lo.close)
        return lo

    def dgl(self, seed, ids, shuffle, **kw):
        lo = streamsampler.dgl.DataLoader(self.graph, {"company": torch.from_numpy(ids)},
                                          streamsampler.dgl.NeighborSampler([3, 2]), batch_size=16, shuffle=shuffle,
                                          seed=seed, binary=self.ss, **kw)
        self.addCleanup(lo.close)
        return lo

    def compare(self, shared, inline, flat, epochs=3):
        """``epochs`` epochs of both loaders in step, every field equal,
        each minibatch dropped before the next; the shared loader's rows
        came through its buffers, which stay few; then an epoch of each
        held whole (list()): more minibatches held than the pool has
        buffers, whose rows come inline after the wait, still equal."""
        self.assertTrue(shared.client().shared_rows, "the loader's default connection takes shared rows")
        n = 0

        def check(e, i, g, w):
            self.assertIsNotNone(g, (e, i))
            self.assertIsNotNone(w, (e, i))
            g, w = flat(g), flat(w)
            self.assertEqual(sorted(map(repr, g)), sorted(map(repr, w)), (e, i))
            for k in w:
                self.assertTrue(same(g[k], w[k]), (e, i, k))

        for e in range(epochs):
            for i, (g, w) in enumerate(itertools.zip_longest(shared, inline)):
                check(e, i, g, w)
                n += 1
            del g, w
        bufs = shared.client()._bufs
        self.assertIsNotNone(bufs)
        # Buffers came, and were reused: a minibatch whose rows are held
        # only by the loader's prefetch queue, its transform, the caller
        # and the client's requests in flight gives its lease back once
        # dropped, so that many buffers (not one a minibatch, nor the
        # pool's 16) serve them all.
        most = shared.prefetch + shared.depth + 3
        self.assertGreaterEqual(len(bufs.mapped), 1)
        self.assertLessEqual(len(bufs.mapped), most, "%d minibatches left %d buffers mapped" % (n, len(bufs.mapped)))
        got, want = list(shared), list(inline)
        self.assertEqual(len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            check("held", i, g, w)
        return n

    def test_pyg_training_and_split(self):
        c = self.data["company"]
        a = self.pyg(21)
        b = self.inline(self.pyg(21, server_args=OWN_SERVER))
        self.assertIsNot(a.server, b.server)
        n = self.compare(a, b, flat_pyg)
        # The x of a minibatch are views of a shared buffer, not of the
        # reply (the loader's HeteroData holds them as tensors).
        raw = next(a.client().hetero_batches(max_batches=1, advance=False))
        self.assertTrue(raw.x)
        for t, x in raw.x.items():
            self.assertIsInstance(getattr(x.base.base, "obj", None), mmap.mmap, t)
        del raw
        # A split beside the stream, on the same servers.
        val = np.flatnonzero(c.val_mask.numpy())[::-1].copy()
        sa = self.pyg(21, input_nodes=("company", val), shuffle=False)
        sb = self.inline(self.pyg(21, input_nodes=("company", val), shuffle=False, server_args=OWN_SERVER))
        self.assertIs(sa.server, a.server)
        self.assertIs(sb.server, b.server)
        n += self.compare(sa, sb, flat_pyg, epochs=2)
        self.assertGreater(n, 10)

    def test_dgl_training_and_split(self):
        train = np.flatnonzero(self.data["company"].train_mask.numpy())
        a = self.dgl(22, train, True)
        b = self.inline(self.dgl(22, train, True, server_args=OWN_SERVER))
        self.compare(a, b, flat_dgl)
        test = np.flatnonzero(self.data["company"].test_mask.numpy())
        sa = self.dgl(22, test, False)
        sb = self.inline(self.dgl(22, test, False, server_args=OWN_SERVER))
        self.compare(sa, sb, flat_dgl, epochs=2)

    def test_device_copies_from_registered_buffers(self):
        """The device path (device=, as on CUDA, where the loader registers
        the shared buffers with cudaHostRegister): with the buffers
        registered with a stand-in (LateStreams' registered ranges, the
        copies run late), every HeteroData on the "device" equals the
        inline loader's, and rows were copied straight from the shared
        buffers (bytes_direct)."""
        train = self.data["company"].train_mask
        a = self.pyg(24, input_nodes=("company", train), device="cpu")
        b = self.inline(self.pyg(24, input_nodes=("company", train), server_args=OWN_SERVER))
        streams = fakes.LateStreams()

        class Reg(Registrar):
            def register(self, addr, size):
                streams.registered.append((addr, size))
                return True

            def unregister(self, addr):
                streams.registered[:] = [r for r in streams.registered if r[0] != addr]

        a.register_rows = False  # the stand-in registers instead
        a.transfer = DeviceTransfer(torch.device("cpu"), streams=streams)
        self.assertTrue(a.client().register_shared_rows(Reg()))
        for e in range(2):
            n = 0
            for got, want in itertools.zip_longest(a, b):
                self.assertIsNotNone(got)
                self.assertIsNotNone(want)
                streams.run_all()
                fakes.assert_same(self, got, want, "epoch %d minibatch %d" % (e, n))
                n += 1
            self.assertEqual(n, len(b))
        self.assertGreater(len(streams.registered), 0)
        self.assertGreater(a.transfer.stats.bytes_direct, 0, "no rows were copied from the shared buffers")

    def test_leases_given_back(self):
        """Over many minibatches, each dropped before the next, the pool
        stays at a few buffers (the client's requests in flight), and
        every lease word is clear once the minibatches are gone."""
        lo = self.pyg(23, batch_size=4)
        client = lo.client()
        n = 0
        for _ in range(3):
            for b in client.hetero_batches(depth=4):
                self.assertTrue(b.x)
                n += 1
                del b
        self.assertGreater(n, 60)
        bufs = client._bufs
        self.assertLessEqual(len(bufs.mapped), 6, "%d minibatches, %d buffers" % (n, len(bufs.mapped)))
        import gc
        gc.collect()
        for m in list(bufs._maps.values()):
            self.assertEqual(int.from_bytes(m.mm[:8], "little"), 0, "a lease still held")


if __name__ == "__main__":
    unittest.main()
