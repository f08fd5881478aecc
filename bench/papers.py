#!/usr/bin/env python3
"""Issue 24's benchmark: the sampling epoch at papers100M's shape, beside
bench/scale.sh. R-MAT scale 25 (33.5 M nodes, 1.05 B stored edges, the
edges of ogbn-papers100M's order; 27 where time allows) against scale 22
as the in-cache reference, 1.1% training nodes (papers100M's ratio),
[20,15,10], batch 1024, `streamsampler run` as a user runs it (emulated
device, page cache dropped before each run where permitted):

* one epoch and two: epoch wall from process start (graph open included),
  user+sys over wall (CPU use), peak RSS (GNU time), and from
  `run --json`: chunk bytes read per epoch over the graph's bytes
  (edges.chunks), ns per assembled edge (the union of assembly's
  intervals over the assembled edges), and with two epochs the wall per
  epoch against one epoch's;
* before them, two sequential O_DIRECT reads of edges.chunks (see disk_read:
  the VM's disk is cached by its host, so every timed run reads at the
  second read's rate, reported) and one untimed epoch (the VM's host backs
  freshly touched memory again after a drop of the page cache: the first
  large process pays it), recorded as "warmup";
* at scale 25 the same epoch with a chunk cache of a quarter of the graph
  (--quarter-args; recorded, no target);
* RingSampler (bench/ringsampler.sh; io_uring, page cache warm: its best
  case) on the same CSR and training nodes, same threads, same run.

Targets (issue 24), printed PASS/FAIL, exit status 1 on any FAIL: bytes
read per epoch <= 1.1x the graph's when it fits the (automatic) budget;
ns per assembled edge at 25 <= 1.5x scale 22's; the two-epoch wall per
epoch <= 0.8x the one-epoch wall; our epoch >= 10x faster than
RingSampler's at 25.

    # graphs: chunkify generate rmat --scale S --edge-factor 16 --seed 1 -o rS.bin32
    #         chunkify build rS.bin32 -o gS --symmetrize
    python3 bench/papers.py --binary bin/streamsampler --graph22 /tmp/i24/g22 \\
        --graph25 /tmp/i24/g25 --ringsampler-src ~/RingSampler --work /tmp/papers \\
        [--json papers.json]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pagecache import drop_caches, sequential_read  # noqa: E402
PY = os.environ.get("PY", "/usr/bin/python3")  # with numpy (the pyenv python3 on PATH has none)


def train_set(work, graph, scale, fraction, seed):
    """The seeded training nodes of a graph (bench/scale_train.py)."""
    with open(os.path.join(graph, "manifest.json")) as f:
        n = json.load(f)["num_nodes"]
    path = os.path.join(work, f"train{scale}-{fraction}-{seed}.npy")
    if not os.path.exists(path):
        subprocess.run([PY, os.path.join(HERE, "scale_train.py"), "--nodes", str(n), "--fraction", str(fraction),
                        "--seed", str(seed), "-o", path], check=True)
    return path


def disk_read(graph):
    """Two sequential O_DIRECT reads of the graph's edges.chunks, before the
    timed runs. On this project's VM the first timed run at scale 25 read
    the graph at 0.24-0.28 GB/s in three of four runs, the next ones at
    0.72-0.87 (one epoch took 17.5-21.1 s where two took 10.8-16.4): the
    virtual disk is cached by its host, below the guest, where drop_caches
    does not reach. So the file is read twice first, and every timed run
    sees the same disk, the second read's, as RingSampler sees a warm page
    cache; both reads are reported."""
    path = os.path.join(graph, "edges.chunks")
    out = {}
    for k in ("first_s", "second_s"):
        drop_caches()
        out[k] = sequential_read(path)
    out["gbps"] = os.path.getsize(path) / out["second_s"] / 1e9
    return out


def timed_run(args, graph, train, epochs, extra):
    """`streamsampler run … --json` under GNU time: wall, CPU, peak RSS and
    each epoch's JSON line."""
    dropped = drop_caches()
    cmd = ["/usr/bin/time", "-f", "TIME %e %U %S %M", args.binary, "run", "--graph", graph, "--train", train,
           "--fanouts", args.fanouts, "--batch-size", str(args.batch), "--epochs", str(epochs), "--json"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-2000:]}")
    m = re.search(r"^TIME (\S+) (\S+) (\S+) (\S+)$", p.stderr, re.M)
    wall, user, sys_, rss_kb = (float(v) for v in m.groups())
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    eps = [x for x in lines if "epoch" in x and "edges" in x]
    edges = sum(e["edges"] for e in eps)
    assemble = sum(e["assemble_s"] for e in eps)
    bytes_read = sum(e.get("bytes_read", 0) for e in eps)
    size = os.path.getsize(os.path.join(graph, "edges.chunks"))
    return dict(cmd=" ".join(cmd[3:]), wall=wall, cpu=(user + sys_) / wall if wall else 0.0,
                peak_rss_mib=rss_kb / 1024, epochs=eps, edges=edges, ns_per_edge=1e9 * assemble / max(1, edges),
                bytes_per_epoch=bytes_read / max(1, len(eps)), graph_bytes=size,
                read_over_graph=bytes_read / max(1, len(eps)) / size, dropped=dropped)


def ringsampler(args, graph, train, scale):
    out = os.path.join(args.work, f"rs{scale}")
    p = subprocess.run(["bash", os.path.join(HERE, "ringsampler.sh"), args.ringsampler_src, graph, train, out,
                        str(args.threads), str(args.rs_epochs)], capture_output=True, text=True,
                       env=dict(os.environ, CHUNKIFY=args.chunkify))
    if p.returncode != 0:
        return dict(error=p.stderr[-1500:] or p.stdout[-1500:])
    m = re.search(r"^ringsampler_epoch_s (\S+)$", p.stdout, re.M)
    src = re.search(r"^ringsampler source: (\S+)", p.stdout, re.M)
    return dict(epoch_s=float(m.group(1)), source=src.group(1) if src else "unknown", log=p.stdout[-800:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--binary", required=True, help="streamsampler (make build: bin/streamsampler)")
    p.add_argument("--chunkify", default=os.path.join(HERE, "..", "bin", "chunkify"))
    p.add_argument("--graph22", required=True)
    p.add_argument("--graph25", required=True, help="scale 25 (or 27: the figures say which)")
    p.add_argument("--work", required=True, help="training sets, RingSampler's build and CSR")
    p.add_argument("--ringsampler-src", help="a RingSampler checkout (skipped without)")
    p.add_argument("--fraction", type=float, default=0.011)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fanouts", default="20,15,10")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rs-epochs", type=int, default=2)
    p.add_argument("--quarter-args", default="--chunk-cache {q}",
                   help="run flags for a chunk budget of a quarter of the graph ({q}: its bytes); '' skips")
    p.add_argument("--json")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    res = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), machine=os.uname().nodename,
               cores=os.cpu_count(), fanouts=args.fanouts, batch=args.batch, fraction=args.fraction, runs={})
    graphs = {"22": args.graph22, "25": args.graph25}
    for scale, g in graphs.items():
        train = train_set(args.work, g, scale, args.fraction, args.seed)
        r = res["runs"][scale] = {}
        r["disk"] = disk_read(g)
        print(f"scale {scale}: one O_DIRECT read of edges.chunks before the timed runs: {r['disk']['first_s']:.2f} s, "
              f"then {r['disk']['second_s']:.2f} s ({r['disk']['gbps']:.2f} GB/s)", flush=True)
        # Untimed: on this project's VM the first process after the page
        # cache is dropped that touches gigabytes of fresh memory pays 4-5 s
        # more system time than the next one (scale 25: sys 6.1 against
        # 1.5 s, wall 10.7 against 8.2 s, back to back), memory the VM's
        # host backs again; the first timed run alone would pay it.
        r["warmup"] = timed_run(args, g, train, 1, [])
        r["one"] = timed_run(args, g, train, 1, [])
        r["two"] = timed_run(args, g, train, 2, [])
        print(f"scale {scale}: untimed first epoch {r['warmup']['wall']:.2f} s (user+sys "
              f"{r['warmup']['cpu'] * r['warmup']['wall']:.1f} s)", flush=True)
        print(f"scale {scale}: one epoch {r['one']['wall']:.2f} s (CPU {r['one']['cpu']:.2f}, peak RSS "
              f"{r['one']['peak_rss_mib']:.0f} MiB, read {r['one']['read_over_graph']:.2f}x the graph, "
              f"{r['one']['ns_per_edge']:.1f} ns/assembled edge); two epochs {r['two']['wall']:.2f} s "
              f"({r['two']['wall'] / 2:.2f} s each, read {r['two']['read_over_graph']:.2f}x per epoch)", flush=True)
        if scale == "25" and args.quarter_args:
            q = r["one"]["graph_bytes"] // 4
            r["quarter"] = timed_run(args, g, train, 2, args.quarter_args.format(q=q).split())
            print(f"scale {scale}, chunk budget a quarter of the graph ({q / 2**30:.2f} GiB): two epochs "
                  f"{r['quarter']['wall']:.2f} s, read {r['quarter']['read_over_graph']:.2f}x the graph per epoch",
                  flush=True)
        if args.ringsampler_src:
            r["ringsampler"] = ringsampler(args, g, train, scale)
            rs = r["ringsampler"]
            print(f"scale {scale}: RingSampler " + (f"{rs['epoch_s']:.2f} s per epoch (median of {args.rs_epochs}, "
                                                    f"{args.threads} threads, source {rs['source'][:12]})"
                                                    if "epoch_s" in rs else "failed: " + rs["error"]), flush=True)
    a, b = res["runs"]["22"], res["runs"]["25"]
    checks = [("chunk bytes read per epoch / graph bytes, scale 25 (budget auto)", b["one"]["read_over_graph"], 1.1,
               "<="),
              ("ns per assembled edge, scale 25 / scale 22", b["one"]["ns_per_edge"] / a["one"]["ns_per_edge"], 1.5,
               "<="),
              ("two-epoch wall per epoch / one-epoch wall, scale 25", b["two"]["wall"] / 2 / b["one"]["wall"], 0.8,
               "<="),
              ("two-epoch wall per epoch / one-epoch wall, scale 22", a["two"]["wall"] / 2 / a["one"]["wall"], 0.8,
               "<=")]
    if "epoch_s" in b.get("ringsampler", {}):
        checks.append(("RingSampler's epoch / ours, scale 25", b["ringsampler"]["epoch_s"] / b["one"]["wall"], 10.0,
                       ">="))
        # Like for like: RingSampler's figure is an epoch of a run with the
        # page cache warm; ours here is an epoch of a two-epoch run (process
        # start, the cold read of the graph and the second epoch, whose
        # chunks are in the chunk cache, over two). Printed beside the
        # target's, which counts our cold epoch from process start alone.
        checks.append(("  the same, ours per epoch over two epochs", b["ringsampler"]["epoch_s"] / (b["two"]["wall"] / 2),
                       None, ">="))
    if "epoch_s" in a.get("ringsampler", {}):
        checks.append(("RingSampler's epoch / ours, scale 22", a["ringsampler"]["epoch_s"] / a["one"]["wall"], None,
                       ">="))
    failed = []
    print(f"\nsummary ({res['date']}, {res['cores']} cores)")
    for name, val, target, op in checks:
        ok = target is None or (val <= target if op == "<=" else val >= target)
        if not ok:
            failed.append(name)
        print(f"  {name:66s} {val:8.2f}  " + ("" if target is None else
                                               f"{'PASS' if ok else 'FAIL'} (target {op} {target})"))
    res["checks"] = [dict(name=n, value=v, target=t, op=o) for n, v, t, o in checks]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
