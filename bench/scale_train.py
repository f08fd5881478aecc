"""A training set for bench/scale.sh: a seeded sample of node ids as .npy.

    python3 bench/scale_train.py --nodes 1048576 --fraction 0.1 --seed 7 -o train.npy

Writes floor(nodes * fraction) distinct ids of [0, nodes), sorted, as a
little-endian uint32 array: the same ids for the same arguments and NumPy's
PCG64 stream, so that every scale's epoch runs on a reproducible 10%.
"""

import argparse

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, required=True, help="number of nodes of the graph")
    p.add_argument("--fraction", type=float, default=0.1, help="fraction of the nodes, in (0, 1]")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("-o", "--output", required=True, help=".npy file to write")
    a = p.parse_args()
    if a.nodes < 1 or a.nodes > 1 << 32:
        p.error(f"--nodes {a.nodes}: want 1 to 2^32")
    if not 0 < a.fraction <= 1:
        p.error(f"--fraction {a.fraction}: want (0, 1]")
    k = max(1, int(a.nodes * a.fraction))
    rng = np.random.default_rng(a.seed)
    # A partial shuffle's first k: one pass, 4 bytes a node in uint32.
    ids = rng.permutation(np.arange(a.nodes, dtype=np.uint32))[:k]
    ids.sort()
    np.save(a.output, ids.astype("<u4"), allow_pickle=False)


if __name__ == "__main__":
    main()
