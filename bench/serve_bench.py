"""Python consumer of the serve benchmark (driven by bench/serve_bench,
the Go side), or a standalone throughput probe of any running server.

Controlled mode (--control): reads "run K" lines on stdin, pulls K
minibatches of the current epoch over the socket (next_batch, --depth
requests in flight), decodes them into numpy-backed Batch objects, and
answers "ok K SECONDS BYTES" on stdout. Standalone: pulls --batches
minibatches and prints the rate.

    PYTHONPATH=python /usr/bin/python3 bench/serve_bench.py --socket S --batches 50
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from streamsampler import Client, pyg_arrays  # noqa: E402


def pull(client, k, depth, pyg):
    t0 = time.perf_counter()
    n, nbytes = 0, 0
    for b in client.batches(depth=depth, max_batches=k, advance=False):
        # Touch what a trainer reads: every array of every hop.
        for h in b.hops:
            nbytes += h.src.nbytes + h.dst.nbytes + h.edge_src.nbytes + h.edge_dst.nbytes
        if pyg:
            pyg_arrays(b)
        n += 1
    return n, time.perf_counter() - t0, nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--pyg", action="store_true", help="also build PyG index arrays (int64 copies)")
    ap.add_argument("--control", action="store_true")
    a = ap.parse_args()
    with Client(a.socket) as c:
        if not a.control:
            n, dt, nbytes = pull(c, a.batches, a.depth, a.pyg)
            print("%d minibatches in %.3f s: %.1f minibatches/s, %.0f MB/s" % (n, dt, n / dt, nbytes / dt / 1e6))
            return 0
        for line in sys.stdin:
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "run":
                n, dt, nbytes = pull(c, int(cmd[1]), a.depth, a.pyg)
                print("ok %d %.6f %d" % (n, dt, nbytes), flush=True)
            elif cmd[0] == "quit":
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
