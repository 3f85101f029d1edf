#!/usr/bin/env bash
# The main job: builds Strata if needed and runs the default attention
# problem on every available backend (`strata attention`), after printing
# what was built (`strata info`). Extra arguments go to `strata attention`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/build
bash "$root/scripts/build.sh" "$dir" >/dev/null
"$dir/app/strata" info
"$dir/app/strata" attention "$@"
