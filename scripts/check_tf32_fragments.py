#!/usr/bin/env python3
"""Host check of the f32 TF32 attention kernel's fragment plumbing
(backends/cuda/attention/sm80/kernel_tf32.cuh), without a GPU.

Emulates one warp: ldmatrix.x4 (.b16) on f32 data and mma.m16n8k8 .tf32
exactly as the PTX ISA defines their fragments (A: a0 (g, t), a1 (g+8, t),
a2 (g, t+4), a3 (g+8, t+4); B: b0 (k=t, n=g), b1 (k=t+4, n=g); C: c0/c1
(g, 2t/2t+1), c2/c3 (g+8, ...)), with the kernel's own address formulas for
Q, K and V in [rows][D + 4] tiles and its key permutation for P, and checks
S = Q K^T and O = S V, the bank spread of the V loads and of the ldmatrix
phases. Then emulates the arithmetic (3xTF32 split, TF32 rounding) on a
small attention problem and prints the errors against f64 next to a naive
f32 computation's (docs/log/cuda-tuning.md, "f32 on the tensor cores").

    python3 scripts/check_tf32_fragments.py     # exits 1 on a mismatch
"""
import sys

import numpy as np


def ldsm_x4(mem, addr_of_lane):
    """ldmatrix.x4: lanes 8i..8i+7 give the row addresses of matrix i; lane
    (g, t) receives 32-bit word t of row g of each matrix."""
    regs = np.zeros((32, 4))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            row = addr_of_lane(8 * i + g)
            assert row % 16 == 0, "ldmatrix rows must be 16-byte aligned"
            regs[lane, i] = mem[row // 4 + t]
    return regs


def mma(c, a, b0, b1):
    """c += A B for mma.m16n8k8 with the PTX fragment layouts."""
    A, B = np.zeros((16, 8)), np.zeros((8, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        A[g, t], A[g + 8, t], A[g, t + 4], A[g + 8, t + 4] = a[lane]
        B[t, g], B[t + 4, g] = b0[lane], b1[lane]
    C = A @ B
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        c[lane] += (C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1])


def gather_c(frags, cols):
    out = np.zeros((16, cols))
    for j in range(cols // 8):
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            out[g, 8 * j + 2 * t: 8 * j + 2 * t + 2] = frags[j, lane, 0:2]
            out[g + 8, 8 * j + 2 * t: 8 * j + 2 * t + 2] = frags[j, lane, 2:4]
    return out


def check_plumbing(D, BN, rng):
    kP = D + 4
    RB = kP * 4  # bytes per shared row
    Q, K, V = (rng.standard_normal((n, D)) for n in (16, BN, BN))
    tile = lambda X: np.pad(X, ((0, 0), (0, 4))).ravel()
    sQ, sK, sV = tile(Q), tile(K), tile(V)
    s = np.zeros((BN // 8, 32, 4))
    for kk in range(D // 8):
        qa = ldsm_x4(sQ, lambda l: (l & 15) * RB + ((l >> 4) << 4) + kk * 32)
        for jp in range(BN // 16):
            r = ldsm_x4(sK, lambda l: ((l & 7) + ((l >> 4) << 3)) * RB + (((l >> 3) & 1) << 4) +
                        jp * 16 * RB + kk * 32)
            mma(s[2 * jp], qa, r[:, 0], r[:, 1])
            mma(s[2 * jp + 1], qa, r[:, 2], r[:, 3])
    S = gather_c(s, BN)
    o = np.zeros((D // 8, 32, 4))
    v_off = [2 * (l & 3) * kP + (l >> 2) for l in range(32)]
    for kk in range(BN // 8):
        pf = s[kk][:, [0, 2, 1, 3]]  # k = t <-> key 2t, k = t + 4 <-> key 2t + 1
        for n in range(D // 8):
            b0 = np.array([sV[v_off[l] + kk * 8 * kP + n * 8] for l in range(32)])
            b1 = np.array([sV[v_off[l] + kk * 8 * kP + kP + n * 8] for l in range(32)])
            mma(o[n], pf, b0, b1)
    O = gather_c(o, D)
    ok = {
        "S = Q K^T": np.allclose(S, Q @ K.T),
        "O = S V": np.allclose(O, S @ V),
        "V loads: 32 banks": len({v % 32 for v in v_off}) == 32,
        "ldmatrix phase: 8 bank groups": len({(r * RB // 16) % 8 for r in range(8)}) == 8,
    }
    for what, good in ok.items():
        print(f"d {D} BN {BN}: {what}: {'ok' if good else 'WRONG'}")
    return all(ok.values())


def tf32(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x1000) & 0xffffe000).astype(np.uint32).view(np.float32)


def accuracy(rng):
    """Errors against f64 of the emulated arithmetic (f32 accumulation per
    8-term MMA, rounded to nearest: the tensor cores may truncate)."""
    def mm_tc(a, b, x3):
        acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
        if x3:
            ab, bb = tf32(a), tf32(b)
            pairs = [(tf32(a - ab), bb), (ab, tf32(b - bb)), (ab, bb)]
        else:
            pairs = [(tf32(a), tf32(b))]
        for k0 in range(0, a.shape[1], 8):
            for x, y in pairs:
                acc = (acc + x[:, k0:k0 + 8].astype(np.float64) @ y[k0:k0 + 8]).astype(np.float32)
        return acc

    def naive(a, b):
        acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for k in range(a.shape[1]):
            acc = (acc + a[:, k:k + 1] * b[k:k + 1]).astype(np.float32)
        return acc

    def attn(q, k, v, mm, scale):
        s = mm(q, k.T) * np.float32(scale)
        p = np.exp(s - s.max(1, keepdims=True)).astype(np.float32)
        return (mm(p, v) / p.sum(1, keepdims=True)).astype(np.float32)

    for d, xs in ((64, 1.0), (128, 1.0), (128, 8.0)):
        q = (rng.standard_normal((128, d)) * xs).astype(np.float32)
        k, v = (rng.standard_normal((512, d)).astype(np.float32) for _ in range(2))
        sc = 1 / np.sqrt(d)
        S = q.astype(np.float64) @ k.T.astype(np.float64) * sc
        P = np.exp(S - S.max(1, keepdims=True))
        ref = P @ v / P.sum(1, keepdims=True)
        err = lambda o: np.linalg.norm(o - ref) / np.linalg.norm(ref)
        exact = lambda a, b: (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
        print(f"d {d} logits x{xs}: rel_fro naive f32 {err(attn(q, k, v, naive, sc)):.2e}, "
              f"3xTF32 {err(attn(q, k, v, lambda a, b: mm_tc(a, b, True), sc)):.2e}, "
              f"TF32 {err(attn(q, k, v, lambda a, b: mm_tc(a, b, False), sc)):.2e}, "
              f"TF32 model {err(attn(tf32(q), tf32(k), tf32(v), exact, sc)):.2e}")


def rz(x):
    """f64 to f32 toward zero: the tensor core's accumulation truncates."""
    f = x.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(x)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def mm_groups(a, b, G):
    """3xTF32 product with the three MMAs of each k-step summed by the tensor
    core (truncating) into a quad that is added to the running sum in f32
    every G k-steps (flash_tf32_kernel's GS / GP); G None: all straight."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    ab, bb = tf32(a), tf32(b)
    pairs = [(tf32(a - ab), bb), (ab, tf32(b - bb)), (ab, bb)]
    t = None
    for i, k0 in enumerate(range(0, a.shape[1], 8)):
        if G is not None and i % G == 0:
            t = np.zeros_like(acc)
        for x, y in pairs:
            prod = x[:, k0:k0 + 8].astype(np.float64) @ y[k0:k0 + 8]
            if G is None:
                acc = rz(acc + prod)
            else:
                t = rz(t + prod)
        if G is not None and (i % G == G - 1 or k0 + 8 >= a.shape[1]):
            acc = (acc.astype(np.float64) + t).astype(np.float32)
    return acc


def summation_groups(rng):
    """Errors of high's summation groups (docs/log/cuda-tuning.md, "Session 10
    trials") with truncating tensor-core accumulation, against naive f32."""
    for d, xs, N in ((64, 1.0, 400), (128, 1.0, 400), (128, 8.0, 512)):
        q = (rng.standard_normal((128, d)) * xs).astype(np.float32)
        k, v = (rng.standard_normal((N, d)).astype(np.float32) for _ in range(2))
        sc = 1 / np.sqrt(d)
        S = q.astype(np.float64) @ k.T.astype(np.float64) * sc
        P = np.exp(S - S.max(1, keepdims=True))
        ref = P @ v / P.sum(1, keepdims=True)

        def attn(gs, gp):
            s = mm_groups(q, k.T, gs) * np.float32(sc)
            p = np.exp(s - s.max(1, keepdims=True)).astype(np.float32)
            o = mm_groups(p, v, gp) / p.sum(1, keepdims=True)
            return np.linalg.norm(o.astype(np.float32) - ref) / np.linalg.norm(ref)

        rows = {"S 1 / PV 1": (1, 1), "1 / 4 (.pvt BN 32)": (1, 4), "1 / 8 (.pvt BN 64)": (1, 8),
                "2 / 4 (.g2.pvt)": (2, 4), "straight / 1": (None, 1),
                "straight / straight": (None, None)}
        print(f"d {d} logits x{xs} N {N}, 3xTF32 truncating, k-steps per f32 sum: " +
              ", ".join(f"{n} {attn(*g):.2e}" for n, g in rows.items()))


def main():
    rng = np.random.default_rng(1)
    good = all([check_plumbing(D, BN, rng) for D, BN in ((64, 64), (64, 32), (128, 32))])
    accuracy(rng)
    summation_groups(np.random.default_rng(1))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
