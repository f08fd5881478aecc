"""Models whose sampling a streamsampler server does, as PyG's
``torch_geometric.nn`` has them: ``Node2Vec`` (made on first use; it
subclasses PyG's, and this package imports without torch)."""

from __future__ import annotations

from typing import Any

from .node2vec import node2vec_class

__all__ = ["node2vec_class"]  # and Node2Vec, made on first use (not in __all__: a star import needs no torch)


def __getattr__(name: str) -> Any:
    """``Node2Vec``, made on first use (see :func:`node2vec_class`)."""
    if name == "Node2Vec":
        return node2vec_class()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
