"""Wire format (streamsampler.wire, with the numbers of
streamsampler.protocol and the model of streamsampler.batch): the
byte-level example of docs/PROTOCOL.md (also pinned by
serve/protocol_test.go), round trips and malformed payloads."""

import struct
import unittest

import numpy as np

from streamsampler import protocol as P
from streamsampler import wire as W
from streamsampler.batch import Batch, Hop

# A next_batch reply: epoch 2, batch 0, one hop, flags 0 (DGL semantics, no
# edge ids), seeds [5], src [5 8], one edge 8 -> 5 (local 1 -> 0). Identical
# bytes in serve/protocol_test.go.
EXAMPLE_REPLY = bytes([
    0x5a, 0, 0, 0, 2, 0, 1, 0, 0, 0,
    2, 0, 0, 0, 0, 0, 0, 0, 1, 0,
    1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0,
    1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0,
    1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 8, 0, 0, 0,
    2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
])
EXAMPLE_REQUEST = bytes([10, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff])


def make_batch():
    h1 = Hop(np.array([7, 2], np.uint32), np.array([7, 2, 9, 4], np.uint32),
               np.array([2, 3, 0], np.int32), np.array([0, 0, 1], np.int32))
    h2 = Hop(np.array([7, 2, 9, 4], np.uint32), np.array([7, 2, 9, 4, 11], np.uint32),
               np.array([4], np.int32), np.array([3], np.int32))
    return Batch(3, np.array([7, 2], np.uint32), [h1, h2], index=5)


# A hello with token "s3cret", id 1: the example of docs/PROTOCOL.md
# (also pinned by serve/access_test.go).
EXAMPLE_HELLO = bytes([0x0c, 0, 0, 0, 5, 0, 1, 0, 0, 0]) + b"s3cret"


class WireFormat(unittest.TestCase):
    def test_hello(self):
        self.assertEqual(W.encode_frame(P.OP_HELLO, 1, W.token_payload(" s3cret\n")), EXAMPLE_HELLO)
        self.assertEqual(W.token_payload(b"s3cret"), b"s3cret")
        with self.assertRaises(ValueError):
            W.token_payload(" \n")
        with self.assertRaises(ValueError):
            W.token_payload("x" * (P.MAX_TOKEN + 1))
        self.assertEqual(len(W.token_payload("x" * P.MAX_TOKEN)), P.MAX_TOKEN)
        err = W.decode_error(struct.pack("<H", P.CODE_UNAUTHORIZED) + b"wrong token")
        self.assertIsInstance(err, P.UnauthorizedError)
        self.assertIsInstance(err, PermissionError)
        self.assertEqual((err.code, err.message), (P.CODE_UNAUTHORIZED, "wrong token"))

    def test_link_example_bytes(self):
        # docs/PROTOCOL.md's link example (tests/test_link_wire.py decodes
        # it field by field): flag bit 2, the link section after the hop.
        from tests.test_link_wire import LINK_EXAMPLE
        self.assertEqual(P.BATCH_LINK, 4)
        self.assertEqual(LINK_EXAMPLE[W.HEADER_SIZE + 9], P.BATCH_LINK)
        b = W.decode_blocks(LINK_EXAMPLE[W.HEADER_SIZE:])
        self.assertEqual(b.link.input_id.tolist(), [7])
        self.assertEqual(b.n_id[b.link.edge_label_index].T.tolist(), [[3, 5], [5, 9]])

    def test_example_bytes(self):
        self.assertEqual(W.encode_frame(P.OP_NEXT_BATCH, 1, W.epoch_payload(None)), EXAMPLE_REQUEST)
        length, op, status, rid = W.HEADER.unpack_from(EXAMPLE_REPLY)
        self.assertEqual((length, op, status, rid), (len(EXAMPLE_REPLY) - 4, P.OP_NEXT_BATCH, P.STATUS_OK, 1))
        b = W.decode_blocks(bytearray(EXAMPLE_REPLY[W.HEADER_SIZE:]))
        self.assertEqual((b.epoch, b.index), (2, 0))
        self.assertEqual(b.seeds.tolist(), [5])
        self.assertEqual(len(b.hops), 1)
        h = b.hops[0]
        self.assertEqual((h.dst.tolist(), h.src.tolist(), h.edge_src.tolist(), h.edge_dst.tolist()),
                         ([5], [5, 8], [1], [0]))
        self.assertEqual(W.encode_blocks(b, P.OP_NEXT_BATCH, 1), EXAMPLE_REPLY)

    def test_round_trip(self):
        b = make_batch()
        wire = W.encode_blocks(b, P.OP_SAMPLE, 9)
        got = W.decode_blocks(bytearray(wire[W.HEADER_SIZE:]))
        self.assertEqual((got.epoch, got.index), (3, 5))
        np.testing.assert_array_equal(got.seeds, b.seeds)
        for g, w in zip(got.hops, b.hops):
            for name in ("dst", "src", "edge_src", "edge_dst"):
                np.testing.assert_array_equal(getattr(g, name), getattr(w, name))
                self.assertEqual(getattr(g, name).dtype, getattr(w, name).dtype.newbyteorder("<"))
        self.assertTrue(got.hops[0].src.flags.writeable)
        np.testing.assert_array_equal(got.n_id, [7, 2, 9, 4, 11])
        self.assertEqual(got.num_edges, 4)
        self.assertEqual((got.semantics, got.has_edge_ids), ("dgl", False))

    def test_round_trip_pyg_edge_ids(self):
        b = make_batch()
        b.semantics = "pyg"
        b.hops[1].dst = b.hops[0].src[2:]  # hop 2 expands what hop 1 reached first
        b.hops[1].edge_dst = np.array([1], np.int32)
        for h, n in zip(b.hops, (3, 1)):
            h.e_id = np.arange(100, 100 + n, dtype=np.int64) * 2**33
        got = W.decode_blocks(bytearray(W.encode_blocks(b, P.OP_NEXT_BATCH, 2)[W.HEADER_SIZE:]))
        self.assertEqual((got.semantics, got.has_edge_ids), ("pyg", True))
        for g, w in zip(got.hops, b.hops):
            for name in ("dst", "src", "edge_src", "edge_dst", "e_id"):
                np.testing.assert_array_equal(getattr(g, name), getattr(w, name))
        self.assertEqual(got.hops[0].e_id.dtype, np.dtype("<i8"))
        payload = bytearray(W.encode_blocks(b, P.OP_NEXT_BATCH, 2)[W.HEADER_SIZE:])
        payload[9] = 4  # an unknown flag
        with self.assertRaises(P.ProtocolError):
            W.decode_blocks(payload)

    def test_from_json(self):
        b = Batch.from_json('{"epoch":1,"seeds":[3],"hops":[{"dst":[3],"src":[3,4],"edge_src":[1],"edge_dst":[0]}]}')
        self.assertEqual((b.epoch, b.seeds.tolist(), b.hops[0].src.tolist()), (1, [3], [3, 4]))
        self.assertEqual(b.hops[0].edge_src.dtype, np.int32)
        # `streamsampler sample --format json` omits seeds: hop 1's dst.
        b = Batch.from_json({"epoch": 0, "hops": [{"dst": [6, 2], "src": [6, 2], "edge_src": [], "edge_dst": []}]})
        self.assertEqual(b.seeds.tolist(), [6, 2])

    def test_truncated_and_trailing(self):
        payload = W.encode_blocks(make_batch(), P.OP_SAMPLE, 1)[W.HEADER_SIZE:]
        for n in range(len(payload)):
            with self.assertRaises(P.ProtocolError, msg="cut at %d" % n):
                W.decode_blocks(bytearray(payload[:n]))
        with self.assertRaises(P.ProtocolError):
            W.decode_blocks(bytearray(payload + b"\0"))

    def test_bad_dtype(self):
        payload = bytearray(W.encode_blocks(make_batch(), P.OP_SAMPLE, 1)[W.HEADER_SIZE:])
        payload[10] = 2  # seeds as int32
        with self.assertRaises(P.ProtocolError):
            W.decode_blocks(payload)
        payload[10] = 77
        with self.assertRaises(P.ProtocolError):
            W.decode_blocks(payload)

    def test_sample_payload(self):
        p = W.sample_payload(4, [9, 0, 2**31])
        self.assertEqual(p, struct.pack("<IBBQ3I", 4, 1, 1, 3, 9, 0, 2**31))
        self.assertEqual(W.sample_payload(4, [9, 0, 2**31], "pyg"), p + b"\x01")
        self.assertEqual(W.epoch_payload(3, "dgl"), struct.pack("<IB", 3, 0))
        self.assertEqual(W.split_payload([5, 1], 64), struct.pack("<IBBQ2I", 64, 1, 1, 2, 5, 1))
        self.assertEqual(W.split_batch_payload(2, 7, "pyg"), struct.pack("<IIB", 2, 7, 1))
        with self.assertRaises(ValueError):
            W.epoch_payload(3, "PyG")
        with self.assertRaises(ValueError):
            W.sample_payload(None, [-1])
        with self.assertRaises(ValueError):
            W.sample_payload(None, [2**32])
        with self.assertRaises(ValueError):
            W.sample_payload(None, [1.5])
        with self.assertRaises(ValueError):
            W.sample_payload(None, [[1, 2]])

    def test_fresh_payload(self):
        """sample_fresh's payload, byte for byte (serve/fresh_test.go's
        TestFreshRequestBytes pins the same bytes)."""
        p = W.fresh_payload([5, 9], [15, 10], seed=7, epoch=2, replace=True, edge_ids=True, semantics="pyg")
        want = bytes([7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3,
                      2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 15, 0, 0, 0, 10, 0, 0, 0,
                      1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 9, 0, 0, 0, 1])
        self.assertEqual(p, want)
        self.assertEqual(W.fresh_payload([5], [2])[:13], bytes(13))
        self.assertEqual(len(W.fresh_payload([5], [2])), 13 + 14 + 14)  # no semantics byte: the server's
        with self.assertRaises(ValueError):
            W.fresh_payload([5], [])
        with self.assertRaises(ValueError):
            W.fresh_payload([-1], [2])
        with self.assertRaises(ValueError):
            W.fresh_payload([5], [2], semantics="PyG")

    def test_errors(self):
        e = W.decode_error(struct.pack("<H", P.CODE_NOT_IN_FRONTIER) + b"seed 3")
        self.assertIsInstance(e, P.NotInFrontierError)
        self.assertEqual((e.code, e.message), (P.CODE_NOT_IN_FRONTIER, "seed 3"))
        self.assertIsInstance(W.decode_error(struct.pack("<H", P.CODE_UNKNOWN_EPOCH)), P.UnknownEpochError)
        self.assertEqual(type(W.decode_error(struct.pack("<H", 99))), P.ServerError)
        self.assertEqual(W.decode_error(b"x").code, P.CODE_BAD_REQUEST)


class Features(unittest.TestCase):
    """Minibatch replies with feature rows and labels (a server with
    --features): every feature dtype round-trips, x has one row per node of
    n_id, y one label per seed, and malformed feature sections fail."""

    def with_features(self, dtype, dim=3, labels=True):
        b = make_batch()
        rng = np.random.default_rng(len(dtype))
        b.x = (rng.standard_normal((len(b.n_id), dim)) * 50).astype(dtype)
        if labels:
            b.y = np.array([1, -1], np.int32)
        return b

    def test_round_trip(self):
        for dtype in ("<f4", "<f2", "i1", "u1"):
            for labels in (True, False):
                b = self.with_features(dtype, labels=labels)
                wire = W.encode_blocks(b, P.OP_NEXT_BATCH, 4)
                got = W.decode_blocks(bytearray(wire[W.HEADER_SIZE:]))
                self.assertEqual(got.x.dtype, np.dtype(dtype))
                np.testing.assert_array_equal(got.x, b.x)
                if labels:
                    np.testing.assert_array_equal(got.y, b.y)
                else:
                    self.assertIsNone(got.y)
                np.testing.assert_array_equal(got.n_id, b.n_id)

    def test_malformed(self):
        payload = W.encode_blocks(self.with_features("<f4"), P.OP_SAMPLE, 1)[W.HEADER_SIZE:]
        plain = len(W.encode_blocks(make_batch(), P.OP_SAMPLE, 1)) - W.HEADER_SIZE
        for n in range(plain + 1, len(payload)):
            with self.assertRaises(P.ProtocolError, msg="truncated at %d" % n):
                W.decode_blocks(bytearray(payload[:n]))
        for flags in (0, P.FEATURE_Y, 4 | P.FEATURE_X):
            bad = bytearray(payload)
            bad[plain] = flags
            with self.assertRaises(P.ProtocolError, msg="flags %d" % flags):
                W.decode_blocks(bad)
        b = self.with_features("<f4")
        b.x = b.x[:-1]  # one row short of n_id
        with self.assertRaises(P.ProtocolError):
            W.decode_blocks(bytearray(W.encode_blocks(b, P.OP_SAMPLE, 1)[W.HEADER_SIZE:]))


if __name__ == "__main__":
    unittest.main()
