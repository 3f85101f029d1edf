#!/usr/bin/env bash
# Installs a built Strata into a prefix and builds examples/consumer against
# it with find_package(Strata), then runs the consumer.
#   scripts/consumer.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build}")
prefix=$dir/install
cmake --install "$dir" --prefix "$prefix" >/dev/null
cmake -S "$root/examples/consumer" -B "$dir/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$dir/consumer"
"$dir/consumer/strata_consumer"
