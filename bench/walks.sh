#!/usr/bin/env bash
# bench/walks.sh — issue 14's walk benchmark: random walks streamed out of
# core through the emulated device against their I/O floor and against
# the simple in-memory Go walker over the same CSR.
#
# R-MAT scale SCALE (22), edge factor 16, symmetrized, chunks of CHUNK
# (64MiB). streamsampler walk --all --walks-per-node R (10) --length L
# (80), output memory-mapped ([W, L+1] int32: 13.6 GB at scale 22):
#
#   deepwalk   streamed (--backend emu), RUNS (3) times, page cache
#              dropped before each; the median
#   node2vec   the same with --mode node2vec --p 0.5 --q 2, N2V_RUNS times
#   in-memory  --in-memory (host.LoadCSR, walk.InMemory) for each
#              mode, cache dropped, once (its load included)
#
#   bounded    with BOUND_LIMIT (e.g. 2GiB; default none), deepwalk
#              streamed once more in a memory cgroup of that size, page
#              cache included, smaller than the output: its peak RSS
#
# and the I/O floor of each streamed mode: the chunk bytes its passes
# read (walk --json chunk_bytes, walk.Stats.BytesRead: /proc/self/io
# misses O_DIRECT reads of a chunk still in a device buffer) at the
# O_DIRECT sequential read rate of edges.chunks measured in the same run
# (dd iflag=direct, cache dropped). Target (issue 14): streamed ≤ 1.5 ×
# the floor. Also printed: streamed / in-memory, walks/s, peak RSS
# (VmHWM, which counts the output's mapped pages) and peak anonymous
# RSS (RssAnon, sampled: the walker's own memory), and where a streamed
# walk's time goes (walk --json: chunk read, kernel, pass wall, host
# time outside the passes). Prints a table with PASS/FAIL;
# BENCH_DIR/walks.md is its markdown.
#
#   nice bench/walks.sh
#   SCALE=20 RUNS=3 nice bench/walks.sh          # minutes
#
# Environment: SCALE, CHUNK, R, L, RUNS (0 skips deepwalk), N2V_RUNS (node2vec's; RUNS; 0
# skips node2vec), SEED (1), BENCH_DIR
# (/tmp/ss-walks; the output files land there and are removed after each
# run), TIMEOUT (s per run; 1800), KEEP=1 (keep the graph).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
. bench/figures.sh
SCALE=${SCALE:-22} CHUNK=${CHUNK:-64MiB} R=${R:-10} L=${L:-80} RUNS=${RUNS:-3} SEED=${SEED:-1}
N2V_RUNS=${N2V_RUNS:-$RUNS} BOUND_LIMIT=${BOUND_LIMIT:-none}
BENCH_DIR=${BENCH_DIR:-/tmp/ss-walks} TIMEOUT=${TIMEOUT:-1800}
die() { echo "walks.sh: $*" >&2; exit 1; }
note() { echo "walks.sh: $*" >&2; }
for t in dd awk timeout pgrep numfmt /usr/bin/time; do command -v "$t" >/dev/null || die "needs $t"; done
mkdir -p "$BENCH_DIR/bin"
W=$BENCH_DIR
go build -o "$W/bin/" ./cmd/chunkify ./cmd/streamsampler
CK=$W/bin/chunkify SS=$W/bin/streamsampler
ROWS=$W/rows.tsv
: > "$ROWS"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }
drop() { sync; (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null || note "cannot drop the page cache (not root?)"; }

# --- data.
G=$W/g-s$SCALE
if [[ ! -f $G/edges.chunks ]]; then
  "$CK" generate rmat --scale "$SCALE" --edge-factor 16 --seed "$SEED" -o "$W/rmat.bin32" -q
  "$CK" build "$W/rmat.bin32" -o "$G" --symmetrize --force -q --chunk-size "$CHUNK"
  rm -f "$W/rmat.bin32"
fi
CHUNKS=$G/edges.chunks
CSIZE=$(stat -c %s "$CHUNKS")
NCHUNKS=$(grep -c '"crc32c"' "$G/manifest.json")

# --- the sequential read rate (O_DIRECT, cold).
drop
DDS=$(dd if="$CHUNKS" of=/dev/null bs=4M iflag=direct 2>&1 | ddsecs)
RATE=$(fmt "$CSIZE / $DDS" %.0f) # bytes/s

WRAP=() # a prefix walk_run runs the walk under (the bounded run's cgroup)
# walk_run NAME ARGS...: one walk, cache dropped; its --json in
# $W/NAME.json, its peak RSS (VmHWM, from GNU time) and peak RssAnon
# (sampled every 0.1 s) in K_HWM, K_ANON (bytes); K_OK 1 when it
# succeeded.
walk_run() {
  local name=$1 out=$W/walks.npy pid anon k=""
  shift
  rm -f "$out" "$W/$name.json"
  drop
  "${WRAP[@]}" /usr/bin/time -f %M -o "$W/$name.maxrss" timeout "$TIMEOUT" "$SS" walk --graph "$G" --all --walks-per-node "$R" --length "$L" --seed "$SEED" -o "$out" --json -q "$@" > "$W/$name.json" &
  pid=$!
  K_ANON=0
  # time's child is timeout, whose child is the walk: sample its RssAnon.
  while kill -0 "$pid" 2>/dev/null; do
    [[ -n $k ]] || k=$(pgrep -P "$(pgrep -P "$pid" | head -n 1)" 2>/dev/null | head -n 1 || true)
    if [[ -n $k && -r /proc/$k/status ]]; then
      anon=$(awk '/^RssAnon:/ {printf "%.0f\n", $2 * 1024}' "/proc/$k/status" 2>/dev/null || true)
      [[ -n $anon && $anon -gt $K_ANON ]] && K_ANON=$anon
    fi
    sleep 0.1
  done
  K_OK=1
  wait "$pid" || { K_OK=0; note "$name: walk failed or timed out (rc $?)"; }
  # GNU time's %M: the largest child's maximum RSS (VmHWM), in KiB.
  K_HWM=$(( $(tail -n 1 "$W/$name.maxrss") * 1024 ))
  K_OUT=$( [[ -f $out ]] && stat -c %s "$out" || echo nan)
  rm -f "$out"
}

# mode_bench LABEL RUNS FLAGS...: RUNS streamed runs and one in-memory
# run; adds the mode's rows.
mode_bench() {
  local label=$1 RUNS=$2 i secs=() hwm=() anon=() med tag
  shift 2
  for i in $(seq "$RUNS"); do
    walk_run "$label-stream-$i" "$@"
    # A failed run fails the benchmark (its row) and the median (nan).
    [[ $K_OK == 1 ]] || { secs+=(nan); row "$label streamed run $i" "failed or timed out" "" "completes" FAIL; continue; }
    secs+=("$(jnum "$W/$label-stream-$i.json" seconds)")
    hwm+=("$K_HWM") anon+=("$K_ANON")
    note "$label streamed run $i: ${secs[-1]} s"
  done
  med=$(printf '%s\n' "${secs[@]}" | median)
  # The run whose time is the median's (or the first) describes the passes.
  tag=1
  for i in $(seq "$RUNS"); do [[ ${secs[i-1]} == "$med" ]] && { tag=$i; break; }; done
  local j=$W/$label-stream-$tag.json
  local cb passes walks floor
  cb=$(jnum "$j" chunk_bytes) passes=$(jnum "$j" passes) walks=$(jnum "$j" walks)
  # The floor is what the work needs, not what this implementation read:
  # every chunk a pass needs (read or kept in a device buffer), once, at
  # the mean chunk size, at the disk's rate. Extra passes or re-reads
  # raise the bytes read, never the floor.
  local touched need
  touched=$(( $(jnum "$j" chunks_read) + $(jnum "$j" chunks_reused) ))
  need=$(fmt "$touched * $CSIZE / $NCHUNKS" %.0f)
  floor=$(fmt "$need / $RATE" %.2f)
  walk_run "$label-memory" --in-memory "$@"
  local mem=nan mhwm=$K_HWM
  [[ $K_OK == 1 ]] && mem=$(jnum "$W/$label-memory.json" seconds)
  row "$label streamed (emu), median of $RUNS: $(printf '%s ' "${secs[@]}")" "$(fmt "$med")" s "" "-"
  row "  passes; chunk bytes needed (every chunk a pass needs, once: $touched chunks at $(fmt "$CSIZE / $NCHUNKS / 1e6" %.0f) MB); bytes read" "$passes; $(fmt "$need / 1e9") GB; $(fmt "$cb / 1e9") GB" "" "" "-"
  row "  I/O floor: the bytes needed at $(fmt "$RATE / 1e9" %.3f) GB/s" "$floor" s "" "-"
  row "  streamed / floor" "$(fmt "$med / $floor")" x "<= 1.5" "$(pf "$med <= 1.5 * $floor")"
  row "  time split: chunk read / kernel / sync (device-summed), pass wall, host outside passes" \
    "$(fmt "$(jnum "$j" read_seconds)") / $(fmt "$(jnum "$j" kernel_seconds)") / $(fmt "$(jnum "$j" sync_seconds)"), $(fmt "$(jnum "$j" pass_seconds)"), $(fmt "$(jnum "$j" host_seconds)")" s "" "-"
  row "  output file (mapped; sizing + msync outside the walk's seconds)" "$(fmt "$K_OUT / 1e9") GB, $(fmt "$(jnum "$j" output_seconds)") s" "" "" "-"
  row "  walks/s streamed" "$(fmt "$walks / $med" %.0f)" walks/s "" "-"
  row "  peak RSS (VmHWM, mapped output included) / peak RssAnon, streamed (max of runs)" \
    "$(fmt "$(printf '%s\n' "${hwm[@]}" | sort -g | tail -n 1) / 1048576" %.0f) / $(fmt "$(printf '%s\n' "${anon[@]}" | sort -g | tail -n 1) / 1048576" %.0f)" MiB "" "-"
  row "$label in memory (--in-memory, CSR load included)" "$(fmt "$mem")" s "" "-"
  row "  peak RSS in memory" "$(fmt "$mhwm / 1048576" %.0f)" MiB "" "-"
  row "  streamed / in memory" "$(fmt "$med / $mem")" x "" "-"
}

if [[ $RUNS -gt 0 ]]; then mode_bench deepwalk "$RUNS" --mode deepwalk; fi
if [[ $N2V_RUNS -gt 0 ]]; then mode_bench node2vec "$N2V_RUNS" --mode node2vec --p 0.5 --q 2; fi

# --- bounded: the streamed deepwalk once more inside a memory cgroup of
# BOUND_LIMIT (page cache included), smaller than its output: the output
# is mapped, written back and evicted, never held whole.
if [[ $BOUND_LIMIT != none ]]; then
  . bench/cgroup.sh
  if cgroup_make "ss-walks-$$" "$(numfmt --from=iec-i "${BOUND_LIMIT%B}")"; then
    trap 'cgroup_remove' EXIT
    WRAP=(bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CUR_CGROUP")
    walk_run bounded --mode deepwalk
    WRAP=()
    cgroup_stats
    row "deepwalk streamed in a $BOUND_LIMIT cgroup (output $(fmt "$K_OUT / 1e9") GB)" "$( [[ $K_OK == 1 ]] && fmt "$(jnum "$W/bounded.json" seconds)" || echo nan)" s "" "$( [[ $K_OK == 1 ]] && echo "-" || echo FAIL)"
    row "  peak RSS (VmHWM) / RssAnon / cgroup peak (page cache included); OOM kills" "$(fmt "$K_HWM / 1048576" %.0f) / $(fmt "$K_ANON / 1048576" %.0f) / $(fmt "$CG_PEAK / 1048576" %.0f) MiB; ${CG_OOM:-0}" "" "RSS < output" "$(pf "$K_OK == 1 && $K_HWM < $K_OUT")"
    sleep 0.5
    cgroup_remove
    trap - EXIT
  else
    note "no memory cgroup ($CG_WHY): no bounded run"
  fi
fi

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
status=0
report "Measured $DATE on $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo); R-MAT scale $SCALE (edge factor 16, symmetrized), edges.chunks $(fmt "$CSIZE / 1e9") GB in chunks of $CHUNK, dd iflag=direct $(fmt "$RATE / 1e9" %.3f) GB/s; $R walks per node of length $L, seed $SEED; commit $(git -C "$REPO" describe --always --dirty); \`SCALE=$SCALE bench/walks.sh\`." "$W/walks.md" || status=$?
[[ -n ${KEEP:-} ]] || rm -rf "$G"
exit $status
