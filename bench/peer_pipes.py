#!/usr/bin/env python3
"""Runs each fp32 PyTorch attention peer once at one shape, and cuBLAS SGEMM,
so that Nsight Compute can count which pipes their kernels issue to (FFMA
versus tensor-core MMA): the question is whether a peer computes fp32 with
exact FFMA, as Strata must, or with tensor cores (3xTF32).

    ncu --metrics 'regex:sm__inst_executed_pipe_(fma|fmaheavy|tensor).*\\.sum$' \\
        python3 bench/peer_pipes.py
"""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

B, H, L, d = 1, 8, 2048, 128
g = torch.Generator(device="cuda").manual_seed(1)
q, k, v = (torch.randn(B, H, L, d, device="cuda", generator=g) for _ in range(3))
ref = torch.softmax((q.double() @ k.double().transpose(-1, -2)) / math.sqrt(d), -1) @ v.double()
for name, be in [("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION),
                 ("sdpa_math", SDPBackend.MATH)]:
    torch.cuda.nvtx.range_push(name)
    with sdpa_kernel(be):
        out = F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    err = (out.double() - ref).abs().max().item()
    print(f"{name}: max abs error vs fp64 {err:.3e}", flush=True)
a = torch.randn(4096, 4096, device="cuda")
c = torch.mm(a, a)
torch.cuda.synchronize()
print("sgemm done", flush=True)
