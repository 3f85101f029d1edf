#!/usr/bin/env bash
# A/B of the cpu kernels on one machine (meant for the GPU machine's Xeon).
# Neither machine is quiet every time: on 2026-11-30 the Xeon's fma_peak
# moved by 30% between rounds of one run, so read each round against its own
# fma_peak row and trust only differences that repeat in every round.
# Builds the working tree ("new") and a copy of it with the files under
# BASE_DIR laid over it ("base", e.g. the previous kernel_impl.hpp at its
# path), CPU-only Release, then runs bench_attention_cpu for both in
# alternating rounds under the issue-6 conditions: AVX2 kernels forced, 2
# threads pinned to two cores (and 1 thread with THREADS1=1).
#
#   BASE_DIR=ab_base scripts/cpu_ab.sh OUTDIR      (on the device: ... "$OUT")
#
# FILTER picks the benchmark rows (default: every cpu layout row and
# fma_peak), ROUNDS the number of base/new pairs. Medians per round land in
# OUTDIR/ab.txt.
set -euo pipefail
OUTDIR=${1:?usage: BASE_DIR=dir scripts/cpu_ab.sh OUTDIR}
BASE_DIR=${BASE_DIR:?BASE_DIR: files that make the base tree}
ROUNDS=${ROUNDS:-2}
FILTER=${FILTER:-'^(cpu|cpu_fused|cpu_kcol|fma_peak)'}
ISA=${ISA:-avx2}
mkdir -p "$OUTDIR"
root=$(pwd)
base=$(mktemp -d)
tar -C "$root" --exclude='./build*' --exclude='./.git' -cf - . | tar -C "$base" -xf -
cp -r "$BASE_DIR"/. "$base"/

build() {
  cmake -S "$1" -B "$1/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=OFF \
    -DSTRATA_WERROR=ON > "$OUTDIR/configure_$2.log" 2>&1
  ninja -C "$1/build-ab" -j"$3" bench/bench_attention_cpu > "$OUTDIR/build_$2.log" 2>&1
}
half=$(( $(nproc) / 2 ))
build "$root" new "$half" & build "$base" base "$half" & wait

bench() {  # tree, label, threads, cpus
  echo "== $2 threads=$3 ($(date +%T))"
  OMP_NUM_THREADS=$3 OMP_PROC_BIND=close STRATA_CPU_ISA=$ISA taskset -c "$4" \
    "$1/build-ab/bench/bench_attention_cpu" --benchmark_filter="$FILTER.*/$3/real" \
    --benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true \
    --benchmark_enable_random_interleaving=true 2>/dev/null | grep median | awk '{print $1, $2, $3}'
}
{
  echo "host $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for r in $(seq "$ROUNDS"); do
    bench "$base" base 2 2,3
    bench "$root" new 2 2,3
    if [[ -n "${THREADS1:-}" ]]; then
      bench "$base" base 1 2
      bench "$root" new 1 2
    fi
  done
} | tee "$OUTDIR/ab.txt"
