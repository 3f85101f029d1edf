#!/usr/bin/env bash
# The GPU machine's check of the training work (issues 27 and 28), in one
# call: build this tree, run the gradient, optimizer and model tests with the
# cuda backend beside reference and cpu, memcheck the backward kernels
# through the lazily loaded cuda module, then the backward benchmarks beside
# their PyTorch peers, and the CPU's matmul and attention backward at 2
# threads on this machine's CPU.
#   scripts/gpu_training_check.sh OUTDIR
# Env: CMAKE_PREFIX_PATH=$PWD/.device-deps; TEST_FILTER (default the
# gradient, runner, optimizer and model tags); CUDA_TEST_FILTER (a
# strata_cuda_tests filter, default none: skipped); OPS_FILTER (bench_ops_cuda),
# PEER_OPS_FILTER (bench/peer_ops.py --only); SKIP_BENCH=1; SKIP_CPU_BENCH=1; timeouts
# TEST_TIMEOUT, MEMCHECK_TIMEOUT, BENCH_TIMEOUT.
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_training_check.sh OUTDIR}
source "$(dirname "$0")/gpu_log.sh"  # L, S, say, pack, J
targets=(strata_tests strata_cuda_tests bench_attention_cuda bench_ops_cuda
         bench_matmul_backward_cpu bench_attention_backward_cpu)
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $J cores"
cmake -S . -B build-new -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DSTRATA_WERROR=ON -DSTRATA_BUILD_APP=OFF \
  ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} > "$L/configure.log" 2>&1 &&
  timeout ${BUILD_TIMEOUT:-420} ninja -C build-new -j"$J" "${targets[@]}" > "$L/build.log" 2>&1
rc=$?
say "build rc=$rc; warnings $(grep -c 'warning:' "$L/build.log")"
[ $rc = 0 ] || { grep -m10 -B2 -A8 'error' "$L/build.log" | tee -a "$S"; pack; exit 1; }

filter=${TEST_FILTER:-[autograd],[runner],[optim],[model]}
timeout ${TEST_TIMEOUT:-240} build-new/tests/strata_tests "$filter" > "$L/tests.log" 2>&1
say "strata_tests '$filter' rc=$? : $(grep -E 'test cases|All tests' "$L/tests.log" | tail -1)"
grep -E -A8 'FAILED' "$L/tests.log" | head -60 | tee -a "$S"
if [ -n "${CUDA_TEST_FILTER:-}" ]; then
  timeout ${CUDA_TEST_TIMEOUT:-150} build-new/tests/strata_cuda_tests "$CUDA_TEST_FILTER" \
    > "$L/cuda_tests.log" 2>&1
  say "strata_cuda_tests '$CUDA_TEST_FILTER' rc=$? : $(grep -E 'test cases|All tests' "$L/cuda_tests.log" | tail -1)"
  grep -E -A8 'FAILED' "$L/cuda_tests.log" | head -40 | tee -a "$S"
fi
STRATA_CUDA_BLOCK_CACHE=0 timeout ${MEMCHECK_TIMEOUT:-90} compute-sanitizer --tool memcheck --error-exitcode 9 \
  build-new/tests/strata_tests '[autograd]' > "$L/memcheck.log" 2>&1
say "memcheck [autograd] rc=$? (124: cut by the timeout) : $(grep -E 'ERROR SUMMARY' "$L/memcheck.log" | tail -1)"
[ -n "${SKIP_BENCH:-}" ] && { pack; exit 0; }

bt=${BENCH_TIMEOUT:-120}
timeout $bt build-new/bench/bench_attention_cuda --benchmark_filter=bwd \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json > "$L/attention_bwd.json" 2> "$L/attention_bwd.err"
say "bench_attention_cuda bwd rc=$?"
timeout $bt python3 bench/peer_attention_backward.py --strata "$L/attention_bwd.json" \
  > "$L/attention_bwd_peer.txt" 2>&1
say "attention backward peers rc=$?"
cat "$L/attention_bwd_peer.txt" | tee -a "$S"
ops=${OPS_FILTER:-row_backward|cross_entropy|copy|tiny_add/(alloc|out)}
timeout $bt build-new/bench/bench_ops_cuda --benchmark_filter="$ops" \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$L/ops_bwd.json" --benchmark_out_format=json > "$L/ops_bwd.txt" 2>&1
say "bench_ops_cuda '$ops' rc=$?"
grep -E 'median' "$L/ops_bwd.txt" | head -40 | tee -a "$S"
timeout $bt python3 bench/peer_ops.py --strata "$L/ops_bwd.json" \
  --only "${PEER_OPS_FILTER:-row_backward|cross_entropy|copy_bytes}" > "$L/ops_peer.txt" 2>&1
say "PyTorch eager beside them rc=$?"
tee -a "$S" < "$L/ops_peer.txt"
if [ -z "${SKIP_CPU_BENCH:-}" ]; then
  OMP_NUM_THREADS=2 timeout $bt build-new/bench/bench_matmul_backward_cpu --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true > "$L/matmul_bwd_cpu.txt" 2>&1
  say "bench_matmul_backward_cpu (2 threads, this machine's CPU: $(lscpu | grep 'Model name' | sed 's/ \+/ /g')) rc=$?"
  grep -E 'median' "$L/matmul_bwd_cpu.txt" | tee -a "$S"
  timeout $bt python3 bench/cpu_peer_attention_backward.py build-new/bench/bench_attention_backward_cpu \
    --threads 2 --reps 3 > "$L/attention_bwd_cpu.txt" 2>&1
  say "cpu attention backward against PyTorch's, 2 threads rc=$?"
  tee -a "$S" < "$L/attention_bwd_cpu.txt"
fi
pack
say "done"
