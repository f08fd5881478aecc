#!/usr/bin/env bash
# bench/chunkify.sh — chunkify throughput against the I/O floor and `wc -l`.
#
# Generates an R-MAT graph (default scale 22, edge factor 12: 4.19M nodes,
# 50.3M edges) as bin32 and as text, builds each with chunkify RUNS times,
# and prints, with PASS/FAIL against the targets of issue 3:
#
#   binary input: chunkify wall time ≤ 3 × the I/O floor, where the floor
#       is one sequential read of the input plus one sequential write of the
#       output's size, both measured here in the same run:
#         read  = dd if=INPUT of=/dev/null bs=4M iflag=direct   (O_DIRECT:
#                 the device, not the page cache; caches cannot be dropped
#                 without root, so the floor is taken without the cache)
#         write = dd if=/dev/zero of=TMP bs=4M count=… oflag=direct conv=fsync
#       chunkify itself runs with the input in the page cache (as right after
#       generating or downloading it) and fsyncs its output.
#   text input: chunkify's rate (input bytes / wall time, end to end: parse,
#       place, sort, write) ≥ 25% of the rate of `wc -l` over the same file
#       (page cache warm for both). The parse pass alone is reported too.
#   peak RSS ≤ 16 bytes × num_nodes + 512 MiB (from /usr/bin/time -v, the
#       `time` package: apt-get install time; without it, VmHWM polled).
#
# Medians over RUNS runs are reported. Environment: SCALE, EF, SEED, RUNS,
# BENCH_DIR (default out/bench-chunkify; the inputs are ~1.2 GB), CHUNKIFY
# (a prebuilt binary; default: go build into BENCH_DIR), TASKSET (e.g.
# "taskset -c 0,1" to pin to two cores). A markdown summary is written to
# BENCH_DIR/chunkify.md.
set -euo pipefail
cd "$(dirname "$0")/.."

SCALE=${SCALE:-22}
EF=${EF:-12}
SEED=${SEED:-1}
RUNS=${RUNS:-3}
BENCH_DIR=${BENCH_DIR:-out/bench-chunkify}
TASKSET=${TASKSET:-}
mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
export BENCH_DIR

# Wall time and peak RSS come from GNU time (`apt-get install time`); where
# it is missing, from polling the process's VmHWM in /proc every 20 ms.
HAVE_TIME=no
[[ -x /usr/bin/time && -z "${BENCH_NO_GNU_TIME:-}" ]] && HAVE_TIME=yes

# measure OUTFILE CMD...: runs CMD with stdout to OUTFILE; sets M_WALL (s)
# and M_RSS (KiB).
measure() {
  local out=$1; shift
  if [[ $HAVE_TIME == yes ]]; then
    /usr/bin/time -v -o "$BENCH_DIR/time.txt" "$@" > "$out"
    M_WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$BENCH_DIR/time.txt")
    M_RSS=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$BENCH_DIR/time.txt")
    return
  fi
  local t0 t1 pid hwm=0 h
  t0=$(date +%s.%N)
  "$@" > "$out" & pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    h=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [[ -n "$h" ]] && (( h > hwm )) && hwm=$h
    sleep 0.02
  done
  wait "$pid"
  t1=$(date +%s.%N)
  M_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  M_RSS=$hwm
}
CHUNKIFY=${CHUNKIFY:-}
if [[ -z "$CHUNKIFY" ]]; then
  CHUNKIFY="$BENCH_DIR/chunkify"
  go build -o "$CHUNKIFY" ./cmd/chunkify
fi

NODES=$((1 << SCALE))
EDGES=$((EF << SCALE))
BIN="$BENCH_DIR/rmat-s$SCALE-e$EF-$SEED.bin32"
TXT="$BENCH_DIR/rmat-s$SCALE-e$EF-$SEED.txt"
for f in "$BIN" "$TXT"; do
  if [[ ! -s "$f" || ! -s "$f.done" ]]; then
    measure "$BENCH_DIR/gen.out" $TASKSET "$CHUNKIFY" generate rmat --scale "$SCALE" --edge-factor "$EF" --seed "$SEED" -o "$f" --quiet
    echo "$M_WALL" > "$f.done"
  fi
  echo "generate $(basename "$f"): $(cat "$f.done") s"
done
BIN_BYTES=$(stat -c %s "$BIN")
TXT_BYTES=$(stat -c %s "$TXT")

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# build INPUT OUT: runs chunkify RUNS times; sets WALL (median s), RSS
# (max KiB), PASS1 (median s of the read/parse pass), OUTBYTES.
build() {
  local in=$1 out=$2 walls=() rss=0 p1s=()
  for ((r = 0; r < RUNS; r++)); do
    measure "$BENCH_DIR/summary.json" $TASKSET "$CHUNKIFY" build "$in" -o "$out" --force --quiet --json
    walls+=("$M_WALL")
    (( M_RSS > rss )) && rss=$M_RSS
    p1s+=("$(tr -d ' \n' < "$BENCH_DIR/summary.json" | sed 's/.*"pass_seconds":\[\([0-9.e+-]*\),.*/\1/')")
  done
  WALL=$(printf '%s\n' "${walls[@]}" | median)
  PASS1=$(printf '%s\n' "${p1s[@]}" | median)
  RSS=$rss
  OUTBYTES=$(stat -c %s "$out/edges.chunks")
  STORED=$(tr -d ' \n' < "$BENCH_DIR/summary.json" | sed 's/.*"num_edges":\([0-9]*\).*/\1/')
}

# ioread FILE: seconds for one O_DIRECT sequential read (median of RUNS).
ioread() {
  local ts=()
  for ((r = 0; r < RUNS; r++)); do
    ts+=("$(dd if="$1" of=/dev/null bs=4M iflag=direct 2>&1 | awk '/copied/ {for(i=1;i<=NF;i++) if ($i=="s,") print $(i-1)}')")
  done
  printf '%s\n' "${ts[@]}" | median
}

# iowrite BYTES: seconds for one O_DIRECT sequential write + fsync.
iowrite() {
  local count=$((($1 + 4194303) / 4194304)) ts=()
  for ((r = 0; r < RUNS; r++)); do
    ts+=("$(dd if=/dev/zero of="$BENCH_DIR/floor.tmp" bs=4M count=$count oflag=direct conv=fsync 2>&1 | awk '/copied/ {for(i=1;i<=NF;i++) if ($i=="s,") print $(i-1)}')")
    rm -f "$BENCH_DIR/floor.tmp"
  done
  printf '%s\n' "${ts[@]}" | median
}

echo "== machine"
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
NPROC=$(nproc)
MEM=$(free -h | awk '/Mem:/ {print $2}')
DISK=$(df -h "$BENCH_DIR" | awk 'NR==2 {print $1 " (" $2 ", " $4 " free)"}')
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
echo "date $DATE; nproc $NPROC ($CPU); memory $MEM; disk $DISK; load $LOAD; pinning: ${TASKSET:-none}"
echo "graph: R-MAT scale $SCALE, edge factor $EF, seed $SEED: $NODES nodes, $EDGES edges; bin32 $BIN_BYTES B, text $TXT_BYTES B"

echo "== binary (bin32)"
build "$BIN" "$BENCH_DIR/g-bin"
B_WALL=$WALL B_RSS=$RSS B_OUT=$OUTBYTES B_STORED=$STORED
B_READ=$(ioread "$BIN")
B_WRITE=$(iowrite "$B_OUT")
echo "== text"
build "$TXT" "$BENCH_DIR/g-txt"
T_WALL=$WALL T_RSS=$RSS T_PASS1=$PASS1
cat "$TXT" > /dev/null
WCS=()
for ((r = 0; r < RUNS; r++)); do
  measure /dev/null $TASKSET wc -l "$TXT"
  WCS+=("$M_WALL")
done
WC=$(printf '%s\n' "${WCS[@]}" | median)
cmp -s "$BENCH_DIR/g-bin/edges.chunks" "$BENCH_DIR/g-txt/edges.chunks" && SAME=yes || SAME=NO

awk -v nodes="$NODES" -v edges="$EDGES" -v stored="$B_STORED" \
    -v bw="$B_WALL" -v brss="$B_RSS" -v bread="$B_READ" -v bwrite="$B_WRITE" -v bout="$B_OUT" -v bbytes="$BIN_BYTES" \
    -v tw="$T_WALL" -v trss="$T_RSS" -v tp1="$T_PASS1" -v tbytes="$TXT_BYTES" -v wc="$WC" -v same="$SAME" \
    -v scale="$SCALE" -v ef="$EF" -v date="$DATE" -v nproc="$NPROC" -v cpu="$CPU" -v mem="$MEM" -v disk="$DISK" -v load="$LOAD" -v pin="${TASKSET:-none}" -v runs="$RUNS" '
function pf(ok) { return ok ? "PASS" : "FAIL" }
BEGIN {
  floor = bread + bwrite; ratio = bw / floor
  rsslim = (16 * nodes + 512 * 1048576) / 1024
  wcrate = tbytes / wc; trate = tbytes / tw; tpct = 100 * trate / wcrate
  p1pct = 100 * (tbytes / tp1) / wcrate
  printf "binary: %.2f s, %.2f M edges/s, peak RSS %.0f MiB; I/O floor %.2f s (read %.2f s + write %.2f s of %.0f MiB); ratio %.2fx (target <= 3x): %s\n", bw, edges / bw / 1e6, brss / 1024, floor, bread, bwrite, bout / 1048576, ratio, pf(ratio <= 3)
  printf "text:   %.2f s, %.2f M edges/s, %.0f MiB/s, peak RSS %.0f MiB; wc -l %.2f s (%.0f MiB/s); text rate = %.1f%% of wc -l (target >= 25%%): %s; parse pass alone %.2f s = %.1f%% of wc -l\n", tw, edges / tw / 1e6, trate / 1048576, trss / 1024, wc, wcrate / 1048576, tpct, pf(tpct >= 25), tp1, p1pct
  printf "peak RSS: max(bin %.0f, text %.0f) MiB vs limit 16 B x %d nodes + 512 MiB = %.0f MiB: %s\n", brss / 1024, trss / 1024, nodes, rsslim / 1024, pf(brss <= rsslim && trss <= rsslim)
  printf "bin32 and text builds identical: %s\n", same
  md = ENVIRON["BENCH_DIR"] "/chunkify.md"
  printf "Measured %s on %d cores (%s), %s RAM, disk %s, load average %s at start, pinning %s; medians of %d runs; `bench/chunkify.sh`.\n\n", date, nproc, cpu, mem, disk, load, pin, runs > md
  printf "R-MAT scale %d, edge factor %d: %d nodes, %d edges read, %d stored (dedup on).\n\n", scale, ef, nodes, edges, stored > md
  printf "| input | size | wall | edges/s | peak RSS | reference | ratio | target | result |\n|---|---|---|---|---|---|---|---|---|\n" > md
  printf "| bin32 | %.0f MiB | %.2f s | %.2fM | %.0f MiB | I/O floor %.2f s (O_DIRECT read %.2f s + O_DIRECT write+fsync %.2f s of %.0f MiB) | %.2fx floor | <= 3x | %s |\n", bbytes / 1048576, bw, edges / bw / 1e6, brss / 1024, floor, bread, bwrite, bout / 1048576, ratio, pf(ratio <= 3) > md
  printf "| text | %.0f MiB | %.2f s | %.2fM | %.0f MiB | `wc -l` %.2f s (%.0f MiB/s) | %.1f%% of wc -l (parse pass alone: %.1f%%) | >= 25%% | %s |\n", tbytes / 1048576, tw, edges / tw / 1e6, trss / 1024, wc, wcrate / 1048576, tpct, p1pct, pf(tpct >= 25) > md
  printf "\nPeak RSS limit 16 B x nodes + 512 MiB = %.0f MiB: %s.\n", rsslim / 1024, pf(brss <= rsslim && trss <= rsslim) > md
  # The exit status is the verdict: any target missed, or the two builds
  # differing, fails the benchmark.
  exit !(ratio <= 3 && tpct >= 25 && brss <= rsslim && trss <= rsslim && same == "yes")
}' || status=1
echo "markdown: $BENCH_DIR/chunkify.md"
exit ${status:-0}
