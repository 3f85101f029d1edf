#!/usr/bin/env bash
# Training speed on the GPU machine (issue 28), in one call: build
# bench_train_cuda and bench_optim_cuda (and the `strata` app), time the
# fused AdamW update beside a copy of its bytes, then Strata's training step on
# GPT-2 124M and the 17M benchmark model in f32 and bf16 (JSON out), then
# PyTorch's same step, eager and torch.compile, beside it
# (bench/peer_train.py --strata). Kept to about 450 s of device time with the
# build: few repetitions, torch.compile on the bf16 rows only unless
# COMPILE_DTYPES says more (each compile is about a minute).
#   scripts/gpu_train_bench.sh OUTDIR
# Env: CMAKE_PREFIX_PATH=$PWD/.device-deps (the app's CLI11 and json, staged
# by ../shared/tools/device-deps.sh; without it the app is not built);
# BENCH_FILTER (bench_train_cuda's --benchmark_filter, default all);
# STRATA_REPS (repetitions, default 3); PEER_REPS (timed PyTorch steps,
# default 15); PEER_DTYPES (PyTorch's rows, default f32 bf16);
# COMPILE_DTYPES (default bf16; "none": eager only);
# MAX_AUTOTUNE=1 adds torch.compile's max-autotune rows; timeouts
# BUILD_TIMEOUT, BENCH_TIMEOUT, PEER_TIMEOUT.
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_train_bench.sh OUTDIR}
source "$(dirname "$0")/gpu_log.sh"  # L, S, say, pack, J
B=${BUILD:-build-train}
targets=(bench_train_cuda bench_optim_cuda)
[ -n "${CMAKE_PREFIX_PATH:-}" ] && targets+=(strata_cli)
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1); $J cores; commit $(git rev-parse --short HEAD 2>/dev/null)"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DSTRATA_WERROR=ON \
  -DSTRATA_BUILD_APP=$([ -n "${CMAKE_PREFIX_PATH:-}" ] && echo ON || echo OFF) \
  ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} > "$L/configure.log" 2>&1 &&
  timeout ${BUILD_TIMEOUT:-240} ninja -C "$B" -j"$J" "${targets[@]}" > "$L/build.log" 2>&1
rc=$?
say "build ${targets[*]} rc=$rc; warnings $(grep -c 'warning:' "$L/build.log")"
[ $rc = 0 ] || { grep -m10 -B2 -A8 'error' "$L/build.log" | tee -a "$S"; pack; exit 1; }

timeout 60 "$B/bench/bench_optim_cuda" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true > "$L/optim_cuda.txt" 2>&1
say "bench_optim_cuda rc=$?"
grep -E '_median' "$L/optim_cuda.txt" | tee -a "$S"
timeout ${BENCH_TIMEOUT:-150} "$B/bench/bench_train_cuda" --benchmark_filter="${BENCH_FILTER:-.}" \
  --benchmark_repetitions=${STRATA_REPS:-3} \
  --benchmark_out="$L/train_cuda.json" --benchmark_out_format=json > "$L/train_cuda.txt" 2>&1
say "bench_train_cuda rc=$?"
grep -E '_median|ERROR|error' "$L/train_cuda.txt" | tee -a "$S"
pack

cdt=${COMPILE_DTYPES:-bf16}
peer=(--device cuda --reps ${PEER_REPS:-15} --strata "$L/train_cuda.json" --json "$L/peer_train.json"
      --out "$OUT/train_table.md" ${PEER_DTYPES:+--dtypes $PEER_DTYPES})
if [ "$cdt" = none ]; then peer+=(--no-compile); else peer+=(--compile-dtypes $cdt); fi
[ -n "${MAX_AUTOTUNE:-}" ] && peer+=(--max-autotune)
timeout ${PEER_TIMEOUT:-240} python3 bench/peer_train.py "${peer[@]}" > "$L/peer_train.txt" 2>&1
say "peer_train.py (PyTorch eager, torch.compile on $cdt) rc=$?"
grep -v '^{' "$L/peer_train.txt" | tail -20 | tee -a "$S"
pack
say "done"
