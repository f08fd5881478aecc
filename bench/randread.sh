#!/usr/bin/env bash
# bench/randread.sh — issue 25, item 3's benchmark: the random-read
# sampler (package randread, `streamsampler sample --graph`) on R-MAT
# scale SCALE (24), edge factor 16, symmetrized, chunks of CHUNK (the
# default 512MiB), REQUESTS (50) requests of SEEDS (64) seeds with
# FANOUTS (15,10,5), the page cache dropped before each measured request
# where permitted (root): p50 and p99 latency per I/O engine (Linux AIO,
# a pool of pread goroutines) and block size (4096, 512); the same seeds
# sampled by streaming (a fresh epoch of those seeds through the emulated
# SmartSSD, STREAM_REQUESTS of them), the minibatches compared for
# equality; and the read path alone (random 4 KiB O_DIRECT reads, depth
# DEPTH) against fio on the same file:
#
#   fio --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=128
#
# (apt-get install fio). Prints PASS/FAIL lines against the issue's
# targets: random reads ≥ 10× lower p50 latency than streaming, and ≥ 0.8
# of fio's IOPS. The graph is kept under BENCH_DIR (/tmp/randread) and
# reused (scale 24 takes minutes to build and about 2 GB).
#
#   bench/randread.sh
#   SCALE=18 REQUESTS=10 bench/randread.sh      # a quick look
#
# Environment: SCALE, CHUNK, REQUESTS, SEEDS, FANOUTS, DEPTH (128),
# STREAM_REQUESTS (5), IO ("aio,pread"), BLOCK_SIZES ("4096,512"), SEED (1),
# FIO_RUNTIME (10 s), BENCH_DIR, CROSSOVER (the frontier densities of
# issue 25, item 4's crossover: one layer of fanout 10 sampled by streaming
# the chunks and by random reads; default 1e-5,1e-4,1e-3,1e-2,0.1,1; none
# to skip), LATENCY (1; 0 skips the latency part).
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-24} CHUNK=${CHUNK:-512MiB} REQUESTS=${REQUESTS:-50} SEEDS=${SEEDS:-64} FANOUTS=${FANOUTS:-15,10,5}
DEPTH=${DEPTH:-128} STREAM_REQUESTS=${STREAM_REQUESTS:-5} IO=${IO:-aio,pread} BLOCK_SIZES=${BLOCK_SIZES:-4096,512}
SEED=${SEED:-1} FIO_RUNTIME=${FIO_RUNTIME:-10} BENCH_DIR=${BENCH_DIR:-/tmp/randread}
CROSSOVER=${CROSSOVER:-1e-5,1e-4,1e-3,1e-2,0.1,1} LATENCY=${LATENCY:-1}
[[ $CROSSOVER == none ]] && CROSSOVER=""
die() { echo "randread.sh: $*" >&2; exit 1; }
note() { echo "randread.sh: $*" >&2; }
W=$BENCH_DIR
mkdir -p "$W/bin"
go build -o "$W/bin/" ./cmd/chunkify ./bench/randread
CK=$W/bin/chunkify
G=$W/g-s$SCALE
if [[ ! -f $G/manifest.json ]]; then
  "$CK" generate rmat --scale "$SCALE" --edge-factor 16 --seed "$SEED" -o "$W/rmat.bin32" -q
  "$CK" build "$W/rmat.bin32" -o "$G" --symmetrize --force -q --chunk-size "$CHUNK"
  rm -f "$W/rmat.bin32"
fi
[[ $(id -u) == 0 ]] || note "not root: the page cache is not dropped between requests"
FIO=0
if command -v fio >/dev/null; then
  sync
  (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null || true
  FIO=$(fio --name=randread --filename="$G/edges.chunks" --readonly --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
    --iodepth="$DEPTH" --runtime="$FIO_RUNTIME" --time_based --output-format=terse --terse-version=3 2>/dev/null | awk -F';' '{print $8}')
  echo "fio: random 4 KiB O_DIRECT reads of edges.chunks, io_uring, depth $DEPTH: ${FIO} IOPS"
else
  note "no fio: the random-read rate is not judged (apt-get install fio)"
fi
echo "R-MAT scale $SCALE, $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git describe --always --dirty)"
"$W/bin/randread" --graph "$G" --requests "$REQUESTS" --seeds "$SEEDS" --fanouts "$FANOUTS" --depth "$DEPTH" \
  --io "$IO" --block-sizes "$BLOCK_SIZES" --stream-requests "$STREAM_REQUESTS" --seed "$SEED" --fio-iops "${FIO:-0}" \
  --latency="$([[ $LATENCY == 1 ]] && echo true || echo false)" --crossover "$CROSSOVER" --json "$W/randread-s$SCALE.json"
