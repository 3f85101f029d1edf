#!/usr/bin/env bash
# Configures and builds Strata into a build folder (default: build/).
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# CUDA is built when nvcc is found (/usr/local/cuda/bin/nvcc or on PATH).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build}")
shift || true
bash "$root/scripts/install-deps.sh"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON \
      "${launcher[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
