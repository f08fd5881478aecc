#!/usr/bin/env bash
# bench/ringsampler.sh — RingSampler (CASP-Systems-BU/RingSampler, HotStorage
# '25: an io_uring CPU sampler) on the CSR of one of our graph directories,
# for issue 24's comparison at papers100M shape. Built outside the
# repository, as a user builds it; the one change needed to run it on
# another graph is in its hard-coded dataset table (src/utils.h paths and
# the training node count in tests/test_multi_epoch.c), which this script
# points at the exported CSR with sed, in its own copy of the sources;
# and GCC 10+ needs -fcommon for its headers' tentative definitions
# (barriers defined in a header included twice).
#
#   bench/ringsampler.sh SRC GRAPHDIR TRAIN.npy OUTDIR [THREADS] [EPOCHS] [QD]
#
# SRC: a RingSampler checkout (git clone https://github.com/CASP-Systems-BU/RingSampler);
# needs cmake, liburing-dev (Debian) and a C compiler. Exports GRAPHDIR to
# OUTDIR/csr (chunkify export --format raw: edges.bin is indices, u32;
# offsets.bin is indptr, u64: RingSampler's input layout), writes the
# training nodes as u32, builds test_multi_epoch (fanouts [20,15,10] and
# batch size as its harness has them: [20,15,10] hard-coded, batch from
# the command line, 1024 here), runs EPOCHS epochs (default 2) with
# THREADS threads (default: nproc) and QD (default 512, its scripts'), page
# cache warm (RingSampler reads through it: it is the peer's best case),
# and prints each epoch's runtime and the median as "ringsampler_epoch_s
# N". The source's commit is printed first.
set -euo pipefail
SRC=$1 GRAPH=$2 TRAIN=$3 OUT=$4
THREADS=${5:-$(nproc)} EPOCHS=${6:-2} QD=${7:-512}
REPO=$(cd "$(dirname "$0")/.." && pwd)
CHUNKIFY=${CHUNKIFY:-$REPO/bin/chunkify}
PY=${PY:-/usr/bin/python3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
echo "ringsampler source: $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown) ($SRC)"
if [[ ! -s $OUT/csr/indices.bin || $GRAPH/manifest.json -nt $OUT/csr/indices.bin ]]; then
  "$CHUNKIFY" export "$GRAPH" -o "$OUT/csr" --format raw --force
fi
ln -sf indices.bin "$OUT/csr/edges.bin"
ln -sf indptr.bin "$OUT/csr/offsets.bin"
N=$("$PY" -c "import numpy as np,sys; t=np.load(sys.argv[1]).astype(np.uint32); t.tofile(sys.argv[2]); print(len(t))" "$TRAIN" "$OUT/csr/train_nodes.bin")
rm -rf "$OUT/rs-src" && cp -r "$SRC" "$OUT/rs-src"
sed -i -e "s|^#define PAPERS_EDGE_PATH .*|#define PAPERS_EDGE_PATH \"$OUT/csr/edges.bin\"|" \
       -e "s|^#define PAPERS_OFFSET_PATH .*|#define PAPERS_OFFSET_PATH \"$OUT/csr/offsets.bin\"|" \
       -e "s|^#define PAPERS_TRAIN_PATH .*|#define PAPERS_TRAIN_PATH \"$OUT/csr/train_nodes.bin\"|" "$OUT/rs-src/src/utils.h"
sed -i -e "s|training_nodes = 1207179;|training_nodes = $N;|" "$OUT/rs-src/tests/test_multi_epoch.c"
grep -q "training_nodes = $N;" "$OUT/rs-src/tests/test_multi_epoch.c" || { echo "could not set the training node count" >&2; exit 1; }
(cd "$OUT/rs-src" && mkdir -p build && cd build && cmake -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-fcommon .. >/dev/null && make -j"$(nproc)" test_multi_epoch >/dev/null)
cat "$OUT/csr/edges.bin" "$OUT/csr/offsets.bin" > /dev/null  # page cache warm
echo "ringsampler: $N training nodes, $THREADS threads, QD $QD, $EPOCHS epochs, batch 1024, [20,15,10]"
"$OUT/rs-src/build/test_multi_epoch" papers "$QD" "$THREADS" "$EPOCHS" 1024 | tee "$OUT/ringsampler.log" | grep "runtime of epoch"
awk '/runtime of epoch/ {print $NF}' "$OUT/ringsampler.log" | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print "ringsampler_epoch_s", m}'
