#!/usr/bin/env bash
# bench/scale.sh — the scale benchmark of issue 11: how chunkify's build and
# one epoch of the sampler grow from R-MAT scale 20 to 26 (and 27).
#
# For each scale (default 20 22 24 26, edge factor 16; --papers100m adds
# scale 27 at edge factor 12, ogbn-papers100M's size, ≈ 40 GB of disk):
#
#   generate   chunkify generate rmat (bin32, seed SEED); not timed against
#              any target.
#   floor      the I/O floor, measured in the same run: one O_DIRECT
#              sequential read of the input (dd iflag=direct) plus one
#              O_DIRECT sequential write + fsync of the output's size
#              (dd oflag=direct conv=fsync); medians of RUNS.
#   build      chunkify build INPUT --symmetrize --json: wall, user+sys,
#              peak RSS (GNU time), bytes the process read and wrote
#              (read_bytes/write_bytes of its /proc/self/io, printed by
#              build --json; GNU time's file system blocks × 512, the same
#              kernel counters, for a chunkify without them).
#   epoch      streamsampler run --epochs 1 --fanouts 15,10,5
#              --batch-size 1024 over a training set of 10% of the nodes
#              (seeded; bench/scale_train.py, or awk without numpy): wall
#              from process start (graph open included), user+sys, peak
#              RSS, assembled edges and edges/s (run --json's edges and
#              assemble_s).
#   cgroup     at CGROUP_SCALE (default 26): the build again inside a memory
#              cgroup of CGROUP_LIMIT (default 4GiB; page cache included)
#              with --memory CGROUP_BUDGET (default 3GiB). cgroup v1
#              (memory.limit_in_bytes, + memsw where present) or v2
#              (memory.max, memory.swap.max); skipped with a message where
#              neither can be created.
#   text       at TEXT_SCALE (default 22; "none" skips): the same edges as
#              text, page cache warm, runs interleaved: wc -l; chunkify
#              scan (the parse pass: every line parsed and checked,
#              nothing stored), whose rate must reach 25% of wc -l's; the
#              text build against the bin32 build (≤ 1.3×), and their
#              outputs compared byte for byte.
#   growth     log-log slopes of build wall vs stored edges and of epoch
#              wall vs assembled edges between consecutive scales, and the
#              epoch wall per assembled edge at scale 24 over scale 20.
#
# Every figure is printed tab-aligned with PASS/FAIL against the targets of
# issue 11 ("-" where the issue sets none for that scale); a markdown
# summary goes to BENCH_DIR/scale.md and, with --json or JSON=1, a JSON
# document to BENCH_DIR/scale.json (and stdout, instead of the table).
#
# The page cache is dropped (sync; echo 3 > /proc/sys/vm/drop_caches)
# before each floor, build and epoch where that is permitted
# (DROP_CACHES=auto|yes|no); the report says whether it was.
#
#   bench/scale.sh                        # 20 22 24 26 (hours; ≈ 30 GB at 26)
#   bench/scale.sh --papers100m           # also 27 at edge factor 12
#   SCALES="20 22" bench/scale.sh --json  # a quick look
#   SCALES=20 CGROUP_SCALE=20 CGROUP_LIMIT=256MiB CGROUP_BUDGET=160MiB bench/scale.sh
#
# Environment: SCALES (words S or S:EF; default "20 22 24 26"), SEED (1),
# TRAIN_SEED (7), RUNS (medians of; default 3 up to scale 22, 1 above),
# BENCH_DIR (/tmp/ss-scale), CHUNKIFY, STREAMSAMPLER (prebuilt binaries;
# default: go build into BENCH_DIR/bin), MEMORY (--memory of the plain
# builds; default chunkify's auto), CHUNK (--chunk-size; default chunkify's),
# BUILD_TIMEOUT (s, per build; 7200), EPOCH_TIMEOUT (s; 3600),
# CGROUP_SCALE (26; "none" skips), CGROUP_LIMIT, CGROUP_BUDGET, TEXT_SCALE
# (22; "none" skips),
# DISK_RESERVE (free space a scale must leave on BENCH_DIR's disk: 20GiB;
# a build is stopped if free space falls below half of it), KEEP=1 (keep
# inputs and graphs), DROP_CACHES, JSON=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/figures.sh
. bench/cgroup.sh
REPO=$(pwd)

SCALES=${SCALES:-20 22 24 26}
JSON=${JSON:-}
for a in "$@"; do
  case $a in
    --papers100m) SCALES="$SCALES 27:12" ;;
    --json) JSON=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale.sh: unknown argument $a (want --papers100m, --json or --help)" >&2; exit 2 ;;
  esac
done
SEED=${SEED:-1}
TRAIN_SEED=${TRAIN_SEED:-7}
BENCH_DIR=${BENCH_DIR:-/tmp/ss-scale}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-7200}
EPOCH_TIMEOUT=${EPOCH_TIMEOUT:-3600}
CGROUP_SCALE=${CGROUP_SCALE:-26}
TEXT_SCALE=${TEXT_SCALE:-22}
CGROUP_LIMIT=${CGROUP_LIMIT:-4GiB}
CGROUP_BUDGET=${CGROUP_BUDGET:-3GiB}
DISK_RESERVE=${DISK_RESERVE:-20GiB}
DROP_CACHES=${DROP_CACHES:-auto}
PY=${PY:-/usr/bin/python3}
RUNS_ENV=${RUNS:-}

die() { echo "scale.sh: $*" >&2; exit 1; }
note() { echo "scale.sh: $*" >&2; }
# bytes SIZE: 4GiB, 256MiB, 4G (binary units) or a plain number of bytes.
bytes() { numfmt --from=iec-i "${1%B}" 2>/dev/null || numfmt --from=iec "${1%B}" 2>/dev/null || die "bad size $1 (want e.g. 4GiB, 256MiB)"; }

[[ -x /usr/bin/time ]] || die "needs GNU time for wall, CPU and peak RSS: apt-get install time"
for t in dd numfmt setsid timeout column awk df cmp; do
  command -v "$t" >/dev/null || die "needs $t on PATH"
done
CGROUP_LIMIT_B=$(bytes "$CGROUP_LIMIT")
DISK_RESERVE_B=$(bytes "$DISK_RESERVE")

mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
W=$BENCH_DIR/work
mkdir -p "$W" "$BENCH_DIR/bin"
ROWS=$BENCH_DIR/rows.tsv # scale, figure, value, unit, target, result
: > "$ROWS"

CHUNKIFY=${CHUNKIFY:-}
STREAMSAMPLER=${STREAMSAMPLER:-}
if [[ -z "$CHUNKIFY" || -z "$STREAMSAMPLER" ]]; then
  go build -o "$BENCH_DIR/bin/" ./cmd/chunkify ./cmd/streamsampler
  CHUNKIFY=${CHUNKIFY:-$BENCH_DIR/bin/chunkify}
  STREAMSAMPLER=${STREAMSAMPLER:-$BENCH_DIR/bin/streamsampler}
fi

# --- page cache --------------------------------------------------------------
case $DROP_CACHES in
  auto) if sync && (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then DROP=yes; else DROP=no; fi ;;
  yes) (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null || die "DROP_CACHES=yes but /proc/sys/vm/drop_caches is not writable (run as root, or DROP_CACHES=no)"; DROP=yes ;;
  no) DROP=no ;;
  *) die "DROP_CACHES=$DROP_CACHES: want auto, yes or no" ;;
esac
[[ $DROP == yes ]] || note "the page cache cannot be dropped here (not root?): builds and epochs run with whatever it holds; the floors use O_DIRECT and do not depend on it"
drop_caches() { if [[ $DROP == yes ]]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }

# --- the process being measured, and clean-up ---------------------------------
CUR_PID=""      # session (process group) of the measured command
CUR_CGROUP=""   # cgroup directory made by this script
# stop_measured: SIGTERM to the measured command (which removes its
# temporaries), SIGKILL 10 s later if it is still there. timeout runs in a
# process group of its own, so GNU time's group does not reach it.
stop_measured() {
  local t
  [[ -n "$CUR_PID" ]] && kill -0 "$CUR_PID" 2>/dev/null || return 0
  t=$(pgrep -P "$CUR_PID" || true)
  [[ -z "$t" ]] || kill -TERM -- "-$t" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 "$CUR_PID" 2>/dev/null || return 0
    sleep 1
  done
  note "the measured command ignored SIGTERM for 10 s: SIGKILL"
  [[ -z "$t" ]] || kill -KILL -- "-$t" 2>/dev/null || true
  kill -KILL "$CUR_PID" 2>/dev/null || true
}
cleanup() {
  stop_measured
  if [[ -n "$CUR_CGROUP" && -d "$CUR_CGROUP" ]]; then
    sleep 1
    rmdir "$CUR_CGROUP" 2>/dev/null || note "could not remove cgroup $CUR_CGROUP (processes left in it?)"
  fi
  rm -f "$W/floor.tmp"
}
trap cleanup EXIT
trap 'note "interrupted"; exit 130' INT TERM

free_bytes() { df -B1 --output=avail "$BENCH_DIR" | tail -n 1 | tr -d ' '; }

# measure OUT TIMEOUT CGROUP CMD...: runs CMD (stdout to OUT) under GNU time
# and timeout, in its own session, inside cgroup directory CGROUP unless
# it is ""; stops it if BENCH_DIR's free space falls below half of
# DISK_RESERVE. Sets M_RC (exit status; 124 timed out), M_WHY ("" or why it
# failed), M_WALL, M_CPU (user+sys s), M_RSS (bytes), M_FSIN, M_FSOUT (bytes,
# getrusage's blocks × 512).
measure() {
  local out=$1 tmo=$2 cg=$3 tf=$W/time.txt low=$((DISK_RESERVE_B / 2)) stopped=""
  shift 3
  rm -f "$tf"
  # shellcheck disable=SC2016 # $$ and $1 belong to the inner shell
  setsid bash -c 'if [[ -n $1 ]]; then echo $$ > "$1/cgroup.procs" || { echo "scale.sh: cannot join cgroup $1" >&2; exit 125; }; fi; shift; exec "$@"' _ "$cg" \
    /usr/bin/time -v -o "$tf" timeout -k 10 "$tmo" "$@" > "$out" &
  CUR_PID=$!
  while kill -0 "$CUR_PID" 2>/dev/null; do
    if (( $(free_bytes) < low )); then
      stopped="free space on $BENCH_DIR fell below $((low >> 30)) GiB"
      note "$stopped: stopping $*"
      stop_measured
      break
    fi
    sleep 1
  done
  M_RC=0
  wait "$CUR_PID" || M_RC=$?
  CUR_PID=""
  M_WHY=$stopped
  if [[ -z "$M_WHY" && $M_RC == 124 ]]; then M_WHY="timed out after $tmo s"; fi
  if [[ -z "$M_WHY" && $M_RC != 0 ]]; then M_WHY="exit status $M_RC"; fi
  M_WALL=nan M_CPU=nan M_RSS=nan M_FSIN=nan M_FSOUT=nan
  [[ -s "$tf" ]] || return 0
  M_WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$tf")
  M_CPU=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f\n", s}' "$tf")
  # mawk prints numbers past 2^31 as %.6g: every byte count goes through %.0f.
  M_RSS=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f\n", $2 * 1024}' "$tf")
  M_FSIN=$(awk -F': ' '/File system inputs/ {printf "%.0f\n", $2 * 512}' "$tf")
  M_FSOUT=$(awk -F': ' '/File system outputs/ {printf "%.0f\n", $2 * 512}' "$tf")
}

# row SCALE FIGURE VALUE UNIT TARGET RESULT
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }

# floor INPUT OUTBYTES: sets F_READ, F_WRITE (s, medians of RUNS).
floor() {
  local in=$1 n=$(($2 / 4194304 + 1)) rs=() ws=() r
  for ((r = 0; r < RUNS; r++)); do
    drop_caches
    rs+=("$(dd if="$in" of=/dev/null bs=4M iflag=direct 2>&1 | ddsecs)")
    ws+=("$(dd if=/dev/zero of="$W/floor.tmp" bs=4M count="$n" oflag=direct conv=fsync 2>&1 | ddsecs)")
    rm -f "$W/floor.tmp"
  done
  F_READ=$(printf '%s\n' "${rs[@]}" | median)
  F_WRITE=$(printf '%s\n' "${ws[@]}" | median)
}

# trainset NODES FILE: 10% of the node ids, seeded, sorted; .npy with numpy,
# else text from awk (sets TRAIN to the file written).
trainset() {
  if "$PY" -c 'import numpy' 2>/dev/null; then
    TRAIN=$2.npy
    "$PY" "$REPO/bench/scale_train.py" --nodes "$1" --fraction 0.1 --seed "$TRAIN_SEED" -o "$TRAIN"
  else
    # Selection sampling (Knuth's algorithm S): exactly k of n, in order.
    TRAIN=$2.txt
    awk -v n="$1" -v seed="$TRAIN_SEED" 'BEGIN {srand(seed); k = int(n / 10); for (i = 0; i < n && k > 0; i++) if (rand() * (n - i) < k) {print i; k--}}' > "$TRAIN"
  fi
}

# build IN OUT CGROUP MEMORY: one chunkify build, measured; sets B_* figures.
build() {
  local in=$1 out=$2 cg=$3 mem=$4 args=()
  args=(build "$in" -o "$out" --symmetrize --force --quiet --json)
  [[ -n "$mem" ]] && args+=(--memory "$mem")
  [[ -n "${CHUNK:-}" ]] && args+=(--chunk-size "$CHUNK")
  rm -rf "$out"
  drop_caches
  measure "$W/build.json" "$BUILD_TIMEOUT" "$cg" "$CHUNKIFY" "${args[@]}"
  B_RC=$M_RC B_WHY=$M_WHY B_WALL=$M_WALL B_CPU=$M_CPU B_RSS=$M_RSS
  B_READ=$(jnum "$W/build.json" read_bytes); B_WRITE=$(jnum "$W/build.json" write_bytes)
  B_IOSRC="/proc/self/io"
  if [[ -z "$B_READ" || -z "$B_WRITE" ]]; then
    B_READ=$M_FSIN B_WRITE=$M_FSOUT B_IOSRC="getrusage"
  fi
  B_EDGES=$(jnum "$W/build.json" num_edges); B_EDGES=${B_EDGES:-nan}
  B_BUDGET=$(jnum "$W/build.json" memory_budget); B_BUDGET=${B_BUDGET:-nan}
  B_OUT=nan
  if [[ $B_RC == 0 && -d "$out" ]]; then
    B_OUT=$(du -sb "$out" | cut -f1)
  else
    # A build stopped by SIGKILL (timeout, OOM) cannot remove its hidden
    # temporary directory beside the output; its spill files are big.
    rm -rf "$(dirname "$out")/.$(basename "$out").tmp-"*
  fi
  return 0
}

# secs CMD...: runs CMD (output discarded) and prints its wall seconds
# (nanosecond clock: wc -l takes a tenth of a second, below GNU time's
# resolution).
secs() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" > /dev/null || die "$* failed"
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", (b - a) / 1e9}'
}

# text_step: at TEXT_SCALE, the same R-MAT edges as text; page cache warm
# for every figure (as after a download), runs interleaved, medians of
# RUNS: wc -l; chunkify scan (the parse pass: every line parsed and
# checked, nothing stored); chunkify build of the text and of the bin32
# input. Rows: the parse pass's rate as a percentage of wc -l's, and the
# text build over the bin32 build, and that both builds stored the same
# bytes.
text_step() {
  local txt=$W/rmat-s$S-e$EF-$SEED.txt gt=$W/g-$label-text gb=$W/g-$label-bin r
  local wcs=() scans=() tbs=() bbs=()
  measure /dev/null "$BUILD_TIMEOUT" "" "$CHUNKIFY" generate rmat --scale "$S" --edge-factor "$EF" --seed "$SEED" --format text -o "$txt" --quiet
  [[ $M_RC == 0 ]] || die "chunkify generate rmat --format text --scale $S: $M_WHY"
  cat "$txt" "$IN" > /dev/null
  for ((r = 0; r < RUNS; r++)); do
    wcs+=("$(secs wc -l "$txt")")
    scans+=("$(secs "$CHUNKIFY" scan "$txt" --quiet)")
    tbs+=("$(secs "$CHUNKIFY" build "$txt" -o "$gt" --symmetrize --force --quiet)")
    bbs+=("$(secs "$CHUNKIFY" build "$IN" -o "$gb" --symmetrize --force --quiet)")
  done
  local wc scan tb bb pct same
  wc=$(printf '%s\n' "${wcs[@]}" | median)
  scan=$(printf '%s\n' "${scans[@]}" | median)
  tb=$(printf '%s\n' "${tbs[@]}" | median)
  bb=$(printf '%s\n' "${bbs[@]}" | median)
  pct=$(fmt "100 * $wc / $scan" %.1f)
  row "$label" "text input" "$(stat -c %s "$txt")" B "" "-"
  row "$label" "text: wc -l (page cache warm)" "$(fmt "$wc" %.3f)" s "" "-"
  row "$label" "text: parse pass (chunkify scan)" "$(fmt "$scan" %.3f)" s "" "-"
  row "$label" "text: parse pass rate / wc -l rate" "$pct" % ">= 25" "$(pf "$pct >= 25")"
  row "$label" "text: build (warm)" "$(fmt "$tb")" s "" "-"
  row "$label" "text: bin32 build (warm, same runs)" "$(fmt "$bb")" s "" "-"
  row "$label" "text build / bin32 build" "$(fmt "$tb / $bb")" x "<= 1.3" "$(pf "$tb / $bb <= 1.3")"
  same=FAIL
  cmp -s "$gt/edges.chunks" "$gb/edges.chunks" && cmp -s "$gt/chunks.info" "$gb/chunks.info" && same=PASS
  row "$label" "text and bin32 builds byte-identical (edges.chunks, chunks.info)" "" "" identical "$same"
  rm -rf "$txt" "$gt" "$gb"
}

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
MACHINE="$(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, $(uname -sr), disk $(df -h "$BENCH_DIR" | awk 'NR == 2 {print $1 " (" $4 " free)"}')"
COMMIT=$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo unknown)
note "$DATE; $MACHINE; load $(cut -d' ' -f1-3 /proc/loadavg); commit $COMMIT; page cache dropped: $DROP"

declare -A EP_WALL EP_EDGES BD_WALL BD_EDGES
DONE_SCALES=()
for spec in $SCALES; do
  S=${spec%%:*}; EF=16
  [[ $spec == *:* ]] && EF=${spec#*:}
  [[ $S =~ ^[0-9]+$ && $EF =~ ^[0-9]+$ && $S -ge 10 && $S -le 31 ]] || die "SCALES word $spec: want SCALE or SCALE:EDGE_FACTOR (10 <= SCALE <= 31)"
  RUNS=$RUNS_ENV
  [[ -n "$RUNS" ]] || { if ((S <= 22)); then RUNS=3; else RUNS=1; fi; }
  NODES=$((1 << S)) EDGES=$((EF << S))
  IN_B=$((EDGES * 8))
  # Input, output (2 × EDGES × 4 B symmetrized) and build temporaries of
  # about the input's size, plus the reserve.
  NEED=$((3 * IN_B + DISK_RESERVE_B)) FREE=$(free_bytes)
  label="s$S"; [[ $EF != 16 ]] && label="s$S-e$EF"
  if ((FREE < NEED)); then
    note "scale $S (edge factor $EF) needs ≈ $((3 * IN_B >> 30)) GiB (input $((IN_B >> 30)) GiB, output ≈ as much, build temporaries up to as much) plus DISK_RESERVE=$DISK_RESERVE kept free; $BENCH_DIR has $((FREE >> 30)) GiB free: skipped (set BENCH_DIR to a larger disk, or lower DISK_RESERVE)"
    row "$label" "skipped" "disk" "" "" "SKIP"
    continue
  fi
  echo "== scale $S, edge factor $EF: $NODES nodes, $EDGES edges (RUNS=$RUNS)" >&2
  IN=$W/rmat-s$S-e$EF-$SEED.bin32 G=$W/g-$label
  if [[ ! -s "$IN.done" ]]; then
    rm -f "$IN"
    measure /dev/null "$BUILD_TIMEOUT" "" "$CHUNKIFY" generate rmat --scale "$S" --edge-factor "$EF" --seed "$SEED" -o "$IN" --quiet
    [[ $M_RC == 0 ]] || die "chunkify generate rmat --scale $S: $M_WHY"
    echo "$M_WALL" > "$IN.done"
  fi
  row "$label" "generate wall" "$(fmt "$(cat "$IN.done")")" s "" "-"
  row "$label" "input (bin32)" "$(stat -c %s "$IN")" B "" "-"

  # --- build, then the floor for its output size.
  walls=() rsss=()
  for ((r = 0; r < RUNS; r++)); do
    build "$IN" "$G" "" "${MEMORY:-}"
    [[ $B_RC == 0 ]] || break
    walls+=("$B_WALL"); rsss+=("$B_RSS")
  done
  if [[ $B_RC != 0 ]]; then
    row "$label" "build" "$B_WHY" "" "completes" FAIL
    note "scale $S build failed ($B_WHY): no epoch at this scale"
    rm -rf "$G"
    [[ -n "${KEEP:-}" ]] || rm -f "$IN" "$IN.done"
    continue
  fi
  B_WALL=$(printf '%s\n' "${walls[@]}" | median)
  B_RSS=$(printf '%s\n' "${rsss[@]}" | sort -g | tail -n 1)
  floor "$IN" "$B_OUT"
  FLOOR=$(fmt "$F_READ + $F_WRITE" %.3f)
  RATIO=$(fmt "$B_WALL / $FLOOR" %.3f)
  WR=$(fmt "$B_WRITE / $B_OUT" %.3f)
  RSSLIM=$(fmt "$B_BUDGET + 16 * $NODES" %.0f)
  BD_WALL[$label]=$B_WALL BD_EDGES[$label]=$B_EDGES
  row "$label" "build wall" "$(fmt "$B_WALL")" s "" "-"
  row "$label" "build user+sys" "$(fmt "$B_CPU")" s "" "-"
  row "$label" "stored edges" "$B_EDGES" "" "" "-"
  row "$label" "output" "$B_OUT" B "" "-"
  row "$label" "I/O floor (read $(fmt "$F_READ") s + write $(fmt "$F_WRITE") s)" "$(fmt "$FLOOR")" s "" "-"
  if [[ $S == 22 || $S == 26 ]]; then
    row "$label" "build / I/O floor" "$(fmt "$RATIO")" x "<= 3" "$(pf "$RATIO <= 3")"
  else
    row "$label" "build / I/O floor" "$(fmt "$RATIO")" x "" "-"
  fi
  row "$label" "build read_bytes ($B_IOSRC)" "$B_READ" B "" "-"
  row "$label" "build write_bytes ($B_IOSRC)" "$B_WRITE" B "" "-"
  row "$label" "build written / output" "$(fmt "$WR")" x "<= 3" "$(pf "$WR <= 3")"
  row "$label" "build peak RSS" "$(fmt "$B_RSS / 1048576" %.0f)" MiB "<= budget $(fmt "$B_BUDGET / 1048576" %.0f) MiB + 16 B x nodes = $(fmt "$RSSLIM / 1048576" %.0f) MiB" "$(pf "$B_RSS <= $RSSLIM")"
  if [[ $S == 27 ]]; then row "$label" "build completes" yes "" completes PASS; fi

  # --- text input at TEXT_SCALE: the parser against wc -l, the text build
  # against the bin32 build of the same edges.
  if [[ $S == "$TEXT_SCALE" ]]; then
    text_step
  fi

  # --- one epoch.
  trainset "$NODES" "$W/train-s$S"
  ewalls=() ecpus=() erss=0
  for ((r = 0; r < RUNS; r++)); do
    drop_caches
    measure "$W/run.json" "$EPOCH_TIMEOUT" "" "$STREAMSAMPLER" run --graph "$G" --train "$TRAIN" \
      --fanouts 15,10,5 --batch-size 1024 --epochs 1 --json
    [[ $M_RC == 0 ]] || break
    ewalls+=("$M_WALL"); ecpus+=("$M_CPU")
    [[ $(pf "$M_RSS > $erss") == PASS ]] && erss=$M_RSS
  done
  if [[ $M_RC != 0 ]]; then
    row "$label" "epoch" "$M_WHY" "" "completes" FAIL
  else
    E_WALL=$(printf '%s\n' "${ewalls[@]}" | median)
    E_CPU=$(printf '%s\n' "${ecpus[@]}" | median)
    E_EDGES=$(jnum "$W/run.json" edges)
    E_ASM=$(jnum "$W/run.json" assemble_s)
    E_SAMPLE=$(jnum "$W/run.json" sample_s)
    EP_WALL[$label]=$E_WALL EP_EDGES[$label]=$E_EDGES
    CPUX=$(fmt "$E_CPU / $E_WALL" %.3f)
    if [[ $S == 22 ]]; then
      row "$label" "epoch wall (from process start)" "$(fmt "$E_WALL")" s "<= 1.5" "$(pf "$E_WALL <= 1.5")"
      row "$label" "epoch user+sys / wall" "$(fmt "$CPUX")" x ">= 1.6" "$(pf "$CPUX >= 1.6")"
    else
      row "$label" "epoch wall (from process start)" "$(fmt "$E_WALL")" s "$([[ $S == 26 || $S == 27 ]] && echo completes)" "$([[ $S == 26 || $S == 27 ]] && echo PASS || echo -)"
      row "$label" "epoch user+sys / wall" "$(fmt "$CPUX")" x "" "-"
    fi
    row "$label" "epoch user+sys" "$(fmt "$E_CPU")" s "" "-"
    row "$label" "epoch sample_s (first epoch, before the first minibatch)" "$(fmt "$E_SAMPLE")" s "" "-"
    row "$label" "epoch assemble_s" "$(fmt "$E_ASM")" s "" "-"
    row "$label" "epoch assembled edges" "$E_EDGES" "" "" "-"
    row "$label" "epoch assembled edges/s" "$(fmt "$E_EDGES / $E_ASM / 1e6")" M/s "" "-"
    row "$label" "epoch wall per assembled edge" "$(fmt "$E_WALL / $E_EDGES * 1e9")" ns "" "-"
    row "$label" "epoch peak RSS" "$(fmt "$erss / 1048576" %.0f)" MiB "" "-"
  fi

  # --- the build again inside a memory cgroup.
  if [[ $CGROUP_SCALE == "$S" ]]; then
    rm -rf "$G"
    if cgroup_make "ss-scale-$$" "$CGROUP_LIMIT_B"; then
      build "$IN" "$G" "$CUR_CGROUP" "$CGROUP_BUDGET"
      cgroup_stats
      cgroup_remove
      what="cgroup $CG_KIND $CGROUP_LIMIT, --memory $CGROUP_BUDGET"
      if [[ $B_RC != 0 ]]; then
        row "$label" "build in $what" "$B_WHY (oom kills $CG_OOM)" "" "completes" FAIL
      else
        CR=$(fmt "$B_WALL / $FLOOR" %.3f)
        row "$label" "build in $what: wall" "$(fmt "$B_WALL")" s "" "-"
        row "$label" "build in $what: / I/O floor" "$(fmt "$CR")" x "<= 4" "$(pf "$CR <= 4")"
        row "$label" "build in $what: cgroup peak (page cache included)" "$(fmt "$CG_PEAK / 1048576" %.0f)" MiB "<= $(fmt "$CGROUP_LIMIT_B / 1048576" %.0f)" "$(pf "$CG_PEAK <= $CGROUP_LIMIT_B")"
        row "$label" "build in $what: peak RSS" "$(fmt "$B_RSS / 1048576" %.0f)" MiB "" "-"
        row "$label" "build in $what: write_bytes" "$B_WRITE" B "" "-"
        row "$label" "build in $what: stored edges (as outside)" "$B_EDGES" "" "${BD_EDGES[$label]}" "$(pf "$B_EDGES == ${BD_EDGES[$label]}")"
      fi
    else
      note "cgroup build skipped: $CG_WHY"
      row "$label" "build in cgroup $CGROUP_LIMIT" "skipped: $CG_WHY" "" "" SKIP
      cgroup_remove
    fi
  fi
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$G" "$IN" "$IN.done" "$TRAIN"; fi
  DONE_SCALES+=("$label")
done

# --- growth between consecutive scales.
prev=""
for l in "${DONE_SCALES[@]}"; do
  if [[ -n "$prev" ]]; then
    if [[ -n "${BD_WALL[$l]:-}" && -n "${BD_WALL[$prev]:-}" ]]; then
      row "$prev->$l" "build growth exponent (wall vs stored edges)" "$(fmt "log(${BD_WALL[$l]} / ${BD_WALL[$prev]}) / log(${BD_EDGES[$l]} / ${BD_EDGES[$prev]})")" "" "" "-"
    fi
    if [[ -n "${EP_WALL[$l]:-}" && -n "${EP_WALL[$prev]:-}" ]]; then
      row "$prev->$l" "epoch growth exponent (wall vs assembled edges)" "$(fmt "log(${EP_WALL[$l]} / ${EP_WALL[$prev]}) / log(${EP_EDGES[$l]} / ${EP_EDGES[$prev]})")" "" "" "-"
    fi
  fi
  prev=$l
done
if [[ -n "${EP_WALL[s24]:-}" && -n "${EP_WALL[s20]:-}" ]]; then
  G24=$(fmt "(${EP_WALL[s24]} / ${EP_EDGES[s24]}) / (${EP_WALL[s20]} / ${EP_EDGES[s20]})" %.3f)
  row "s20->s24" "epoch wall per assembled edge, 24 over 20" "$(fmt "$G24")" x "<= 1.15" "$(pf "$G24 <= 1.15")"
fi

# --- reports.
MD=$BENCH_DIR/scale.md
{
  echo "Measured $DATE on $MACHINE; load $(cut -d' ' -f1-3 /proc/loadavg) at the end; commit $COMMIT; page cache dropped before each floor, build and epoch: $DROP; \`SCALES=\"$SCALES\" bench/scale.sh\`."
  echo
  echo "| scale | figure | value | unit | target | result |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}' "$ROWS"
} > "$MD"
if [[ -n "$JSON" ]]; then
  awk -F'\t' -v date="$DATE" -v machine="$MACHINE" -v commit="$COMMIT" -v drop="$DROP" '
    function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
    function v(s) { return (s ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) ? s : q(s) }
    BEGIN { printf "{\"date\": %s, \"machine\": %s, \"commit\": %s, \"page_cache_dropped\": %s, \"figures\": [", q(date), q(machine), q(commit), q(drop) }
    { printf "%s\n  {\"scale\": %s, \"figure\": %s, \"value\": %s, \"unit\": %s, \"target\": %s, \"result\": %s}", (NR > 1 ? "," : ""), q($1), q($2), v($3), q($4), q($5), q($6) }
    END { print "\n]}" }' "$ROWS" > "$BENCH_DIR/scale.json"
  cat "$BENCH_DIR/scale.json"
else
  { printf 'scale\tfigure\tvalue\tunit\ttarget\tresult\n'; cat "$ROWS"; } | column -t -s $'\t'
fi
note "markdown: $MD${JSON:+; json: $BENCH_DIR/scale.json}"
grep -q $'\tFAIL$' "$ROWS" && exit 1
exit 0
