"""The optional dependencies (torch, torch_geometric, dgl), imported only
by the functions that need them."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, needed_by: str, needs: str, instead: str) -> ModuleType:
    """Import ``module`` for ``needed_by``, or raise an ImportError that
    says what ``needed_by`` needs and which numpy-only function gives the
    same arrays without it (``instead``)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        # The same class (ModuleNotFoundError for a missing module), a
        # message that says what to do.
        raise type(e)(
            "%s needs %s; importing %s failed: %s. %s(batch) gives the same index arrays as "
            "numpy, without them" % (needed_by, needs, e.name or module, e, instead),
            name=e.name) from e
