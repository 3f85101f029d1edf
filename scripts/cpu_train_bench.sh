#!/usr/bin/env bash
# Training speed on this machine's CPU (issue 28), in one run: the GEMM
# ceiling at the same thread count (Strata's cpu matmul, 1024^3, f32),
# Strata's training step (bench_train_cpu) and PyTorch eager's
# (bench/peer_train.py --device cpu) on the same models, then the ceiling
# again (the machine may be shared: compare the two).
#   scripts/cpu_train_bench.sh BUILD_DIR OUTDIR
# Env: THREADS (default 2); ROUNDS (default 3); CASES (peer_train.py case names, default
# "small/llama small/gpt2 llama17m"); REPS (default 5); PYTHON (default
# /usr/bin/python3, Debian's with python3-torch); PEER_BLAS_DIR (a folder
# holding an optimised libblas.so.3, put first on the peer's
# LD_LIBRARY_PATH: Debian's torch calls whatever BLAS the system's
# alternatives select, which without OpenBLAS is the reference BLAS).
set -u -o pipefail
BUILD=${1:?usage: scripts/cpu_train_bench.sh BUILD_DIR OUTDIR}
OUT=${2:?usage: scripts/cpu_train_bench.sh BUILD_DIR OUTDIR}
source "$(dirname "$0")/gpu_log.sh"  # L, S, say, pack, J
T=${THREADS:-2}
CASES=${CASES:-small/llama small/gpt2 llama17m}
PY=${PYTHON:-/usr/bin/python3}
export OMP_PROC_BIND=close
say "date $(date -u +%FT%TZ); $(lscpu | grep 'Model name' | sed 's/ \+/ /g'); $J cores; load $(cut -d' ' -f1-3 /proc/loadavg); $T threads"
ceiling() {
  OMP_NUM_THREADS=$T "$BUILD/bench/bench_matmul_cpu" \
    --benchmark_filter='strata_matmul_cpu/1024/1024/1024/0/' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json > "$L/ceiling_$1.json" 2>/dev/null
  python3 -c "
import json, sys
b = [x for x in json.load(open(sys.argv[1]))['benchmarks'] if x.get('aggregate_name') == 'median'][0]
ms = b['real_time'] * {'ms': 1.0, 'us': 1e-3, 'ns': 1e-6}[b['time_unit']]
print(f'{2 * 1024 ** 3 / (ms * 1e-3) / 1e9:.1f}')" "$L/ceiling_$1.json"
}
torch_gemm() {
  LD_LIBRARY_PATH=${PEER_BLAS_DIR:+$PEER_BLAS_DIR:}${LD_LIBRARY_PATH:-} OMP_NUM_THREADS=$T "$PY" - "$T" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
ts = []
for _ in range(12):
    t0 = time.perf_counter()
    a @ b
    ts.append(time.perf_counter() - t0)
print(f"{2 * 1024 ** 3 / sorted(ts)[6] / 1e9:.1f}")
PY
}
filter=$(echo "$CASES" | sed 's/ /|/g')
blas=${PEER_BLAS_DIR:+$PEER_BLAS_DIR:}${LD_LIBRARY_PATH:-}
say "torch's own matmul 1024^3 f32 (its BLAS: ${PEER_BLAS_DIR:-none given}): $(torch_gemm) GFLOP/s"
# Rounds alternate Strata and PyTorch, so that both see the machine's load
# alike; the summary takes each side's median over the rounds.
for r in $(seq ${ROUNDS:-3}); do
  say "round $r: ceiling $(ceiling $r) GFLOP/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  OMP_NUM_THREADS=$T "$BUILD/bench/bench_train_cpu" --benchmark_filter="train/($filter)/$T/" \
    --benchmark_repetitions=${REPS:-5} --benchmark_report_aggregates_only=true \
    --benchmark_out="$L/train_cpu_$r.json" --benchmark_out_format=json > "$L/train_cpu_$r.txt" 2>&1
  say "round $r: bench_train_cpu rc=$?"
  LD_LIBRARY_PATH=$blas OMP_NUM_THREADS=$T "$PY" bench/peer_train.py --device cpu --threads "$T" \
    --cases $CASES --reps ${REPS:-5} --warmup 1 --strata "$L/train_cpu_$r.json" \
    --json "$L/peer_train_cpu_$r.json" > "$L/peer_train_cpu_$r.txt" 2>&1
  say "round $r: peer_train.py rc=$?"
  grep -v '^{' "$L/peer_train_cpu_$r.txt" | tail -n +4 | tee -a "$S"
done
say "ceiling after: $(ceiling after) GFLOP/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$L" "$T" $CASES <<'PY' | tee -a "$S" "$OUT/train_cpu_table.md"
import glob, json, statistics, sys
L, T, cases = sys.argv[1], sys.argv[2], sys.argv[3:]
st, pt = {c: [] for c in cases}, {c: [] for c in cases}
for f in sorted(glob.glob(f"{L}/train_cpu_*.json")):
    for b in json.load(open(f))["benchmarks"]:
        parts = [p for p in b["run_name"].split("/") if ":" not in p and p != "real_time"]
        c = "/".join(parts[1:-1])  # less "train" and the thread count
        if b.get("aggregate_name") == "median" and c in st:
            st[c].append(b["items_per_second"])
for f in sorted(glob.glob(f"{L}/peer_train_cpu_*.json")):
    for r in json.load(open(f))["rows"]:
        if r["case"] in pt:
            pt[r["case"]].append(r["tok_s"])
print(f"| case ({T} threads, f32) | Strata tok/s (median of rounds) | PyTorch eager tok/s | Strata / eager |")
print("|---|---|---|---|")
for c in cases:
    s, p = st[c], pt[c]
    if s and p:
        ms, mp = statistics.median(s), statistics.median(p)
        print(f"| {c} | {ms:.0f} ({', '.join(f'{x:.0f}' for x in s)}) | "
              f"{mp:.0f} ({', '.join(f'{x:.0f}' for x in p)}) | {ms / mp:.2f} |")
PY
pack
