#!/usr/bin/env bash
# A/B of the cuda elementwise and row-op changes of issue 13 (docs/ops.md,
# "cuda performance") in one GPU run, each new path against the one it
# replaces, in the same process environment and run:
#   STRATA_CUDA_GELU_OLD=1   gelu by erfcf (old)   vs GeluF32 (new, default)
#   STRATA_CUDA_ROWS_OLD=1   16-bit row kernels one row per group, NV <= 4
#                            (old) vs NV <= 2 and rows staged ahead through
#                            shared memory (new, default)
#   STRATA_CUDA_EW_TILED=0   a + b^T by the strided kernel (old) vs 32 x 32
#                            shared-memory tiles (new, default)
#   STRATA_CUDA_EW_WAVE=1    the flat vector path's grid: one striding wave
#                            (old) vs one block per 512 vectors (new, default)
# Benchmarks run three times: new (defaults), old (all four switches) and
# wave (STRATA_CUDA_EW_WAVE=1 alone, which separates the grid change from the
# gelu change on gelu, and is the whole change on add/cast). Steps (under
# 150 s from a built tree on the H200 machine; a clean build adds ~1 minute):
#   1. Release build for sm_90 of strata_cuda_tests and bench_ops_cuda
#      (incremental when BUILD exists);
#   2. strata_cuda_tests "[ops],[rows]" with the new paths, "[ops]~[large]"
#      with the old ones;
#   3. register / stack use of the kernels touched (cuobjdump -res-usage);
#   4. bench_ops_cuda on the copy ceiling, add/cast/gelu, add_transposed and
#      row_op, new, old and wave; bench/peer_ops.py (PyTorch eager) on the
#      same cases;
#   5. a compact table: GB/s and % of the same run's copy for new, old and
#      wave, torch, new / torch and new / old.
#   6. only with MUTANTS=1 (about 3 more minutes): two mutants, each patched
#      into the tree, rebuilt incrementally, run on the tests that must
#      catch it (which must FAIL), then reverted and rebuilt: tile_index
#      (the transposed tile read as tile[r][c]), stage_slot (the first
#      staged rows put in each other's slots).
#   scripts/gpu_ew_ab.sh OUTDIR [BUILD=build-gpu]
set -u -o pipefail
OUT=${1:?usage: scripts/gpu_ew_ab.sh OUTDIR [BUILD]}
B=${2:-build-gpu}
mkdir -p "$OUT"
S="$OUT/summary.txt"
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0))s] $*" | tee -a "$S"; }
say "date $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
OLD=(env STRATA_CUDA_GELU_OLD=1 STRATA_CUDA_ROWS_OLD=1 STRATA_CUDA_EW_TILED=0 STRATA_CUDA_EW_WAVE=1)
WAVE=(env STRATA_CUDA_EW_WAVE=1)

[ -f "$B/build.ninja" ] || cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSTRATA_BUILD_APP=OFF -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1
timeout 110 cmake --build "$B" --target strata_cuda_tests bench_ops_cuda -j "$(nproc)" \
  >> "$OUT/build.log" 2>&1
say "build rc=$?"
tail -2 "$OUT/build.log"
T=$B/tests/strata_cuda_tests BE=$B/bench/bench_ops_cuda

timeout 75 $T "[ops],[rows]" > "$OUT/tests_new.log" 2>&1
say "tests new [ops],[rows] rc=$?: $(grep -E 'test cases|All tests passed' "$OUT/tests_new.log" | tail -1)"
grep -B3 -A10 -m4 'FAILED' "$OUT/tests_new.log" | head -40
timeout 30 "${OLD[@]}" $T "[elementwise],[rows]~[large]" > "$OUT/tests_old.log" 2>&1
say "tests old [elementwise],[rows]~[large] rc=$?: $(grep -E 'test cases|All tests passed' "$OUT/tests_old.log" | tail -1)"

CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$CUOBJ -res-usage "$B/libstrata.a" 2> /dev/null | grep -A1 -E 'norm_fast|softmax_fast|ew_tiled_kernel|GeluF32|fn4Gelu' |
  grep -v '^--' | paste - - | sed -E 's/.*Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+).*/REG \2 STACK \3 \1/' |
  (command -v cu++filt > /dev/null && cu++filt || cat) > "$OUT/res_usage.txt"
say "res-usage: $(wc -l < "$OUT/res_usage.txt") kernels; STACK > 0: $(awk '$4 > 0' "$OUT/res_usage.txt" | wc -l)"
awk '$4 > 0' "$OUT/res_usage.txt" | cut -c1-160 | head -8

F='copy_d2d|add_contig|cast_f32|gelu_contig|add_transposed|row_op'
for run in new old wave; do
  case $run in
    new) E=(env) G=$F ;;
    old) E=("${OLD[@]}") G=$F ;;
    wave) E=("${WAVE[@]}") G='copy_d2d|add_contig|cast_f32|gelu_contig' ;;
  esac
  timeout 30 "${E[@]}" $BE --benchmark_filter="$G" --benchmark_min_time=0.1 \
    --benchmark_out="$OUT/bench_$run.json" --benchmark_out_format=json > "$OUT/bench_$run.txt" 2>&1
  say "bench $run rc=$?"
done
PYTHONUNBUFFERED=1 timeout 45 python3 bench/peer_ops.py --strata "$OUT/bench_new.json" \
  --only 'add_contig|cast_f32|gelu_contig|add_transposed|row_op' --no-tiny \
  --json "$OUT/peer_torch.json" \
  > "$OUT/peer.txt" 2>&1
say "peer rc=$?"

python3 - "$OUT" << 'EOF' | tee -a "$S"
import json, sys
out = sys.argv[1]
def load(f):
    try:
        bms = json.load(open(f"{out}/{f}"))["benchmarks"]
    except Exception as e:
        print(f"({f}: {e})")
        return {}
    return {b["name"].split("/manual_time")[0]: b for b in bms}
new, old, wave = load("bench_new.json"), load("bench_old.json"), load("bench_wave.json")
try:
    torch = json.load(open(f"{out}/peer_torch.json"))["ms"]
except Exception:
    torch = {}
gb = lambda b: b["bytes_per_second"] / 1e9 if b else None
ceil = {k: gb(r.get("copy_d2d/67108864")) for k, r in (("new", new), ("old", old), ("wave", wave))}
tc = torch.get("copy_d2d/67108864")
f = lambda x, p=0: "-" if x is None else f"{x:.{p}f}"
pc = lambda g, k: f(100 * g / ceil[k], 1) if g and ceil[k] else "-"
print(f"copy ceiling GB/s: new run {f(ceil['new'])}, old run {f(ceil['old'])}, wave run "
      f"{f(ceil['wave'])}, torch copy {f(2 * 4 * (64 << 20) / (tc * 1e-3) / 1e9 if tc else None)}")
print("| case | new GB/s | new % | old GB/s | old % | wave GB/s | wave % | torch GB/s | "
      "new/torch | new/old |")
print("|---|---|---|---|---|---|---|---|---|---|")
for nm, b in new.items():
    if nm.startswith("copy_d2d"):
        continue
    g, go, gw = gb(b), gb(old.get(nm)), gb(wave.get(nm))
    by = b["bytes_per_second"] * b["real_time"] * 1e-6  # real_time in us
    tg = by / (torch[nm] * 1e-3) / 1e9 if nm in torch else None
    print(f"| {nm} | {f(g)} | {pc(g, 'new')} | {f(go)} | {pc(go, 'old')} | {f(gw)} | "
          f"{pc(gw, 'wave')} | {f(tg)} | {f(g / tg, 2) if tg else '-'} | "
          f"{f(g / go, 2) if go else '-'} |")
EOF
mutant() {  # name, file, sed expression, test spec
  cp "$2" "$OUT/orig.tmp"
  sed -i "$3" "$2"
  if cmp -s "$2" "$OUT/orig.tmp"; then
    say "mutant $1: sed did not apply"
    return
  fi
  say "mutant $1: $(diff "$OUT/orig.tmp" "$2" | grep '^>' | head -1 | tr -s ' ')"
  timeout 150 cmake --build "$B" --target strata_cuda_tests -j "$(nproc)" > "$OUT/mut_$1.log" 2>&1
  local brc=$?
  timeout 60 $T "$4" >> "$OUT/mut_$1.log" 2>&1
  say "mutant $1: build rc=$brc, tests $4 rc=$? (nonzero = caught): $(grep -E 'test cases' "$OUT/mut_$1.log" | tail -1)"
  cp "$OUT/orig.tmp" "$2" && rm -f "$OUT/orig.tmp"
}
if [ "${MUTANTS:-0}" = 1 ]; then
  mutant tile_index backends/cuda/elementwise/ew_tiled.cuh \
    's|smem + L::offset(K))\[tx \* kTilePad + rl\]|smem + L::offset(K))[rl * kTilePad + tx]|' \
    '[tiled]'
  mutant stage_slot backends/cuda/rows/rows_fast.cuh \
    's|first + k \* step, nvec, lane, stage + k \* slot)|first + k * step, nvec, lane, stage + (S - 2 - k) * slot)|' \
    '[rows]'
  timeout 150 cmake --build "$B" --target strata_cuda_tests -j "$(nproc)" > /dev/null 2>&1
  say "tree restored, rebuild rc=$?"
fi
say done
# Few files come back from a device call: the logs go in one archive.
cd "$OUT" || exit 1
L=()
for f in build.log tests_*.log bench_*.txt mut_*.log; do [ -f "$f" ] && L+=("$f"); done
tar -czf logs.tar.gz "${L[@]}" && rm -f "${L[@]}"
