#!/usr/bin/env python3
"""The cpu backend against PyTorch's CPU scaled_dot_product_attention, in one run.

Runs bench_attention_cpu (the `cpu/M/N/d/T` rows: f32, one head, contiguous)
and torch.nn.functional.scaled_dot_product_attention on the same shapes, f32,
with the same thread count, and prints both medians and the ratio. FLOP are
counted as 4 * M * N * d, as in the benchmark binary.

    python3 bench/cpu_peer_sdpa.py build/bench/bench_attention_cpu [--threads 16] [--reps 5]
"""
import sys

from cpu_peer_common import benchmark_medians, median_ms, parse_args


def run_strata(binary, threads, reps):
    rows = {}
    for fields, ms in benchmark_medians(binary, f"^cpu/.*/{threads}/real", threads, reps, 0.2):
        _, M, N, d, _t = fields[:5]
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
            rows[(M, N, d)] = median_ms(lambda: sdpa(q, k, v), reps, warmup=3, factor=3)
    return rows, torch.__version__, torch.backends.cpu.get_cpu_capability()


def main():
    a = parse_args(__doc__)
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
