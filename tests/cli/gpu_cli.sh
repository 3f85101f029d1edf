#!/usr/bin/env bash
# Builds and exercises the strata tool on the GPU machine, which lacks
# CLI11: its headers and CMake config travel in DEPS (staged
# from the dev machine's Debian packages by stage_deps.sh). Logs go to ${OUT:-out/gpu_cli}.
set -u
DEPS=${DEPS:-build-cli/deps}
OUT=${OUT:-out/gpu_cli}
BUILD=${BUILD:-build-gpu-cli}
mkdir -p "$OUT"
D=$(cd "$DEPS" && pwd)
cmake -S . -B "$BUILD" -G Ninja -DSTRATA_CUDA=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WERROR=ON \
  -DCLI11_DIR="$D/share/cmake/CLI11" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
ninja -C "$BUILD" strata_cli strata_cli_tests > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
S="$BUILD/app/strata"
{ echo "== info"; "$S" info; echo "rc=$?"; } > "$OUT/info.txt" 2>&1
{ echo "== attention"; "$S" attention; echo "rc=$?"; } > "$OUT/attention.txt" 2>&1
{ echo "== attention 4096"; "$S" attention --m 4096 --n 4096 --backend cuda; echo "rc=$?"; } > "$OUT/attention_4096.txt" 2>&1
{ echo "== check"; "$S" check; echo "rc=$?"; } > "$OUT/check.txt" 2>&1
(cd "$BUILD" && ctest -R cli --output-on-failure) > "$OUT/ctest.txt" 2>&1
PY=/usr/bin/python3; "$PY" -c "import numpy" 2>/dev/null || PY=python3
"$PY" tests/cli/test_cli_attention.py "$S" > "$OUT/npy_test.txt" 2>&1; echo "npy test rc=$?" >> "$OUT/npy_test.txt"
tail -n 40 "$OUT"/info.txt "$OUT"/attention.txt "$OUT"/attention_4096.txt "$OUT"/check.txt "$OUT"/ctest.txt
tail -n 8 "$OUT/npy_test.txt"; grep -B1 -A2 "cuda" "$OUT/npy_test.txt" | head -20
