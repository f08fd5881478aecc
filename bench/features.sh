#!/usr/bin/env bash
# bench/features.sh — issue 12's feature benchmark: one epoch of
# minibatches delivered with their feature rows to a Python consumer that
# touches every row, against what a user would do instead and against the
# I/O floor, inside a memory cgroup smaller than the features.
#
# R-MAT scale SCALE (22), edge factor 16, chunks of CHUNK (64MiB: a
# 512 MiB chunk, double-buffered, would take the whole cgroup), DIM (128)
# float32 features (`chunkify generate features`: 2 GiB at scale 22), 10%
# training nodes, batch 1024, [15,10,5]. Each variant runs in a fresh
# memory cgroup of CGROUP_LIMIT (1GiB; page cache included: the features
# are twice that), page cache dropped before it where permitted (the
# report says whether it was), server and consumer both
# inside; the server prepares one epoch at a time (--prepare-at 1) and
# keeps its Go heap to SERVER_MEM (GOMEMLIMIT; default half the cgroup:
# it shares the cgroup with the consumer, the shared-rows buffers and the
# page cache, where its own default assumes it is alone):
#
#   ours      serve --features --feature-cache CACHE; the consumer reads
#             batch.x (bench/features_consumer.py features)
#   reorder   the same with --reorder match
#   nocache   serve --features --feature-cache 0 (plan, no cache)
#   memmap    serve without features; the consumer gathers x[n_id] from a
#             numpy.memmap of the same rows (PyG's and DGL's on-disk path)
#   plain     run --epochs 1 without features (the epoch alone)
#   delivery  outside the cgroup, --feature-cache PRELOAD_CACHE (1GiB: the
#             epoch's distinct rows all fit, read in one sweep): how fast
#             the rows reach the consumer once they are in memory
#
# and the floor: the epoch's compulsory rows (distinct rows × row bytes,
# from run --features --json) at the O_DIRECT sequential read rate of the
# feature file (dd iflag=direct). Wall times are from the server's start
# to the consumer's last row (the epoch's sampling and planning included).
# Targets (issue 12): ours ≤ 1.5 × max(floor, plain); ours ≥ 5× faster
# than memmap; the consumer receives ≥ 2 GB/s of rows (delivery); the plan reads ≤
# 1.1× the bytes of Belady's MIN at page granularity; Match-Reorder's
# shared fraction ≥ 1.5× the unordered epoch's. Issue 23 (item 4) adds
# the disk's own limits, measured in the same run: one sequential
# O_DIRECT read of the feature file (dd) and fio's best random 4 KiB
# O_DIRECT read rate on it (io_uring at depth 16, 64 and 128, where fio is
# installed); ours ≤ 3× that sequential read; with OLD_SS (a streamsampler
# binary of another commit: today's executor, built in a temporary
# directory) ours ≥ 5× faster than the same variant run with it; and the
# random reads the plan still makes (run --features --json) at ≥ 0.8 of
# fio's rate. Prints a table with PASS/FAIL; BENCH_DIR/features.md is its
# markdown. Where a packed plan (featplan.PackTo) is 0.5 (bytes read vs the
# optimum) it is below 1.1 because it reads the file once, sequentially.
#
#   bench/features.sh
#   SCALE=20 CGROUP_LIMIT=512MiB bench/features.sh     # a quick look
#   CGROUP_LIMIT=none bench/features.sh                # no cgroup
#   git archive 8104dda --prefix=old/ | tar -x -C /tmp && (cd /tmp/old && go build -o /tmp/old/ss ./cmd/streamsampler)
#   CACHE=192MiB OLD_SS=/tmp/old/ss OLD_NAME=8104dda SKIP="reorder nocache memmap" bench/features.sh
#
# Environment: SCALE, DIM, CACHE (128MiB), CGROUP_LIMIT (1GiB or none),
# CHUNK (64MiB), SERVER_MEM (GOMEMLIMIT of the server), PRELOAD_CACHE,
# BENCH_DIR (/tmp/ss-features), BIN_DIR (prebuilt chunkify and
# streamsampler, for a machine without Go; default: go build), PY (/usr/bin/python3, with numpy), SEED (1),
# TIMEOUT (s per variant; 900: a variant still running is stopped and shown
# as "> TIMEOUT", a lower bound), KEEP=1 (keep the graph), OLD_SS (see
# above; OLD_NAME names it in the report), SKIP (variants left out, e.g.
# "reorder nocache memmap delivery").
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
. bench/figures.sh
. bench/cgroup.sh
SCALE=${SCALE:-22} DIM=${DIM:-128} CACHE=${CACHE:-128MiB} CGROUP_LIMIT=${CGROUP_LIMIT:-1GiB}
CHUNK=${CHUNK:-64MiB} PRELOAD_CACHE=${PRELOAD_CACHE:-1GiB}
if [[ -z ${SERVER_MEM:-} ]]; then
  if [[ $CGROUP_LIMIT == none ]]; then SERVER_MEM=off; else SERVER_MEM=$(( $(numfmt --from=iec-i "${CGROUP_LIMIT%B}") / 2 ))B; fi
fi
BENCH_DIR=${BENCH_DIR:-/tmp/ss-features} PY=${PY:-/usr/bin/python3} SEED=${SEED:-1} TIMEOUT=${TIMEOUT:-900}
die() { echo "features.sh: $*" >&2; exit 1; }
note() { echo "features.sh: $*" >&2; }
"$PY" -c 'import numpy' 2>/dev/null || die "$PY has no numpy (apt-get install python3-numpy, or PY=...)"
for t in dd awk timeout numfmt; do command -v "$t" >/dev/null || die "needs $t"; done
mkdir -p "$BENCH_DIR/bin"
W=$BENCH_DIR
if [[ -n ${BIN_DIR:-} ]]; then  # prebuilt (a machine without Go)
  cp "$BIN_DIR/chunkify" "$BIN_DIR/streamsampler" "$W/bin/"
else
  go build -o "$W/bin/" ./cmd/chunkify ./cmd/streamsampler
fi
CK=$W/bin/chunkify SS=$W/bin/streamsampler
ROWS=$W/rows.tsv
: > "$ROWS"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }
# drop: the page cache dropped before each variant where that is
# permitted; DROPPED records, as scale.sh does, whether every drop
# happened (the report's header says so: a variant that ran warm is not
# the measurement the header would otherwise claim).
DROPPED=yes
drop() {
  sync
  if ! (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
    [[ $DROPPED == no ]] || note "the page cache cannot be dropped here (not root?): variants run with whatever it holds"
    DROPPED=no
  fi
}

# --- the cgroup each variant runs in (none where unavailable or with
# CGROUP_LIMIT=none): CG is its directory.
CG=""
cg_new() {
  CG=""
  [[ $CGROUP_LIMIT == none ]] && return 0
  if cgroup_make "ss-features-$$" "$(numfmt --from=iec-i "${CGROUP_LIMIT%B}")"; then
    CG=$CUR_CGROUP
  else
    note "no memory cgroup ($CG_WHY): running without"
    cgroup_remove
  fi
}
cg_peak() { if [[ -z $CG ]]; then echo nan; else cgroup_stats; echo "$CG_PEAK"; fi; }
cg_oom() { if [[ -z $CG ]]; then echo 0; else cgroup_stats; echo "${CG_OOM:-0}"; fi; }
cg_rm() { [[ -n $CG ]] && { sleep 0.5; cgroup_remove; }; CG=""; }
# in_cg CMD...: runs CMD inside the current cgroup.
in_cg() { if [[ -n $CG ]]; then bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG" "$@"; else "$@"; fi; }
SRV=""
cleanup() { [[ -n $SRV ]] && kill "$SRV" 2>/dev/null; cg_rm; }
trap cleanup EXIT

# --- data.
G=$W/g-s$SCALE N=$((1 << SCALE))
if [[ ! -f $G/features.json ]]; then
  "$CK" generate rmat --scale "$SCALE" --edge-factor 16 --seed "$SEED" -o "$W/rmat.bin32" -q
  "$CK" build "$W/rmat.bin32" -o "$G" --symmetrize --force -q --chunk-size "$CHUNK"
  rm -f "$W/rmat.bin32"
  "$CK" generate features --graph "$G" --dim "$DIM" --classes 16 --labels "$W/labels.npy" --seed "$SEED" -o "$W/feat.npy" -q
  "$CK" features "$W/feat.npy" --labels "$W/labels.npy" -o "$G" -q
  rm -f "$W/feat.npy" "$W/labels.npy"
fi
FEAT=$(ls "$G"/features-*.bin)
"$PY" "$REPO/bench/scale_train.py" --nodes "$N" --fraction 0.1 --seed 7 -o "$W/train.npy"
STREAM=(--graph "$G" --train "$W/train.npy" --fanouts 15,10,5 --batch-size 1024 --seed "$SEED" --prepare-at 1)

skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }

# --- the floor, the disk's limits and the plan's figures (outside any cgroup).
drop
FREAD=$(dd if="$FEAT" of=/dev/null bs=4M iflag=direct 2>&1 | ddsecs)
FSIZE=$(stat -c %s "$FEAT")
# fio's best random 4 KiB O_DIRECT read rate on the feature file.
FIO=nan FIOQD=""
if command -v fio >/dev/null; then
  for qd in 16 64 128; do
    iops=$(fio --name=rand --filename="$FEAT" --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth="$qd" \
      --runtime=5 --time_based --output-format=terse --terse-version=3 2>/dev/null | awk -F';' '{print $8}')
    if [[ -n $iops ]] && { [[ $FIO == nan ]] || awk -v a="$iops" -v b="$FIO" 'BEGIN {exit !(a > b)}'; }; then FIO=$iops FIOQD=$qd; fi
  done
else
  note "no fio: the random-read limit is not measured (apt-get install fio)"
fi
"$SS" run "${STREAM[@]}" --epochs 1 --json --features --feature-cache "$CACHE" --reorder match > "$W/plan.json"
COMP=$(jnum "$W/plan.json" compulsory_bytes)
SB=$(jnum "$W/plan.json" shared_before) SA=$(jnum "$W/plan.json" shared_after) SBOUND=$(jnum "$W/plan.json" shared_bound)
VSOPT=$(jnum "$W/plan.json" vs_optimum) OPTB=$(jnum "$W/plan.json" optimum_bytes)
OPTFLOOR=$(fmt "$OPTB / ($FSIZE / $FREAD)" %.3f)
FLOOR=$(fmt "$COMP / ($FSIZE / $FREAD)" %.3f)

# serve_epoch NAME SERVE_FLAGS... -- CONSUMER_ARGS...: a server and one
# consumer in a fresh cgroup (none with NOCG=1); sets V_WALL, V_GBPS,
# V_PEAK, V_OOM, V_OK.
serve_epoch() {
  local name=$1 sflags=() cargs=() sock=$W/ss.sock t0 t1 out=$W/$1.json
  shift
  while [[ $1 != -- ]]; do sflags+=("$1"); shift; done
  shift
  cargs=("$@")
  rm -f "$sock" "$out"
  drop
  if [[ -n ${NOCG:-} ]]; then CG=""; else cg_new; fi
  t0=$(date +%s%N)
  (
    if [[ -n $CG ]]; then echo "$BASHPID" > "$CG/cgroup.procs"; export GOMEMLIMIT=$SERVER_MEM; fi
    exec "$SS" serve "${STREAM[@]}" --socket "$sock" -q "${sflags[@]}" > /dev/null
  ) & SRV=$!
  for _ in $(seq 600); do [[ -S $sock ]] && break; kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
  V_OK=1 V_TO=0
  in_cg timeout "$TIMEOUT" "$PY" "$REPO/bench/features_consumer.py" "$sock" "${cargs[@]}" > "$out" || { [[ $? == 124 ]] && V_TO=1; V_OK=0; }
  t1=$(date +%s%N)
  kill "$SRV" 2>/dev/null || true
  wait "$SRV" 2>/dev/null || true
  SRV=""
  V_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
  V_GBPS=$(jnum "$out" gbps); V_GBPS=${V_GBPS:-nan}
  V_PEAK=$(cg_peak) V_OOM=$(cg_oom)
  cg_rm
}

serve_epoch ours --features --feature-cache "$CACHE" -- features
OURS=$V_WALL; [[ $V_OK == 1 ]] || OURS=nan
row "ours (--feature-cache $CACHE)" "$(fmt "$OURS")" s "" "-"
row "  rows received by the consumer" "$(fmt "$V_GBPS")" GB/s "" "-"
row "  cgroup peak / OOM kills" "$(fmt "$V_PEAK / 1048576" %.0f) MiB / $V_OOM" "" "<= $CGROUP_LIMIT, 0" "$(pf "$V_OOM == 0 && $V_OK == 1")"
# wallrow LABEL: the variant's wall time; "> TIMEOUT" where it ran out.
wallrow() { if [[ $V_OK == 1 ]]; then row "$1" "$(fmt "$V_WALL")" s "" "-"; elif [[ $V_TO == 1 ]]; then row "$1" "> $TIMEOUT" s "" "stopped"; else row "$1" nan s "" "FAIL"; fi; }
if [[ -n ${OLD_SS:-} ]]; then
  # The same variant with another commit's binary (today's executor).
  NEW_SS=$SS SS=$OLD_SS
  serve_epoch old --features --feature-cache "$CACHE" -- features
  SS=$NEW_SS
  OLD=$V_WALL OLDLB=""; [[ $V_OK == 1 ]] || OLD=nan
  [[ $V_TO == 1 ]] && OLD=$TIMEOUT OLDLB=">= "
  wallrow "the same with OLD_SS (${OLD_NAME:-$OLD_SS})"
  row "OLD_SS / ours" "$OLDLB$(fmt "$OLD / $OURS")" x ">= 5 (issue 23)" "$(pf "$OLD / $OURS >= 5")"
fi
if ! skip reorder; then
  serve_epoch reorder --features --feature-cache "$CACHE" --reorder match -- features
  row "ours with --reorder match" "$( [[ $V_OK == 1 ]] && fmt "$V_WALL" || echo nan)" s "" "-"
fi
if ! skip nocache; then
  serve_epoch nocache --features --feature-cache 0 -- features
  wallrow "ours, cache off (--feature-cache 0: one read per minibatch's run of rows)"
fi
MM=nan MMLB=""
if ! skip memmap; then
  serve_epoch memmap -- memmap "$FEAT" "$N" "$DIM"
  MM=$V_WALL; [[ $V_OK == 1 ]] || MM=nan
  [[ $V_TO == 1 ]] && MM=$TIMEOUT MMLB=">= "
  wallrow "numpy.memmap x[n_id] (PyG/DGL on-disk path)"
fi
drop
cg_new
t0=$(date +%s%N)
in_cg "$SS" run "${STREAM[@]}" --epochs 1 > /dev/null && PLAIN=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}') || PLAIN=nan
cg_rm
row "the same epoch without features (run)" "$(fmt "$PLAIN")" s "" "-"
row "I/O floor: compulsory $(fmt "$COMP / 1048576" %.0f) MiB at $(fmt "$FSIZE / $FREAD / 1e9") GB/s" "$FLOOR" s "" "-"
row "  the optimum's bytes for this cache ($(fmt "$OPTB / 1048576" %.0f) MiB) at that rate" "$OPTFLOOR" s "" "-"
LIM=$(fmt "1.5 * ($FLOOR > $PLAIN ? $FLOOR : $PLAIN)")
row "ours / max(floor, without features)" "$(fmt "$OURS / ($LIM / 1.5)")" x "<= 1.5" "$(pf "$OURS <= $LIM")"
skip memmap || row "memmap / ours" "$MMLB$(fmt "$MM / $OURS")" x ">= 5" "$(pf "$MM / $OURS >= 5")"
row "one sequential O_DIRECT read of the feature file (dd bs=4M)" "$(fmt "$FREAD")" s "" "-"
row "ours / that read" "$(fmt "$OURS / $FREAD")" x "<= 3 (issue 23)" "$(pf "$OURS <= 3 * $FREAD")"
row "fio: random 4 KiB O_DIRECT reads of the feature file, best of depth 16/64/128 (io_uring)" "$(fmt "$FIO / 1000" %.1f) k${FIOQD:+ at $FIOQD}" reads/s "" "-"
# The plan's own reads (run --features --json above): a packed plan's
# are its sweep (sequential); the random reads that remain are the
# others'.
freads() { "$PY" -c 'import json, sys; f = json.load(open(sys.argv[1]))["features"]; print(f["reads"].get(sys.argv[2], f.get(sys.argv[2], 0)))' "$W/plan.json" "$1" 2>/dev/null || echo nan; }
PACKED=$(freads packed_rows) PREADS=$(freads reads) PREADS_S=$(freads read_s) PACKS=$(freads pack_s)
if [[ $PACKED != 0 ]]; then
  row "the plan's misses packed: rows / sweep of the file" "$PACKED / $(fmt "${PACKS:-nan}")" "rows / s" "" "-"
  row "  random reads that remain" 0 reads "" "-"
else
  row "the plan's random reads: reads / time in the reader (copies included)" "$(fmt "$PREADS / $PREADS_S / 1000" %.1f) k" reads/s ">= 0.8 fio" "$(pf "$PREADS / $PREADS_S >= 0.8 * $FIO")"
fi
if ! skip delivery; then
  NOCG=1 serve_epoch delivery --features --feature-cache "$PRELOAD_CACHE" -- features
  row "delivery: rows received, all in memory (--feature-cache $PRELOAD_CACHE, no cgroup)" "$( [[ $V_OK == 1 ]] && fmt "$V_GBPS" || echo nan)" GB/s ">= 2" "$(pf "$V_GBPS >= 2 && $V_OK == 1")"
fi
row "bytes read / MIN optimum (page-rounded, same cache)" "$(fmt "$VSOPT" %.3f)" x "<= 1.1" "$(pf "$VSOPT <= 1.1")"
row "Match-Reorder shared fraction (after / before)" "$(fmt "$SA") / $(fmt "$SB")" "" ">= 1.5x" "$(pf "$SA >= 1.5 * $SB")"
row "  any order, estimated bound (best predecessor each)" "$(fmt "$SBOUND")" "" "" "-"

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
status=0
report "Measured $DATE on $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo); scale $SCALE, $DIM-dim float32 ($(fmt "$FSIZE / 1073741824") GiB), chunks of $CHUNK, cgroup $CGROUP_LIMIT (server heap $SERVER_MEM), cache $CACHE, page cache dropped before each variant: $DROPPED; commit $(git -C "$REPO" describe --always --dirty); \`bench/features.sh\`." "$W/features.md" || status=$?
[[ -n ${KEEP:-} ]] || rm -rf "$G"
exit $status
