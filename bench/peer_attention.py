#!/usr/bin/env python3
"""Peer comparison for Strata's cuda attention (fp32 exact, TF32 off; fp32
precision high and medium; bf16/f16).

Runs the shapes of bench/bench_attention_cuda.cpp through PyTorch's
scaled_dot_product_attention with every backend that accepts fp32 (the
others are reported as n/a) and through the naive matmul-softmax-matmul
path, in the same run as the Strata benchmark, and prints one table of
TFLOP/s (4*M*N*d per head, halved for causal) with the ratio of Strata to
the best peer per shape.

    python3 bench/peer_attention.py --strata cuda.json [--out table.md]

Shapes named f32high_* / f32medium_* are Strata's f32 attention with
AttentionOptions::precision high (3xTF32) / medium (TF32). Their peers run
as PyTorch would for that precision: for f32high the TF32 switches stay off
(the efficient sdpa runs 3xTF32 regardless: docs/log/cuda-tuning.md); for
f32medium they are on (torch.backends.cuda.matmul.allow_tf32, the math sdpa
and the naive path then multiply in TF32).
"""
import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F

# name: (B, H, M, N, d, causal, fused, two_d, dtype, kt); kept in step with
# shapes() in bench/bench_attention_cuda.cpp (and in its order).
F32, F64, BF16, F16 = torch.float32, torch.float64, torch.bfloat16, torch.float16


def _shape(B, H, M, N, d, dtype, causal=False, fused=False, two_d=False, kt=False):
    return (B, H, M, N, d, causal, fused, two_d, dtype, kt)


def _like(names, prefix, dtype):
    """The f32 shapes `names` again as prefix + name, in dtype."""
    return {prefix + n: SHAPES[n][:8] + (dtype, SHAPES[n][9]) for n in names}


SHAPES = {
    "single_1024_d64": _shape(1, 1, 1024, 1024, 64, F32, two_d=True),
    "single_4096_d64": _shape(1, 1, 4096, 4096, 64, F32, two_d=True),
    "single_8192_d128": _shape(1, 1, 8192, 8192, 128, F32, two_d=True),
    "single_4096_d100": _shape(1, 1, 4096, 4096, 100, F32, two_d=True),
    "single_4096_d128": _shape(1, 1, 4096, 4096, 128, F32, two_d=True),
    "decode_262144_d128": _shape(1, 1, 1, 262144, 128, F32, two_d=True),
    "decode_b8h32_32768_d128": _shape(8, 32, 1, 32768, 128, F32),
    "b4h16_4096_d64": _shape(4, 16, 4096, 4096, 64, F32),
    "b4h16_4096_d64_causal": _shape(4, 16, 4096, 4096, 64, F32, causal=True),
    "b4h16_4096_d64_fused": _shape(4, 16, 4096, 4096, 64, F32, fused=True),
    "b1h32_8192_d128": _shape(1, 32, 8192, 8192, 128, F32),
    "b1h32_8192_d128_causal": _shape(1, 32, 8192, 8192, 128, F32, causal=True),
    "b1h32_8192_d128_fused": _shape(1, 32, 8192, 8192, 128, F32, fused=True),
    "single_4096_d64_kt": _shape(1, 1, 4096, 4096, 64, F32, two_d=True, kt=True),
    "f64_single_2048_d64": _shape(1, 1, 2048, 2048, 64, F64, two_d=True),
    "f64_b4h16_2048_d64": _shape(4, 16, 2048, 2048, 64, F64),
}
SHAPES.update(_like(["single_4096_d128"], "f64_", F64))
SHAPES.update(_like(["single_4096_d64", "single_8192_d128", "single_4096_d100", "b4h16_4096_d64",
                     "b4h16_4096_d64_causal", "b4h16_4096_d64_fused", "b1h32_8192_d128",
                     "b1h32_8192_d128_causal", "b1h32_8192_d128_fused"], "bf16_", BF16))
SHAPES.update({
    "bf16_b1h32_8192_d100": _shape(1, 32, 8192, 8192, 100, BF16),
    "bf16_b1h32_8192_d80": _shape(1, 32, 8192, 8192, 80, BF16),
    "bf16_b1h32_8192_d96": _shape(1, 32, 8192, 8192, 96, BF16),
    "bf16_b1h32_4096_d192": _shape(1, 32, 4096, 4096, 192, BF16),
    "bf16_b1h32_4096_d256": _shape(1, 32, 4096, 4096, 256, BF16),
})
SHAPES.update(_like(["b4h16_4096_d64", "b1h32_8192_d128"], "f16_", F16))
# f32 precision high (3xTF32) and medium (TF32): the TF32 tensor-core kernel.
_TF32 = ["b4h16_4096_d64", "b4h16_4096_d64_causal", "b1h32_8192_d128", "b1h32_8192_d128_causal"]
SHAPES.update(_like(_TF32, "f32high_", F32))
SHAPES.update(_like(_TF32, "f32medium_", F32))
SHAPES.update(_like(["decode_262144_d128", "decode_b8h32_32768_d128"], "bf16_", BF16))
SHAPES.update({
    "bf16_decode_65536_d128": _shape(1, 1, 1, 65536, 128, BF16, two_d=True),
    "bf16_decode_1048576_d128": _shape(1, 1, 1, 1048576, 128, BF16, two_d=True),
})


def flops(B, H, M, N, d, causal):
    f = 4.0 * B * H * M * N * d
    return f / 2 if causal else f


def make_inputs(B, H, M, N, d, fused, dt, kt):
    g = torch.Generator(device="cuda").manual_seed(42)
    if fused:
        qkv = torch.randn(B, M, 3, H, d, device="cuda", dtype=dt, generator=g)
        return (qkv[:, :, 0].transpose(1, 2), qkv[:, :, 1].transpose(1, 2),
                qkv[:, :, 2].transpose(1, 2))
    q = torch.randn(B, H, M, d, device="cuda", dtype=dt, generator=g)
    if kt:
        k = torch.randn(B, H, d, N, device="cuda", dtype=dt, generator=g).transpose(-1, -2)
    else:
        k = torch.randn(B, H, N, d, device="cuda", dtype=dt, generator=g)
    v = torch.randn(B, H, N, d, device="cuda", dtype=dt, generator=g)
    return q, k, v


def bottom_right_mask(M, N):
    i = torch.arange(M, device="cuda")[:, None]
    j = torch.arange(N, device="cuda")[None, :]
    return j <= i + (N - M)


def time_ms(fn):
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def peers(q, k, v, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    M, N = q.shape[-2], k.shape[-2]
    mask = bottom_right_mask(M, N) if causal and M != N else None
    is_causal = causal and M == N  # PyTorch's is_causal is top-left; equal for M == N
    scale = 1.0 / math.sqrt(q.shape[-1])
    out = {}
    for name, be in [("sdpa_math", SDPBackend.MATH),
                     ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION),
                     ("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                     ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)]:
        def run(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                      is_causal=is_causal)
        try:
            run()
            torch.cuda.synchronize()
            out[name] = time_ms(run)
        except Exception as e:  # backend does not accept these inputs
            out[name] = None
            print(f"  {name}: n/a ({str(e).splitlines()[0][:90]})", file=sys.stderr)
        torch.cuda.empty_cache()

    def naive():
        s = torch.matmul(q, k.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(~bottom_right_mask(M, N), float("-inf"))
        return torch.matmul(torch.softmax(s, dim=-1), v)
    try:
        naive()
        torch.cuda.synchronize()
        out["naive"] = time_ms(naive)
    except Exception as e:
        out["naive"] = None
        print(f"  naive: n/a ({str(e).splitlines()[0][:90]})", file=sys.stderr)
    torch.cuda.empty_cache()
    return out


def sgemm_tflops(n=8192):
    """The exact-fp32 (FFMA) ceiling: cuBLAS SGEMM with TF32 off."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    ms = time_ms(lambda: torch.mm(a, b))
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def error_row(label, dt, d, causal, runs):
    """label, then for each (name, backend, tf32) of runs " name rel_fro E": E =
    ||out - ref||_F / ||ref||_F of that sdpa backend (TF32 switches as tf32
    says) against the f64 math one, on the same inputs q, k, v [2, 2, 512, d]
    N(0, 1) rounded to dt; " name n/a (why)" where it refuses them."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    g = torch.Generator(device="cuda").manual_seed(4242)
    q, k, v = (torch.randn(2, 2, 512, d, device="cuda", generator=g).to(dt) for _ in range(3))
    with sdpa_kernel(SDPBackend.MATH):
        ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    row = f"{label} B2 H2 L512 d{d}{' causal' if causal else ''}"
    for name, be, tf32 in runs:
        set_tf32(tf32)
        try:
            with sdpa_kernel(be):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            err = ((out.double() - ref).norm() / ref.norm()).item()
            row += f" {name} rel_fro {err:.4e}"
        except Exception as e:  # backend does not accept these inputs
            row += f" {name} n/a ({str(e).splitlines()[0][:60]})"
    set_tf32(False)
    return row


def flash_errors():
    """PyTorch's flash and cuDNN kernels on the shapes that
    tests/cuda/test_cuda_attention_mma.cpp prints for Strata ("mma_error"):
    the bf16/f16 accuracy rule is Strata <= 2x flash."""
    from torch.nn.attention import SDPBackend
    for dt, dname in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
        for d in (64, 128):
            for causal in (False, True):
                print(error_row(f"flash_error {dname}", dt, d, causal,
                                [("flash", SDPBackend.FLASH_ATTENTION, False),
                                 ("cudnn", SDPBackend.CUDNN_ATTENTION, False)]))


def set_tf32(on):
    """PyTorch's TF32 switches: on for the f32medium shapes, off otherwise."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    torch.set_float32_matmul_precision("high" if on else "highest")


def tf32_errors():
    """PyTorch's f32 attention on the shapes that
    tests/cuda/test_cuda_attention_tf32.cpp prints for Strata ("tf32_error"):
    the math sdpa with TF32 on (TF32 products, what medium is compared with),
    the efficient sdpa (3xTF32, what high is compared with) and the math sdpa
    with TF32 off (exact f32)."""
    from torch.nn.attention import SDPBackend
    for d in (64, 128):
        for causal in (False, True):
            print(error_row("tf32_error f32", torch.float32, d, causal,
                            [("math_tf32", SDPBackend.MATH, True),
                             ("efficient", SDPBackend.EFFICIENT_ATTENTION, False),
                             ("math_f32", SDPBackend.MATH, False)]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", help="bench_attention_cuda JSON output")
    ap.add_argument("--out", help="write the markdown table here too")
    ap.add_argument("--only", nargs="*", help="shape names")
    ap.add_argument("--errors", action="store_true",
                    help="print PyTorch's bf16/f16 (flash, cuDNN) and f32 (TF32 math, "
                         "3xTF32 efficient, exact math) errors against f64 and exit")
    args = ap.parse_args()
    if args.errors:
        flash_errors()
        tf32_errors()
        return

    set_tf32(False)

    strata = {}
    if args.strata:
        with open(args.strata) as f:
            for b in json.load(f)["benchmarks"]:
                name = b["name"].split("/", 1)[1].split("/")[0]
                unit = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b.get("time_unit", "ms")]
                strata[name] = (b["real_time"] * unit, b.get("label", ""))

    cols = ["sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "naive"]
    lines = ["| shape | Strata ms | Strata TFLOP/s | " + " | ".join(cols) +
             " | best peer | Strata / best |",
             "|---|---|---|" + "---|" * len(cols) + "---|---|"]
    for name, (B, H, M, N, d, causal, fused, two_d, dt, kt) in SHAPES.items():
        if args.only and name not in args.only:
            continue
        print(f"{name} ...", file=sys.stderr, flush=True)
        q, k, v = make_inputs(B, H, M, N, d, fused, dt, kt)
        set_tf32(name.startswith("f32medium_"))
        res = peers(q, k, v, causal)
        set_tf32(False)
        del q, k, v
        torch.cuda.empty_cache()
        f = flops(B, H, M, N, d, causal)
        tf = {c: (f / (res[c] * 1e-3) / 1e12 if res.get(c) else None) for c in cols}
        valid = [c for c in cols if tf[c]]
        best = max(valid, key=lambda c: tf[c]) if valid else None
        s_ms, label = strata.get(name, (None, ""))
        s_tf = f / (s_ms * 1e-3) / 1e12 if s_ms else None

        def fmt(x, ms=None):
            if x is None:
                return "n/a"
            return f"{x:.2f}" + (f" ({ms:.3f} ms)" if ms is not None else "")
        row = [name, f"{s_ms:.4f}" if s_ms else "n/a", fmt(s_tf)]
        row += [fmt(tf[c], res[c]) for c in cols]
        row += [f"{best} {tf[best]:.2f}" if best else "n/a",
                f"{s_tf / tf[best]:.2f}x" if (best and s_tf) else "n/a"]
        lines.append("| " + " | ".join(row) + " |")
    table = "\n".join(lines)
    print(f"\nGPU: {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}, fp32 TF32 off "
          f"(on for the f32medium peers), "
          f"TFLOP/s = 4*M*N*d per head (causal halved); peers: median ms (triton do_bench)")
    print(f"FFMA ceiling, same run: cuBLAS SGEMM 8192^3 fp32 {sgemm_tflops():.2f} TFLOP/s")
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
