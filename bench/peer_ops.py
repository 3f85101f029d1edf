#!/usr/bin/env python3
"""PyTorch eager on the GPU for the shapes of bench/bench_ops_cuda.cpp.

Each op is timed with CUDA events (median of many runs after warm-up; runs
batched so one timed region lasts >= ~1 ms). Prints a markdown table of
GB/s (inputs read once, output written once) and % of PyTorch's own
device-to-device copy bandwidth (64M f32, read + write); with --strata
JSON from bench_ops_cuda, also Strata's GB/s, % of its copy ceiling and
the ratio Strata / PyTorch. Tiny-op rows compare host microseconds per call.

  python3 bench/peer_ops.py [--strata ops.json] [--out table.md] [--only REGEX] [--no-tiny]
"""
import argparse
import json
import re
import statistics
import time

import torch
import torch.nn.functional as F

dev = "cuda"


def median_ms(fn, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    one = s.elapsed_time(e)
    batch = 1 if one > 1.0 else min(1000, int(1.0 / (one + 1e-4)))
    times = []
    for _ in range(reps):
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / batch)
    return statistics.median(times)


def randn(shape, dtype):
    return torch.randn(shape, device=dev, dtype=torch.float32).to(dtype)


def cases():
    """(strata benchmark name, bytes, fn) in the binary's naming."""
    out = []
    n = 64 << 20
    a = randn(n, torch.float32)
    o = torch.empty_like(a)
    out.append(("copy_d2d/67108864", 2 * 4 * n, lambda: o.copy_(a)))
    for k in [1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 26, 1 << 28]:
        x, y = randn(k, torch.float32), randn(k, torch.float32)
        z = torch.empty_like(x)
        out.append((f"add_contig/f32/{k}", 12 * k, (lambda x=x, y=y, z=z: torch.add(x, y, out=z))))
    xb, yb = randn(n, torch.bfloat16), randn(n, torch.bfloat16)
    zb = torch.empty_like(xb)
    out.append((f"add_contig/bf16/{n}", 6 * n, lambda: torch.add(xb, yb, out=zb)))
    out.append((f"gelu_contig/f32/{n}", 8 * n, lambda: torch.ops.aten.gelu.out(a, out=o)))
    out.append((f"gelu_contig/bf16/{n}", 4 * n, lambda: torch.ops.aten.gelu.out(xb, out=zb)))
    ob = torch.empty(n, device=dev, dtype=torch.bfloat16)
    out.append((f"cast_f32_bf16/{n}", 6 * n, lambda: ob.copy_(a)))
    m = 8192
    A, r = randn((m, m), torch.float32), randn(m, torch.float32)
    Bt = randn((m, m), torch.float32).t()
    O = torch.empty_like(A)
    out.append((f"add_broadcast/f32/{m}", 4 * (2 * m * m + m), lambda: torch.add(A, r, out=O)))
    out.append((f"add_transposed/f32/{m}", 12 * m * m, lambda: torch.add(A, Bt, out=O)))
    Ab, Btb = randn((m, m), torch.bfloat16), randn((m, m), torch.bfloat16).t()
    Ob = torch.empty_like(Ab)
    out.append((f"add_transposed/bf16/{m}", 6 * m * m, lambda: torch.add(Ab, Btb, out=Ob)))
    for dt, tag, sz in [(torch.float32, "f32", 4), (torch.bfloat16, "bf16", 2)]:
        X = randn((4096, 4096), dt)
        w, b = randn(4096, dt), randn(4096, dt)
        by = 2 * sz * 4096 * 4096
        out.append((f"row_op/layer_norm_{tag}/4096/4096", by,
                    (lambda X=X, w=w, b=b: F.layer_norm(X, (4096,), w, b, 1e-5))))
        if hasattr(F, "rms_norm"):
            out.append((f"row_op/rms_norm_{tag}/4096/4096", by,
                        (lambda X=X, w=w: F.rms_norm(X, (4096,), w, 1e-6))))
        out.append((f"row_op/softmax_{tag}/4096/4096", by, (lambda X=X: torch.softmax(X, 1))))
    # bf16 rows of 2048 (the warp geometry's 8 vectors per lane).
    X = randn((8192, 2048), torch.bfloat16)
    w, b = randn(2048, torch.bfloat16), randn(2048, torch.bfloat16)
    by = 2 * 2 * 8192 * 2048
    out.append(("row_op/layer_norm_bf16/8192/2048", by,
                lambda: F.layer_norm(X, (2048,), w, b, 1e-5)))
    if hasattr(F, "rms_norm"):
        out.append(("row_op/rms_norm_bf16/8192/2048", by, lambda: F.rms_norm(X, (2048,), w, 1e-6)))
    out.append(("row_op/softmax_bf16/8192/2048", by, lambda: torch.softmax(X, 1)))
    out += backward_cases()
    out += cross_entropy_cases()
    return out


def rms_norm(x, w, eps=1e-6):
    """F.rms_norm where this torch has it, else Hugging Face's LlamaRMSNorm formula."""
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    return w * (x.to(torch.float32) * torch.rsqrt(var + eps)).to(x.dtype)


def backward_cases():
    """The row ops' backward at 4096 x 4096: torch.autograd.grad of the
    forward's graph, kept with retain_graph so that only the backward is timed
    (the inputs' gradients: x, and weight and bias for the norms), beside a
    copy of the same bytes (grad and x or y read, dx written)."""
    out = []
    for dt, tag, sz in [(torch.float32, "f32", 4), (torch.bfloat16, "bf16", 2)]:
        nb = 3 * sz * 4096 * 4096
        src = torch.empty(nb // 2, device=dev, dtype=torch.uint8)
        dst = torch.empty_like(src)
        out.append((f"copy_bytes/{nb // 2}", nb, (lambda src=src, dst=dst: dst.copy_(src))))
        X = randn((4096, 4096), dt).requires_grad_()
        G = randn((4096, 4096), dt)
        w, b = randn(4096, dt).requires_grad_(), randn(4096, dt).requires_grad_()
        for name, y, wrt in [("softmax", F.softmax(X, 1), (X,)),
                             ("log_softmax", F.log_softmax(X, 1), (X,)),
                             ("layer_norm", F.layer_norm(X, (4096,), w, b, 1e-5), (X, w, b)),
                             ("rms_norm", rms_norm(X, w), (X, w))]:
            out.append((f"row_backward/{name}_{tag}/4096/4096", nb,
                        (lambda y=y, wrt=wrt, G=G: torch.autograd.grad(y, wrt, G,
                                                                       retain_graph=True))))
    return out


def cross_entropy_cases():
    """F.cross_entropy over bf16 logits [16384, 50304] (GPT-2's 16 x 1024
    rows) and its backward into the logits, beside a copy of half the bytes
    (logits read twice, their gradient written once)."""
    r, v = 16384, 50304
    nb = 3 * 2 * r * v
    src = torch.empty(nb // 2, device=dev, dtype=torch.uint8)
    dst = torch.empty_like(src)
    X = randn((r, v), torch.bfloat16).requires_grad_()
    t = torch.randint(0, v, (r,), device=dev)

    def step():
        loss = F.cross_entropy(X, t)
        torch.autograd.grad(loss, (X,))
    return [(f"copy_bytes/{nb // 2}", nb, lambda: dst.copy_(src)),
            (f"cross_entropy_step/bf16/{r}/{v}", nb, step)]


def tiny_us(alloc):
    a, b = randn(4, torch.float32), randn(4, torch.float32)
    o = torch.empty_like(a)
    fn = (lambda: torch.add(a, b)) if alloc else (lambda: torch.add(a, b, out=o))
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(1000):
            fn()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / 1000 * 1e6)
    return statistics.median(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", help="bench_ops_cuda JSON output")
    ap.add_argument("--out", help="also write the table here")
    ap.add_argument("--json", help="also write PyTorch's timings (ms per call) here")
    ap.add_argument("--only", help="time only the cases whose name matches this regex "
                    "(the copy is always timed: it is the ceiling)")
    ap.add_argument("--no-tiny", action="store_true", help="skip the tiny-op rows")
    args = ap.parse_args()
    strata = {}
    if args.strata:
        # With --benchmark_repetitions the file also holds mean, median,
        # stddev and cv entries of the same name: keep the median, else the
        # last plain run.
        for bm in json.load(open(args.strata))["benchmarks"]:
            nm = bm["name"].split("/manual_time")[0]
            if bm.get("run_type") == "aggregate":
                if bm.get("aggregate_name") == "median":
                    strata[nm] = dict(bm, _median=True)
            elif not strata.get(nm, {}).get("_median"):
                strata[nm] = bm
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    rows = []
    res = [(nm, by, median_ms(fn)) for nm, by, fn in cases()
           if not args.only or nm.startswith("copy_d2d/") or re.search(args.only, nm)]
    t_copy = res[0][1] / (res[0][2] * 1e-3) / 1e9
    s_copy = None
    if "copy_d2d/67108864" in strata:
        s_copy = strata["copy_d2d/67108864"]["bytes_per_second"] / 1e9
    hdr = "| case | strata GB/s | strata % copy | torch GB/s | torch % copy | strata / torch |"
    rows.append(hdr)
    rows.append("|---|---|---|---|---|---|")
    for nm, by, ms in res:
        tg = by / (ms * 1e-3) / 1e9
        sg = strata[nm]["bytes_per_second"] / 1e9 if nm in strata else None
        rows.append(
            f"| {nm} | {sg:.0f} | {100 * sg / s_copy:.1f} | {tg:.0f} | {100 * tg / t_copy:.1f} | "
            f"{sg / tg:.2f} |" if sg is not None and s_copy else
            f"| {nm} | - | - | {tg:.0f} | {100 * tg / t_copy:.1f} | - |")
    for alloc, tag in [] if args.no_tiny else [(True, "alloc"), (False, "out")]:
        us = tiny_us(alloc)
        key = f"tiny_add/{tag}"
        su = strata[key]["us_per_call"] if key in strata else None
        rows.append(f"| {key} (us per call) | {su:.2f} us | | {us:.2f} us | | {us / su:.2f} (torch/strata) |"
                    if su else f"| {key} (us per call) | - | | {us:.2f} us | | - |")
    if args.json:
        json.dump({"torch": torch.__version__, "ms": {nm: ms for nm, _, ms in res}},
                  open(args.json, "w"), indent=1)
    table = "\n".join(rows)
    print(table)
    if args.out:
        open(args.out, "w").write(table + "\n")


if __name__ == "__main__":
    main()
