"""The page cache and the disk, for the benchmark scripts (papers.py,
train_e2e.py): drop the cache, and time one sequential O_DIRECT read of a
file, the disk's floor for a pass over it."""

import mmap
import os
import time


def drop_caches():
    """Drop the page cache where permitted; whether it was."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        return True
    except OSError:
        return False


def sequential_read(path):
    """Seconds to read ``path`` once, sequentially, O_DIRECT (4 MiB
    reads, into page-aligned memory)."""
    buf = mmap.mmap(-1, 4 << 20)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    t0 = time.perf_counter()
    try:
        while os.readv(fd, [buf]) > 0:
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - t0
