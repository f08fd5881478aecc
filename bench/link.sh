#!/usr/bin/env bash
# bench/link.sh — issue 26, item 6's benchmark: link prediction on R-MAT
# scale SCALE (22), edge factor 16, symmetrized; FRAC (0.1) of the stored
# edges as training edges, minibatches of BATCH (1024) edges with binary
# negatives 1:1, FANOUTS (15,10,5): the link epoch's wall and assembled
# edges/s, and in the same run the node-classification epoch whose
# training nodes are the link epoch's distinct seed nodes (same fanouts,
# batch size and workers), RUNS (3) of each alternating, medians; prints
# link/node with PASS/FAIL against 1.3 (bench/link, a Go program). The
# graph is kept under BENCH_DIR (/tmp/linkbench) and reused; GRAPH names
# an existing graph directory instead (e.g. /tmp/i24/g22).
#
#   bench/link.sh
#   SCALE=16 RUNS=1 bench/link.sh                     # a quick look
#   GRAPH=/tmp/i24/g22 JSON=/tmp/link22.json bench/link.sh
#
# Environment: SCALE, FRAC, BATCH, FANOUTS, AMOUNT (1), SEMANTICS (dgl),
# WORKERS (the cores), DEVICES (1), RUNS, SEED (1), BENCH_DIR, GRAPH,
# JSON (a file for the figures), LINKBENCH and CHUNKIFY (prebuilt
# binaries; default: built here with go).
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-22} FRAC=${FRAC:-0.1} BATCH=${BATCH:-1024} FANOUTS=${FANOUTS:-15,10,5} AMOUNT=${AMOUNT:-1}
SEMANTICS=${SEMANTICS:-dgl} WORKERS=${WORKERS:-$(nproc)} DEVICES=${DEVICES:-1} RUNS=${RUNS:-3} SEED=${SEED:-1}
BENCH_DIR=${BENCH_DIR:-/tmp/linkbench} GRAPH=${GRAPH:-} JSON=${JSON:-}
note() { echo "link.sh: $*" >&2; }
mkdir -p "$BENCH_DIR/bin"
LINKBENCH=${LINKBENCH:-} CHUNKIFY=${CHUNKIFY:-}
if [[ -z $LINKBENCH ]]; then
	LINKBENCH=$BENCH_DIR/bin/linkbench
	go build -o "$LINKBENCH" ./bench/link
fi
if [[ -z $GRAPH ]]; then
	GRAPH=$BENCH_DIR/g$SCALE
	if [[ ! -f $GRAPH/manifest.json ]]; then
		if [[ -z $CHUNKIFY ]]; then
			CHUNKIFY=$BENCH_DIR/bin/chunkify
			go build -o "$CHUNKIFY" ./cmd/chunkify
		fi
		note "generating R-MAT scale $SCALE (edge factor 16, symmetrized) in $GRAPH"
		"$CHUNKIFY" generate rmat --scale "$SCALE" --edge-factor 16 --seed 1 -o "$BENCH_DIR/rmat$SCALE.bin32" >&2
		"$CHUNKIFY" build "$BENCH_DIR/rmat$SCALE.bin32" -o "$GRAPH" --symmetrize >&2
		rm -f "$BENCH_DIR/rmat$SCALE.bin32"
	fi
fi
note "$(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
args=(--graph "$GRAPH" --frac "$FRAC" --batch-size "$BATCH" --fanouts "$FANOUTS" --amount "$AMOUNT"
	--semantics "$SEMANTICS" --workers "$WORKERS" --devices "$DEVICES" --runs "$RUNS" --seed "$SEED")
[[ -n $JSON ]] && args+=(--json "$JSON")
exec "$LINKBENCH" "${args[@]}"
