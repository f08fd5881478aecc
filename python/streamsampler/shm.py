"""Shared-rows buffers (docs/PROTOCOL.md, ``map_rows``): the memory a
server with ``--features`` writes a minibatch's feature rows into and the
client maps, so that no row crosses the socket.

Each buffer starts with an 8-byte lease word: the server sets it when it
hands a buffer's rows out and writes a later minibatch there only once the
client has cleared it. :class:`SharedBuffers` clears it when the last
array viewing the rows (a torch tensor from ``torch.from_numpy``
included) is gone.

A :class:`Registrar` (the loaders' CUDA one, which page-locks memory with
``cudaHostRegister``) may be given every buffer as it is mapped
(:meth:`SharedBuffers.register_with`): then copies to the GPU read the
shared rows directly. A registered buffer is unregistered before it is
unmapped, and it is unmapped only once no array views it (nor, so, does
a copy that a caller keeps its view alive for).
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
import weakref
from typing import Any, Dict, List, Optional

import numpy as np
import numpy.typing as npt

from .protocol import NO_BUFFER, ProtocolError

__all__ = ["Registrar", "SharedBuffers", "populate_read"]

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


class Registrar:
    """What :meth:`SharedBuffers.register_with` takes: ``register(addr,
    size)`` page-locks ``size`` bytes at address ``addr`` for a device
    (True on success; False leaves the buffer as it is), and
    ``unregister(addr)`` undoes it, called before the memory is unmapped.
    This base class registers nothing."""

    def register(self, addr: int, size: int) -> bool:
        """Register the range; whether it was."""
        return False

    def unregister(self, addr: int) -> None:
        """Unregister the range at ``addr``."""


class _Mapping:
    """One mapped buffer: its mapping, how many arrays view it, whether
    the server retired it (or the client closed), the registrar that holds
    it registered, and whether a registration or the unmapping is under
    way (both run outside the buffers' lock: a registrar may hand its
    calls to another thread and wait for it)."""

    __slots__ = ("mm", "views", "retired", "registrar", "addr", "registering", "unmapping", "__weakref__")

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm = mm
        self.views = 0
        self.retired = False
        self.registrar: Optional[Registrar] = None
        self.addr = 0
        self.registering = False
        self.unmapping = False


class SharedBuffers:
    """The client's side of a connection's shared-rows buffers
    (docs/PROTOCOL.md): each buffer's memory file is mapped once, from the
    reply that brings its descriptor, and unmapped when a reply retires it.
    A reply's ``x`` is a view of its buffer; when the last reference to it
    (or to any view of it, a torch tensor from ``torch.from_numpy``
    included) is gone, the buffer's lease word is cleared and the server
    may write the rows of a later minibatch there. Until then the rows
    stay as they are: hold ``x`` as long as you like.

    Thread-safe: replies are decoded in one thread while the arrays die in
    any. The registrar is never called with the lock held."""

    def __init__(self) -> None:
        self._maps: Dict[int, _Mapping] = {}
        self._lock = threading.RLock()  # finalizers may run inside a locked section of the same thread
        self._registrar: Optional[Registrar] = None

    @property
    def mapped(self) -> List[int]:
        """The buffers mapped now, in ascending order."""
        with self._lock:
            return sorted(self._maps)

    @property
    def registered(self) -> List[int]:
        """The mapped buffers a registrar holds registered, in ascending
        order."""
        with self._lock:
            return sorted(b for b, m in self._maps.items() if m.registrar is not None)

    def register_with(self, registrar: Optional[Registrar]) -> None:
        """Give ``registrar`` every buffer mapped now and each one mapped
        later (None: later ones are not registered; those registered stay
        so until they are unmapped)."""
        with self._lock:
            self._registrar = registrar
            todo = list(self._maps.values()) if registrar is not None else []
        for m in todo:
            self._register(m, registrar)

    def _register(self, m: _Mapping, reg: Optional[Registrar]) -> None:
        """Register ``m`` with ``reg`` unless it is, or is going; an
        unmapping decided meanwhile is carried out here, after."""
        with self._lock:
            if reg is None or m.registrar is not None or m.registering or m.unmapping:
                return
            m.registering = True
        ok, addr = False, 0
        try:
            # The mapping's address; the temporary view is gone at once.
            addr = int(np.frombuffer(m.mm, dtype=np.uint8, count=1).__array_interface__["data"][0])
            ok = reg.register(addr, len(m.mm))
        finally:
            with self._lock:
                m.registering = False
                if ok:
                    m.registrar, m.addr = reg, addr
                late = m.unmapping  # decided while registering: left to this thread
        if late:
            _unmap(m)

    def view(self, buf: int, offset: int, retire: int, fd: Optional[int], dt: np.dtype[Any],
             rows: int, dim: int) -> npt.NDArray[Any]:
        """``x`` of one reply: ``rows × dim`` elements of ``dt`` at byte
        ``offset`` of buffer ``buf``. ``fd``, where the reply brought one,
        is buffer ``buf``'s memory file (mapped, then closed); ``retire``
        names a buffer to unmap (NO_BUFFER: none)."""
        new: Optional[_Mapping] = None
        old: Optional[_Mapping] = None
        with self._lock:
            try:
                if fd is not None:
                    if buf in self._maps:
                        raise ProtocolError("shared buffer %d sent twice" % buf)
                    size = os.fstat(fd).st_size
                    mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
                    populate_read(mm)
                    new = self._maps[buf] = _Mapping(mm)
            finally:
                if fd is not None:
                    os.close(fd)
            if retire != NO_BUFFER:
                old = self._maps.pop(retire, None)
                if old is None:
                    raise ProtocolError("retired shared buffer %d unknown" % retire)
                old.retired = True
                if not _unmap_now(old):
                    old = None  # a view is still alive: the mapping goes with the last one
            cur = self._maps.get(buf)
            if cur is None:
                raise ProtocolError("shared buffer %d never sent" % buf)
            n = rows * dim * dt.itemsize
            if offset < 8 or offset + n > len(cur.mm):
                raise ProtocolError("x of %d bytes at byte %d of a shared buffer of %d" % (n, offset, len(cur.mm)))
            base = np.frombuffer(cur.mm, dtype=dt, count=rows * dim, offset=offset)
            cur.views += 1
            reg = self._registrar
        # Views of base keep base alive (numpy stops collapsing bases at
        # an array whose base is not an array), so base dies last.
        weakref.finalize(base, _release, cur, self._lock)
        if old is not None:
            _unmap(old)
        if new is not None and reg is not None:
            self._register(new, reg)
        return base.reshape(rows, dim)

    def close(self) -> None:
        """Unmap every buffer no array views any more (the others go with
        their last view)."""
        with self._lock:
            now = []
            for m in self._maps.values():
                m.retired = True
                if _unmap_now(m):
                    now.append(m)
            self._maps.clear()
            self._registrar = None
        for m in now:
            _unmap(m)


def _unmap_now(m: _Mapping) -> bool:
    """With the buffers' lock held: whether the caller unmaps ``m`` now
    (retired, no view, not yet being unmapped, not being registered: a
    registration under way unmaps it when it is done)."""
    if not m.retired or m.views or m.unmapping:
        return False
    m.unmapping = True
    return not m.registering


def _unmap(m: _Mapping) -> None:
    """Unregisters a buffer no array views and unmaps it (an export still
    held by the array that is dying now keeps the mapping until that array
    is gone, a moment later). Never with the buffers' lock held."""
    reg, m.registrar = m.registrar, None
    if reg is not None:
        reg.unregister(m.addr)
    try:
        m.mm.close()
    except BufferError:
        pass


def _release(m: _Mapping, lock: Any) -> None:
    """The last view of a reply's rows is gone: clears the buffer's lease
    word (the server may reuse it), and unmaps a retired buffer no array
    views any more."""
    with lock:
        if not m.mm.closed:
            struct.pack_into("<Q", m.mm, 0, 0)
        m.views -= 1
        now = _unmap_now(m)
    if now:
        _unmap(m)
