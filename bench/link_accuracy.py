"""Issue 26's accuracy check: python/examples/pyg_link.py (GraphSAGE link
prediction on a bundled graph) trained with streamsampler's
LinkNeighborLoader and with the plain-torch reference of PyG's, the same
script and seeds; PASS when the mean test AUCs are within 1 point.

    python3 bench/link_accuracy.py --root testdata --binary bin/streamsampler \\
        --chunkify bin/chunkify --seeds 0,1,2 --out link_accuracy.json

Each run is a subprocess (``pyg_link.py --loader L --seed S``, its last
output line a JSON object); the summary is printed and, with ``--out``,
written with every run's numbers. Exit status 0 on PASS, 1 on FAIL.
"""

import os
import sys

import accuracy

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "python", "examples", "pyg_link.py")

#: The largest |mean(ours) - mean(reference)| test AUC, in points, that passes.
TOLERANCE = accuracy.TOLERANCE


def summary(runs, loaders):
    """Mean, sample s.d. (points) of each loader's test AUC; the difference and verdict."""
    return accuracy.summary(runs, loaders, "test_auc")


def _args(ap):
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--stand-in-pyg", action="store_true",
                    help="pyg_link.py --stand-in-pyg: for a machine without torch_geometric (indicative only)")


def _extra(args):
    return ["--dataset", args.dataset] + (["--stand-in-pyg"] if args.stand_in_pyg else [])


def main(argv=None):
    return accuracy.main(argv, __doc__.split("\n\n")[0], EXAMPLE, "test_auc", "test AUC", add_args=_args, extra=_extra,
                         dataset=lambda args: args.dataset)


if __name__ == "__main__":
    sys.exit(main())
