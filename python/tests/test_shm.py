"""The client's side of shared-rows buffers (streamsampler.shm), through
the minibatch decoder that hands them their replies."""

import os
import struct
import unittest

import numpy as np

from streamsampler import protocol as P
from streamsampler import wire as W
from streamsampler.batch import Batch
from streamsampler.shm import SharedBuffers

from .test_protocol import make_batch


@unittest.skipUnless(hasattr(os, "memfd_create"), "no memfd_create")
class SharedRows(unittest.TestCase):
    """The client's side of shared-rows buffers (docs/PROTOCOL.md): a
    buffer's memory file is mapped from the reply that brings it, later
    replies name it, x is a view of its rows, the lease word is cleared
    once no view is left, and a retired buffer is dropped."""

    def reply(self, b, buf, offset, retire):
        """A shared-rows reply payload for batch b: x's header and location
        instead of its bytes."""
        plain = W.encode_blocks(Batch(b.epoch, b.seeds, b.hops, b.index), P.OP_NEXT_BATCH, 1)[W.HEADER_SIZE:]
        head = struct.pack("<BBBQQ", P.FEATURE_X | P.FEATURE_SHARED, P.DTYPE_CODES[b.x.dtype], 2, b.x.shape[0], b.x.shape[1])
        return bytearray(plain + head + struct.pack("<IQI", buf, offset, retire))

    def memfile(self, x, offset=4096):
        fd = os.memfd_create("test-rows")
        os.ftruncate(fd, offset + x.nbytes + 4096)
        os.pwrite(fd, struct.pack("<Q", 1), 0)  # leased, as the server leaves it
        os.pwrite(fd, x.tobytes(), offset)
        return fd

    def lease(self, fd):
        return struct.unpack("<Q", os.pread(fd, 8, 0))[0]

    def test_views_leases_and_retire(self):
        b = make_batch()
        b.x = np.arange(len(b.n_id) * 3, dtype=np.float32).reshape(len(b.n_id), 3)
        bufs = SharedBuffers()
        fd = self.memfile(b.x)
        keep = os.dup(fd)  # the server's side, to watch the lease word
        got = W.decode_blocks(self.reply(b, 7, 4096, P.NO_BUFFER), fd, bufs)
        np.testing.assert_array_equal(got.x, b.x)
        self.assertTrue(got.x.flags.writeable)
        view = got.x[1:]
        del got
        self.assertEqual(self.lease(keep), 1, "released while a view is alive")
        del view
        self.assertEqual(self.lease(keep), 0, "not released once every view is gone")
        # The buffer again, named without a descriptor, with new rows.
        os.pwrite(keep, struct.pack("<Q", 1), 0)
        os.pwrite(keep, (b.x + 1).tobytes(), 4096)
        got = W.decode_blocks(self.reply(b, 7, 4096, P.NO_BUFFER), None, bufs)
        np.testing.assert_array_equal(got.x, b.x + 1)
        del got
        # A new buffer retiring buffer 7.
        fd2 = self.memfile(b.x * 2, offset=8192)
        got = W.decode_blocks(self.reply(b, 8, 8192, 7), fd2, bufs)
        np.testing.assert_array_equal(got.x, b.x * 2)
        self.assertEqual(bufs.mapped, [8])
        del got
        for bad in ((9, 4096, P.NO_BUFFER, None),  # never sent
                    (8, 4096, 7, None),            # retired twice
                    (8, 1 << 40, P.NO_BUFFER, None)):  # past the end
            with self.assertRaises(P.ProtocolError, msg=str(bad)):
                W.decode_blocks(self.reply(b, *bad[:3]), bad[3], bufs)
        with self.assertRaises(P.ProtocolError):  # sent twice
            W.decode_blocks(self.reply(b, 8, 8192, P.NO_BUFFER), self.memfile(b.x), bufs)
        bufs.close()
        os.close(keep)


if __name__ == "__main__":
    unittest.main()
