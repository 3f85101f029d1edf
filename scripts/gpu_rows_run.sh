#!/usr/bin/env bash
# The GPU run of the cuda row kernels' fast path (layer_norm, rms_norm,
# softmax, log_softmax; docs/guide/ops.md, "Row ops"), made to fit one
# device call of under 5 minutes:
#   1. Release build for sm_90 of strata_cuda_tests and bench_ops_cuda;
#   2. two mutants of the row kernels, each built in the background from a
#      patched copy of the source tree into its own build dir (-j 8 each);
#   3. strata_cuda_tests "[ops]", the kernels' register / spill usage;
#   4. bench_ops_cuda filtered to the copy ceiling and the row ops (JSON),
#      then bench/peer_ops.py on the same cases (PyTorch eager);
#   5. each mutant's strata_cuda_tests "[rows]", which must FAIL.
# The mutant builds share the CPUs with steps 3-4 (the GPU timings are of
# batched launches, the queue kept ahead of the GPU).
#   scripts/gpu_rows_run.sh OUTDIR
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_rows_run.sh OUTDIR}
source "$(dirname "$0")/gpu_log.sh"  # S, say
left() { echo $((${BUDGET:-285} - ($(date +%s) - t0))); }
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
CFG=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_APP=OFF -DCMAKE_CUDA_ARCHITECTURES=90a)

# Patched copies of the source for the mutants (before the build dirs exist).
mutant_src() {  # name, file, sed expression
  local d=/tmp/mut_$1
  rm -rf "$d" && mkdir -p "$d"
  tar -c --exclude='./build*' --exclude=./.git --exclude=./.gpucarry . | tar -x -C "$d"
  sed -i "$3" "$d/$2"
  if cmp -s "$2" "$d/$2"; then say "mutant $1: sed did not apply"; return 1; fi
  say "mutant $1: $(diff "$2" "$d/$2" | grep '^>' | head -2 | tr -s ' ' | tr '\n' ' ')"
}
M=()
mutant_src var_denominator backends/cuda/rows/rows_norm.cu \
  '/norm_fast(RowParams p)/,/^}/ s|q / C(p.n) + eps|q / C(p.n - 1) + eps|' && M+=(var_denominator)
mutant_src skipped_tail backends/cuda/rows/rows_fast.cuh \
  's|    if (e < nvec)$|    if (e + 1 < nvec)|' && M+=(skipped_tail)

cmake -S . -B build-gpu "${CFG[@]}" > "$OUT/build.log" 2>&1 &&
  timeout 150 cmake --build build-gpu --target strata_cuda_tests bench_ops_cuda -j 16 >> "$OUT/build.log" 2>&1
say "build rc=$?"
tail -3 "$OUT/build.log"
T=build-gpu/tests/strata_cuda_tests BE=build-gpu/bench/bench_ops_cuda

for m in "${M[@]}"; do
  (cd /tmp/mut_$m && cmake -S . -B build "${CFG[@]}" > build.log 2>&1 &&
    nice -n 5 timeout 200 cmake --build build --target strata_cuda_tests -j 8 >> build.log 2>&1
    echo $? > build.rc) &
done

timeout 60 $T "[ops]" --durations yes > "$OUT/tests.log" 2>&1
say "tests [ops] rc=$? : $(grep -E 'test cases|All tests passed' "$OUT/tests.log" | tail -2 | tr '\n' ' ')"
grep -B3 -A12 -m6 'FAILED' "$OUT/tests.log" | head -60
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$CUOBJ -res-usage build-gpu/libstrata_backend_cuda.a 2> /dev/null | grep -A1 -E 'norm_fast|softmax_fast' |
  grep -v '^--' > "$OUT/res_usage.txt"
say "fast kernels' res-usage: $(grep -cE 'REG:' "$OUT/res_usage.txt") kernels, REG $(grep -oE 'REG:[0-9]+' "$OUT/res_usage.txt" | cut -d: -f2 | sort -n | uniq | paste -sd,), STACK $(grep -oE 'STACK:[0-9]+' "$OUT/res_usage.txt" | sort -u | paste -sd,)"

timeout 60 $BE --benchmark_filter='copy_d2d|row_op' --benchmark_min_time=0.2 \
  --benchmark_out="$OUT/bench_rows.json" --benchmark_out_format=json > "$OUT/bench_rows.txt" 2>&1
say "bench rc=$?"
grep -E '^(copy|row)' "$OUT/bench_rows.txt" | awk '{print $1, $2, $NF, $(NF-1), $(NF-2)}'
PYTHONUNBUFFERED=1 timeout 70 python3 bench/peer_ops.py --strata "$OUT/bench_rows.json" \
  --only 'row_op/' --no-tiny --out "$OUT/peer_rows.md" --json "$OUT/peer_rows_torch.json" \
  > "$OUT/peer.txt" 2>&1
say "peer rc=$?"
cat "$OUT/peer.txt"

for m in "${M[@]}"; do
  while [ ! -f /tmp/mut_$m/build.rc ] && [ "$(left)" -gt 15 ]; do sleep 2; done
  rc=$(cat /tmp/mut_$m/build.rc 2> /dev/null || echo unfinished)
  if [ "$rc" != 0 ]; then
    say "mutant $m: build rc=$rc $(tail -2 /tmp/mut_$m/build.log | tr '\n' ' ' | head -c 300)"
    continue
  fi
  timeout 30 /tmp/mut_$m/build/tests/strata_cuda_tests "[rows]" > /tmp/mut_$m/tests.log 2>&1
  say "mutant $m: tests [rows] rc=$? (nonzero = caught): $(grep -E 'test cases|All tests passed' /tmp/mut_$m/tests.log | tail -1)"
  grep -m2 -A3 -E 'FAILED|with expansion' /tmp/mut_$m/tests.log | head -8
  cp /tmp/mut_$m/tests.log "$OUT/mutant_$m.log"
done
say done
# At most 8 files come back from a device call: the logs go in one archive.
(cd "$OUT" && tar -czf logs.tar.gz build.log tests.log res_usage.txt mutant_*.log 2> /dev/null &&
  rm -f build.log tests.log res_usage.txt mutant_*.log)
