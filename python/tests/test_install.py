"""The README's Python example, run as a new user runs it: the package
installed with pip into a fresh virtual environment (offline, no build
isolation, as the README says), which builds the Go executables into the
package; then run from a working directory outside any checkout, with
neither $STREAMSAMPLER_BIN nor a ``streamsampler`` on PATH, on the
bundled email-Eu-core graph packed by the installed ``chunkify`` as the
README's first step does. Also python/setup.py's build step on its own:
what it says when it cannot build."""

import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

from streamsampler.executables import find_checkout

from .test_live import REPO

EMAIL_NODES = 1005  # testdata/README.md
SETUP = os.path.join(REPO, "python", "setup.py")


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
        raise AssertionError("README.md's 'From Python' section has %d python code blocks, not %d"
                             % (len(blocks), i + 1))
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
           if k not in ("PYTHONPATH", "PYTHONHOME", "STREAMSAMPLER_BIN", "STREAMSAMPLER_CHUNKIFY",
                        "STREAMSAMPLER_BUNDLE")}
    path = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and not os.access(os.path.join(d, "streamsampler"), os.X_OK)
            and not os.access(os.path.join(d, "chunkify"), os.X_OK)]
    env["PATH"] = os.pathsep.join([os.path.join(venv, "bin")] + path)
    env["VIRTUAL_ENV"] = venv
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def source_checkout(dest):
    """A checkout at ``dest`` to install from, as a user's is: this one's
    Go sources (linked, not copied) and a copy of python/ (so that pip's
    in-tree build leaves this checkout clean)."""
    os.makedirs(dest)
    for name in os.listdir(REPO):
        if name in ("python", ".git", "bin", "out"):
            continue
        os.symlink(os.path.join(REPO, name), os.path.join(dest, name))
    shutil.copytree(os.path.join(REPO, "python"), os.path.join(dest, "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", "results",
                                                  ".mypy_cache", "_bin"))
    return os.path.join(dest, "python")


class InstalledReadmeExample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not has_module("ensurepip"):
            raise unittest.SkipTest("python3 -m venv needs ensurepip (Debian: python3-venv; scripts/deps.sh installs it)")
        if not has_module("wheel"):
            raise unittest.SkipTest("pip install --no-build-isolation needs wheel (Debian: python3-wheel; "
                                    "scripts/deps.sh installs it)")
        if shutil.which("go") is None and not os.environ.get("GO"):
            raise unittest.SkipTest("go not on PATH: pip install ./python builds the package's executables "
                                    "with Go")
        cls.tmp = os.path.realpath(tempfile.mkdtemp(prefix="ss-install-"))
        try:
            cls._set_up()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def _set_up(cls):
        # pip install ./python from a checkout, into a fresh venv.
        src = source_checkout(os.path.join(cls.tmp, "checkout"))
        cls.venv = os.path.join(cls.tmp, "venv")
        cls.env = user_environment(cls.venv)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", cls.venv], check=True,
                       env=cls.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        cls.python = os.path.join(cls.venv, "bin", "python")
        r = subprocess.run([cls.python, "-m", "pip", "install", "--no-index", "--no-build-isolation", src],
                           env=cls.env, cwd=cls.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise AssertionError("pip install failed:\n" + r.stdout.decode("utf-8", "replace")[-3000:])
        # The installed package's folder, from outside any checkout.
        cls.work = os.path.join(cls.tmp, "work")
        os.makedirs(cls.work)
        if find_checkout(cls.work) is not None:
            raise unittest.SkipTest("%s is inside a streamsampler checkout (%s): the test needs a directory "
                                    "outside one" % (cls.work, find_checkout(cls.work)))
        cls.package = os.path.dirname(cls._run(
            "import streamsampler; print(streamsampler.__file__)", cls.work).strip())
        chunkify = cls._run("from streamsampler.executables import find_chunkify; print(find_chunkify())",
                            cls.work).strip()
        if chunkify != os.path.join(cls.package, "_bin", "chunkify"):
            raise AssertionError("the installed package's chunkify is %s, not its own" % chunkify)
        # The README's step 1 (with the chunkify the package brought), and
        # a training set, in the working directory.
        graph = os.path.join(cls.work, "graph")
        subprocess.run([chunkify, "build", os.path.join(REPO, "testdata", "email-Eu-core.txt.gz"),
                        "-o", graph, "--symmetrize"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        cls.train = np.arange(0, EMAIL_NODES, 2)
        np.save(os.path.join(cls.work, "train.npy"), cls.train)
        # The README's feature store (`chunkify features`), from generated
        # features and labels.
        cls.feat, cls.labels = os.path.join(cls.tmp, "feat.npy"), os.path.join(cls.tmp, "labels.npy")
        for args in (["generate", "features", "--graph", graph, "--dim", "8", "--classes", "5",
                      "--labels", cls.labels, "-o", cls.feat, "-q"],
                     ["features", cls.feat, "--labels", cls.labels, "-o", graph, "-q"]):
            subprocess.run([chunkify] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def _run(cls, code, cwd, env=None):
        r = subprocess.run([cls.python, "-c", code], env=env or cls.env, cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise AssertionError("the installed package failed:\n" + r.stderr.decode("utf-8", "replace")[-3000:])
        return r.stdout.decode()

    def run_installed(self, code, cwd=None, env=None):
        """Run ``code`` with the venv's python (in the working directory
        outside any checkout, by default); returns its stdout."""
        return self._run(code, cwd or self.work, env)

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
            "print(json.dumps({'file': installed.__file__, 'binary': srv.binary,",
            "                  'batches': [arrays(d) for d in seen]}))",
        ])
        out = json.loads(self.run_installed(script).splitlines()[-1])
        self.assertTrue(out["file"].startswith(self.venv + os.sep), "ran %s, not the installed package" % out["file"])
        self.assertEqual(out["binary"], os.path.join(self.package, "_bin", "streamsampler"))
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
                          r"\1seen.append((batch.n_id.tolist(), batch.x.tolist(), batch.y.tolist(), "
                          r"batch.seeds.tolist(), client._shared))",
                          example)
        self.assertEqual(n, 1, "the README example's loop body:\n" + example)
        if not (has_module("torch") and has_module("torch_geometric")):
            body = body.replace("to_pyg(batch)", "None")
        script = "\n".join(["import json", "seen = []", body, "print(json.dumps(seen))"])
        out = json.loads(self.run_installed(script).splitlines()[-1])
        x_all, y_all = np.load(self.feat), np.load(self.labels)
        seeds = []
        for n_id, x, y, s, shared in out:
            self.assertTrue(shared, "the rows came through the socket")
            np.testing.assert_array_equal(np.array(x, np.float32), x_all[n_id])
            np.testing.assert_array_equal(y, y_all[s])
            seeds += s
        self.assertEqual(sorted(seeds), self.train.tolist())

    def test_installed_executables_come_first(self):
        """The executables built into the package are found before PATH and
        a checkout's bin/ (here: run from inside a checkout whose bin/ has
        both); $STREAMSAMPLER_BIN still names another. The wheel is for
        this platform."""
        code = ("import streamsampler\n"
                "from streamsampler.executables import find_chunkify\n"
                "print(streamsampler.find_binary()); print(find_chunkify())\n")
        bundled = [os.path.join(self.package, "_bin", n) for n in ("streamsampler", "chunkify")]
        for p in bundled:
            self.assertTrue(os.access(p, os.X_OK), p)
        self.assertEqual(self.run_installed(code).split(), bundled)
        other = os.path.join(self.tmp, "other-checkout")
        os.makedirs(os.path.join(other, "bin"), exist_ok=True)
        shutil.copy(os.path.join(REPO, "go.mod"), other)
        stubs = []
        for n in ("streamsampler", "chunkify"):
            stub = os.path.join(other, "bin", n)
            with open(stub, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(stub, os.stat(stub).st_mode | stat.S_IXUSR)
            stubs.append(stub)
        env = dict(self.env, PATH=os.path.join(other, "bin") + os.pathsep + self.env["PATH"])
        self.assertEqual(self.run_installed(code, cwd=other, env=env).split(), bundled)
        env = dict(self.env, STREAMSAMPLER_BIN=stubs[0])
        self.assertEqual(self.run_installed(code, cwd=other, env=env).split(), [stubs[0], bundled[1]])
        info = [d for d in os.listdir(os.path.dirname(self.package)) if d.startswith("streamsampler-")
                and d.endswith(".dist-info")]
        self.assertEqual(len(info), 1, info)
        with open(os.path.join(os.path.dirname(self.package), info[0], "WHEEL")) as f:
            wheel = f.read()
        self.assertIn("Root-Is-Purelib: false", wheel)
        self.assertRegex(wheel, r"Tag: py3-none-linux_")

    def test_not_found_names_the_places_searched(self):
        """Without its executables (as a package installed with
        STREAMSAMPLER_BUNDLE=0), outside a checkout, the error names every
        place searched."""
        out = self.run_installed(
            "import streamsampler\n"
            "from streamsampler import executables\n"
            "executables.bundled_dir = lambda: %r\n"
            "try:\n"
            "    streamsampler.find_binary()\n"
            "except FileNotFoundError as e:\n"
            "    print(e)\n" % os.path.join(self.tmp, "no-bin"))
        for place in ("binary=", "$STREAMSAMPLER_BIN", "'streamsampler' on PATH",
                      "no streamsampler checkout", self.work, os.path.join(self.tmp, "no-bin", "streamsampler")):
            self.assertIn(place, out)


class BuildStep(unittest.TestCase):
    """python/setup.py's build step, without pip: where it builds from, and
    the errors that say what is missing."""

    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("streamsampler_setup", SETUP)
        cls.setup = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.setup)  # not __main__: setup() does not run

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ss-setup-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_checkout(self):
        self.assertEqual(self.setup.checkout_root(os.path.join(REPO, "python")), REPO)
        with self.assertRaises(self.setup.GoBuildError) as cm:
            self.setup.checkout_root(os.path.join(self.tmp, "python"))
        for words in ("not inside a streamsampler checkout", "go.mod", "STREAMSAMPLER_BUNDLE=0"):
            self.assertIn(words, str(cm.exception))

    def test_no_go(self):
        with self.assertRaises(self.setup.GoBuildError) as cm:
            self.setup.find_go({"PATH": self.tmp})
        for words in ("Go not found", "no `go` on PATH", "$GO", "STREAMSAMPLER_BUNDLE=0", "$STREAMSAMPLER_BIN"):
            self.assertIn(words, str(cm.exception))
        with self.assertRaises(self.setup.GoBuildError) as cm:
            self.setup.find_go({"PATH": self.tmp, "GO": os.path.join(self.tmp, "go")})
        self.assertIn("$GO=", str(cm.exception))
        go = shutil.which("go")
        if go is not None:
            self.assertEqual(self.setup.find_go({"PATH": os.path.dirname(go)}), go)
            self.assertEqual(self.setup.find_go({"PATH": self.tmp, "GO": go}), go)

    def test_bundle_switch(self):
        for value, want in (("0", False), ("no", False), ("1", True), ("", True)):
            with mock.patch.dict(os.environ, {"STREAMSAMPLER_BUNDLE": value}):
                self.assertEqual(self.setup.bundling(), want, value)


if __name__ == "__main__":
    unittest.main()
