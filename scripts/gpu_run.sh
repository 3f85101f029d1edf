#!/usr/bin/env bash
# The GPU run: started from the repository root on the GPU machine, it
# configures and builds Strata there with the cuda backend, runs the whole
# ctest suite, runs the CUDA tests again under compute-sanitizer (memcheck;
# racecheck on the shared-memory kernels), runs the GPU benchmark and the
# PyTorch peer comparison, and leaves logs and JSON in the folder given.
#
#   scripts/gpu_run.sh OUTDIR            (on the device: scripts/gpu_run.sh "$OUT")
#
# PHASES (default "build test sanitize sass bench peer") picks steps; VARIANTS
# ("name:regex ..." with kernel variant names from
# backends/cuda/attention_variants_*.cu) adds timing runs of the shapes
# matching regex with STRATA_CUDA_VARIANT=name forced. Each phase has a
# time limit so that the whole run fits a 10-minute device call. VTEST
# ("name ...") runs the CUDA attention tests with each variant forced (and
# racecheck too when VRACE=1); by default the tiled d <= 64 kernel, which
# the default tests reach only above 2^24 scores. Everything lands in OUTDIR/logs and
# is packed into OUTDIR/gpu_run.tar.gz after each phase, with a short
# OUTDIR/summary.txt (the device tool brings back only a few files).
set -u -o pipefail
OUTDIR=${1:?usage: scripts/gpu_run.sh OUTDIR}
PHASES=${PHASES:-build test sanitize sass bench peer}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
LOGS="$OUTDIR/logs"
mkdir -p "$LOGS"
SUMMARY="$OUTDIR/summary.txt"
MEMCHECK_FILTER=${MEMCHECK_FILTER:-'~[large]~[errors]'}

say() { echo "[$(date +%T)] $*" | tee -a "$SUMMARY"; }
pack() { tar -C "$OUTDIR" -czf "$OUTDIR/gpu_run.tar.gz" logs 2>/dev/null; }
has() { [[ " $PHASES " == *" $1 "* ]]; }

say "host $(hostname) $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1)"
nvidia-smi > "$LOGS/nvidia-smi.txt" 2>&1

if has build; then
  say "configure"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DSTRATA_WERROR=ON -DCMAKE_CUDA_FLAGS="-Xptxas=-v" \
    > "$LOGS/configure.log" 2>&1 ||
    { say "configure FAILED"; tail -30 "$LOGS/configure.log"; pack; exit 1; }
  say "build (-j$JOBS)"
  ninja -C "$BUILD" -j"$JOBS" > "$LOGS/build.log" 2>&1 ||
    { say "build FAILED"; grep -m20 -B2 -A8 'error' "$LOGS/build.log"; pack; exit 1; }
  grep -E 'Compiling entry|registers|spill' "$LOGS/build.log" > "$LOGS/ptxas.txt" 2>/dev/null
  say "build ok"
  pack
fi

if has test; then
  say "ctest"
  (cd "$BUILD" && ctest -V --timeout ${CTEST_TIMEOUT:-240}) > "$LOGS/ctest.log" 2>&1
  say "ctest rc=$? : $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log")"
  grep -E 'All tests passed|test cases:|assertions:|FAILED|Skipped|Passed|Failed' "$LOGS/ctest.log" |
    head -30 | tee -a "$SUMMARY"
  pack
fi

# Correctness of non-default kernel variants: the CUDA attention tests with
# STRATA_CUDA_VARIANT forced (it applies wherever the variant serves a call).
for v in ${VTEST-f32.tiled.64x64.d64.3_per_sm}; do
  STRATA_CUDA_VARIANT=$v timeout 120 "$BUILD/tests/strata_cuda_tests" "[attention]" \
    > "$LOGS/vtest_$v.log" 2>&1
  say "vtest $v rc=$? : $(grep -E 'test cases|All tests passed' "$LOGS/vtest_$v.log" | tail -1)"
  if [[ -n "${VRACE:-}" ]]; then
    STRATA_CUDA_VARIANT=$v timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 \
      "$BUILD/tests/strata_cuda_tests" "[racecheck]" > "$LOGS/vrace_$v.log" 2>&1
    say "  racecheck rc=$? : $(grep -E 'RACECHECK SUMMARY' "$LOGS/vrace_$v.log" | tail -1)"
  fi
  pack
done

if has sanitize; then
  say "compute-sanitizer memcheck"
  STRATA_CUDA_BLOCK_CACHE=0 timeout ${MEMCHECK_TIMEOUT:-150} compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$BUILD/tests/strata_cuda_tests" "$MEMCHECK_FILTER" > "$LOGS/memcheck.log" 2>&1
  say "memcheck rc=$? : $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -1)"
  say "compute-sanitizer racecheck"
  timeout ${RACECHECK_TIMEOUT:-90} compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$BUILD/tests/strata_cuda_tests" "[racecheck]" > "$LOGS/racecheck.log" 2>&1
  say "racecheck rc=$? : $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/racecheck.log" | tail -1)"
  pack
fi

if has sass; then
  # Instruction mix per kernel: FFMA, f64 tensor-core MMAs (DMMA), 128-bit
  # shared/global loads, cp.async, local-memory traffic (spills).
  say "sass"
  cuobjdump --dump-sass "$BUILD/libstrata_backend_cuda.a" > "$LOGS/sass.txt" 2>&1
  awk '/Function :/ { if (f) printf "%-90s FFMA=%d DMMA=%d LDS.128=%d LDS=%d LDGSTS=%d LDG.128=%d LDL=%d STL=%d MUFU.EX2=%d\n", f, ffma, dmma, lds128, lds, ldgsts, ldg128, ldl, stl, ex2;
                       f = substr($3, 1, 90); ffma = dmma = lds128 = lds = ldgsts = ldg128 = ldl = stl = ex2 = 0; next }
       / FFMA / { ffma++ } / DMMA/ { dmma++ } /LDS\.128/ { lds128++ } / LDS/ { lds++ } /LDGSTS/ { ldgsts++ }
       /LDG\.E\.128/ { ldg128++ } / LDL/ { ldl++ } / STL/ { stl++ } /MUFU\.EX2/ { ex2++ }
       END { if (f) printf "%-90s FFMA=%d DMMA=%d LDS.128=%d LDS=%d LDGSTS=%d LDG.128=%d LDL=%d STL=%d MUFU.EX2=%d\n", f, ffma, dmma, lds128, lds, ldgsts, ldg128, ldl, stl, ex2 }' \
    "$LOGS/sass.txt" > "$LOGS/sass_summary.txt"
  grep -E 'attn_' "$LOGS/sass_summary.txt" | tee -a "$SUMMARY"
  gzip -f "$LOGS/sass.txt"
  pack
fi

BENCH="$BUILD/bench/bench_attention_cuda"
if has bench; then
  say "bench_attention_cuda"
  timeout 150 "$BENCH" --benchmark_min_time=0.3 --benchmark_out="$LOGS/bench_cuda.json" \
    --benchmark_out_format=json > "$LOGS/bench_cuda.txt" 2>&1
  say "bench rc=$?"
  cp "$LOGS/bench_cuda.json" "$OUTDIR/bench_cuda.json" 2>/dev/null
  grep attention_cuda "$LOGS/bench_cuda.txt" | tee -a "$SUMMARY"
  pack
fi

for vf in ${VARIANTS:-}; do
  v=${vf%%:*}
  f=${vf#*:}
  say "variant $v ($f)"
  STRATA_CUDA_VARIANT=$v timeout 60 "$BENCH" --benchmark_min_time=0.2 --benchmark_filter="$f" \
    > "$LOGS/variant_$v.txt" 2>&1
  grep attention_cuda "$LOGS/variant_$v.txt" | tee -a "$SUMMARY"
  pack
done

if has peer; then
  say "peer_attention.py"
  PYTHONUNBUFFERED=1 timeout ${PEER_TIMEOUT:-150} python3 bench/peer_attention.py --strata "$LOGS/bench_cuda.json" \
    --out "$LOGS/peer_table.md" > "$LOGS/peer.txt" 2> "$LOGS/peer_err.txt"
  say "peer rc=$?"
  cat "$LOGS/peer.txt" | tee -a "$SUMMARY"
  cp "$LOGS/peer_table.md" "$OUTDIR/" 2>/dev/null
  pack
fi
say "done"
