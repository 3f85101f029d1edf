#!/usr/bin/env bash
# The GPU machine's check of autograd (issue 27): this tree's gradient tests
# on the cuda backend (with reference and cpu beside it), then inference
# timings of this tree against a base tree without autograd, alternately in
# one run (the model's decode step, the tiny add, a few attention shapes).
#   scripts/gpu_autograd_check.sh OUTDIR [BASE_DIR]
# TESTS_ONLY=1 builds this tree alone and runs the tests (no timings).
# BASE_DIR (default .gpucarry/base): a plain copy (git archive) of the commit
# before autograd. Deps: CMAKE_PREFIX_PATH=$PWD/.device-deps.
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_autograd_check.sh OUTDIR [BASE_DIR]}
BASE=${2:-.gpucarry/base}
source "$(dirname "$0")/gpu_log.sh"  # L, S, say, pack, J
cfg=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a
     -DSTRATA_WERROR=ON -DSTRATA_BUILD_APP=OFF
     ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH})
benches=(bench_attention_cuda bench_model_cuda bench_ops_cuda)
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $J cores"
if [ -n "${TESTS_ONLY:-}" ]; then
  cmake -S . -B build-new "${cfg[@]}" > "$L/configure_new.log" 2>&1 &&
    timeout ${BUILD_TIMEOUT:-420} ninja -C build-new -j"$J" strata_tests strata_module_check > "$L/build_new.log" 2>&1
  rc=$?
  say "build rc=$rc; warnings $(grep -c 'warning:' "$L/build_new.log")"
  [ $rc = 0 ] || { grep -m10 -B2 -A8 'error' "$L/build_new.log" | tee -a "$S"; pack; exit 1; }
  timeout ${TEST_TIMEOUT:-300} build-new/tests/strata_tests '[autograd],[runner]' > "$L/tests.log" 2>&1
  say "gradient and op runner tests (reference, cpu, cuda) rc=$? : $(grep -E 'test cases|All tests' "$L/tests.log" | tail -1)"
  grep -E -A6 'FAILED' "$L/tests.log" | head -40 | tee -a "$S"
  (cd build-new && timeout 120 ctest -R module --output-on-failure) > "$L/module.log" 2>&1
  say "cuda module checks rc=$? : $(grep -E 'tests passed|tests failed' "$L/module.log")"
  pack
  exit 0
fi
(cmake -S "$BASE" -B build-base "${cfg[@]}" -DSTRATA_BUILD_TESTS=OFF > "$L/configure_base.log" 2>&1 &&
   timeout ${BUILD_TIMEOUT:-420} ninja -C build-base -j$((J / 2)) "${benches[@]}" > "$L/build_base.log" 2>&1) &
(cmake -S . -B build-new "${cfg[@]}" > "$L/configure_new.log" 2>&1 &&
   timeout ${BUILD_TIMEOUT:-420} ninja -C build-new -j$((J / 2)) strata_tests "${benches[@]}" > "$L/build_new.log" 2>&1)
rc_new=$?
wait $!
rc_base=$?
say "build base rc=$rc_base new rc=$rc_new; warnings new $(grep -c 'warning:' "$L/build_new.log")"
[ $rc_new = 0 ] || { grep -m10 -B2 -A8 'error' "$L/build_new.log" | tee -a "$S"; pack; exit 1; }
timeout ${TEST_TIMEOUT:-200} build-new/tests/strata_tests '[autograd],[runner]' > "$L/tests.log" 2>&1
say "gradient and op runner tests (reference, cpu, cuda) rc=$? : $(grep -E 'test cases|All tests' "$L/tests.log" | tail -1)"
grep -E 'FAIL|cuda:' "$L/tests.log" | head -20 | tee -a "$S"
[ $rc_base = 0 ] || { tail -20 "$L/build_base.log" | tee -a "$S"; pack; exit 1; }
ATTN_FILTER=${ATTN_FILTER:-bf16_b4h16|decode} ATTN_MIN_TIME=0.05 bash scripts/gpu_ab_timings.sh "$L" "$S"
pack
say "done"
