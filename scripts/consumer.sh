#!/usr/bin/env bash
# Installs a built Strata into a prefix and builds examples/consumer and
# examples/tiny_lm against it with find_package(Strata), then runs both.
#   scripts/consumer.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build}")
prefix=$dir/install
cmake --install "$dir" --prefix "$prefix" >/dev/null
cmake -S "$root/examples/consumer" -B "$dir/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$dir/consumer"
"$dir/consumer/strata_consumer"
# The model example, the way a user builds it: load the shipped model and
# generate; it checks the cached decode against a full forward itself.
cmake -S "$root/examples/tiny_lm" -B "$dir/tiny_lm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$dir/tiny_lm"
"$dir/tiny_lm/tiny_lm" "$root/models/tiny-llama" "This program is free software" 40
