"""Issue 27's accuracy check: python/examples/pyg_hetero.py (an R-GCN-style
HeteroConv of SAGEConvs on testdata/cora-hetero) trained with
streamsampler's heterogeneous NeighborLoader and with the plain-torch
reference of PyG's (python/examples/reference_hetero_loader.py), the same
script and seeds; PASS when the mean test accuracies are within 1 point.

    python3 bench/hetero_accuracy.py --root testdata --binary bin/streamsampler \\
        --chunkify bin/chunkify --seeds 0,1,2 --out hetero_accuracy.json

Each run is a subprocess (``pyg_hetero.py --loader L --seed S``, its last
output line a JSON object); the summary is printed and, with ``--out``,
written with every run's numbers. Exit status 0 on PASS, 1 on FAIL (or
when a loader's run fails). ``--loaders`` defaults to
``reference,streamsampler`` (``streamsampler.pyg.NeighborLoader`` over the
HeteroData's graph directory); ``reference-per-epoch`` is a diagnostic.
"""

import os
import sys

import accuracy

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "python", "examples", "pyg_hetero.py")

#: The largest |mean(streamsampler) - mean(reference)| test accuracy, in
#: points, that passes.
TOLERANCE = accuracy.TOLERANCE


def summary(runs, loaders):
    """Mean, sample s.d. (points) of each loader's test accuracy; the difference and verdict."""
    return accuracy.summary(runs, loaders, "test")


def main(argv=None):
    return accuracy.main(argv, __doc__.split("\n\n")[0], EXAMPLE, "test", "test", dataset=lambda args: "cora-hetero")


if __name__ == "__main__":
    sys.exit(main())
