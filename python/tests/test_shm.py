"""The client's side of shared-rows buffers (streamsampler.shm), through
the minibatch decoder that hands them their replies."""

import mmap
import os
import struct
import unittest
import warnings

import numpy as np

try:
    import torch
    HAVE_TORCH = True
    CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    HAVE_TORCH = CUDA = False

from streamsampler import protocol as P
from streamsampler import wire as W
from streamsampler.batch import Batch
from streamsampler.shm import Registrar, SharedBuffers

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


class FakeRegistrar(Registrar):
    """Registers everything (or nothing), checking each buffer is still
    mapped when it is unregistered."""

    def __init__(self, bufs, ok=True):
        self.bufs, self.ok = bufs, ok
        self.live = {}  # addr -> mmap
        self.calls = []

    def register(self, addr, size):
        self.calls.append(("register", addr, size))
        if not self.ok:
            return False
        mm = [m.mm for m in self.bufs._maps.values() if len(m.mm) == size and not m.mm.closed]
        self.live[addr] = mm
        return True

    def unregister(self, addr):
        self.calls.append(("unregister", addr))
        assert any(not mm.closed for mm in self.live.pop(addr)), "unregistered after its unmapping"


@unittest.skipUnless(hasattr(os, "memfd_create"), "no memfd_create")
class Registration(unittest.TestCase):
    """SharedBuffers hands its buffers to a registrar: those mapped before
    and after, each unregistered before it is unmapped, and only once no
    array views it."""

    def memfile(self, size=1 << 16):
        fd = os.memfd_create("test-rows")
        os.ftruncate(fd, size)
        return fd

    def test_register_unregister(self):
        bufs = SharedBuffers()
        dt = np.dtype(np.float32)
        x1 = bufs.view(1, 64, 0xFFFFFFFF, self.memfile(), dt, 4, 4)
        reg = FakeRegistrar(bufs)
        bufs.register_with(reg)  # buffer 1, mapped before
        self.assertEqual(bufs.registered, [1])
        x2 = bufs.view(2, 64, 0xFFFFFFFF, self.memfile(1 << 17), dt, 4, 4)  # after
        self.assertEqual(bufs.registered, [1, 2])
        self.assertEqual([c[0] for c in reg.calls], ["register", "register"])
        # Buffer 1 retired while x1 views it: unregistered with x1's end.
        x3 = bufs.view(3, 64, 1, self.memfile(), dt, 4, 4)
        self.assertEqual(len(reg.live), 3)
        del x1
        self.assertEqual(len(reg.live), 2)
        self.assertEqual(bufs.mapped, [2, 3])
        # Retired with no view: at once.
        del x2
        bufs.view(3, 64, 2, None, dt, 4, 4)
        self.assertEqual(len(reg.live), 1)
        bufs.close()  # x3 still views buffer 3: it goes with x3
        self.assertEqual(len(reg.live), 1)
        del x3
        self.assertEqual(reg.live, {})

    def test_unmapped_while_registering(self):
        """A buffer retired while its registration is under way (another
        thread closing the connection) is unregistered and unmapped once the
        registration is done, by the registering thread."""
        bufs = SharedBuffers()
        x = bufs.view(4, 64, 0xFFFFFFFF, self.memfile(), np.dtype(np.uint8), 8, 8)
        del x  # mapped, no view
        mm = bufs._maps[4].mm

        class Closing(FakeRegistrar):
            def register(self, addr, size):
                ok = super().register(addr, size)
                bufs.close()  # meanwhile: the buffer is retired and nothing views it
                self.closed_meanwhile = mm.closed
                return ok

        reg = Closing(bufs)
        bufs.register_with(reg)
        self.assertFalse(reg.closed_meanwhile, "unmapped while being registered")
        self.assertEqual([c[0] for c in reg.calls], ["register", "unregister"])
        self.assertTrue(mm.closed)

    def test_refused(self):
        bufs = SharedBuffers()
        reg = FakeRegistrar(bufs, ok=False)
        bufs.register_with(reg)
        x = bufs.view(5, 64, 0xFFFFFFFF, self.memfile(), np.dtype(np.uint8), 8, 8)
        self.assertEqual(bufs.registered, [])
        del x
        bufs.close()
        self.assertEqual([c[0] for c in reg.calls], ["register"])

    @unittest.skipUnless(HAVE_TORCH, "torch is not importable (Debian: python3-torch)")
    def test_cuda_registrar_without_cuda(self):
        if CUDA:
            self.skipTest("CUDA is available: the GPU tests register for real")
        from streamsampler.streams import CudaRegistrar
        mm = mmap.mmap(-1, 4096)
        addr = np.frombuffer(mm, np.uint8, count=1).__array_interface__["data"][0]
        reg = CudaRegistrar(None)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(reg.register(addr, 4096))
            self.assertFalse(reg.register(addr, 4096))
        self.assertEqual(len([x for x in w if issubclass(x.category, RuntimeWarning)]), 1)
        self.assertEqual(len(reg.errors), 2)
        mm.close()


if __name__ == "__main__":
    unittest.main()
