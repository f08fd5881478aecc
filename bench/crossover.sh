#!/usr/bin/env bash
# bench/crossover.sh — issue 25, item 4: the streaming sampler's per-chunk
# choice between streaming a chunk and random-reading its targets' rows
# (`--random-reads auto`, host.Options.RandomReads) against the two pure
# strategies (pure streaming: off; pure random reads: always), on R-MAT
# scale SCALE (22), edge factor 16, symmetrized, chunks of CHUNK (64MiB:
# eight chunks at scale 22, so that the choice is per chunk), one epoch of
# FANOUTS (10) at frontier densities DENSITIES (1e-5 .. 1), RUNS (3) runs
# of each strategy per density, interleaved, each cold (chunks in memory
# forgotten, page cache dropped: root). Prints per density the three
# medians and choice / min(stream, random) with PASS/FAIL against 1.10,
# and writes bench/crossover_s$SCALE.json (or JSON). The graph is kept
# under BENCH_DIR (/tmp/crossover) and reused.
#
#   bench/crossover.sh
#   SCALE=24 CHUNK=512MiB FANOUTS=15,10,5 bench/crossover.sh
#
# Environment: SCALE, CHUNK, FANOUTS, DENSITIES, RUNS, SEED (1), BENCH_DIR,
# JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-22} CHUNK=${CHUNK:-64MiB} FANOUTS=${FANOUTS:-10} RUNS=${RUNS:-3} SEED=${SEED:-1}
DENSITIES=${DENSITIES:-1e-5,1e-4,1e-3,1e-2,0.1,1} BENCH_DIR=${BENCH_DIR:-/tmp/crossover}
W=$BENCH_DIR
mkdir -p "$W/bin"
go build -o "$W/bin/" ./cmd/chunkify ./bench/crossover
CK=$W/bin/chunkify
G=$W/g-s$SCALE-$CHUNK
if [[ ! -f $G/manifest.json ]]; then
  "$CK" generate rmat --scale "$SCALE" --edge-factor 16 --seed "$SEED" -o "$W/rmat.bin32" -q
  "$CK" build "$W/rmat.bin32" -o "$G" --symmetrize --force -q --chunk-size "$CHUNK"
  rm -f "$W/rmat.bin32"
fi
[[ $(id -u) == 0 ]] || echo "crossover.sh: not root: the page cache is not dropped between runs" >&2
sync
echo "R-MAT scale $SCALE, chunks of $CHUNK, $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git describe --always --dirty)"
"$W/bin/crossover" --graph "$G" --fanouts "$FANOUTS" --densities "$DENSITIES" --runs "$RUNS" --seed "$SEED" \
  --json "${JSON:-bench/crossover_s$SCALE.json}"
