#!/usr/bin/env bash
# The GPU run of the cuda elementwise/row ops: tests ([ops] and [pool]),
# compute-sanitizer memcheck on the ops tests (without [large]), the
# benchmark (JSON) and the PyTorch peer, each under a time limit so the
# whole run fits one short device call. Uses binaries carried in
# .gpucarry/bins.tar.gz when they start on the device, else builds there.
#   scripts/gpu_ops_run.sh OUTDIR
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_ops_run.sh OUTDIR}
source "$(dirname "$0")/gpu_log.sh"  # S, say
say "date $(date -u +%FT%TZ) host $(hostname); $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1)"
B=/tmp/bins
mkdir -p $B
ok=0
if [ -f .gpucarry/bins.tar.gz ]; then
  tar -xzf .gpucarry/bins.tar.gz -C $B 2> "$OUT/carry_err.txt"
  export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  $B/strata_cuda_tests --list-tests > /dev/null 2>> "$OUT/carry_err.txt" && ok=1
fi
if [ $ok = 1 ]; then
  T=$B/strata_cuda_tests; BE=$B/bench_ops_cuda; say "carried binaries run"
else
  say "carried binaries failed ($(head -c 300 "$OUT/carry_err.txt")); building"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_APP=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90a > "$OUT/build.log" 2>&1 &&
    timeout 280 cmake --build build-gpu --target strata_cuda_tests bench_ops_cuda -j 16 >> "$OUT/build.log" 2>&1
  say "build rc=$?"; tail -5 "$OUT/build.log"
  T=build-gpu/tests/strata_cuda_tests; BE=build-gpu/bench/bench_ops_cuda
fi
PHASES=${PHASES:-tests bench peer memcheck}
has() { [[ " $PHASES " == *" $1 "* ]]; }
if has tests; then
timeout ${TESTS_TIMEOUT:-100} $T ${TESTS_FILTER:-"[ops],[pool]"} --durations yes > "$OUT/tests.log" 2>&1
say "tests rc=$? : $(grep -E 'test cases|All tests passed' "$OUT/tests.log" | tail -2 | tr '\n' ' ')"
grep -B3 -A12 -m6 'FAILED' "$OUT/tests.log" | head -80
fi
has bench && timeout 100 $BE --benchmark_min_time=0.1 --benchmark_out="$OUT/bench_ops_cuda.json" \
  --benchmark_out_format=json > "$OUT/bench.txt" 2>&1
say "bench rc=$?"; grep -E '^(copy|add|gelu|cast|row|tiny)' "$OUT/bench.txt" | awk '{print $1, $2, $NF, $(NF-1), $(NF-2)}'
if has peer; then
PYTHONUNBUFFERED=1 timeout 80 python3 bench/peer_ops.py --strata "$OUT/bench_ops_cuda.json" \
  --out "$OUT/peer_table.md" --json "$OUT/peer_torch.json" > "$OUT/peer.txt" 2>&1
say "peer rc=$?"; cat "$OUT/peer.txt"
fi
left=$(( 330 - ($(date +%s) - t0) ))
if has memcheck && [ $left -gt 20 ]; then
  STRATA_CUDA_BLOCK_CACHE=0 timeout $left compute-sanitizer --tool memcheck --error-exitcode 9 $T "[ops]~[large]" > "$OUT/memcheck.log" 2>&1
  say "memcheck rc=$? : $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1) $(head -3 "$OUT/memcheck.log" | tr '\n' ' ' | head -c 200)"
fi
left=$(( 330 - ($(date +%s) - t0) ))
if has alltests && [ $left -gt 20 ]; then
  timeout $left $T > "$OUT/alltests.log" 2>&1
  say "all cuda tests rc=$? : $(grep -E 'test cases|All tests passed' "$OUT/alltests.log" | tail -2 | tr '\n' ' ')"
  grep -B3 -A8 -m4 'FAILED' "$OUT/alltests.log" | head -40
fi
say done
