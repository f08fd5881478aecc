"""The runner the accuracy checks share (bench/link_accuracy.py,
bench/hetero_accuracy.py): an example script run as a subprocess for
every loader and seed (``EXAMPLE --root R --loader L --seed S ...``, its
last output line a JSON object), the per-loader means, and the verdict:
PASS when streamsampler's mean is within TOLERANCE points of the
reference's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

#: The largest |mean(streamsampler) - mean(reference)|, in points, that
#: passes.
TOLERANCE = 1.0


def run_one(example, args, loader, seed, extra=()):
    """One run of example with the loader and seed (and args' epochs,
    device, binary, chunkify; then extra): its JSON result."""
    cmd = [sys.executable, example, "--root", args.root, "--loader", loader, "--seed", str(seed)]
    for flag in ("epochs", "device", "binary", "chunkify"):
        v = getattr(args, flag)
        if v is not None:
            cmd += ["--" + flag, str(v)]
    cmd += list(extra)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError("%s printed nothing" % " ".join(cmd))
    return json.loads(lines[-1])


def summary(runs, loaders, metric):
    """Mean, sample s.d. (points) of each loader's runs' metric; the
    difference from the reference (and from the reference with one sample
    per epoch) and the verdict."""
    out = {}
    for lo in loaders:
        vals = [100 * r[metric] for r in runs if r["loader"] == lo]
        out[lo] = dict(mean=statistics.mean(vals), sd=statistics.stdev(vals) if len(vals) > 1 else 0.0,
                       per_seed=vals, seconds=statistics.mean(r["seconds"] for r in runs if r["loader"] == lo))
    if "streamsampler" in out and "reference-per-epoch" in out:
        out["diff_per_epoch"] = out["streamsampler"]["mean"] - out["reference-per-epoch"]["mean"]
    if "streamsampler" in out and "reference" in out:
        d = out["streamsampler"]["mean"] - out["reference"]["mean"]
        out["diff"] = d
        out["pass"] = abs(d) <= TOLERANCE
    return out


def main(argv, description, example, metric, label, add_args=None, extra=None, dataset=None):
    """The command line of an accuracy check: seeds × loaders of example,
    each run printed, the summary of metric (named label in the output)
    printed and written with --out; add_args(parser) adds the script's
    own flags, extra(args) the example's own arguments, dataset(args) the
    dataset's name in the JSON. Exit status 0 on PASS, 1 on FAIL."""
    ap = argparse.ArgumentParser(description=description)
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
    if add_args is not None:
        add_args(ap)
    args = ap.parse_args(argv)
    for flag in ("binary", "chunkify", "root"):
        if getattr(args, flag):
            setattr(args, flag, os.path.abspath(getattr(args, flag)))
    seeds = [int(s) for s in args.seeds.split(",")]
    loaders = args.loaders.split(",")
    runs = []
    for lo in loaders:
        for s in seeds:
            r = run_one(example, args, lo, s, extra(args) if extra else ())
            runs.append(r)
            print("%-19s seed %d: %s %.2f (val %.2f at epoch %d), %.1f s" % (
                lo, s, label, 100 * r[metric], 100 * r[metric.replace("test", "val")], r["best_epoch"],
                r["seconds"]), flush=True)
    summ = summary(runs, loaders, metric)
    for lo in loaders:
        print("%-19s %s %.2f ± %.2f  (%s)" % (lo, label, summ[lo]["mean"], summ[lo]["sd"],
                                            ", ".join("%.2f" % a for a in summ[lo]["per_seed"])))
    ok = True
    if "diff_per_epoch" in summ:
        print("streamsampler - reference-per-epoch = %+.2f points" % summ["diff_per_epoch"])
    if "diff" in summ:
        ok = summ["pass"]
        print("streamsampler - reference = %+.2f points: %s" % (summ["diff"], "PASS" if ok else "FAIL"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(dataset=dataset(args) if dataset else None, seeds=seeds, tolerance=TOLERANCE,
                           summary=summ, runs=runs), f, indent=1)
    return 0 if ok else 1
