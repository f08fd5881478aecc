"""The README's Python example, run as a new user runs it: the package
installed with pip into a fresh virtual environment (offline, no build
isolation), run from the root of a checkout where ``make build`` put the
binaries in ``bin/``, with neither $STREAMSAMPLER_BIN nor a
``streamsampler`` on PATH, on the bundled email-Eu-core graph packed by
chunkify as the README's first step does."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from .test_live import REPO, build_tools

EMAIL_NODES = 1005  # testdata/README.md


def readme_python_example(i=0):
    """The README's i-th Python code block after "From Python" (0: the
    loader, 1: minibatches with their features)."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    _, found, rest = text.partition("From Python")
    if not found:
        raise AssertionError("README.md has no 'From Python' section")
    blocks = re.findall(r"```python\n(.*?)```", rest, re.S)
    if len(blocks) <= i:
        raise AssertionError("README.md's 'From Python' section has %d python code blocks, not %d" % (len(blocks), i + 1))
    return blocks[i]


def has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def user_environment(venv):
    """The environment of a user who activated ``venv``: no PYTHONPATH (the
    test runner's points at the source tree), no $STREAMSAMPLER_BIN, and
    no directory on PATH that holds a streamsampler executable."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "STREAMSAMPLER_BIN", "STREAMSAMPLER_CHUNKIFY")}
    path = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and not os.access(os.path.join(d, "streamsampler"), os.X_OK)]
    env["PATH"] = os.pathsep.join([os.path.join(venv, "bin")] + path)
    env["VIRTUAL_ENV"] = venv
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class InstalledReadmeExample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not has_module("ensurepip"):
            raise unittest.SkipTest("python3 -m venv needs ensurepip (Debian: python3-venv; scripts/deps.sh installs it)")
        if not has_module("wheel"):
            raise unittest.SkipTest("pip install --no-build-isolation needs wheel (Debian: python3-wheel; "
                                    "scripts/deps.sh installs it)")
        cls.tmp = tempfile.mkdtemp(prefix="ss-install-")
        try:
            cls._set_up()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def _set_up(cls):
        # A checkout as `make build` leaves it: go.mod at the root (how
        # the package recognises a checkout) and the binaries in bin/.
        cls.checkout = os.path.join(cls.tmp, "checkout")
        os.makedirs(os.path.join(cls.checkout, "bin"))
        shutil.copy(os.path.join(REPO, "go.mod"), cls.checkout)
        _, chunkify = build_tools(os.path.join(cls.checkout, "bin"))
        # The README's step 1, and a training set.
        subprocess.run([chunkify, "build", os.path.join(REPO, "testdata", "email-Eu-core.txt.gz"),
                        "-o", os.path.join(cls.checkout, "graph"), "--symmetrize"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.train = np.arange(0, EMAIL_NODES, 2)
        np.save(os.path.join(cls.checkout, "train.npy"), cls.train)
        # The README's feature store (`chunkify features`), from generated
        # features and labels.
        cls.feat, cls.labels = os.path.join(cls.tmp, "feat.npy"), os.path.join(cls.tmp, "labels.npy")
        graph = os.path.join(cls.checkout, "graph")
        for args in (["generate", "features", "--graph", graph, "--dim", "8", "--classes", "5",
                      "--labels", cls.labels, "-o", cls.feat, "-q"],
                     ["features", cls.feat, "--labels", cls.labels, "-o", graph, "-q"]):
            subprocess.run([chunkify] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # A copy of python/, so that pip's in-tree build leaves the
        # checkout clean.
        src = os.path.join(cls.tmp, "python")
        shutil.copytree(os.path.join(REPO, "python"), src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", "results"))
        cls.venv = os.path.join(cls.tmp, "venv")
        cls.env = user_environment(cls.venv)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", cls.venv], check=True,
                       env=cls.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        cls.python = os.path.join(cls.venv, "bin", "python")
        r = subprocess.run([cls.python, "-m", "pip", "install", "--no-index", "--no-build-isolation", src],
                           env=cls.env, cwd=cls.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise AssertionError("pip install failed:\n" + r.stdout.decode("utf-8", "replace")[-3000:])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_installed(self, code, cwd):
        """Run ``code`` with the venv's python; returns its stdout."""
        r = subprocess.run([self.python, "-c", code], env=self.env, cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace")[-3000:])
        return r.stdout.decode()

    def test_readme_example(self):
        example = readme_python_example()
        # The loop body of the README is `...`: record the minibatches.
        body, n = re.subn(r"(?m)^(\s+)\.\.\.\s*$", r"\1seen.append(data)", example)
        self.assertEqual(n, 1, "the README example's loop body:\n" + example)
        with_torch = has_module("torch") and has_module("torch_geometric")
        if not with_torch:
            # The same index arrays without torch (pyg_arrays is what
            # to_pyg wraps in tensors).
            body = body.replace("to_pyg", "pyg_arrays")
        script = "\n".join([
            "import json",
            "seen = []",
            body,
            "def arrays(d):",
            "    if isinstance(d, dict):",
            "        return d['n_id'].tolist(), d['edge_index'].tolist(), d['batch_size']",
            "    return d.n_id.tolist(), d.edge_index.tolist(), d.batch_size",
            "import streamsampler as installed",
            "print(json.dumps({'file': installed.__file__, 'batches': [arrays(d) for d in seen]}))",
        ])
        out = json.loads(self.run_installed(script, cwd=self.checkout).splitlines()[-1])
        self.assertTrue(out["file"].startswith(self.venv + os.sep), "ran %s, not the installed package" % out["file"])
        seeds = []
        for n_id, edge_index, batch_size in out["batches"]:
            seeds += n_id[:batch_size]
            self.assertEqual(len(edge_index), 2)
            self.assertGreater(len(edge_index[0]), 0)
            self.assertLess(max(max(edge_index[0]), max(edge_index[1])), len(n_id))
            self.assertEqual(len(set(n_id)), len(n_id))
        # One epoch: every training node once (world size 1 drops none).
        self.assertEqual(sorted(seeds), self.train.tolist())
        self.assertEqual(len(out["batches"]), -(-len(self.train) // 1024))

    def test_readme_features_example(self):
        """The README's second example: every minibatch arrives with the
        store's rows of its n_id (in shared memory) and its seeds' labels,
        and to_pyg attaches them."""
        example = readme_python_example(1)
        body, n = re.subn(r"(?m)^(\s+)\.\.\.\s*$",
                          r"\1seen.append((batch.n_id.tolist(), batch.x.tolist(), batch.y.tolist(), batch.seeds.tolist(), client._shared))",
                          example)
        self.assertEqual(n, 1, "the README example's loop body:\n" + example)
        if not (has_module("torch") and has_module("torch_geometric")):
            body = body.replace("to_pyg(batch)", "None")
        script = "\n".join(["import json", "seen = []", body, "print(json.dumps(seen))"])
        out = json.loads(self.run_installed(script, cwd=self.checkout).splitlines()[-1])
        x_all, y_all = np.load(self.feat), np.load(self.labels)
        seeds = []
        for n_id, x, y, s, shared in out:
            self.assertTrue(shared, "the rows came through the socket")
            np.testing.assert_array_equal(np.array(x, np.float32), x_all[n_id])
            np.testing.assert_array_equal(y, y_all[s])
            seeds += s
        self.assertEqual(sorted(seeds), self.train.tolist())

    def test_found_from_a_subdirectory(self):
        """The checkout is found from below its root too, and the binary
        is the checkout's."""
        sub = os.path.join(self.checkout, "runs", "today")
        os.makedirs(sub, exist_ok=True)
        out = self.run_installed("import streamsampler; print(streamsampler.find_binary())", cwd=sub)
        self.assertEqual(out.strip(), os.path.join(self.checkout, "bin", "streamsampler"))

    def test_not_found_names_the_places_searched(self):
        out = self.run_installed(
            "import streamsampler\n"
            "try:\n"
            "    streamsampler.find_binary()\n"
            "except FileNotFoundError as e:\n"
            "    print(e)\n", cwd=self.tmp)
        for place in ("binary=", "$STREAMSAMPLER_BIN", "'streamsampler' on PATH",
                      "no streamsampler checkout", self.tmp):
            self.assertIn(place, out)


if __name__ == "__main__":
    unittest.main()
