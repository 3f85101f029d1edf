#!/usr/bin/env bash
# The whole test suite: installs missing packages, builds, runs every test.
# CUDA tests report "skipped" on a machine without a GPU.
#   scripts/test.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build}")
shift || true
bash "$root/scripts/build.sh" "$dir" "$@"
cd "$dir" && ctest --output-on-failure -j "$(nproc)"
