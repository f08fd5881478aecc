"""The feature store held on a device (streamsampler.loader.device_table):
the CRC-32C it checks rows with, the table against the packed matrix,
corruption found and named, and when a loader holds one. Runs on torch's
CPU device (the GPU path is python/examples/device_prefetch_check.py)."""

import os
import shutil
import subprocess
import tempfile
import unittest
from types import SimpleNamespace

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - CI installs python3-torch
    torch = None

from streamsampler.featstore import StoreError

from .test_live import build_tools

if torch is not None:
    from streamsampler.loader import device_table as dt


def crc32c_bytes(data: bytes) -> int:
    """A bit-at-a-time CRC-32C: the reference the table version is held to."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


@unittest.skipIf(torch is None, "needs torch")
class CRC32CRowsTest(unittest.TestCase):
    def test_vectors(self):
        """The standard check value and RFC 3720's vectors."""
        cases = [(b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA), (b"\xff" * 32, 0x62A8AB43),
                 (bytes(range(32)), 0x46DD794E)]
        for data, want in cases:
            rows = torch.tensor(list(data), dtype=torch.uint8).view(1, -1)
            self.assertEqual(int(dt.crc32c_rows(rows)[0]), want, data)

    def test_many_rows(self):
        """Each row's CRC, for rows of several widths, against the bitwise
        reference."""
        rng = np.random.default_rng(3)
        for width in (1, 7, 12, 256):
            a = rng.integers(0, 256, (50, width), dtype=np.uint8)
            got = dt.crc32c_rows(torch.from_numpy(a)).tolist()
            self.assertEqual(got, [crc32c_bytes(r.tobytes()) for r in a], width)


@unittest.skipIf(torch is None, "needs torch")
class DeviceTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ss-devtable-")
        ss, cls.chunkify = build_tools(cls.tmp)
        rng = np.random.default_rng(5)
        n = 3000  # labels span three 4 KiB pages, the last short
        ef = os.path.join(cls.tmp, "edges.txt")
        u, v = rng.integers(0, n, 9000), rng.integers(0, n, 9000)
        u[-1], v[-1] = n - 1, n - 2
        np.savetxt(ef, np.stack([u, v], 1), fmt="%d")
        cls.graph = os.path.join(cls.tmp, "g")
        subprocess.run([cls.chunkify, "build", ef, "-o", cls.graph, "--symmetrize", "-q"], check=True)
        cls.x = rng.normal(size=(n, 6)).astype(np.float32)
        cls.y = rng.integers(-1, 5, n).astype(np.int64)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        np.save(os.path.join(cls.tmp, "y.npy"), cls.y)
        subprocess.run([cls.chunkify, "features", os.path.join(cls.tmp, "x.npy"), "--labels",
                        os.path.join(cls.tmp, "y.npy"), "-o", cls.graph, "-q"], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def copy(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        g = os.path.join(d, "g")
        shutil.copytree(self.graph, g)
        return g

    def test_table_is_the_matrix(self):
        """x and y are the packed matrix and labels, whatever the block
        size (one row a block, a block that ends mid-file, one block)."""
        for block in (24, 24 * 1000, 1 << 30):
            t = dt.DeviceTable(self.graph, torch.device("cpu"), block_bytes=block)
            np.testing.assert_array_equal(t.x.numpy(), self.x)
            np.testing.assert_array_equal(t.y.numpy(), np.where(self.y < 0, -1, self.y))
            self.assertEqual(t.nbytes, self.x.nbytes + 8 * len(self.y))
            x, y = t.gather(torch.tensor([5, 0, 2999]))
            np.testing.assert_array_equal(x.numpy(), self.x[[5, 0, 2999]])
            np.testing.assert_array_equal(y.numpy(), self.y[[5, 0, 2999]])

    def test_flipped_row_byte(self):
        """A flipped byte of a row is refused, naming the file and row."""
        g = self.copy()
        path = os.path.join(g, "features-1.bin")
        with open(path, "r+b") as f:
            f.seek(1234 * 24 + 5)
            b = f.read(1)
            f.seek(1234 * 24 + 5)
            f.write(bytes([b[0] ^ 0x10]))
        with self.assertRaisesRegex(StoreError, r"features-1\.bin: row 1234 \(bytes 29616\.\.29639\): CRC-32C"):
            dt.DeviceTable(g, torch.device("cpu"), block_bytes=24 * 100)

    def test_flipped_label_byte(self):
        """A flipped byte of the labels is refused, naming the page; the
        short last page is checked too."""
        for off, page in ((100, 0), (4 * 2999, 2)):
            g = self.copy()
            path = os.path.join(g, "labels-1.bin")
            with open(path, "r+b") as f:
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ 1]))
            with self.assertRaisesRegex(StoreError, r"labels-1\.bin: page %d " % page):
                dt.DeviceTable(g, torch.device("cpu"))

    def test_truncated_crcs(self):
        g = self.copy()
        path = os.path.join(g, "features-1.crc")
        with open(path, "r+b") as f:
            f.truncate(400)
        with self.assertRaisesRegex(StoreError, r"features-1\.crc: 100 CRCs, want 3000"):
            dt.DeviceTable(g, torch.device("cpu"))

    def test_shared_while_held(self):
        """One table per graph and device while a loader holds it."""
        a = dt.device_table(self.graph, torch.device("cpu"))
        self.assertIs(dt.device_table(self.graph, torch.device("cpu")), a)

    def test_resolve(self):
        """When a loader holds the store on its device."""
        cuda = SimpleNamespace(type="cuda", index=0)
        cpu = torch.device("cpu")
        bare = os.path.join(self.tmp, "bare")
        os.makedirs(bare, exist_ok=True)
        self.assertFalse(dt.resolve(None, cpu, False, self.graph, "L"))
        self.assertFalse(dt.resolve(None, None, False, self.graph, "L"))
        self.assertFalse(dt.resolve(False, cuda, False, self.graph, "L"))
        self.assertFalse(dt.resolve(None, cuda, True, self.graph, "L"))  # delta= keeps rows on the wire
        self.assertFalse(dt.resolve(None, cuda, False, bare, "L"))
        self.assertTrue(dt.resolve(True, cuda, False, self.graph, "L"))
        for args, msg in (((True, cpu, False, self.graph), "CUDA"), ((True, cuda, False, bare), "no feature store"),
                          ((True, cuda, True, self.graph), "delta")):
            with self.assertRaisesRegex(ValueError, msg):
                dt.resolve(*args, "L")
        with self.assertRaises(TypeError):
            dt.resolve("yes", cuda, False, self.graph, "L")
        self.assertEqual(dt.store_bytes(self.graph), self.x.nbytes + 8 * len(self.y))


if __name__ == "__main__":
    unittest.main()
