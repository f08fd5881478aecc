"""Shared-rows buffers (docs/PROTOCOL.md, ``map_rows``): the memory a
server with ``--features`` writes a minibatch's feature rows into and the
client maps, so that no row crosses the socket.

Each buffer starts with an 8-byte lease word: the server sets it when it
hands a buffer's rows out and writes a later minibatch there only once the
client has cleared it. :class:`SharedBuffers` clears it when the last
array viewing the rows (a torch tensor from ``torch.from_numpy``
included) is gone.
"""

from __future__ import annotations

import mmap
import os
import struct
import weakref
from typing import Any, Dict, Optional

import numpy as np
import numpy.typing as npt

from .protocol import NO_BUFFER, ProtocolError

__all__ = ["SharedBuffers", "populate_read"]

_MADV_POPULATE_READ = 22  # Linux 5.14; not in the mmap module of Python 3.11
_populate_ok = hasattr(mmap.mmap, "madvise")


def populate_read(mm: mmap.mmap) -> None:
    """Maps every page of mm in one call (MADV_POPULATE_READ) instead of
    one page fault per 4 KiB as numpy first reads them. Older kernels
    refuse: then the faults happen as before."""
    global _populate_ok
    if not _populate_ok:
        return
    try:
        mm.madvise(_MADV_POPULATE_READ)
    except OSError:
        _populate_ok = False


class SharedBuffers:
    """The client's side of a connection's shared-rows buffers
    (docs/PROTOCOL.md): each buffer's memory file is mapped once, from the
    reply that brings its descriptor, and unmapped when a reply retires it.
    A reply's ``x`` is a view of its buffer; when the last reference to it
    (or to any view of it, a torch tensor from ``torch.from_numpy``
    included) is gone, the buffer's lease word is cleared and the server
    may write the rows of a later minibatch there. Until then the rows
    stay as they are: hold ``x`` as long as you like."""

    def __init__(self) -> None:
        self._maps: Dict[int, mmap.mmap] = {}

    @property
    def mapped(self) -> list[int]:
        """The buffers mapped now, in ascending order."""
        return sorted(self._maps)

    def view(self, buf: int, offset: int, retire: int, fd: Optional[int], dt: np.dtype[Any],
             rows: int, dim: int) -> npt.NDArray[Any]:
        """``x`` of one reply: ``rows × dim`` elements of ``dt`` at byte
        ``offset`` of buffer ``buf``. ``fd``, where the reply brought one,
        is buffer ``buf``'s memory file (mapped, then closed); ``retire``
        names a buffer to unmap (NO_BUFFER: none)."""
        try:
            if fd is not None:
                if buf in self._maps:
                    raise ProtocolError("shared buffer %d sent twice" % buf)
                size = os.fstat(fd).st_size
                mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
                populate_read(mm)
                self._maps[buf] = mm
        finally:
            if fd is not None:
                os.close(fd)
        if retire != NO_BUFFER:
            old = self._maps.pop(retire, None)
            if old is None:
                raise ProtocolError("retired shared buffer %d unknown" % retire)
            try:
                old.close()
            except BufferError:
                pass  # a view is still alive: the mapping goes with it
        cur = self._maps.get(buf)
        if cur is None:
            raise ProtocolError("shared buffer %d never sent" % buf)
        n = rows * dim * dt.itemsize
        if offset < 8 or offset + n > len(cur):
            raise ProtocolError("x of %d bytes at byte %d of a shared buffer of %d" % (n, offset, len(cur)))
        base = np.frombuffer(cur, dtype=dt, count=rows * dim, offset=offset)
        # Views of base keep base alive (numpy stops collapsing bases at
        # an array whose base is not an array), so base dies last.
        weakref.finalize(base, _release, cur)
        return base.reshape(rows, dim)

    def close(self) -> None:
        """Unmap every buffer no array views any more (the others go with
        their last view)."""
        for mm in self._maps.values():
            try:
                mm.close()
            except BufferError:
                pass
        self._maps.clear()


def _release(mm: mmap.mmap) -> None:
    """Clears a shared buffer's lease word: the server may reuse it."""
    if not mm.closed:
        struct.pack_into("<Q", mm, 0, 0)
