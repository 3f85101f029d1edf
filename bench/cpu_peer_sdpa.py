#!/usr/bin/env python3
"""The cpu backend against PyTorch's CPU scaled_dot_product_attention, in one run.

Runs bench_attention_cpu (the `cpu/M/N/d/T` rows: f32, one head, contiguous)
and torch.nn.functional.scaled_dot_product_attention on the same shapes, f32,
with the same thread count, and prints both medians and the ratio. FLOP are
counted as 4 * M * N * d, as in the benchmark binary.

    python3 bench/cpu_peer_sdpa.py build/bench/bench_attention_cpu [--threads 16] [--reps 5]
"""
import argparse
import json
import os
import subprocess
import sys
import time


def run_strata(binary, threads, reps):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [binary, f"--benchmark_filter=^cpu/.*/{threads}/real", f"--benchmark_repetitions={reps}",
         "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.2",
         "--benchmark_format=json"],
        env=env, check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        _, M, N, d, _t = b["run_name"].split("/")[:5]
        ms = b["real_time"] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        rows[(int(M), int(N), int(d))] = ms
    return rows


def run_torch(shapes, threads, reps):
    import torch
    torch.set_num_threads(threads)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    rows = {}
    for (M, N, d) in shapes:
        q, k, v = (torch.randn(1, 1, n, d) for n in (M, N, N))
        with torch.no_grad():
            for _ in range(3):
                sdpa(q, k, v)
            times = []
            for _ in range(max(reps, 5) * 3):
                t0 = time.perf_counter()
                sdpa(q, k, v)
                times.append(time.perf_counter() - t0)
        times.sort()
        rows[(M, N, d)] = times[len(times) // 2] * 1e3
    return rows, torch.__version__, torch.backends.cpu.get_cpu_capability()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    ours = run_strata(a.binary, a.threads, a.reps)
    theirs, version, cap = run_torch(sorted(ours), a.threads, a.reps)
    print(f"threads={a.threads}  torch {version} ({cap})  medians; GFLOP/s = 4*M*N*d / time")
    print(f"{'M':>6} {'N':>6} {'d':>4} | {'strata cpu ms':>13} {'GFLOP/s':>8} | "
          f"{'torch sdpa ms':>13} {'GFLOP/s':>8} | {'ratio':>6}")
    worst = None
    for key in sorted(ours):
        M, N, d = key
        fl = 4.0 * M * N * d
        s, t = ours[key], theirs[key]
        r = t / s
        worst = r if worst is None else min(worst, r)
        print(f"{M:>6} {N:>6} {d:>4} | {s:>13.3f} {fl / s / 1e6:>8.1f} | "
              f"{t:>13.3f} {fl / t / 1e6:>8.1f} | {r:>5.2f}x")
    print(f"lowest ratio (torch time / strata time): {worst:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
