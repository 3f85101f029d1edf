#!/usr/bin/env bash
# ThreadSanitizer run of the [concurrency] tests: eight std::threads calling
# softmax_attention at once on the cpu and reference backends
# (tests/test_concurrency.cpp), eight running a transformer block's ops and
# four running models (tests/test_concurrency_ops.cpp).
#   scripts/tsan.sh [BUILD_DIR]      (default: build-tsan/)
# Builds the library and strata_tests with -fsanitize=thread (CPU only, no
# benchmarks, no CLI) in its own folder and runs the [concurrency] tests.
#
# OMP_NUM_THREADS=1: libgomp is not built with ThreadSanitizer, so TSan cannot
# see the synchronisation inside OpenMP's barriers and would report races
# between a parallel region's threads that are not there. With one OpenMP
# thread every region runs on its calling std::thread, and what TSan checks is
# exactly what this test is about: the std::threads calling the op at once
# (the registry, the front end, the kernels' shared state).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build-tsan}")
bash "$root/scripts/install-deps.sh"
# GCC 12 with AVX-512 (the default `native` build on such a CPU): its own
# `__m512 __Y = __Y` in avx512fintrin.h, inlined into Eigen's ptranspose, is
# reported as -Wuninitialized under -fsanitize=thread as under ASan (the
# sanitizer build drops it the same way, CMakeLists.txt).
no_uninit=""
g++ -dumpversion 2>/dev/null | grep -qx '12' && no_uninit="-Wno-uninitialized"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_CUDA=OFF \
      -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_APP=OFF -DSTRATA_WERROR=ON "${launcher[@]}" \
      -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer $no_uninit" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target strata_tests
OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  "$dir/tests/strata_tests" "[concurrency]"
