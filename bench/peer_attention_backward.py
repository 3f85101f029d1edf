#!/usr/bin/env python3
"""PyTorch's attention backward on the GPU: the peers of Strata's cuda
softmax_attention_backward (issue "training I").

For each shape, each scaled_dot_product_attention backend that accepts the
dtype (flash, cuDNN, memory-efficient, math) runs the forward once and then
its backward alone, timed with CUDA events: torch.autograd.grad of the
output with a fixed upstream gradient, retain_graph=True, so that every
timed call repeats the same backward and nothing else. TFLOP/s counts the
backward as 2.5 times the forward's 4 B H M N d (halved for causal), the
FlashAttention papers' convention. With --strata, the rows of a Google
Benchmark JSON whose names hold "bwd" are printed beside them, matched by
the same shape key.

    python3 bench/peer_attention_backward.py [--strata cuda_bwd.json] [--reps 20]
"""
import argparse
import json
import re
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# key: (B, H, L, d, causal, dtype)
SHAPES = [
    (4, 16, 4096, 64, False, torch.bfloat16),
    (4, 16, 4096, 64, True, torch.bfloat16),
    (1, 32, 8192, 128, False, torch.bfloat16),
    (1, 32, 8192, 128, True, torch.bfloat16),
    (4, 16, 4096, 64, False, torch.float32),
    (1, 32, 8192, 128, False, torch.float32),
]
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}


def backward_flops(B, H, L, d, causal):
    return 2.5 * 4.0 * B * H * L * L * d * (0.5 if causal else 1.0)


def time_backward(backend, B, H, L, d, causal, dtype, reps):
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, L, d, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    g = torch.randn(B, H, L, d, device="cuda", dtype=dtype)
    try:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for _ in range(3):
                torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
            torch.cuda.synchronize()
            times = []
            for _ in range(reps):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b))
    except RuntimeError:
        return None
    times.sort()
    return times[len(times) // 2]


def strata_rows(path):
    """name -> median ms of the rows whose names hold 'bwd'."""
    if not path:
        return {}
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        if "bwd" not in b["name"] or b.get("aggregate_name", "median") != "median":
            continue
        unit = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        rows[b["run_name"] if "run_name" in b else b["name"]] = b["real_time"] * unit
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", help="Google Benchmark JSON with Strata's backward rows")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; backward alone, "
          f"median of {a.reps}; TFLOP/s = 10 B H L^2 d (x0.5 causal) / time")
    print(f"{'dtype':>5} {'B':>2} {'H':>3} {'L':>5} {'d':>4} {'causal':>6} | " +
          " | ".join(f"{n:>9} ms {'TF/s':>6}" for n in BACKENDS))
    for (B, H, L, d, causal, dtype) in SHAPES:
        fl = backward_flops(B, H, L, d, causal)
        cells = []
        for backend in BACKENDS.values():
            ms = time_backward(backend, B, H, L, d, causal, dtype, a.reps)
            cells.append(f"{'n/a':>12} {'':>6}" if ms is None else
                         f"{ms:>12.3f} {fl / ms / 1e9:>6.1f}")
        print(f"{DTYPE_NAME[dtype]:>5} {B:>2} {H:>3} {L:>5} {d:>4} {str(causal):>6} | " +
              " | ".join(cells))
    for name, ms in sorted(strata_rows(a.strata).items()):
        m = re.search(r"(\d+)/(\d+)/(\d+)/(\d+)/(\d)", name)
        extra = ""
        if m:
            B, H, L, d, causal = (int(x) for x in m.groups())
            extra = f"  {backward_flops(B, H, L, d, bool(causal)) / ms / 1e9:.1f} TFLOP/s"
        print(f"strata {name}: {ms:.3f} ms{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
