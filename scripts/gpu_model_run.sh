#!/usr/bin/env bash
# The GPU run of the models (docs/guide/models.md): builds the library, tests, the
# model benchmarks and the CLI on the GPU machine, runs the nn tests (parity
# with PyTorch's fixtures on the cuda backend included), Strata's GPU and CPU
# model benchmarks, the PyTorch peer on the same models in the same run
# (eager and torch.compile on the GPU; eager on 2 and 16 CPU threads), a live
# parity check against PyTorch in f32 and bf16, and `strata generate` with the
# shipped model. Logs and JSON land in OUTDIR (packed into OUTDIR/model_run.tgz).
#
#   scripts/gpu_model_run.sh OUTDIR     (the CLI needs CMAKE_PREFIX_PATH=$PWD/.device-deps,
#                                        staged by ../shared/tools/device-deps.sh)
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_model_run.sh OUTDIR}
PHASES=${PHASES:-build tests cudatests bench cpubench peer cpupeer live generate}
COMPILE=${COMPILE-"--compile"}  # COMPILE= skips the torch.compile rows
L="$OUT/logs"
mkdir -p "$L"
S="$OUT/summary.txt"
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 ))s] $*" | tee -a "$S"; }
pack() { tar -C "$OUT" -czf "$OUT/model_run.tgz" logs summary.txt 2>/dev/null; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
B=${BUILD:-build-gpu}
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1); $(nproc) cores; $(lscpu | grep 'Model name' | sed 's/ \+/ /g')"
if has build; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DSTRATA_WERROR=${WERROR:-ON} ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} > "$L/configure.log" 2>&1 &&
    timeout ${BUILD_TIMEOUT:-300} ninja -C "$B" -j"$(nproc)" strata_tests bench_model_cuda bench_model_cpu strata_cli \
      ${EXTRA_TARGETS:-} \
      > "$L/build.log" 2>&1
  rc=$?; say "build rc=$rc; warnings: $(grep -c "warning:" "$L/build.log")"; grep -m5 -A3 "warning:" "$L/build.log"; [ $rc = 0 ] || { grep -m10 -A6 'error' "$L/build.log"; pack; exit 1; }
fi
if has tests; then
  timeout 120 "$B/tests/strata_tests" "${TESTS_FILTER:-[nn]}" > "$L/nn_tests.log" 2>&1
  say "tests ${TESTS_FILTER:-[nn]} rc=$? : $(grep -E 'test cases|All tests passed' "$L/nn_tests.log" | tail -1)"
  grep -B2 -A12 -m4 FAILED "$L/nn_tests.log" | head -60
fi
if has cudatests; then  # EXTRA_TARGETS must name strata_cuda_tests
  timeout ${CUDA_TESTS_TIMEOUT:-120} "$B/tests/strata_cuda_tests" > "$L/cuda_tests.log" 2>&1
  say "cuda tests rc=$? : $(grep -E 'test cases|All tests passed' "$L/cuda_tests.log" | tail -1)"
  grep -B2 -A12 -m4 FAILED "$L/cuda_tests.log" | head -60
fi
if has bench; then
  timeout 120 "$B/bench/bench_model_cuda" --benchmark_out="$L/model_cuda.json" --benchmark_out_format=json \
    > "$L/bench_cuda.txt" 2>&1
  say "bench cuda rc=$?"; grep -E '^BM_' "$L/bench_cuda.txt"
  pack
fi
if has cpubench; then  # Llama decode and prefill on 2 and 16 threads; EXTRA_TARGETS bench_attention_cpu adds fma_peak
  OMP_PROC_BIND=close timeout 150 "$B/bench/bench_model_cpu" --benchmark_filter="${CPU_FILTER:-llama/(2|16)\$}" \
    --benchmark_out="$L/model_cpu.json" --benchmark_out_format=json > "$L/bench_cpu.txt" 2>&1
  say "bench cpu rc=$?"; grep -E '^(decode|prefill)' "$L/bench_cpu.txt"
  if [ -x "$B/bench/bench_attention_cpu" ]; then
    # The ceiling of the instruction set the model's GEMMs run (Eigen: AVX2 + FMA).
    STRATA_CPU_ISA=avx2 OMP_PROC_BIND=close timeout 40 "$B/bench/bench_attention_cpu" \
      --benchmark_filter=fma_peak > "$L/fma.txt" 2>&1
    say "fma_peak (avx2): $(grep -E '^fma_peak' "$L/fma.txt" | tr -s ' ' | tr '\n' ';')"
  fi
  pack
fi
if has peer; then
  P="python3 bench/peer_model.py bench --json $L/peer_model.jsonl"
  timeout 120 $P --dtype f32 $COMPILE >> "$L/peer.txt" 2>&1
  timeout 120 $P --dtype bf16 --batches 1 16 $COMPILE >> "$L/peer.txt" 2>&1
  timeout 60 $P --style gpt2 --dtype f32 >> "$L/peer.txt" 2>&1
  timeout 60 $P --style gpt2 --dtype bf16 >> "$L/peer.txt" 2>&1
  say "peer done"; grep -v '^\s*$' "$L/peer.txt" | grep -E '^\{|Error|error' | cut -c1-400
  pack
fi
if has cpupeer; then
  P="python3 bench/peer_model.py bench --json $L/peer_model.jsonl"
  for t in 2 16; do
    timeout 120 $P --device cpu --threads $t --reps ${CPU_REPS:-20} >> "$L/peer_cpu.txt" 2>&1
  done
  say "cpu peer done"; grep -E '^\{|Error|error' "$L/peer_cpu.txt" | cut -c1-400
  pack
fi
if has live; then
  # Live parity on the GPU: Strata's `forward` against PyTorch's logits for the
  # same weights, f32 and bf16, and PyTorch's own bf16 error against its f32.
  timeout 120 python3 bench/peer_model.py live --strata "$B/app/strata" --out "$L" > "$L/live.txt" 2>&1
  say "live parity rc=$?"; cat "$L/live.txt" | tail -20
fi
if has generate; then
  for be in cpu cuda; do
    timeout 60 "$B/app/strata" generate --weights models/tiny-llama/model.safetensors \
      --config models/tiny-llama/config.json --prompt "This program is free software" \
      --max-tokens 200 --backend $be > "$L/generate_$be.txt" 2>&1
    say "generate $be rc=$?"; tail -c 600 "$L/generate_$be.txt"; echo
  done
fi
pack
say done
