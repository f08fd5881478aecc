#!/usr/bin/env bash
# bench/hetero_build.sh — the heterogeneous build (issue 27) against the
# homogeneous build of the same total edges and the I/O floor.
#
# The typed graph is MAG240M-like (chunkify generate hetero --preset
# mag240m-like --edges E): three relations in MAG240M's proportions
# (author-writes-paper 22.3%, author-affiliated_with-institution 2.6%,
# paper-cites-paper 75.1%; paper ≈ author ≫ institution nodes). The
# homogeneous graph is R-MAT scale S, edge factor F (2^S nodes, E = F·2^S).
#
#   hetero from files: chunkify build --relation ×3 --node-types of the
#       typed graph's bin32 edge lists (generate hetero --edge-lists), in the
#       page cache: each relation built in turn into a relation directory of
#       in-edges.
#   homogeneous from a file: chunkify build of the R-MAT's bin32 edge list
#       (generate rmat), in the page cache, as bench/chunkify.sh runs it.
#   hetero generated: chunkify generate hetero -o: the same typed graph
#       built with its edges generated on every core as the build's pass 1
#       reads them (spooled for pass 2), no input file; against the
#       homogeneous generate rmat + build.
#   floor: one O_DIRECT sequential read of the inputs (dd iflag=direct)
#       plus one O_DIRECT write of the output's size (dd oflag=direct
#       conv=fsync), measured here, in the same run.
#
# PASS when hetero from files ≤ 1.2 × homogeneous from a file (issue 27's
# target: the same total edges, both inputs bin32 in the page cache). Medians of
# RUNS runs; peak RSS the largest. Environment: SCALE (20), EF (10), SEED,
# RUNS (3), CHUNK (chunk size, 64MiB), BENCH_DIR (out/bench-hetero),
# CHUNKIFY (a prebuilt binary), MEMORY (every build's --memory, auto),
# GENERATED (1; 0 skips the hetero-generated build and its homogeneous
# generate + build pair: at 10⁹ edges they cost as much as the rest),
# KEEP_INPUTS (1; 0 deletes the edge lists and the bin32 R-MAT once
# measured: bench/hetero_scale.sh needs only the built graphs, which stay
# in BENCH_DIR/hetero-files, BENCH_DIR/hetero and BENCH_DIR/homog).
# Writes BENCH_DIR/hetero_build.md.
set -euo pipefail
cd "$(dirname "$0")/.."

SCALE=${SCALE:-20}
EF=${EF:-10}
SEED=${SEED:-1}
RUNS=${RUNS:-3}
CHUNK=${CHUNK:-64MiB}
BENCH_DIR=${BENCH_DIR:-out/bench-hetero}
mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
CHUNKIFY=${CHUNKIFY:-}
MEMORY=${MEMORY:-auto}
GENERATED=${GENERATED:-1}
KEEP_INPUTS=${KEEP_INPUTS:-1}
if [[ -z "$CHUNKIFY" ]]; then
  CHUNKIFY="$BENCH_DIR/chunkify"
  go build -o "$CHUNKIFY" ./cmd/chunkify
fi
EDGES=$((EF << SCALE))
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# timed CMD...: runs CMD (stdout discarded); sets M_WALL (s), M_CPU (user +
# system s) and M_RSS (KiB).
timed() {
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -v -o "$BENCH_DIR/time.txt" "$@" > /dev/null
    M_WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$BENCH_DIR/time.txt")
    M_RSS=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$BENCH_DIR/time.txt")
    M_CPU=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$BENCH_DIR/time.txt")
  else
    local t0; t0=$(date +%s.%N); "$@" > /dev/null
    M_WALL=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}'); M_RSS=0; M_CPU=0
  fi
}

dd_secs() { awk '/copied/ {for(i=1;i<=NF;i++) if ($i=="s,") print $(i-1)}'; }

ddwrite() { # BYTES: seconds of one O_DIRECT write of that many bytes (median)
  local count=$(( ($1 + 4194303) / 4194304 )) ts=()
  for _ in $(seq "$RUNS"); do
    ts+=("$(dd if=/dev/zero of="$BENCH_DIR/floor.tmp" bs=4M count=$count oflag=direct conv=fsync 2>&1 | dd_secs)")
    rm -f "$BENCH_DIR/floor.tmp"
  done
  printf '%s\n' "${ts[@]}" | median
}

ddread() { # FILE
  local ts=()
  for _ in $(seq "$RUNS"); do ts+=("$(dd if="$1" of=/dev/null bs=4M iflag=direct 2>&1 | dd_secs)"); done
  printf '%s\n' "${ts[@]}" | median
}

# The typed graph's edge lists (for the build from files).
LISTS="$BENCH_DIR/lists-$EDGES-$SEED"
if [[ ! -s "$LISTS/num-node-dict.csv" ]]; then
  LT0=$(date +%s.%N)
  "$CHUNKIFY" generate hetero --preset mag240m-like --edges "$EDGES" --seed "$SEED" --edge-lists "$LISTS" -q
  echo "generate hetero --edge-lists: $(awk -v a="$LT0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s (not measured against anything)" >&2
fi
RELS=()
for f in "$LISTS"/*.bin32; do
  k=$(basename "$f" .bin32); RELS+=(--relation "${k//___/,}=$f")
done
HIN=$(cat "$LISTS"/*.bin32 | wc -c)
BIN="$BENCH_DIR/rmat-s$SCALE-e$EF-$SEED.bin32"

# The four measurements are interleaved, run by run, so that the load of
# a shared machine weighs on all of them alike; the ratios are medians of
# each run's ratio. CPU seconds (user + system) are reported beside the
# walls: they depend far less on what else the machine runs.
fw=(); hw=(); gw=(); bw=(); fc=(); hc=(); bc=(); r1=(); r2=(); rc=(); frss=0; hrss=0; brss=0
for r in $(seq "$RUNS"); do
  cat "$LISTS"/*.bin32 > /dev/null # in the page cache, as the homogeneous input is
  timed "$CHUNKIFY" build --node-types "$LISTS/num-node-dict.csv" "${RELS[@]}" \
    --chunk-size "$CHUNK" --memory "$MEMORY" -o "$BENCH_DIR/hetero-files" --force -q
  fw+=("$M_WALL"); fc+=("$M_CPU"); (( M_RSS > frss )) && frss=$M_RSS
  echo "run $r: hetero from files $M_WALL s wall, $M_CPU CPU s, $((M_RSS / 1024)) MiB" >&2
  if (( GENERATED )); then
    timed "$CHUNKIFY" generate hetero --preset mag240m-like --edges "$EDGES" --seed "$SEED" \
      --chunk-size "$CHUNK" --memory "$MEMORY" -o "$BENCH_DIR/hetero" --force -q
    hw+=("$M_WALL"); hc+=("$M_CPU"); (( M_RSS > hrss )) && hrss=$M_RSS
    echo "run $r: hetero generated $M_WALL s wall, $M_CPU CPU s, $((M_RSS / 1024)) MiB" >&2
  fi
  # The homogeneous input is written once when GENERATED is 0 (its
  # generate is then not measured), every run otherwise.
  if (( GENERATED )) || [[ ! -s "$BIN" ]]; then
    rm -f "$BIN"
    timed "$CHUNKIFY" generate rmat --scale "$SCALE" --edge-factor "$EF" --seed "$SEED" -o "$BIN" -q
    gw+=("$M_WALL"); g=$M_WALL
    echo "run $r: generate rmat $M_WALL s wall" >&2
  fi
  cat "$BIN" > /dev/null # in the page cache, as the typed edge lists are
  timed "$CHUNKIFY" build "$BIN" -o "$BENCH_DIR/homog" --chunk-size "$CHUNK" --memory "$MEMORY" --force -q
  bw+=("$M_WALL"); bc+=("$M_CPU"); (( M_RSS > brss )) && brss=$M_RSS
  echo "run $r: homogeneous $M_WALL s wall, $M_CPU CPU s, $((M_RSS / 1024)) MiB" >&2
  r1+=("$(awk -v a="${fw[-1]}" -v b="$M_WALL" 'BEGIN {print a / b}')")
  if (( GENERATED )); then
    r2+=("$(awk -v a="${hw[-1]}" -v b="$M_WALL" -v g="$g" 'BEGIN {print a / (b + g)}')")
  fi
  rc+=("$(awk -v a="${fc[-1]}" -v b="$M_CPU" 'BEGIN {print a / b}')")
done
FWALL=$(printf '%s\n' "${fw[@]}" | median); FCPU=$(printf '%s\n' "${fc[@]}" | median)
HWALL=; HCPU=; HBYTES=; ratio2=
if (( GENERATED )); then
  HWALL=$(printf '%s\n' "${hw[@]}" | median); HCPU=$(printf '%s\n' "${hc[@]}" | median)
  HBYTES=$(du -sb "$BENCH_DIR/hetero" | awk '{print $1}')
  ratio2=$(printf '%s\n' "${r2[@]}" | median | awk '{printf "%.2f", $1}')
fi
GWALL=$(printf '%s\n' "${gw[@]}" | median)
BWALL=$(printf '%s\n' "${bw[@]}" | median); BCPU=$(printf '%s\n' "${bc[@]}" | median)
FBYTES=$(du -sb "$BENCH_DIR/hetero-files" | awk '{print $1}')
BBYTES=$(du -sb "$BENCH_DIR/homog" | awk '{print $1}')
INBYTES=$(stat -c %s "$BIN")
"$CHUNKIFY" info "$BENCH_DIR/hetero-files" > "$BENCH_DIR/hetero.info"

WH=$(ddwrite "$FBYTES")
WB=$(ddwrite "$BBYTES")
RB=$(ddread "$BIN")
# The edge lists' floor: each file's O_DIRECT read, summed (no
# concatenated copy, which at 10⁹ edges is 8 GB more of disk).
RH=0
for f in "$LISTS"/*.bin32; do
  RH=$(awk -v a="$RH" -v b="$(ddread "$f")" 'BEGIN {print a + b}')
done
if (( ! KEEP_INPUTS )); then
  rm -rf "$LISTS" "$BIN"
fi

ratio=$(printf '%s\n' "${r1[@]}" | median | awk '{printf "%.2f", $1}')
ratioc=$(printf '%s\n' "${rc[@]}" | median | awk '{printf "%.2f", $1}')
verdict=$(awk -v r="$ratio" 'BEGIN {print (r <= 1.2) ? "PASS" : "FAIL"}')
{
  echo "## bench/hetero_build.sh — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, RUNS=$RUNS"
  echo
  echo "E = $EDGES edges (R-MAT scale $SCALE, edge factor $EF, seed $SEED), chunk size $CHUNK, --memory $MEMORY."
  echo
  echo "load average before: $LOAD0"
  echo
  echo "| build | wall (median s) | CPU s (median) | output bytes | I/O floor (s) | wall / floor | peak RSS (MiB) |"
  echo "|---|---|---|---|---|---|---|"
  echo "| hetero from files: build --relation ×3 (bin32, $HIN bytes, in the page cache) | $FWALL | $FCPU | $FBYTES | read $RH + write $WH | $(awk -v a="$FWALL" -v r="$RH" -v w="$WH" 'BEGIN {printf "%.1f", a / (r + w)}') | $((frss / 1024)) |"
  if (( GENERATED )); then
    echo "| hetero generated: generate hetero -o (edges generated in the build) | $HWALL | $HCPU | $HBYTES | write $WH | $(awk -v a="$HWALL" -v f="$WH" 'BEGIN {printf "%.1f", a / f}') | $((hrss / 1024)) |"
  fi
  echo "| homogeneous: build of the bin32 R-MAT ($INBYTES bytes, in the page cache) | $BWALL | $BCPU | $BBYTES | read $RB + write $WB | $(awk -v a="$BWALL" -v r="$RB" -v w="$WB" 'BEGIN {printf "%.1f", a / (r + w)}') | $((brss / 1024)) |"
  echo "| homogeneous: generate rmat to bin32 | $GWALL | | $INBYTES | | | |"
  echo
  echo "Medians of each run's ratio: hetero from files / homogeneous from a file = $ratio (target ≤ 1.2: $verdict), in CPU seconds $ratioc${ratio2:+; hetero generated / (homogeneous generate + build) = $ratio2}"
  echo
  echo '```'
  cat "$BENCH_DIR/hetero.info"
  echo '```'
} | tee "$BENCH_DIR/hetero_build.md"
