#!/usr/bin/env python3
"""The cpu backend's attention backward against PyTorch's CPU one, in one run.

Runs bench_attention_backward_cpu (rows fwd and fwd_bwd: f32 [B, H, L, d],
contiguous, causal or not) and torch.nn.functional.scaled_dot_product_attention
on the same shapes and thread count: the forward alone under no_grad, and the
forward plus backward(). The backward is fwd_bwd - fwd on both sides; its
GFLOP/s counts 2.5 times the forward's 4 B H L^2 d (halved for causal).

    python3 bench/cpu_peer_attention_backward.py build/bench/bench_attention_backward_cpu [--threads 2]
"""
import sys

from cpu_peer_common import benchmark_medians, median_ms, parse_args


def run_strata(binary, threads, reps):
    rows = {}
    for fields, ms in benchmark_medians(binary, f"/{threads}/real_time", threads, reps, 0.3):
        name, B, H, L, d, causal = fields[:6]
        rows.setdefault((int(B), int(H), int(L), int(d), int(causal)), {})[name] = ms
    return rows


def math_sdpa(q, k, v, is_causal=False):
    """PyTorch before 2.0 (Debian 12's python3-torch) has no
    scaled_dot_product_attention: the same maths written with its ops, which
    is what its CPU math backend runs."""
    import torch
    s = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def run_torch(shapes, threads, reps):
    import torch
    torch.set_num_threads(threads)
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None) or math_sdpa
    rows = {}
    for (B, H, L, d, causal) in shapes:
        q, k, v, g = (torch.randn(B, H, L, d) for _ in range(4))
        for x in (q, k, v):
            x.requires_grad_(True)

        def fwd():
            with torch.no_grad():
                sdpa(q, k, v, is_causal=bool(causal))

        def fwd_bwd():
            sdpa(q, k, v, is_causal=bool(causal)).backward(g)

        rows[(B, H, L, d, causal)] = {"fwd": median_ms(fwd, reps), "fwd_bwd": median_ms(fwd_bwd, reps)}
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "?")
    return rows, torch.__version__, capability()


def main():
    a = parse_args(__doc__)
    ours = run_strata(a.binary, a.threads, a.reps)
    theirs, version, cap = run_torch(sorted(ours), a.threads, a.reps)
    print(f"threads={a.threads}  torch {version} ({cap})  medians in ms; "
          "bwd = fwd_bwd - fwd; GFLOP/s of bwd = 10 B H L^2 d (x0.5 causal) / bwd")
    print(f"{'B':>2} {'H':>3} {'L':>5} {'d':>4} {'causal':>6} | {'strata fwd':>10} {'bwd':>8} "
          f"{'GFLOP/s':>8} | {'torch fwd':>9} {'bwd':>8} {'GFLOP/s':>8} | {'bwd ratio':>9}")
    worst = None
    for key in sorted(ours):
        B, H, L, d, causal = key
        fl = 10.0 * B * H * L * L * d * (0.5 if causal else 1.0)
        s, t = ours[key], theirs[key]
        sb, tb = s["fwd_bwd"] - s["fwd"], t["fwd_bwd"] - t["fwd"]
        r = tb / sb
        worst = r if worst is None else min(worst, r)
        print(f"{B:>2} {H:>3} {L:>5} {d:>4} {causal:>6} | {s['fwd']:>10.2f} {sb:>8.2f} "
              f"{fl / sb / 1e6:>8.1f} | {t['fwd']:>9.2f} {tb:>8.2f} {fl / tb / 1e6:>8.1f} | "
              f"{r:>8.2f}x")
    print(f"lowest backward ratio (torch time / strata time): {worst:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
