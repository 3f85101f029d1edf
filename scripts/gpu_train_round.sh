#!/usr/bin/env bash
# The GPU machine's training round (issue 28), in one call, most important
# first, each stage skipped once the call's time is nearly spent:
#   1. build the `strata` app, bench_train_cuda and strata_cuda_tests (and
#      strata_tests for HOST_TEST_FILTER);
#   2. CUDA_TEST_FILTER's strata_cuda_tests and HOST_TEST_FILTER's
#      strata_tests (every backend, cuda included), when given;
#   3. train the shipped model from scratch (scripts/train_shipped_model.sh),
#      its greedy text, and PyTorch's parity fixture for it
#      (bench/peer_model.py fixtures --tiny);
#   4. strata train against PyTorch on cuda (scripts/train_parity.py, f32
#      and bf16);
#   5. the training-speed benchmarks beside PyTorch eager and torch.compile
#      (scripts/gpu_train_bench.sh, reusing the build);
#   6. compute-sanitizer memcheck of MEMCHECK_FILTER's strata_cuda_tests.
#   scripts/gpu_train_round.sh OUTDIR [CORPUS]
# Env: CMAKE_PREFIX_PATH=$PWD/.device-deps (the app's CLI11 and json);
# DEADLINE (seconds the call may take, default 560); STEPS (the shipped
# model's, default 2500; SHIP=0 skips the shipped model); SHIP_TIMEOUT;
# PARITY_DTYPES (default "f32 bf16"); CUDA_TEST_FILTER; HOST_TEST_FILTER;
# TEST_TIMEOUT (each test stage's, default 200); MEMCHECK_FILTER.
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_train_round.sh OUTDIR [CORPUS]}
corpus=${2:-/usr/share/common-licenses}
source "$(dirname "$0")/gpu_log.sh"  # L, S, say, pack, J
export BUILD=${BUILD:-build-train}
deadline=${DEADLINE:-560}
left() { echo $((deadline - ($(date +%s) - t0))); }
test_limit() { local l=$(($(left) - 10)) c=${TEST_TIMEOUT:-200}; echo $((l < c ? l : c)); }
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $J cores; commit $(git rev-parse --short HEAD 2>/dev/null)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DSTRATA_WERROR=ON -DSTRATA_BUILD_APP=ON \
  ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} > "$L/configure.log" 2>&1 &&
  timeout ${BUILD_TIMEOUT:-300} ninja -C "$BUILD" -j"$J" strata_cli bench_train_cuda strata_cuda_tests \
    ${HOST_TEST_FILTER:+strata_tests} \
    > "$L/build.log" 2>&1
rc=$?
say "build rc=$rc; warnings $(grep -c 'warning:' "$L/build.log")"
[ $rc = 0 ] || { grep -m10 -B2 -A8 'error' "$L/build.log" | tee -a "$S"; pack; exit 1; }
strata="$BUILD/app/strata"

# 2. Tests: correctness before speed.
if [ -n "${CUDA_TEST_FILTER:-}" ] && [ "$(left)" -gt 30 ]; then
  timeout "$(test_limit)" "$BUILD/tests/strata_cuda_tests" "$CUDA_TEST_FILTER" \
    > "$L/cuda_tests.log" 2>&1
  say "strata_cuda_tests '$CUDA_TEST_FILTER' rc=$? : $(grep -E 'test cases|All tests' "$L/cuda_tests.log" | tail -1)"
  grep -E -A8 'FAILED' "$L/cuda_tests.log" | head -30 | tee -a "$S"
fi
if [ -n "${HOST_TEST_FILTER:-}" ] && [ "$(left)" -gt 30 ]; then
  timeout "$(test_limit)" "$BUILD/tests/strata_tests" "$HOST_TEST_FILTER" \
    > "$L/host_tests.log" 2>&1
  say "strata_tests '$HOST_TEST_FILTER' rc=$? : $(grep -E 'test cases|All tests' "$L/host_tests.log" | tail -1)"
  grep -E -A8 'FAILED' "$L/host_tests.log" | head -30 | tee -a "$S"
fi
pack

# 3. The shipped model.
ship="$OUT/shipped"
if [ "${SHIP:-1}" != 0 ]; then
  timeout ${SHIP_TIMEOUT:-200} bash scripts/train_shipped_model.sh "$strata" "$ship" "$corpus" \
    > "$L/shipped_train.log" 2>&1
  say "train_shipped_model rc=$? ($(grep -c '^step' "$L/shipped_train.log") progress lines)"
  grep -E '^train:|^step' "$L/shipped_train.log" | tail -6 | tee -a "$S"
  cp "$ship/run/train_log.csv" "$L/shipped_train_log.csv" 2>/dev/null
  ck="$ship/run/checkpoint"
  if [ -f "$ck/model.safetensors" ]; then
    timeout 60 "$strata" generate --config "$ck/config.json" --weights "$ck/model.safetensors" \
      --prompt "This program is free software" --max-tokens 120 > "$L/shipped_greedy.txt" 2>&1
    say "greedy rc=$?: $(head -c 400 "$L/shipped_greedy.txt")"
    timeout 120 python3 bench/peer_model.py fixtures "$OUT/fixtures" --tiny "$ck" \
      > "$L/fixtures.log" 2>&1
    say "peer_model.py fixtures --tiny rc=$?"
    # What comes back (the device returns a handful of files): the model and
    # its fixture, packed with the logs.
    mkdir -p "$L/shipped_model"
    cp "$ck/config.json" "$ck/model.safetensors" "$ck/trainer_state.json" "$L/shipped_model/"
    cp "$OUT/fixtures/tiny/expected.safetensors" "$L/shipped_model/" 2>/dev/null
    rm -rf "$ship" "$OUT/fixtures"
  fi
fi
pack

# 4. Parity with PyTorch on cuda.
for dt in ${PARITY_DTYPES-f32 bf16}; do
  [ "$(left)" -gt 200 ] || { say "parity $dt skipped: $(left) s left"; continue; }
  timeout 90 python3 scripts/train_parity.py --strata "$strata" --backend cuda --device cuda \
    --dtype $dt > "$L/parity_$dt.txt" 2>&1
  say "train_parity --dtype $dt rc=$?"
  tail -7 "$L/parity_$dt.txt" | cut -c1-400 | tee -a "$S"
done
pack

# 5. Speed.
if [ "$(left)" -gt 150 ]; then
  BENCH_TIMEOUT=$(( $(left) * 2 / 5 )) PEER_TIMEOUT=$(( $(left) * 3 / 5 - 20 )) STRATA_REPS=${STRATA_REPS:-2} \
    PEER_REPS=${PEER_REPS:-10} bash scripts/gpu_train_bench.sh "$OUT" > "$L/bench_round.log" 2>&1
  say "gpu_train_bench rc=$?"
else
  say "speed skipped: $(left) s left"
fi

# 6. compute-sanitizer memcheck of MEMCHECK_FILTER's strata_cuda_tests.
if [ -n "${MEMCHECK_FILTER:-}" ] && [ "$(left)" -gt 30 ]; then
  timeout $(( $(left) - 10 )) compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$BUILD/tests/strata_cuda_tests" "$MEMCHECK_FILTER" > "$L/memcheck.log" 2>&1
  say "memcheck '$MEMCHECK_FILTER' rc=$? : $(grep -E 'ERROR SUMMARY|test cases|All tests' "$L/memcheck.log" | tail -2 | tr '\n' ' ')"
fi
pack
rm -rf "$L"  # everything is in logs.tgz: the device returns only a few files
say "done"
