#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of the whole host test
# suite (CUDA off: the sanitizers cannot see into device code, and
# compute-sanitizer covers that on the GPU machine, see scripts/gpu_run.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build-asan}")
bash "$root/scripts/build.sh" "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON \
     -DSTRATA_CUDA=OFF -DSTRATA_BUILD_BENCH=OFF
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$dir" && ctest --output-on-failure -j "$(nproc)"
