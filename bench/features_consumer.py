#!/usr/bin/env python3
"""Consume one epoch of a streamsampler server the way a trainer would,
touching every feature row, and print what it took as one JSON line.

    features_consumer.py SOCKET features            # rows from the server (serve --features): batch.x
    features_consumer.py SOCKET memmap FILE N DIM   # rows gathered from a numpy.memmap of FILE
                                                    # (float32 [N, DIM]) with x[n_id]: PyG's and DGL's
                                                    # on-disk feature path

bench/features.sh runs it; numpy is the only dependency (with the
repository's python/ on sys.path)."""

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from streamsampler import Client  # noqa: E402


def main() -> None:
    sock, mode = sys.argv[1], sys.argv[2]
    mm = None
    if mode == "memmap":
        path, n, dim = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        mm = np.memmap(path, dtype=np.float32, mode="r", shape=(n, dim))
    elif mode != "features":
        sys.exit("mode must be features or memmap")
    c = Client(sock, shared_rows=os.environ.get("SHARED_ROWS", "1") == "1")
    t0 = time.perf_counter()
    batches = rows = nbytes = 0
    check = 0.0
    for b in c.batches(advance=False):
        x = b.x if mm is None else mm[b.n_id.astype(np.int64)]
        if x is None:
            sys.exit("the server sends no features (start it with --features)")
        check += float(x.sum(axis=1, dtype=np.float32)[-1])  # touches every row
        batches += 1
        rows += x.shape[0]
        nbytes += x.nbytes
    sec = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "batches": batches, "rows": rows, "bytes": nbytes,
                      "seconds": sec, "gbps": nbytes / sec / 1e9, "check": check}))


if __name__ == "__main__":
    main()
