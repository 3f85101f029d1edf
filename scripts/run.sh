#!/usr/bin/env bash
# The main job: builds Strata if needed, prints what was built (`strata
# info`), lets the shipped tiny model (models/tiny-llama) continue a prompt
# (`strata generate`), then runs the default attention problem on every
# available backend (`strata attention`). Extra arguments go to `strata
# attention`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/build
# The build's progress goes to stderr, so the screen shows it while stdout
# stays the tool's own output.
bash "$root/scripts/build.sh" "$dir" >&2
"$dir/app/strata" info
echo
"$dir/app/strata" generate --weights "$root/models/tiny-llama/model.safetensors" \
  --config "$root/models/tiny-llama/config.json" --prompt "This program is free software" \
  --max-tokens 160
echo
"$dir/app/strata" attention "$@"
