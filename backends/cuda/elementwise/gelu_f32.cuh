#pragma once
// gelu(x) = x Phi(x) in f32 for the cuda engine (f32, f16, bf16), at about
// half the instructions of erfcf (the erfcf form made gelu arithmetic-bound
// on the H200; docs/log/ops.md, "Elementwise and row ops on cuda").
// With u = |x|, Phi(-u) = erfc(u / sqrt 2) / 2 is computed directly, so
// negative x keeps its relative precision as fn::Gelu's erfc form does:
//   Phi(-u) = 2^(h(q) - u^2 log2(e) / 2) / (u + 4),  q = (u - 4) / (u + 4),
// h a degree-9 polynomial fitted to log2((u + 4) e^(u^2/2) erfc(u/sqrt 2)) - 1
// over u in [0, 15.5] (mpmath.chebyfit, max error 7e-8; the map to q keeps
// the fitted function smooth up to u = 15.5, where Phi(-u) underflows f32).
// Phi(x) = 1 - Phi(-x) for x >= 0. Relative error of Phi(-u) in f32
// (emulated): 9e-7 for u <= 6, 4e-6 further out (the rounding of the
// exponent, which passes -100 there); Phi(x >= 0) within 3e-7.
// x = -inf gives NaN (-inf * 0) as fn::Gelu and the reference do; NaN stays NaN.
#include <cuda_runtime.h>

namespace strata::cuda {

struct GeluF32 {
  __device__ __forceinline__ float operator()(float x) const {
    const float u = fminf(fabsf(x), 15.5f);  // NaN -> 15.5; the product below keeps x's NaN
    const float r = __fdividef(1.0f, u + 4.0f);
    const float q = (u - 4.0f) * r;
    float p = 5.902182311e-4f;
    p = fmaf(p, q, -1.288108178e-4f);
    p = fmaf(p, q, -3.756083781e-3f);
    p = fmaf(p, q, 3.197280923e-3f);
    p = fmaf(p, q, 1.324782986e-2f);
    p = fmaf(p, q, -3.327383101e-2f);
    p = fmaf(p, q, -1.182844955e-2f);
    p = fmaf(p, q, 2.722018659e-1f);
    p = fmaf(p, q, -1.161163688f);
    p = fmaf(p, q, -4.049067497e-1f);
    // u^2 log2(e) / 2 with u^2's rounding error carried (0.72134751 = log2(e) / 2).
    const float u2 = u * u;
    const float u2lo = fmaf(u, u, -u2);
    const float e = fmaf(-u2, 0.721347510815f, fmaf(-u2lo, 0.721347510815f, p));
    const float h = exp2f(e) * r;  // Phi(-u)
    return x * (x < 0.0f ? h : 1.0f - h);
  }
};

}  // namespace strata::cuda
