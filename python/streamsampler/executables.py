"""Finding the Go executables the package runs (``streamsampler``,
``chunkify``).

``pip install ./python`` builds both from the enclosing checkout into the
package (``streamsampler/_bin/``, python/setup.py), so an installed
package runs from any directory. The search is, in order:

1. the explicit argument (``binary=``, ``chunkify=``);
2. an environment variable (``$STREAMSAMPLER_BIN``,
   ``$STREAMSAMPLER_CHUNKIFY``);
3. the executable installed with the package (:func:`bundled_dir`);
4. the executable's name on ``PATH``;
5. ``bin/NAME`` of a streamsampler checkout (a directory whose ``go.mod``
   declares the module :data:`MODULE`, where ``make build`` writes
   ``bin/``): the checkout this package was imported from, when it runs
   from its source tree (``PYTHONPATH=python``, which bundles nothing),
   then the nearest checkout at or above the current directory.

A path given by the argument or the environment variable must be an
executable file: a wrong one is an error, not a reason to look elsewhere.
When nothing is found, the error lists every place searched.
"""

from __future__ import annotations

import os
import shutil
from typing import List, Optional, Set, Tuple

from .typing import PathArg

__all__ = ["BUNDLED", "MODULE", "bundled_dir", "find_binary", "find_checkout", "find_chunkify", "find_executable",
           "is_checkout"]

#: The Go module path that marks a streamsampler checkout's go.mod.
MODULE = "github.com/streamsampler/streamsampler"

#: The package's folder of the executables ``pip install`` builds into it
#: (python/setup.py writes them there).
BUNDLED = "_bin"


def is_checkout(directory: PathArg) -> bool:
    """Whether ``directory`` holds a go.mod declaring :data:`MODULE`."""
    try:
        with open(os.path.join(directory, "go.mod"), encoding="utf-8") as f:
            for line in f:
                fields = line.split("//", 1)[0].split()
                if fields and fields[0] == "module":
                    return len(fields) == 2 and fields[1].strip('"`') == MODULE
    except (OSError, UnicodeDecodeError):
        return False
    return False


def find_checkout(start: Optional[PathArg] = None) -> Optional[str]:
    """The nearest streamsampler checkout at or above ``start`` (default:
    the current directory), or None."""
    d = os.path.abspath(os.getcwd() if start is None else os.fspath(start))
    while True:
        if is_checkout(d):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def bundled_dir() -> str:
    """Where an installed package keeps the executables built with it
    (``streamsampler/_bin``; absent in a source tree)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), BUNDLED)


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _package_checkout() -> Optional[str]:
    """The checkout holding this package when it is imported from its
    source tree (python/streamsampler/ of a checkout), else None."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return root if is_checkout(root) else None


def find_executable(name: str, env_var: str, explicit: Optional[PathArg] = None,
                    argument: str = "binary") -> str:
    """The absolute path of executable ``name``, searched as the module's
    docstring says. ``argument`` names the caller's parameter for the
    error messages. Raises FileNotFoundError naming every place searched."""
    if explicit is not None and os.fspath(explicit) != "":
        p = os.fspath(explicit)
        if _is_executable(p):
            return os.path.abspath(p)
        raise FileNotFoundError("%s executable %r (from %s=) does not exist or is not executable"
                                % (name, p, argument))
    from_env = os.environ.get(env_var)
    if from_env:
        if _is_executable(from_env):
            return os.path.abspath(from_env)
        raise FileNotFoundError("$%s=%r is not an executable file" % (env_var, from_env))
    searched = ["%s= (not given)" % argument, "$%s (not set)" % env_var]
    bundled = os.path.join(bundled_dir(), name)
    if _is_executable(bundled):
        return bundled
    searched.append("%s (installed with the package by `pip install ./python`)" % bundled)
    on_path = shutil.which(name)
    if on_path:
        return os.path.abspath(on_path)
    searched.append("%r on PATH" % name)
    cwd = os.getcwd()
    candidates = ((_package_checkout(), "the checkout this package runs from"),
                  (find_checkout(cwd), "the checkout at or above %s" % cwd))
    checkouts: List[Tuple[str, str]] = [(c, why) for c, why in candidates if c is not None]
    seen: Set[str] = set()
    for root, why in checkouts:
        if root in seen:
            continue
        seen.add(root)
        p = os.path.join(root, "bin", name)
        if _is_executable(p):
            return p
        searched.append("%s (%s; `make build` there writes it)" % (p, why))
    if not any(why.startswith("the checkout at") for _, why in checkouts):
        searched.append("no streamsampler checkout (a go.mod of module %s) at or above %s" % (MODULE, cwd))
    raise FileNotFoundError(
        "%s executable not found; searched: %s. Pass %s=, set $%s, install the package with "
        "`pip install ./python` (which builds it), put %s on PATH, or run from inside a checkout after "
        "`make build`" % (
            name, "; ".join(searched), argument, env_var, name))


def find_binary(binary: Optional[PathArg] = None) -> str:
    """The streamsampler executable: ``binary``, else $STREAMSAMPLER_BIN,
    else the one installed with the package (``pip install`` builds it),
    else ``streamsampler`` on PATH, else ``bin/streamsampler`` of the
    checkout this package runs from or of the nearest checkout at or above
    the current directory (see the module's doc). Raises
    FileNotFoundError naming every place searched."""
    return find_executable("streamsampler", "STREAMSAMPLER_BIN", binary, argument="binary")


def find_chunkify(binary: Optional[PathArg] = None) -> str:
    """The chunkify executable: ``binary``, $STREAMSAMPLER_CHUNKIFY, the
    one installed with the package, ``chunkify`` on PATH, else
    ``bin/chunkify`` of the checkout this package runs from or of the
    nearest checkout at or above the current directory (see the module's
    doc)."""
    return find_executable("chunkify", "STREAMSAMPLER_CHUNKIFY", binary, argument="chunkify")
