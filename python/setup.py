"""The package's build step that pyproject.toml cannot say: ``pip install
./python`` builds the Go executables the package runs (``streamsampler``,
``chunkify``) from the enclosing checkout into ``streamsampler/_bin/``,
so that an installed package starts its servers from any directory
(streamsampler.executables looks there after ``$STREAMSAMPLER_BIN``).

Needs Go (``go`` on PATH, or ``$GO``) and the checkout this python/ folder
is in. ``STREAMSAMPLER_BUNDLE=0`` installs without the executables (then
``$STREAMSAMPLER_BIN`` / ``$STREAMSAMPLER_CHUNKIFY`` or PATH must provide
them). Everything else (metadata, packages) is in pyproject.toml.

This file does not import the package (it is built, not run).
"""

import os
import shutil
import subprocess
from typing import List, Mapping, Optional, Tuple

from setuptools import setup
from setuptools.command.build_py import build_py

#: The Go module path a streamsampler checkout's go.mod declares.
MODULE = "github.com/streamsampler/streamsampler"
#: The executables built into the package, each from ./cmd/NAME.
COMMANDS = ("streamsampler", "chunkify")
#: Where they go in the package (streamsampler.executables.BUNDLED).
BUNDLED = os.path.join("streamsampler", "_bin")
#: Set to 0 to install without them.
BUNDLE_ENV = "STREAMSAMPLER_BUNDLE"

HERE = os.path.dirname(os.path.abspath(__file__))


class GoBuildError(RuntimeError):
    """The Go executables could not be built; the message says why and
    what to do."""


def _without() -> str:
    return ("; or install without them with %s=0 (then point $STREAMSAMPLER_BIN and "
            "$STREAMSAMPLER_CHUNKIFY at executables built elsewhere, or put them on PATH)" % BUNDLE_ENV)


def is_checkout(directory: str) -> bool:
    """Whether ``directory`` holds a go.mod declaring :data:`MODULE` (as
    streamsampler.executables.is_checkout)."""
    try:
        with open(os.path.join(directory, "go.mod"), encoding="utf-8") as f:
            for line in f:
                fields = line.split("//", 1)[0].split()
                if fields and fields[0] == "module":
                    return len(fields) == 2 and fields[1].strip('"`') == MODULE
    except (OSError, UnicodeDecodeError):
        return False
    return False


def checkout_root(python_dir: str = HERE) -> str:
    """The checkout whose python/ folder is ``python_dir``: its parent,
    which must hold the go.mod of :data:`MODULE`."""
    root = os.path.dirname(os.path.abspath(python_dir))
    if not is_checkout(root):
        raise GoBuildError(
            "building the streamsampler package needs the Go sources it bundles, and %s is not inside a "
            "streamsampler checkout (no go.mod of module %s in %s): install from python/ of a checkout "
            "(pip install --no-build-isolation ./python)%s" % (python_dir, MODULE, root, _without()))
    return root


def find_go(environ: Optional[Mapping[str, str]] = None) -> str:
    """The go command: ``$GO``, else ``go`` on PATH (of ``environ``,
    default the process's environment)."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    go = env.get("GO")
    if go:
        path = go if os.sep in go else shutil.which(go, path=env.get("PATH"))
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise GoBuildError("$GO=%r is not an executable go command%s" % (go, _without()))
    path = shutil.which("go", path=env.get("PATH"))
    if path is None:
        raise GoBuildError(
            "Go not found: installing the streamsampler package builds its executables (streamsampler, "
            "chunkify) with Go >= 1.26 (go.mod), and there is no `go` on PATH. Install Go "
            "(https://go.dev/doc/install) or set $GO to its go command%s" % _without())
    return path


def build_executables(out_dir: str, root: Optional[str] = None, go: Optional[str] = None) -> List[str]:
    """``go build -trimpath`` of ./cmd/NAME for each of :data:`COMMANDS`
    into ``out_dir``; returns their paths."""
    root = checkout_root() if root is None else root
    go = find_go() if go is None else go
    out_dir = os.path.abspath(out_dir)  # go runs in the checkout
    os.makedirs(out_dir, exist_ok=True)
    cmd = [go, "build", "-trimpath", "-o", out_dir + os.sep] + ["./cmd/%s" % c for c in COMMANDS]
    r = subprocess.run(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise GoBuildError("`%s` in %s failed (exit %d):\n%s" % (
            " ".join(cmd), root, r.returncode, r.stdout.decode("utf-8", "replace")[-4000:]))
    paths = [os.path.join(out_dir, c) for c in COMMANDS]
    for p in paths:
        if not os.access(p, os.X_OK):
            raise GoBuildError("`%s` left no executable %s" % (" ".join(cmd), p))
    return paths


def bundling() -> bool:
    """Whether to build the executables into the package (not with
    ``STREAMSAMPLER_BUNDLE=0``)."""
    return os.environ.get(BUNDLE_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


class BuildPyWithGo(build_py):  # type: ignore[misc]
    """build_py, then the Go executables into the package's _bin/ (in the
    source tree for an editable install, whose package is the source)."""

    def run(self) -> None:
        super().run()
        self._bundled: List[str] = []
        if not bundling():
            self.announce("%s=0: the package is installed without its executables" % BUNDLE_ENV, level=3)
            return
        base = HERE if getattr(self, "editable_mode", False) else self.build_lib
        self.announce("building %s with Go into %s" % (", ".join(COMMANDS), os.path.join(base, BUNDLED)), level=3)
        self._bundled = build_executables(os.path.join(base, BUNDLED))

    def get_outputs(self, include_bytecode: bool = True) -> List[str]:
        return list(super().get_outputs(include_bytecode)) + list(getattr(self, "_bundled", []))


cmdclass = {"build_py": BuildPyWithGo}

try:
    from wheel.bdist_wheel import bdist_wheel

    class BdistWheel(bdist_wheel):  # type: ignore[misc]
        """A wheel for this platform (it carries executables), for any
        Python 3: py3-none-PLATFORM."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self) -> Tuple[str, str, str]:
            plat: str = super().get_tag()[2]
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = BdistWheel
except ImportError:  # no wheel: pip builds none either
    pass


if __name__ == "__main__":
    setup(cmdclass=cmdclass)
