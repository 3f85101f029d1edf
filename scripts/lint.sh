#!/usr/bin/env bash
# Lints the tree: clang-format (repo .clang-format) on every tracked C++ file,
# then clang-tidy (repo .clang-tidy) on core/src and app. Exits non-zero on
# any finding.
#   scripts/lint.sh [BUILD_DIR]     (default: build-lint/)
# clang-tidy needs BUILD_DIR/compile_commands.json; when it is missing the
# folder is configured (CPU only: clang-tidy cannot parse the .cu files), not
# built. LINT_JOBS sets how many clang-tidy processes run at once (default:
# every core). LINT_TIDY=0 checks formatting only (seconds; CI does that).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build-lint}")
jobs=${LINT_JOBS:-$(nproc)}
cd "$root"
status=0

echo "== clang-format"
mapfile -t cxx < <(git ls-files -- core ops nn harness backends app tests bench examples fuzz |
                   grep -E '\.(cpp|hpp|h|cc|cu|cuh)$')
if ! clang-format --dry-run -Werror "${cxx[@]}"; then
  echo "clang-format: findings above; fix with: clang-format -i FILE..."
  status=1
fi

echo "== pointers from code into docs/ (scripts/check_doc_refs.py)"
python3 scripts/check_doc_refs.py || status=1

if [[ "${LINT_TIDY:-1}" == 0 ]]; then
  exit $status
fi

echo "== clang-tidy"
if [[ ! -f "$dir/compile_commands.json" ]]; then
  if [[ -f "$dir/CMakeCache.txt" ]]; then  # keep the folder's own settings
    cmake -S "$root" -B "$dir" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
  else
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DSTRATA_CUDA=OFF \
          -DSTRATA_BUILD_BENCH=OFF >/dev/null
  fi
fi
# Only files the build compiles: without their flags clang-tidy reports
# nothing but missing includes (app/ is left out when CLI11 is).
tidy=()
while IFS= read -r f; do
  if grep -qF "\"$root/$f\"" "$dir/compile_commands.json"; then
    tidy+=("$f")
  else
    echo "clang-tidy: skipping $f (not in $dir/compile_commands.json)"
  fi
done < <(git ls-files -- 'core/src/*.cpp' 'app/*.cpp')

# One clang-tidy per file, in parallel; each file's report is printed whole.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
printf '%s\n' "${tidy[@]}" |
  xargs -P "$jobs" -I{} sh -c \
    'clang-tidy -p "$1" --quiet --warnings-as-errors="*" "$2" >"$3/$(echo "$2" | tr / _).log" 2>&1 ||
     echo "$2" >>"$3/failed"' _ "$dir" {} "$logs"
for f in "${tidy[@]}"; do
  log="$logs/$(echo "$f" | tr / _).log"
  # Drop clang-tidy's "N warnings generated" chatter; keep the diagnostics.
  grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' \
    "$log" || true
done
if [[ -s "$logs/failed" ]]; then
  echo "clang-tidy: findings in: $(sort "$logs/failed" | tr '\n' ' ')"
  status=1
fi

echo "${#cxx[@]} files formatted-checked, ${#tidy[@]} files tidied: $([[ $status == 0 ]] && echo clean || echo FINDINGS)"
exit $status
