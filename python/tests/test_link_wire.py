"""Link minibatches on the wire (streamsampler.wire's link section,
docs/PROTOCOL.md "Link minibatches"): the byte-level example that
serve/link_test.go pins too, round trips in every mode, and malformed
link sections."""

import struct
import unittest

import numpy as np

from streamsampler import protocol as P
from streamsampler import wire as W
from streamsampler.batch import Batch, Hop
from streamsampler.link import NEG_BINARY, NEG_NONE, NEG_TRIPLET, LinkFields

# A binary link minibatch of one hop: positive 3 -> 5 (training edge 7),
# negative 5 -> 9, the hop's one sampled edge 9 -> 5. Identical bytes in
# serve/link_test.go (TestLinkByteExample).
LINK_EXAMPLE = bytes.fromhex(
    "d1000000" "0200" "01000000"
    "01000000" "00000000" "01" "04"
    "010103000000000000000300000005000000" "09000000"
    "010103000000000000000300000005000000" "09000000"
    "010103000000000000000300000005000000" "09000000"
    "02010100000000000000" "02000000"
    "02010100000000000000" "01000000"
    "01" "01000000" "000000000000f03f"
    "03010100000000000000" "0700000000000000"
    "030202000000000000000200000000000000"
    "0000000000000000" "0100000000000000" "0100000000000000" "0200000000000000"
    "05010200000000000000" "0000803f" "00000000")


def one_hop(seeds):
    s = np.asarray(seeds, dtype=np.uint32)
    return Batch(1, s, [Hop(s, s, np.array([2], np.int32), np.array([1], np.int32))], index=0)


class LinkWireTest(unittest.TestCase):
    def test_example_bytes(self):
        length, op, status, rid = W.HEADER.unpack_from(LINK_EXAMPLE, 0)
        self.assertEqual((length, op, status, rid), (len(LINK_EXAMPLE) - 4, P.OP_NEXT_BATCH, P.STATUS_OK, 1))
        b = W.decode_blocks(LINK_EXAMPLE[W.HEADER_SIZE:])
        self.assertEqual(b.seeds.tolist(), [3, 5, 9])
        link = b.link
        self.assertIsNotNone(link)
        self.assertEqual(link.mode, NEG_BINARY)
        self.assertEqual(link.input_id.dtype, np.int64)
        self.assertEqual(link.input_id.tolist(), [7])
        self.assertEqual(link.edge_label_index.tolist(), [[0, 1], [1, 2]])
        self.assertEqual(link.edge_label.dtype, np.float32)
        self.assertEqual(link.edge_label.tolist(), [1.0, 0.0])
        # The global pairs: positive (3, 5), negative (5, 9).
        self.assertEqual(b.n_id[link.edge_label_index].T.tolist(), [[3, 5], [5, 9]])
        # And back: the fakes' encoder writes the same bytes.
        b.link = LinkFields(NEG_BINARY, link.input_id, edge_label_index=link.edge_label_index,
                            edge_label=link.edge_label)
        self.assertEqual(W.encode_blocks(b, P.OP_NEXT_BATCH, 1), LINK_EXAMPLE)

    def test_round_trips(self):
        cases = [
            LinkFields(NEG_NONE, np.array([4, 1], np.int64), edge_label_index=np.array([[0, 1], [2, 0]], np.int64),
                       edge_label=np.array([3, 5], np.int64)),
            LinkFields(NEG_BINARY, np.array([2], np.int64), edge_label_index=np.array([[0, 2, 1], [1, 0, 2]], np.int64),
                       edge_label=np.array([1, 0, 0], np.float32)),
            LinkFields(NEG_TRIPLET, np.array([9, 8], np.int64), src_index=np.array([0, 1], np.int64),
                       dst_pos_index=np.array([1, 2], np.int64), dst_neg_index=np.array([[2, 0, 1], [0, 0, 2]], np.int64)),
        ]
        for link in cases:
            b = one_hop([3, 5, 9])
            b.link = link
            got = W.decode_blocks(W.encode_blocks(b, P.OP_NEXT_BATCH, 1)[W.HEADER_SIZE:]).link
            self.assertEqual(got.mode, link.mode)
            for name in ("input_id", "edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"):
                want = getattr(link, name)
                if want is None:
                    self.assertIsNone(getattr(got, name), name)
                else:
                    np.testing.assert_array_equal(getattr(got, name), want, err_msg=name)
                    self.assertEqual(getattr(got, name).dtype, want.dtype, name)

    def test_link_split_payload(self):
        # The same bytes as serve.AppendLinkSplitRequest (batch size 2,
        # binary, amount 1, seed 5, edge 1 -> 2 labelled 0 as int64).
        want = bytes.fromhex("02000000" "01" "000000000000f03f" "0500000000000000" "01"
                             "01010100000000000000" "01000000" "01010100000000000000" "02000000"
                             "03010100000000000000" "0000000000000000")
        got = W.link_split_payload(np.array([[1], [2]]), 2, labels=np.array([0]), neg_sampling=NEG_BINARY, amount=1,
                                   seed=5)
        self.assertEqual(got, want)
        self.assertEqual(W.link_split_payload(np.array([[1], [2]]), 2)[13:22], bytes(9))  # seed 0, no labels
        with self.assertRaises(ValueError):
            W.link_split_payload(np.array([1, 2]), 2)
        with self.assertRaises(ValueError):
            W.link_split_payload(np.array([[1], [2]]), 2, neg_sampling="pairs")

    def test_malformed(self):
        p = LINK_EXAMPLE[W.HEADER_SIZE:]
        for cut in range(10, len(p)):
            with self.assertRaises(P.ProtocolError, msg="cut at %d" % cut):
                W.decode_blocks(p[:cut])
        # The link section starts after the hop: mode byte 3 is unknown.
        start = p.index(bytes.fromhex("01" "01000000" "000000000000f03f"))
        bad = bytearray(p)
        bad[start] = 3
        with self.assertRaisesRegex(P.ProtocolError, "link mode 3"):
            W.decode_blocks(bytes(bad))
        # A local id past n_id (3 nodes).
        bad = bytearray(p)
        first = start + 13 + 18 + 18  # fixed part, input_id, edge_label_index's header
        struct.pack_into("<q", bad, first, 3)
        with self.assertRaisesRegex(P.ProtocolError, "local id"):
            W.decode_blocks(bytes(bad))
        # P disagreeing with input_id.
        bad = bytearray(p)
        struct.pack_into("<I", bad, start + 1, 2)
        with self.assertRaisesRegex(P.ProtocolError, "input_id has 1 elements for 2 positives"):
            W.decode_blocks(bytes(bad))


if __name__ == "__main__":
    unittest.main()
