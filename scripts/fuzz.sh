#!/usr/bin/env bash
# Builds and runs the libFuzzer targets in fuzz/ (docs/guide/fuzzing.md).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 60 s each, every target
# Targets: npy_reader (core/src/npy.cpp on arbitrary bytes), tensor_views
# (Tensor::from_storage / as_strided / view chains against a storage extent),
# safetensors_reader (nn/src/safetensors.cpp on arbitrary bytes), config_reader
# (nn/src/config.cpp's config.json reader on arbitrary bytes).
# Built with clang -fsanitize=fuzzer,address,undefined (UB is fatal) into
# FUZZ_DIR (default build-fuzz/) from core/src (the .npy reader among them),
# the safetensors and config readers and fuzz/ only (core alone has an empty
# registry: no backend is linked). Each
# run starts from the committed seed corpus fuzz/corpus/<target>/ plus the
# working corpus FUZZ_DIR/corpus/<target>/ (new inputs go there, not into the
# repository), with fuzz/<target>.dict as libFuzzer's dictionary where there
# is one; a finding is written to FUZZ_DIR/findings/<target>/ and makes the
# script exit non-zero.
# FUZZ_RUNS=N stops each target after N executions instead of SECONDS.
# FUZZ_ARGS adds libFuzzer flags. FUZZ_UB_RECOVER=1 makes undefined behaviour
# reported, not fatal (each source location once per process), so a long run
# surveys every UB site instead of stopping at the first; use its own FUZZ_DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${FUZZ_DIR:-$root/build-fuzz}")
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy_reader tensor_views safetensors_reader config_reader)

cxx=$(command -v clang++-14 || command -v clang++ || true)
rt=$(ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -1 || true)
if [ -z "$cxx" ] || [ -z "$rt" ]; then
  echo "fuzz: installing clang-14 and libFuzzer's runtime (libclang-rt-14-dev)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    clang-14 libclang-rt-14-dev
  cxx=$(command -v clang++-14)
fi
bash "$root/scripts/install-deps.sh"  # nlohmann-json for the nn readers

recover=-fno-sanitize-recover=all
[ "${FUZZ_UB_RECOVER:-0}" = 1 ] && recover=-fsanitize-recover=undefined
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined "$recover"
       -I"$root/core/include" -I"$root/ops/include" -I"$root/nn/include")
mkdir -p "$dir/obj"
# core/src once per change, as fuzzer-instrumented objects.
objs=()
for src in "$root"/core/src/*.cpp "$root/nn/src/safetensors.cpp" "$root/nn/src/config.cpp"; do
  obj="$dir/obj/$(basename "$src" .cpp).o"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] ||
     [ -n "$(find "$root/core/include" "$root/core/src" "$root/nn/include" "$root/nn/src" \
             -name '*.hpp' -newer "$obj" -print -quit)" ]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  fi
  objs+=("$obj")
done

status=0
for t in "${targets[@]}"; do
  src="$root/fuzz/fuzz_$t.cpp"
  [ -f "$src" ] || { echo "fuzz: no target $t ($src)"; exit 2; }
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "$src" "${objs[@]}" -o "$dir/fuzz_$t"
  mkdir -p "$dir/corpus/$t" "$dir/findings/$t"
  limit=(-max_total_time="$seconds")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  echo "== fuzz $t (${FUZZ_RUNS:+$FUZZ_RUNS runs}${FUZZ_RUNS:-$seconds s})"
  # shellcheck disable=SC2086
  if ! "$dir/fuzz_$t" "${limit[@]}" "${dict[@]}" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/findings/$t/" ${FUZZ_ARGS:-} \
        "$dir/corpus/$t" "$root/fuzz/corpus/$t" 2>"$dir/$t.log"; then
    status=1
    echo "fuzz $t: FINDING (log $dir/$t.log, inputs in $dir/findings/$t/)"
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$dir/$t.log" || true
  tail -3 "$dir/$t.log"
done
exit $status
