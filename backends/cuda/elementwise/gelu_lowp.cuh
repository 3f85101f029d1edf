#pragma once
// gelu(x) = x Phi(x) for 16-bit results (f16, bf16): measured faster than
// GeluF32 (gelu_f32.cuh; docs/log/ops.md, "Rows16 / gelu16 A/B"), and so the
// f16/bf16 gelu. The same form as GeluF32,
//   Phi(-u) = 2^(h(q) - u^2 log2(e) / 2) / (u + 4),  u = min(|x|, 15.5),
// with q = (u - 4) / (u + 4) computed as 1 - 8 / (u + 4) (one FFMA), h of
// degree 6 instead of 9 (Chebyshev interpolant of the same function over
// u in [0, 15.5]: max error 6.9e-6 in log2, a relative 4.8e-6 in Phi,
// against half an ulp of 2.4e-4 for f16 and 2e-3 for bf16), no carried
// rounding error of u^2 (a relative 4e-6 at u = 15.5), and the reciprocal
// and 2^x by one MUFU instruction each (rcp/ex2.approx.ftz: Phi(-u) below
// 2^-126, u > 13.2, flushes to 0, where |gelu(x)| < 1e-37).
// Why: at 2 bytes per element the memory time per element halves against
// f32, while GeluF32's ~28 instructions per element keep their issue time,
// which then comes close to the memory time; this form is ~21 (count with
// cuobjdump -sass on the GPU machine). x = -inf gives NaN (-inf * 0) as the reference; NaN stays
// NaN (the clamp maps it to 15.5, the product keeps x's NaN); +inf gives inf.
#include <cuda_runtime.h>

namespace strata::cuda {

struct GeluLowp {
  __device__ __forceinline__ float operator()(float x) const {
    const float u = fminf(fabsf(x), 15.5f);
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(u + 4.0f));
    const float q = fmaf(-8.0f, r, 1.0f);
    float p = 6.471273340e-3f;
    p = fmaf(p, q, 1.175165155e-2f);
    p = fmaf(p, q, -3.517508033e-2f);
    p = fmaf(p, q, -1.171759473e-2f);
    p = fmaf(p, q, 2.724852343e-1f);
    p = fmaf(p, q, -1.161161891f);
    p = fmaf(p, q, -4.049131949e-1f);
    float h;  // Phi(-u) (0.72134751 = log2(e) / 2)
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(h) : "f"(fmaf(-u * u, 0.721347510815f, p)));
    h *= r;
    return x * (x < 0.0f ? h : 1.0f - h);
  }
};

}  // namespace strata::cuda
