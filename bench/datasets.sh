#!/usr/bin/env bash
# Every graph of the shared datasets through the built binaries: what a user
# does, timed (docs/SAMPLER.md, "## shared datasets").
#
# For each SNAP / musae edge list: `chunkify build` (--symmetrize for the
# undirected ones: ego-Facebook, musae-facebook), `chunkify verify`; for
# Cora and CiteSeer, the Python loader (`python -m streamsampler.datasets`,
# which runs `chunkify build --symmetrize`) then `chunkify verify`. Then
# `streamsampler prepare` twice (two epochs, fanouts FANOUTS) into a state
# directory, `advance`, `sample --format summary` of the first SEEDS
# training nodes, and `run` for two epochs. Training nodes: every 10th node
# with a neighbor (the loader's train split for Planetoid). Prints one
# Markdown table row per graph; any failing command stops the script.
#
#   bench/datasets.sh
#   DATASETS=/path/to/datasets CHUNK=1MiB FANOUTS=15,10,5 bench/datasets.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DATASETS=${DATASETS:-../shared/datasets}
CHUNK=${CHUNK:-64KiB}
FANOUTS=${FANOUTS:-10,5}
SEED=${SEED:-7}
SEEDS=${SEEDS:-64}
BATCH=${BATCH:-512}
WORK=${WORK:-out/bench/datasets}
BIN=${BIN:-bin}
PY=${PY:-/usr/bin/python3}

[ -d "$DATASETS" ] || { echo "datasets.sh: $DATASETS not found (set DATASETS=)" >&2; exit 1; }
DATASETS=$(cd "$DATASETS" && pwd)
go build -o "$BIN/" ./cmd/chunkify ./cmd/streamsampler
rm -rf "$WORK" && mkdir -p "$WORK"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# jget FILE KEY: a number from a JSON object (flat keys only).
jget() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), chunk $CHUNK, fanouts $FANOUTS, seed $SEED, batch $BATCH" >&2
echo "| graph | nodes | edges | chunks | build s | verify | epoch prepare s (0, 1) | sampled edges (epoch 0) | batch of $SEEDS seeds: dst←src (edges) per hop | run ms/batch (epochs 0, 1) |"
echo "|---|---|---|---|---|---|---|---|---|---|"

# sampler NAME GRAPH TRAIN NODES EDGES CHUNKS BUILD_S: the sampler's
# commands on a built graph, then the table row.
sampler() {
  local name=$1 graph=$2 train=$3 nodes=$4 edges=$5 chunks=$6 build_s=$7
  local w="$WORK/$name" verify prep=() sampled="" seeds summary run
  if "$BIN/chunkify" verify -q "$graph"; then verify=ok; else verify=FAILED; STATUS=1; fi
  for e in 0 1; do
    "$BIN/streamsampler" prepare --state "$w/state" --graph "$graph" --train "$train" \
      --fanouts "$FANOUTS" --seed "$SEED" --json >"$w/prepare-$e.json"
    prep+=("$(printf '%.2f' "$(jget "$w/prepare-$e.json" total_s)")")
    [ -n "$sampled" ] || sampled=$(jget "$w/prepare-$e.json" sampled_edges)
  done
  "$BIN/streamsampler" advance --state "$w/state" >/dev/null
  seeds=$(head -n "$SEEDS" "$train" | paste -sd, -)
  "$BIN/streamsampler" sample --state "$w/state" --seeds "$seeds" --format summary >"$w/summary.txt"
  # "hop 1: 64 dst <- 600 src (536 new), 580 edges" -> "64←600 (580)"
  summary=$(awk '/^hop/ { printf "%s%s←%s (%s)", sep, $3, $6, $10; sep = "; " }' "$w/summary.txt")
  "$BIN/streamsampler" run --graph "$graph" --train "$train" --fanouts "$FANOUTS" --seed "$SEED" \
    --batch-size "$BATCH" --epochs 2 --json >"$w/run.json"
  run=$("$PY" -c 'import json,sys; print(", ".join("%.2f" % json.loads(l)["ms_per_batch"] for l in open(sys.argv[1])))' "$w/run.json")
  echo "| $name | $nodes | $edges | $chunks | $build_s | $verify | ${prep[0]}, ${prep[1]} | $sampled | $summary | $run |"
}

# Edge lists: name, path under DATASETS, build flags.
while read -r name file flags; do
  w="$WORK/$name"
  mkdir -p "$w"
  t0=$(now)
  # shellcheck disable=SC2086 # flags is a word list
  "$BIN/chunkify" build "$DATASETS/$file" -o "$w/graph" --chunk-size "$CHUNK" $flags -q --json >"$w/build.json"
  build_s=$(secs "$t0" "$(now)")
  # Training nodes: every 10th node (in id order) with a stored neighbor:
  # a source, or either endpoint when symmetrized.
  zcat -f "$DATASETS/$file" | tr -d '\r' | awk -F'[ \t,]+' -v sym="$flags" \
    '/^[#%]/ || !/^[0-9]/ { next } { print $1; if (sym != "") print $2 }' |
    sort -n -u | awk 'NR % 10 == 1' >"$w/train.txt"
  sampler "$name" "$w/graph" "$w/train.txt" "$(jget "$w/build.json" num_nodes)" \
    "$(jget "$w/build.json" num_edges)" "$(jget "$w/build.json" num_chunks)" "$build_s"
done <<'EOF'
email-Eu-core email-Eu-core/email-Eu-core.txt.gz
ego-Facebook ego-Facebook/facebook_combined.txt.gz --symmetrize
wiki-Vote wiki-Vote/Wiki-Vote.txt
p2p-Gnutella31 p2p-Gnutella31/p2p-Gnutella31.txt
musae-facebook musae-facebook/facebook_edges.csv --symmetrize
soc-Slashdot0902 soc-Slashdot0902/soc-Slashdot0902.txt.gz
EOF

# Planetoid through the Python loader (needs numpy and scipy).
if "$PY" -c 'import numpy, scipy' 2>/dev/null; then
  for name in cora citeseer; do
    w="$WORK/$name"
    t0=$(now)
    PYTHONPATH=python "$PY" -m streamsampler.datasets "$name" "$w" --root "$DATASETS" --chunkify "$BIN/chunkify" >/dev/null
    build_s=$(secs "$t0" "$(now)")
    m="$w/graph/manifest.json"
    sampler "$name" "$w/graph" "$w/train.txt" "$(jget "$m" num_nodes)" "$(jget "$m" num_edges)" \
      "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["chunks"]))' "$m")" "$build_s (loader)"
  done
else
  echo "datasets.sh: $PY lacks numpy or scipy: Cora and CiteSeer skipped" >&2
fi

# A graph that failed verify fails the script (its row says FAILED).
exit "${STATUS:-0}"
