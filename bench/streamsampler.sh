#!/usr/bin/env bash
# Benchmark of the streaming sampler (docs/PERFORMANCE.md, "## streamsampler").
#
# Generates an R-MAT graph of 2^SCALE nodes and EDGE_FACTOR·2^SCALE edges
# (default scale 23, edge factor 12: 100,663,296 edges) with chunkify,
# packs it into CHUNK-sized chunks (default 48 MiB: 9 chunks), then runs
# `streamsampler bench`: epochs for fanouts [15,10,5] and [10,10,10] over a
# training set of 10% of the nodes against the O_DIRECT sequential read
# rate and a random-gather floor measured in the same run, minibatch
# assembly (batch 1024) against an in-memory per-minibatch sampler, and
# peak RSS. Figures are medians of RUNS runs; every target prints PASS/FAIL.
#
#   bench/streamsampler.sh                 # human report
#   JSON=1 bench/streamsampler.sh          # one JSON object
#   SCALE=20 EDGE_FACTOR=16 CHUNK=8MiB bench/streamsampler.sh   # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-23}
EDGE_FACTOR=${EDGE_FACTOR:-12}
CHUNK=${CHUNK:-48MiB}
RUNS=${RUNS:-3}
DEVICES=${DEVICES:-2}
MAX_BATCHES=${MAX_BATCHES:-100}
WORK=${WORK:-out/bench/streamsampler}
BIN=${BIN:-bin}

go build -o "$BIN/" ./cmd/chunkify ./cmd/streamsampler
mkdir -p "$WORK"
graph="$WORK/rmat-s$SCALE-e$EDGE_FACTOR-$CHUNK"
if [ ! -f "$graph/manifest.json" ]; then
  edges="$WORK/rmat-s$SCALE-e$EDGE_FACTOR.bin32"
  [ -f "$edges" ] || "$BIN/chunkify" generate rmat --scale "$SCALE" --edge-factor "$EDGE_FACTOR" --seed 1 -o "$edges" -q
  # No dedup: keep every generated edge (R-MAT repeats some), so the graph
  # has exactly EDGE_FACTOR·2^SCALE adjacency entries.
  "$BIN/chunkify" build "$edges" -o "$graph" --chunk-size "$CHUNK" --num-nodes $((1 << SCALE)) --dedup=false -q
  rm -f "$edges"
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
args=(bench --graph "$graph" --seed 1 --runs "$RUNS" --devices "$DEVICES" --max-batches "$MAX_BATCHES" --fanouts 15,10,5 --fanouts 10,10,10)
[ -n "${JSON:-}" ] && args+=(--json)
exec "$BIN/streamsampler" "${args[@]}"
