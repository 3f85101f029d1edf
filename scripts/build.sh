#!/usr/bin/env bash
# Configures and builds Strata into a build folder (default: build/).
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# The cuda backend is built where it can run (nvcc and an NVIDIA driver);
# -DSTRATA_CUDA=ON builds it anyway, -DSTRATA_CUDA=OFF leaves it out. What was
# chosen is printed, and the build shows its progress ([done/total] per file).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build}")
shift || true
bash "$root/scripts/install-deps.sh"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# Configure quietly but keep Strata's own choices (cuda or not, tool or not) on screen.
if ! cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON \
      "${launcher[@]}" "$@" > "$dir.configure.log" 2>&1; then
  cat "$dir.configure.log" >&2
  exit 1
fi
grep -E '^-- Strata' "$dir.configure.log" | sed 's/^-- /build: /' || true
rm -f "$dir.configure.log"
echo "build: compiling into $dir with $(nproc) jobs (a first build takes minutes; later ones rebuild what changed)"
cmake --build "$dir" -j "$(nproc)"
