"""Heterogeneous minibatches on the wire (docs/PROTOCOL.md,
"Heterogeneous minibatches"): the byte-level example that
serve/hetero_test.go's TestHeteroByteExample pins for the Go encoder,
decoded here, and the decoder's refusals."""

import struct
import unittest

import numpy as np

from streamsampler import protocol as P
from streamsampler import wire as W
from streamsampler.hetero import HeteroSchema

# The frame of serve/hetero_test.go's heteroExampleHex (Go's
# MarshalHeteroBatch of the example), byte for byte.
EXAMPLE_HEX = (
    "a0000000" "02" "00" "07000000"
    "05000000" "00000000" "01" "09" "0200" "0100"
    "0101" "0100000000000000" "03000000"
    "0101" "0200000000000000" "01000000" "00000000"
    "01000000"
    "0101" "0200000000000000" "04000000" "09000000"
    "0101" "0200000000000000" "00000000" "02000000"
    "00000000"
    "0302" "0200000000000000" "0200000000000000"
    "0000000000000000" "0100000000000000" "0000000000000000" "0000000000000000"
    "0101" "0100000000000000" "02000000"
)

SCHEMA = HeteroSchema.from_info({"node_types": ["paper", "author"], "relations": [["author", "writes", "paper"]],
                                 "num_nodes": [10, 10]})


class HeteroWire(unittest.TestCase):
    def frame(self):
        return bytes.fromhex(EXAMPLE_HEX)

    def test_example_decodes(self):
        f = self.frame()
        length, op, status, rid = W.HEADER.unpack_from(f, 0)
        self.assertEqual((length + 4, op, status, rid), (len(f), P.OP_NEXT_BATCH, P.STATUS_OK, 7))
        body = f[W.HEADER_SIZE:]
        self.assertTrue(W.is_hetero(body))
        b = W.decode_hetero(body, SCHEMA)
        self.assertEqual((b.epoch, b.index, b.semantics, b.num_hops), (5, 0, "pyg", 1))
        np.testing.assert_array_equal(b["paper"].n_id, [3])
        np.testing.assert_array_equal(b["paper"].num_sampled_nodes, [1, 0])
        self.assertEqual(b["paper"].batch_size, 1)
        np.testing.assert_array_equal(b["author"].n_id, [4, 9])
        np.testing.assert_array_equal(b["author"].num_sampled_nodes, [0, 2])
        self.assertEqual(b["author"].batch_size, 0)
        e = b["author", "writes", "paper"]
        self.assertEqual(e.edge_index.dtype, np.int64)
        np.testing.assert_array_equal(e.edge_index, [[0, 1], [0, 0]])
        np.testing.assert_array_equal(e.num_sampled_edges, [2])
        self.assertIsNone(e.e_id)
        # Global view: author 4 and author 9 → paper 3.
        src = b["author"].n_id[e.edge_index[0]]
        dst = b["paper"].n_id[e.edge_index[1]]
        self.assertEqual(list(zip(src.tolist(), dst.tolist())), [(4, 3), (9, 3)])

    def test_homogeneous_decoder_refuses(self):
        with self.assertRaisesRegex(P.ProtocolError, "heterogeneous"):
            W.decode_blocks(self.frame()[W.HEADER_SIZE:])

    def test_refusals(self):
        body = self.frame()[W.HEADER_SIZE:]
        for n in range(len(body)):
            with self.assertRaises(P.ProtocolError, msg="truncated at %d" % n):
                W.decode_hetero(body[:n], SCHEMA)
        with self.assertRaisesRegex(P.ProtocolError, "trailing"):
            W.decode_hetero(body + b"\0", SCHEMA)
        other = HeteroSchema(("paper", "author", "venue"), SCHEMA.edge_types)
        with self.assertRaisesRegex(P.ProtocolError, "node types"):
            W.decode_hetero(body, other)
        bad = bytearray(body)
        # The first edge's row (an author position) beyond author's n_id.
        at = len(bad) - (2 + 8 + 4) - 8 * 4
        struct.pack_into("<q", bad, at, 2)
        with self.assertRaisesRegex(P.ProtocolError, "outside n_id"):
            W.decode_hetero(bytes(bad), SCHEMA)

    def test_schema_refuses_unknown_type(self):
        with self.assertRaises(P.ProtocolError):
            HeteroSchema.from_info({"node_types": ["a"], "relations": [["a", "r", "b"]]})


# The frame of serve/heterosplit_test.go's heteroSplitExampleHex: the
# example as minibatch 0 of a split (op 8), with labels (flag bit 5):
# paper 3 labelled 7, the authors without labels.
SPLIT_EXAMPLE_HEX = (
    "b0000000" "08" "00" "07000000"
    "05000000" "00000000" "01" "29" "0200" "0100"
    + EXAMPLE_HEX[len("a0000000" "02" "00" "07000000" "05000000" "00000000" "01" "09" "0200" "0100"):]
    + "01" "0201" "0100000000000000" "07000000"
    "00"
)


class HeteroSplitWire(unittest.TestCase):
    def frame(self):
        return bytes.fromhex(SPLIT_EXAMPLE_HEX)

    def test_split_example_decodes(self):
        f = self.frame()
        length, op, status, rid = W.HEADER.unpack_from(f, 0)
        self.assertEqual((length + 4, op, status, rid), (len(f), P.OP_SPLIT_BATCH, P.STATUS_OK, 7))
        self.assertEqual(len(f), 180)
        b = W.decode_hetero(f[W.HEADER_SIZE:], SCHEMA)
        self.assertEqual((b.epoch, b.index, b.semantics, b.num_hops), (5, 0, "pyg", 1))
        np.testing.assert_array_equal(b["paper"].n_id, [3])
        self.assertEqual(b["paper"].batch_size, 1)
        self.assertEqual(b.y["paper"].dtype, np.int32)
        np.testing.assert_array_equal(b.y["paper"], [7])
        np.testing.assert_array_equal(b["paper"].y, [7])
        self.assertNotIn("author", b.y)
        self.assertIsNone(b["author"].y)
        self.assertEqual(b.x, {})

    def test_split_example_refusals(self):
        body = self.frame()[W.HEADER_SIZE:]
        for n in range(len(body)):
            with self.assertRaises(P.ProtocolError, msg="truncated at %d" % n):
                W.decode_hetero(body[:n], SCHEMA)
        bad = bytearray(body)
        struct.pack_into("<i", bad, len(bad) - 5, -2)
        with self.assertRaisesRegex(P.ProtocolError, "label -2"):
            W.decode_hetero(bytes(bad), SCHEMA)
        bad = bytearray(body)
        bad[len(bad) - 1] = 2
        with self.assertRaisesRegex(P.ProtocolError, "author y: presence 2"):
            W.decode_hetero(bytes(bad), SCHEMA)

    def test_split_request_payloads(self):
        # split: batch_size u32, type u16, array nodes u32.
        self.assertEqual(W.hetero_split_payload(1, [4, 9], 2).hex(),
                         "02000000" "0100" "0101" "0200000000000000" "04000000" "09000000")
        with self.assertRaises(ValueError):
            W.hetero_split_payload(1 << 16, [1], 1)
        with self.assertRaises(ValueError):
            W.hetero_split_payload(0, [-1], 1)
        self.assertEqual(W.split_batch_payload(3, 2, "dgl").hex(), "03000000" "02000000" "00")


if __name__ == "__main__":
    unittest.main()
