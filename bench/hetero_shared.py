"""The heterogeneous loader alone, shared rows against inline rows (docs/PERFORMANCE.md,
"Shared rows for the heterogeneous server"): python3 bench/hetero_shared.py GRAPH BINARY {shared,inline} {loader,client}"""
import os, sys, time
import numpy as np
sys.path.insert(0, os.path.abspath("python"))
from tests import fakes  # torch_geometric's HeteroData as the loader uses it (not installed here)
sys.modules.update(fakes.fake_pyg_hetero())
import streamsampler.pyg  # noqa: E402
graph, binary, mode, what = sys.argv[1:5]
papers = 140887
train = np.sort(np.random.default_rng(7).permutation(papers)[:papers // 4])
lo = streamsampler.pyg.NeighborLoader(graph, [10, 5], input_nodes=("paper", train), batch_size=1024, shuffle=True,
                                      seed=1, binary=binary,
                                      server_args=["--max-inflight", "256MiB" if mode == "shared" else "257MiB"])
if mode == "inline":
    lo._client = lo.server.start(lo.nodes).client(shared_rows=False)
assert lo.client().shared_rows == (mode == "shared")
times = []
for e in range(4):  # one warm-up, three timed
    t, n, nbytes = time.perf_counter(), 0, 0
    for b in (lo if what == "loader" else lo.client().hetero_batches()):
        n += 1
        nbytes += sum(int(np.asarray(x).nbytes) for x in (b.x.values() if what == "client" else
                                                          [b[t].x for t in b.node_types if "x" in b[t].keys()]))
        del b
    times.append(time.perf_counter() - t)
    print("%s %s epoch %d: %d minibatches, %.0f MB of rows, %.3f s" % (what, mode, e, n, nbytes / 1e6, times[-1]),
          flush=True)
med = float(np.median(times[1:]))
print("RESULT %s %s median %.3f s/epoch = %.2f epochs/s" % (what, mode, med, 1 / med))
lo.close()
