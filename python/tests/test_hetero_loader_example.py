"""python/examples/hetero_quickstart.py (``make demo-hetero``, issue 27's
"Done when") runs on the bundled typed edge lists: without
torch_geometric over the raw HeteroBatches (as this machine has it), and
with a HeteroData stand-in through streamsampler.pyg.NeighborLoader; both
print one epoch covering the training companies once."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from . import fakes
from .test_live import REPO, build_tools

EXAMPLE = os.path.join(REPO, "python", "examples", "hetero_quickstart.py")


class QuickstartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ss-hetero-quickstart-")
        cls.ss, cls.ck = build_tools(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_raw(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), STREAMSAMPLER_BIN=self.ss)
        r = subprocess.run([sys.executable, EXAMPLE, "--chunkify", self.ck, "--raw"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("--relation company,likes,government=", r.stdout)
        self.assertIn("node types company=6495, government=6880, politician=5768, tvshow=3327; 16 relations",
                      r.stdout)
        self.assertIn("one epoch: 650 seed companies, each once (HeteroBatch)", r.stdout)

    def test_heterodata(self):
        sys.path.insert(0, os.path.dirname(EXAMPLE))
        self.addCleanup(sys.path.remove, os.path.dirname(EXAMPLE))
        sys.modules.pop("hetero_quickstart", None)
        out = io.StringIO()
        with mock.patch.dict(sys.modules, fakes.fake_pyg_hetero()), contextlib.redirect_stdout(out):
            import hetero_quickstart
            hetero_quickstart.main(["--chunkify", self.ck, "--binary", self.ss,
                                    "--out", os.path.join(self.tmp.name, "g")])
        text = out.getvalue()
        self.assertIn("one epoch: 650 seed companies, each once (HeteroData)", text)
        self.assertIn("x of company, government, politician, tvshow", text)


if __name__ == "__main__":
    unittest.main()
