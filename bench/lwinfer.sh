#!/usr/bin/env bash
# bench/lwinfer.sh — issue 25's layer-wise inference target: one pass over
# every node of an R-MAT graph with all of its in-neighbors (one −1 layer,
# minibatches of BATCH consecutive nodes, PyG's evaluation loader), each
# minibatch's DIM-dim float32 feature rows (x_all[n_id]) copied out of the
# graph's feature store (go run ./bench/lwinfer: package layerwise, the
# pass serve's scan requests run), against the floor measured in the same
# run: one sequential O_DIRECT read of edges.chunks and one of the
# feature file (dd bs=4M iflag=direct), page cache dropped before each
# where permitted.
#
# Target (issue 25): pass ≤ 1.5 × (dd edges.chunks + dd features), at
# SCALE=22, DIM=128. The default is short (SCALE=18); the target's run:
#
#   SCALE=22 bench/lwinfer.sh
#
# Environment: SCALE (18), DIM (128), BATCH (4096), CHUNK (64MiB), RUNS
# (3: medians), WORKERS (the cores), BENCH_DIR (/tmp/ss-lwinfer), SEED
# (1), KEEP=1 keeps the graph. Prints a table with PASS/FAIL; writes
# BENCH_DIR/lwinfer.md.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
. bench/figures.sh
SCALE=${SCALE:-18} DIM=${DIM:-128} BATCH=${BATCH:-4096} CHUNK=${CHUNK:-64MiB} RUNS=${RUNS:-3}
WORKERS=${WORKERS:-$(nproc)} BENCH_DIR=${BENCH_DIR:-/tmp/ss-lwinfer} SEED=${SEED:-1}
die() { echo "lwinfer.sh: $*" >&2; exit 1; }
note() { echo "lwinfer.sh: $*" >&2; }
for t in dd awk numfmt column; do command -v "$t" >/dev/null || die "needs $t"; done
W=$BENCH_DIR
mkdir -p "$W/bin"
go build -o "$W/bin/" ./cmd/chunkify ./bench/lwinfer
CK=$W/bin/chunkify LW=$W/bin/lwinfer
ROWS=$W/rows.tsv
: > "$ROWS"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }
DROPPED=yes
drop() {
  sync
  if ! (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
    [[ $DROPPED == no ]] || note "the page cache cannot be dropped here (not root?): runs see whatever it holds"
    DROPPED=no
  fi
}
G=$W/g-s$SCALE-d$DIM
if [[ ! -f $G/features.json ]]; then
  "$CK" generate rmat --scale "$SCALE" --edge-factor 16 --seed "$SEED" -o "$W/rmat.bin32" -q
  "$CK" build "$W/rmat.bin32" -o "$G" --symmetrize --force -q --chunk-size "$CHUNK"
  rm -f "$W/rmat.bin32"
  "$CK" generate features --graph "$G" --dim "$DIM" --seed "$SEED" -o "$W/feat.npy" -q
  "$CK" features "$W/feat.npy" -o "$G" -q
  rm -f "$W/feat.npy"
fi
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$G"' EXIT
CHUNKS=$G/edges.chunks FEAT=$(ls "$G"/features-*.bin)
CSIZE=$(stat -c %s "$CHUNKS") FSIZE=$(stat -c %s "$FEAT")
# Two passes per run: "read" takes every minibatch (blocks, edge ids)
# and reads the rows into memory once (the resident sweep), leaving
# x_all[n_id] to the consumer as PyG's model.inference does it; "copy"
# also copies every minibatch's x = x_all[n_id] out, as a server does
# into its replies (Σ len(n_id) rows: far more bytes than the file).
floors=() reads=() copies=()
for r in $(seq "$RUNS"); do
  drop
  e=$(dd if="$CHUNKS" of=/dev/null bs=4M iflag=direct 2>&1 | ddsecs)
  drop
  f=$(dd if="$FEAT" of=/dev/null bs=4M iflag=direct 2>&1 | ddsecs)
  floors+=("$(fmt "$e + $f" %.3f)")
  drop
  "$LW" --graph "$G" --batch-size "$BATCH" --workers "$WORKERS" --copy=false > "$W/read-$r.json"
  reads+=("$(jnum "$W/read-$r.json" wall_s)")
  drop
  "$LW" --graph "$G" --batch-size "$BATCH" --workers "$WORKERS" --copy=true > "$W/copy-$r.json"
  copies+=("$(jnum "$W/copy-$r.json" wall_s)")
  note "run $r: dd edges $e s + features $f s; pass read $(jnum "$W/read-$r.json" wall_s) s, copy $(jnum "$W/copy-$r.json" wall_s) s"
done
FLOOR=$(printf '%s\n' "${floors[@]}" | median)
READ=$(printf '%s\n' "${reads[@]}" | median)
COPY=$(printf '%s\n' "${copies[@]}" | median)
J=$W/copy-1.json
row "edges.chunks, features" "$(fmt "$CSIZE / 1e9" %.3f), $(fmt "$FSIZE / 1e9" %.3f)" GB "" "-"
row "floor: dd edges.chunks + dd features (O_DIRECT, bs=4M; median; runs: ${floors[*]})" "$FLOOR" s "" "-"
row "minibatches, edges, rows of every n_id" "$(jnum "$J" batches), $(jnum "$J" edges), $(jnum "$J" rows)" "" "" "-"
row "rows resident (one sweep)" "$(grep -o '"resident": *[a-z]*' "$J" | head -1 | awk '{print $2}')" "" "" "-"
row "pass, rows read once, x_all[n_id] left to the model (median; runs: ${reads[*]})" "$(fmt "$READ" %.3f)" s "" "-"
row "pass, every minibatch's x copied out (median; runs: ${copies[*]})" "$(fmt "$COPY" %.3f)" s "" "-"
row "copied rows' rate" "$(fmt "$(jnum "$J" rows) * $(jnum "$J" row_bytes) / $COPY / 1e9")" GB/s "" "-"
row "pass (rows read once) / floor" "$(fmt "$READ / $FLOOR" %.2f)" × "≤ 1.5" "$(pf "$READ <= 1.5 * $FLOOR")"
row "pass (x copied per minibatch) / floor" "$(fmt "$COPY / $FLOOR" %.2f)" × "≤ 1.5" "$(pf "$COPY <= 1.5 * $FLOOR")"
status=0
report "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg)), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo); R-MAT scale $SCALE (edge factor 16, symmetrized), chunks of $CHUNK, $DIM-dim float32 features, batch $BATCH, $WORKERS workers, page cache dropped: $DROPPED; commit $(git -C "$REPO" describe --always --dirty); \`SCALE=$SCALE bench/lwinfer.sh\`." "$W/lwinfer.md" || status=$?
exit $status
