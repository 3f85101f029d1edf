#!/usr/bin/env bash
# The GPU run: started from the repository root on the GPU machine, it
# configures and builds Strata there with the cuda backend, runs the whole
# ctest suite, runs the CUDA tests again under compute-sanitizer (memcheck;
# racecheck on the shared-memory kernels), runs the GPU benchmark and the
# PyTorch peer comparison, and leaves logs and JSON in the folder given.
#
#   scripts/gpu_run.sh OUTDIR            (on the device: scripts/gpu_run.sh "$OUT")
#
# PHASES (default "build test sanitize bench peer") picks steps; VARIANTS
# (kernel variant names, see backends/cuda/attention_launch.cu) adds timing
# runs with STRATA_CUDA_VARIANT forced. Everything lands in OUTDIR/logs and
# is packed into OUTDIR/gpu_run.tar.gz after each phase, with a short
# OUTDIR/summary.txt (the device tool brings back only a few files).
set -u -o pipefail
OUTDIR=${1:?usage: scripts/gpu_run.sh OUTDIR}
PHASES=${PHASES:-build test sanitize bench peer}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
LOGS="$OUTDIR/logs"
mkdir -p "$LOGS"
SUMMARY="$OUTDIR/summary.txt"

say() { echo "[$(date +%T)] $*" | tee -a "$SUMMARY"; }
pack() { tar -C "$OUTDIR" -czf "$OUTDIR/gpu_run.tar.gz" logs 2>/dev/null; }
has() { [[ " $PHASES " == *" $1 "* ]]; }

say "host $(hostname) $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1)"
nvidia-smi > "$LOGS/nvidia-smi.txt" 2>&1

if has build; then
  say "configure"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DSTRATA_WERROR=ON > "$LOGS/configure.log" 2>&1 ||
    { say "configure FAILED"; tail -30 "$LOGS/configure.log"; pack; exit 1; }
  say "build (-j$JOBS)"
  ninja -C "$BUILD" -j"$JOBS" > "$LOGS/build.log" 2>&1 ||
    { say "build FAILED"; grep -m20 -B2 -A8 'error' "$LOGS/build.log"; pack; exit 1; }
  grep -E 'registers|spill' "$LOGS/build.log" > "$LOGS/ptxas.txt" 2>/dev/null
  say "build ok"
  pack
fi

if has test; then
  say "ctest"
  (cd "$BUILD" && ctest --output-on-failure --timeout 900) > "$LOGS/ctest.log" 2>&1
  say "ctest rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log")"
  "$BUILD/tests/strata_cuda_tests" --durations yes > "$LOGS/cuda_tests.log" 2>&1
  say "strata_cuda_tests rc=$? : $(grep -E 'test cases|All tests passed' "$LOGS/cuda_tests.log" | tail -2 | tr '\n' ' ')"
  grep -E 'FAILED|failed' "$LOGS/ctest.log" | head -20 | tee -a "$SUMMARY"
  pack
fi

if has sanitize; then
  say "compute-sanitizer memcheck"
  compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$BUILD/tests/strata_cuda_tests" "~[large]" > "$LOGS/memcheck.log" 2>&1
  say "memcheck rc=$? : $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -1)"
  say "compute-sanitizer racecheck"
  compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$BUILD/tests/strata_cuda_tests" "[split],[layout]" > "$LOGS/racecheck.log" 2>&1
  say "racecheck rc=$? : $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/racecheck.log" | tail -1)"
  pack
fi

BENCH="$BUILD/bench/bench_attention_cuda"
if has bench; then
  say "bench_attention_cuda"
  "$BENCH" --benchmark_min_time=0.3 --benchmark_out="$LOGS/bench_cuda.json" \
    --benchmark_out_format=json > "$LOGS/bench_cuda.txt" 2>&1
  say "bench rc=$?"
  cp "$LOGS/bench_cuda.json" "$OUTDIR/bench_cuda.json" 2>/dev/null
  grep attention_cuda "$LOGS/bench_cuda.txt" | tee -a "$SUMMARY"
  pack
fi

for v in ${VARIANTS:-}; do
  say "variant $v"
  STRATA_CUDA_VARIANT=$v "$BENCH" --benchmark_min_time=0.2 ${VFILTER:+--benchmark_filter=$VFILTER} \
    > "$LOGS/variant_$v.txt" 2>&1
  grep attention_cuda "$LOGS/variant_$v.txt" | tee -a "$SUMMARY"
  pack
done

if has peer; then
  say "peer_attention.py"
  PYTHONUNBUFFERED=1 python3 bench/peer_attention.py --strata "$LOGS/bench_cuda.json" \
    --out "$LOGS/peer_table.md" > "$LOGS/peer.txt" 2> "$LOGS/peer_err.txt"
  say "peer rc=$?"
  cat "$LOGS/peer.txt" | tee -a "$SUMMARY"
  cp "$LOGS/peer_table.md" "$OUTDIR/" 2>/dev/null
  pack
fi
say "done"
