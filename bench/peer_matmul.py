#!/usr/bin/env python3
"""PyTorch peer of bench/bench_matmul_cuda.cpp: torch.matmul on the same
shapes and modes, timed with CUDA events (the median of many timed batches
after warm-up), printed as a table of TFLOP/s. With --strata JSON (the
benchmark's --benchmark_out), Strata's and direct cuBLAS's figures are
printed beside PyTorch's.

Modes: f32_highest (torch.backends.cuda.matmul.allow_tf32 = False),
f32_medium (allow_tf32 = True: single TF32, which is what Strata's
Precision::medium is; PyTorch's own "medium" precision name means bf16),
bf16 (inputs and output bf16, f32 accumulation; reduced-precision
reductions off, as in Strata).

    python3 bench/peer_matmul.py [--strata matmul_cuda.json] [--out table.md]
"""
import argparse
import json
import statistics
import sys

# Kept in step with kShapes and kModes in bench/bench_matmul_cuda.cpp.
SHAPES = [
    ("sq512", 512, 512, 512),
    ("sq1024", 1024, 1024, 1024),
    ("sq2048", 2048, 2048, 2048),
    ("sq4096", 4096, 4096, 4096),
    ("sq8192", 8192, 8192, 8192),
    ("skinny_1x512x1536", 1, 512, 1536),
    ("skinny_16x512x1408", 16, 512, 1408),
    ("skinny_4x512x1536", 4, 512, 1536),
    ("skinny_8x512x1536", 8, 512, 1536),
]
MODES = ["f32_highest", "f32_medium", "bf16"]


def time_torch(torch, M, K, N, mode, runs):
    dt = torch.bfloat16 if mode == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = mode == "f32_medium"
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(M, K, device="cuda", dtype=dt, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=dt, generator=g)
    out = torch.empty(M, N, device="cuda", dtype=dt)
    flop = 2.0 * M * N * K
    reps = max(1, min(200, int(2e10 / flop)))  # ~1 ms per timed batch, as the C++ bench
    for _ in range(3):
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    times = []
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    for _ in range(runs):
        e0.record()
        for _ in range(reps):
            torch.matmul(a, b, out=out)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e-3 / reps)
    med = statistics.median(times)
    return med, flop / med * 1e-12


def load_strata(path):
    """{(shape, mode, who): (seconds, TFLOP/s)} from Google Benchmark JSON."""
    res = {}
    with open(path) as f:
        data = json.load(f)
    for b in data.get("benchmarks", []):
        parts = b["name"].split("/")
        if len(parts) < 4 or parts[0] != "matmul_cuda":
            continue
        shape, mode, who = parts[1], parts[2], parts[3]
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        res[(shape, mode, who)] = (b["real_time"] * unit, b.get("TFLOP/s", float("nan")))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", help="bench_matmul_cuda JSON output")
    ap.add_argument("--out", help="also write the table (markdown) here")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("peer_matmul: no torch", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_matmul: no CUDA device", file=sys.stderr)
        return 1
    strata = load_strata(args.strata) if args.strata else {}
    lines = [
        f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; "
        f"median of {args.runs} CUDA-event batches; TFLOP/s (time in us)",
        "",
        "| shape | mode | torch.matmul | Strata | cuBLAS direct | Strata / torch |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for mode in MODES:
        for name, M, K, N in SHAPES:
            sec, tf = time_torch(torch, M, K, N, mode, args.runs)
            s = strata.get((name, mode, "strata"))
            c = strata.get((name, mode, "cublas"))

            def cell(x):
                return f"{x[1]:.1f} ({x[0] * 1e6:.1f})" if x else "-"

            ratio = f"{s[1] / tf:.2f}" if s else "-"
            line = f"| {name} | {mode} | {tf:.1f} ({sec * 1e6:.1f}) | {cell(s)} | {cell(c)} | {ratio} |"
            lines.append(line)
            print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
