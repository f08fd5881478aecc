#!/usr/bin/env bash
# verify.sh — the GPU backend's acceptance run (docs/GPU.md, "Verification"),
# on a CUDA machine, from a fresh tree and Go binaries built elsewhere.
#
#   gpu/verify.sh CARRY OUT
#
# CARRY holds, prepared on the build machine (see docs/GPU.md):
#   fresh.tar        `git archive HEAD` (the committed tree: a fresh clone)
#   streamsampler, chunkify, gpu.test   Go binaries built from that tree
#   soc-Slashdot0902.txt.gz (optional)  for the Go real-graph device test
# OUT receives one log per step and a summary. Every step runs even if an
# earlier one fails; the exit status is the number of failed steps.
set -u
CARRY=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
FRESH=${FRESH:-/tmp/fresh}
REPS=${REPS:-10}
fails=0
step() { # step NAME TIMEOUT_S CMD...: run CMD under a timeout, log to OUT/NAME.log
	local name=$1 t=$2
	shift 2
	local t0=$SECONDS
	echo "== $name: $*" | tee -a "$OUT/summary.log"
	timeout "$t" bash -c "$*" >"$OUT/$name.log" 2>&1
	local rc=$?
	echo "   rc=$rc in $((SECONDS - t0)) s; tail:" >>"$OUT/summary.log"
	tail -n 4 "$OUT/$name.log" | sed 's/^/   | /' >>"$OUT/summary.log"
	[ $rc -eq 0 ] || fails=$((fails + 1))
	return $rc
}

{
	date -u
	uname -srm
	ldd --version | head -1
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
	nvcc --version | tail -2
	python3 -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__)'
} >"$OUT/summary.log" 2>&1

rm -rf "$FRESH" && mkdir -p "$FRESH" && tar -xf "$CARRY/fresh.tar" -C "$FRESH"
mkdir -p "$FRESH/bin"
cp "$CARRY/streamsampler" "$CARRY/chunkify" "$FRESH/bin/"
cd "$FRESH" || exit 99
echo "fresh tree: $(find . -type f | wc -l) files, no build outputs: $(ls gpu/build 2>&1 | head -1)" >>"$OUT/summary.log"

step make-gpu 300 "make gpu"
step test-gpu 150 "make test-gpu"
edges=""
[ -f "$CARRY/soc-Slashdot0902.txt.gz" ] && edges="STREAMSAMPLER_GPU_EDGES=$CARRY/soc-Slashdot0902.txt.gz"
step test-go 150 "$edges make -C gpu test-go GPU_GO_TEST=$CARRY/gpu.test"

# The CLI on a bundled graph; the library is found next to the executable
# (make gpu installed it into bin/), no --gpu-lib.
W=/tmp/verify-cli
rm -rf "$W" && mkdir -p "$W"
seq 0 2 1004 >"$W/train.txt"
step chunkify 120 "bin/chunkify build testdata/email-Eu-core.txt.gz -o $W/email --chunk-size 16KiB && bin/chunkify verify $W/email"
step run-gpu 120 "bin/streamsampler run --backend gpu --graph $W/email --train $W/train.txt --fanouts 15,10,5 --batch-size 64 --epochs 2"
step run-emu 120 "bin/streamsampler run --backend emu --graph $W/email --train $W/train.txt --fanouts 15,10,5 --batch-size 64 --epochs 2"
for b in gpu emu; do
	step "prepare-$b" 120 "for e in 0 1; do bin/streamsampler prepare --backend $b --state $W/state-$b --graph $W/email --train $W/train.txt --fanouts 15,10,5 --seed 1 || exit 1; done; ls -l $W/state-$b/epoch-*"
done
step prepare-gpu-bsp 120 "for e in 0 1; do bin/streamsampler prepare --backend gpu --gpu-mode bsp --state $W/state-bsp --graph $W/email --train $W/train.txt --fanouts 15,10,5 --seed 1 || exit 1; done"
# Byte-identical epoch arrays: gpu (fused, bsp) against emu, every file.
step cmp-epochs 60 "n=0; for d in $W/state-emu/epoch-*; do for f in \$d/*.u32 \$d/*.i32; do r=\${f#$W/state-emu/}; for o in gpu bsp; do cmp $W/state-emu/\$r $W/state-\$o/\$r || exit 1; n=\$((n+1)); done; done; done; echo \"\$n array files byte-identical (gpu fused and bsp vs emu)\"; [ \$n -gt 0 ]"

step gpu-bench 150 "PYTHONUNBUFFERED=1 python3 bench/gpu_bench.py --lib gpu/build/libstreamsampler_gpu.so --reps $REPS --json $OUT/gpu_bench.json"

# Last: the slowest step (the sanitizers slow kernels by orders of magnitude).
step sanitize ${SANITIZE_TIMEOUT:-200} "make -C gpu sanitize"

echo "failed steps: $fails" >>"$OUT/summary.log"
# The device tool brings back at most 8 files: keep the summary and the
# benchmark's JSON, pack the step logs.
(cd "$OUT" && tar -czf logs.tgz -- *.log && find . -maxdepth 1 -name '*.log' ! -name summary.log -delete)
exit $fails
