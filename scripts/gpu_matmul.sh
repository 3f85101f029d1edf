#!/usr/bin/env bash
# The matmul GPU run, in one device call: configure and build the CUDA
# tests and the matmul benchmarks, run the cuda matmul tests, the cuda
# benchmark (Strata vs cuBLAS), the PyTorch peer and the cpu benchmark
# (Strata vs Eigen on the machine's cores). Logs land in OUTDIR as they
# are made, with a short OUTDIR/summary.txt; every phase has a time limit
# so that the whole run stays under 5 minutes.
#
#   scripts/gpu_matmul.sh OUTDIR          (on the device: scripts/gpu_matmul.sh "$OUT")
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_matmul.sh OUTDIR}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT/logs"
L="$OUT/logs"  # secondary logs, packed into logs.tar.gz at the end (the tool brings back 8 files)
S="$OUT/summary.txt"
say() { echo "[$(date -u +%FT%TZ)] $*" | tee -a "$S"; }

say "host $(hostname) $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
say "configure"
timeout 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_APP=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90a > "$L/configure.log" 2>&1 ||
  { say "configure FAILED"; tail -30 "$L/configure.log"; exit 1; }
say "build"
timeout 200 cmake --build "$BUILD" --target strata_cuda_tests bench_matmul_cuda bench_matmul_cpu \
  -j "$(nproc)" > "$L/build.log" 2>&1 ||
  { say "build FAILED"; grep -m20 -B2 -A8 'error' "$L/build.log"; exit 1; }
say "build ok"

say "cuda matmul tests"
timeout 40 "$BUILD/tests/strata_cuda_tests" "[matmul]" > "$OUT/tests.log" 2>&1
say "tests rc=$? : $(grep -E 'All tests passed|test cases' "$OUT/tests.log" | tail -1)"
grep -B3 -A12 FAILED "$OUT/tests.log" | head -60

say "bench_matmul_cuda"
timeout 60 "$BUILD/bench/bench_matmul_cuda" \
  --benchmark_out="$OUT/bench_cuda.json" --benchmark_out_format=json > "$OUT/bench_cuda.txt" 2>&1
say "bench rc=$?"
grep matmul_cuda "$OUT/bench_cuda.txt"

say "peer_matmul.py"
PYTHONUNBUFFERED=1 timeout 30 python3 bench/peer_matmul.py --strata "$OUT/bench_cuda.json" \
  --out "$L/peer_table.md" > "$OUT/peer.txt" 2>&1
say "peer rc=$?"
cat "$OUT/peer.txt"

say "bench_matmul_cpu"
timeout 25 "$BUILD/bench/bench_matmul_cpu" > "$OUT/bench_cpu.txt" 2>&1
say "cpu bench rc=$?"
grep -E 'strata|eigen' "$OUT/bench_cpu.txt"

# Mutants (MUTANTS=1): the cuda matmul broken on purpose, one way at a time,
# rebuilt and tested; each must FAIL the [matmul] tests. The device's copy
# of the file is restored after each.
if [[ -n "${MUTANTS:-}" ]]; then
  F=backends/cuda/matmul/matmul_cublas.cu
  cp "$F" /tmp/matmul_cublas.cu.orig
  mutant() {  # name, sed expression
    cp /tmp/matmul_cublas.cu.orig "$F"
    sed -i "$2" "$F"
    if cmp -s "$F" /tmp/matmul_cublas.cu.orig; then say "mutant $1: sed did not apply"; return; fi
    timeout 60 cmake --build "$BUILD" --target strata_cuda_tests -j "$(nproc)" > "$L/mutant_build.log" 2>&1 ||
      { say "mutant $1: build failed"; return; }
    timeout 40 "$BUILD/tests/strata_cuda_tests" "[matmul]" > "$L/mutant_$1.log" 2>&1
    say "mutant $1 rc=$? : $(grep -E 'All tests passed|test cases' "$L/mutant_$1.log" | tail -1)"
  }
  mutant tf32_for_highest 's/  return CUBLAS_COMPUTE_32F;  \/\/ f32 highest/  return CUBLAS_COMPUTE_32F_FAST_TF32;  \/\/ f32 highest/'
  mutant no_bias_epilogue 's/epi = CUBLASLT_EPILOGUE_BIAS;/epi = CUBLASLT_EPILOGUE_DEFAULT;/'
  mutant transpose_flag_lost 's/r = {true, CUBLAS_OP_T, x.rows == 1/r = {true, CUBLAS_OP_N, x.rows == 1/'
  mutant ptr_array_offset 's/= p.base\[j\] + off\[j\] \* p.isz;/= p.base[j] + (j == 1 ? 0 : off[j]) * p.isz;/'
  cp /tmp/matmul_cublas.cu.orig "$F"
  say "mutants done"
fi
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$L"
say "done"
