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
when a loader's run fails: until streamsampler's HeteroData drop-in
exists, ``--loaders reference,reference-per-epoch`` is what runs).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "python", "examples", "pyg_hetero.py")

#: The largest |mean(streamsampler) - mean(reference)| test accuracy, in
#: points, that passes.
TOLERANCE = 1.0


def run_one(args, loader, seed):
    cmd = [sys.executable, EXAMPLE, "--root", args.root, "--loader", loader, "--seed", str(seed)]
    for flag in ("epochs", "device", "binary", "chunkify"):
        v = getattr(args, flag)
        if v is not None:
            cmd += ["--" + flag, str(v)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError("%s printed nothing" % " ".join(cmd))
    return json.loads(lines[-1])


def summary(runs, loaders):
    """Mean, sample s.d. (points) per loader; the difference and verdict."""
    out = {}
    for lo in loaders:
        acc = [100 * r["test"] for r in runs if r["loader"] == lo]
        out[lo] = dict(mean=statistics.mean(acc), sd=statistics.stdev(acc) if len(acc) > 1 else 0.0,
                       per_seed=acc, seconds=statistics.mean(r["seconds"] for r in runs if r["loader"] == lo))
    if "streamsampler" in out and "reference-per-epoch" in out:
        out["diff_per_epoch"] = out["streamsampler"]["mean"] - out["reference-per-epoch"]["mean"]
    if "streamsampler" in out and "reference" in out:
        d = out["streamsampler"]["mean"] - out["reference"]["mean"]
        out["diff"] = d
        out["pass"] = abs(d) <= TOLERANCE
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="raw datasets (a checkout's testdata/)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--loaders", default="reference,streamsampler",
                    help="of streamsampler, reference, reference-per-epoch (the reference with one sample per node "
                         "per epoch: how much of a difference that explains)")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--binary", default=None, help="streamsampler executable")
    ap.add_argument("--chunkify", default=None, help="chunkify executable")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    for flag in ("binary", "chunkify", "root"):
        if getattr(args, flag):
            setattr(args, flag, os.path.abspath(getattr(args, flag)))
    seeds = [int(s) for s in args.seeds.split(",")]
    loaders = args.loaders.split(",")
    runs = []
    for lo in loaders:
        for s in seeds:
            r = run_one(args, lo, s)
            runs.append(r)
            print("%-19s seed %d: test %.2f (val %.2f at epoch %d), %.1f s" % (
                lo, s, 100 * r["test"], 100 * r["val"], r["best_epoch"], r["seconds"]), flush=True)
    summ = summary(runs, loaders)
    for lo in loaders:
        print("%-19s test %.2f ± %.2f  (%s)" % (lo, summ[lo]["mean"], summ[lo]["sd"],
                                               ", ".join("%.2f" % a for a in summ[lo]["per_seed"])))
    ok = True
    if "diff_per_epoch" in summ:
        print("streamsampler - reference-per-epoch = %+.2f points" % summ["diff_per_epoch"])
    if "diff" in summ:
        ok = summ["pass"]
        print("streamsampler - reference = %+.2f points: %s" % (summ["diff"], "PASS" if ok else "FAIL"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(dataset="cora-hetero", seeds=seeds, tolerance=TOLERANCE, summary=summ, runs=runs), f,
                      indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
