#!/usr/bin/env bash
# Alternating GPU timings of two builds beside each other (build-base and
# build-new in the current folder): base, new, base, new, each round the
# model's decode step, the tiny add and attention; then new/base per
# benchmark (medians) into the summary. Shared by gpu_house_check.sh and
# gpu_autograd_check.sh.
#   scripts/gpu_ab_timings.sh LOGDIR SUMMARY
# ATTN_FILTER (default: every shape), ATTN_MIN_TIME (0.1), MODEL_TIMEOUT (90 s).
set -u -o pipefail
L=${1:?usage: scripts/gpu_ab_timings.sh LOGDIR SUMMARY}
S=${2:?usage: scripts/gpu_ab_timings.sh LOGDIR SUMMARY}
t0=$(date +%s)
for round in 1 2; do
  for tree in base new; do
    b=build-$tree/bench
    timeout 120 $b/bench_attention_cuda --benchmark_filter="${ATTN_FILTER:-.}" \
      --benchmark_min_time="${ATTN_MIN_TIME:-0.1}" \
      --benchmark_out="$L/attn_${tree}_$round.json" --benchmark_out_format=json > "$L/attn_${tree}_$round.txt" 2>&1
    timeout "${MODEL_TIMEOUT:-90}" $b/bench_model_cuda --benchmark_min_time=0.3 --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true \
      --benchmark_out="$L/model_${tree}_$round.json" --benchmark_out_format=json > "$L/model_${tree}_$round.txt" 2>&1
    timeout 30 $b/bench_ops_cuda --benchmark_filter='tiny_add' --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true \
      --benchmark_out="$L/tiny_${tree}_$round.json" --benchmark_out_format=json > "$L/tiny_${tree}_$round.txt" 2>&1
    echo "[$(($(date +%s) - t0))s] round $round $tree done" | tee -a "$S"
  done
done
python3 - "$L" <<'PY' | tee -a "$S"
import json, sys, statistics, glob
L = sys.argv[1]
def load(kind, tree):
    out = {}
    for f in sorted(glob.glob(f"{L}/{kind}_{tree}_*.json")):
        try:
            for b in json.load(open(f))["benchmarks"]:
                if b.get("aggregate_name") not in (None, "median"): continue
                out.setdefault(b.get("run_name", b["name"]), []).append(b["real_time"])
        except Exception as e:
            print("unreadable (cut by its timeout?)", f, e)
    return {k: statistics.median(v) for k, v in out.items()}
for kind in ("attn", "model", "tiny"):
    base, new = load(kind, "base"), load(kind, "new")
    common = sorted(set(base) & set(new))
    ratios = [new[k] / base[k] for k in common if base[k] > 0]
    print(f"== {kind}: {len(common)} benchmarks in both; new/base time: median "
          f"{statistics.median(ratios) if ratios else float('nan'):.4f}, "
          f"min {min(ratios, default=float('nan')):.3f}, max {max(ratios, default=float('nan')):.3f}")
    for k in common:
        if kind != "attn" or abs(new[k] / base[k] - 1) > 0.02:
            print(f"   {k}: base {base[k]:.4g} new {new[k]:.4g} ratio {new[k] / base[k]:.3f}")
    only = sorted(set(base) ^ set(new))
    if only: print(f"   in one tree only: {only[:12]}")
PY
