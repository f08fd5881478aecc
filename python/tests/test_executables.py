"""Where the package looks for the Go executables, in order, and what it
says when they are nowhere."""

import os
import shutil
import stat
import tempfile
import unittest
from unittest import mock

from streamsampler import executables as X
from streamsampler import find_binary
from streamsampler.datasets import find_chunkify  # also streamsampler.executables.find_chunkify

# Before any test replaces it.
REAL_PACKAGE_CHECKOUT = X._package_checkout
REAL_BUNDLED_DIR = X.bundled_dir

GO_MOD = "// a comment first\nmodule github.com/streamsampler/streamsampler\n\ngo 1.26\n"


def make_executable(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class FindExecutable(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="ss-exe-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        old = os.getcwd()
        self.addCleanup(os.chdir, old)
        # A bare environment: no variable, an empty PATH directory, and
        # no checkout holding the package (the tests run from one).
        self.path_dir = os.path.join(self.tmp, "path")
        os.makedirs(self.path_dir)
        env = {k: v for k, v in os.environ.items() if k not in ("STREAMSAMPLER_BIN", "STREAMSAMPLER_CHUNKIFY")}
        env["PATH"] = self.path_dir
        patcher = mock.patch.dict(os.environ, env, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        patcher = mock.patch.object(X, "_package_checkout", return_value=None)
        patcher.start()
        self.addCleanup(patcher.stop)
        # No executables installed with the package (a source tree has
        # none; an editable install might).
        self.bundled = os.path.join(self.tmp, "site-packages", "streamsampler", "_bin")
        patcher = mock.patch.object(X, "bundled_dir", return_value=self.bundled)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.outside = os.path.join(self.tmp, "outside")
        os.makedirs(self.outside)
        os.chdir(self.outside)

    def checkout(self, with_bin=True, go_mod=GO_MOD):
        root = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(root, "deep", "er"), exist_ok=True)
        with open(os.path.join(root, "go.mod"), "w") as f:
            f.write(go_mod)
        if with_bin:
            make_executable(os.path.join(root, "bin", "streamsampler"))
            make_executable(os.path.join(root, "bin", "chunkify"))
        return root

    def test_order(self):
        """The argument, then the variable, then the executables installed
        with the package, then PATH, then the checkout."""
        root = self.checkout()
        os.chdir(os.path.join(root, "deep", "er"))
        self.assertEqual(find_binary(), os.path.join(root, "bin", "streamsampler"))
        self.assertEqual(find_chunkify(), os.path.join(root, "bin", "chunkify"))
        on_path = make_executable(os.path.join(self.path_dir, "streamsampler"))
        self.assertEqual(find_binary(), on_path)
        bundled = make_executable(os.path.join(self.bundled, "streamsampler"))
        make_executable(os.path.join(self.bundled, "chunkify"))
        self.assertEqual(find_binary(), bundled)
        self.assertEqual(find_chunkify(), os.path.join(self.bundled, "chunkify"))
        env = make_executable(os.path.join(self.tmp, "env", "streamsampler"))
        os.environ["STREAMSAMPLER_BIN"] = env
        self.assertEqual(find_binary(), env)
        arg = make_executable(os.path.join(self.tmp, "arg", "streamsampler"))
        self.assertEqual(find_binary(arg), arg)

    def test_package_checkout_before_cwd(self):
        pkg = self.checkout()
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        shutil.copy(os.path.join(pkg, "go.mod"), other)
        make_executable(os.path.join(other, "bin", "streamsampler"))
        os.chdir(other)
        self.assertEqual(find_binary(), os.path.join(other, "bin", "streamsampler"))
        with mock.patch.object(X, "_package_checkout", return_value=pkg):
            self.assertEqual(find_binary(), os.path.join(pkg, "bin", "streamsampler"))

    def test_wrong_explicit_paths_are_errors(self):
        """A wrong argument or variable is reported, not skipped for
        whatever PATH holds."""
        make_executable(os.path.join(self.path_dir, "streamsampler"))
        missing = os.path.join(self.tmp, "nope")
        with self.assertRaises(FileNotFoundError) as cm:
            find_binary(missing)
        self.assertIn(missing, str(cm.exception))
        self.assertIn("binary=", str(cm.exception))
        with self.assertRaises(FileNotFoundError) as cm:
            find_chunkify(missing)
        self.assertIn("chunkify=", str(cm.exception))
        not_exec = os.path.join(self.tmp, "plain")
        open(not_exec, "w").close()
        os.environ["STREAMSAMPLER_BIN"] = not_exec
        with self.assertRaises(FileNotFoundError) as cm:
            find_binary()
        self.assertIn("$STREAMSAMPLER_BIN=%r" % not_exec, str(cm.exception))

    def test_nothing_found_lists_the_places(self):
        with self.assertRaises(FileNotFoundError) as cm:
            find_binary()
        msg = str(cm.exception)
        for place in ("binary= (not given)", "$STREAMSAMPLER_BIN (not set)", "'streamsampler' on PATH",
                      "no streamsampler checkout", self.outside, "make build",
                      os.path.join(self.bundled, "streamsampler"), "pip install ./python"):
            self.assertIn(place, msg)

    def test_checkout_without_build(self):
        root = self.checkout(with_bin=False)
        os.chdir(root)
        with self.assertRaises(FileNotFoundError) as cm:
            find_binary()
        msg = str(cm.exception)
        self.assertIn(os.path.join(root, "bin", "streamsampler"), msg)
        self.assertIn("`make build` there", msg)
        self.assertNotIn("no streamsampler checkout", msg)

    def test_other_modules_are_not_checkouts(self):
        for go_mod in ("module example.com/other\n", "module github.com/streamsampler/streamsampler/v2\n", ""):
            root = self.checkout(go_mod=go_mod)
            self.assertFalse(X.is_checkout(root), go_mod)
            self.assertIsNone(X.find_checkout(os.path.join(root, "deep")))
            os.chdir(root)
            with self.assertRaises(FileNotFoundError) as cm:
                find_binary()
            self.assertIn("no streamsampler checkout", str(cm.exception))
        self.checkout(go_mod='module "github.com/streamsampler/streamsampler"\n')
        self.assertEqual(X.find_checkout(os.path.join(self.tmp, "repo", "deep", "er")),
                         os.path.join(self.tmp, "repo"))

    def test_bundled_dir(self):
        """The executables installed with the package are in its _bin/."""
        self.assertEqual(REAL_BUNDLED_DIR(), os.path.join(os.path.dirname(os.path.abspath(X.__file__)), "_bin"))

    def test_source_tree_is_a_checkout(self):
        """Imported from python/ of this repository, the package finds the
        repository itself."""
        repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        if not X.__file__.startswith(os.path.join(repo, "python") + os.sep):
            self.skipTest("the package is not imported from this checkout's python/")
        self.assertTrue(X.is_checkout(repo))
        self.assertEqual(REAL_PACKAGE_CHECKOUT(), repo)


if __name__ == "__main__":
    unittest.main()
