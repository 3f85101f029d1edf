#pragma once
// Statistics of the `fused` 16-bit row kernels (rms_norm, softmax and
// log_softmax by default; layer_norm in the lab): what each thread does with
// its part of the row before the ONE block reduction, and the reduction's
// combine, written so that the chain between the row's arrival and its
// first store is as short as rms_norm's (docs/log/ops.md, "16-bit rows and
// the transposed add"):
// - per-thread sums over NV independent accumulators (one per vector), not
//   one chain through every element;
// - layer_norm's combine of (count, sum, M2) has no division: the count
//   product's reciprocal is one MUFU.RCP that feeds only the between-set
//   term (its 2^-22 error there is far below a 16-bit output's ulp), and
//   the counts do not depend on the data, so it can issue before the row
//   arrives;
// - 1 / n and the thread's 1 / count are taken before the row arrives,
//   and the scale is rsqrt, not 1 / sqrt of a quotient.
#include <cmath>

#include "cuda/rows/rows_fast.cuh"

namespace strata::cuda::fastrow {

inline constexpr float kLog2e = 1.4426950408889634f;

// 2^x as one MUFU op (relative error about 2^-22, subnormal results kept):
// enough for 16-bit outputs, whose ulp is 2^-8 (bf16) or 2^-11 (f16).
__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Max m of a set and s = sum of exp(x - m) over it; two sets combine by
// rescaling each sum to the larger max (online softmax). A set whose max is
// -inf holds only -inf and NaN: its sum is 0, or NaN if it holds a NaN.
struct MaxSum {
  float m, s;
};
struct MaxSumOp {
  __device__ __forceinline__ static float rescaled(MaxSum a, float m) {
    return a.m == m ? a.s : a.s * ex2_approx((a.m - m) * kLog2e);  // -inf == -inf: no NaN
  }
  __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = MaxOp{}(a.m, b.m);  // never NaN: the local maxima ignore NaN
    return {m, rescaled(a, m) + rescaled(b, m)};
  }
};

// Element j of a raw vector as f32, the cvt written as volatile asm so that
// the compiler redoes it in each pass over the row instead of keeping every
// widened value live (ptxas: bf16 kernels took up to twice f16's registers
// and spilled; with this they take fewer than f16's).
template <class T, int VEC>
__device__ __forceinline__ float widen(const Vec<T, VEC>& v, int j) {
  if constexpr (!is_narrow_v<T>) {
    return cvt<float>(v.v[j]);
  } else {
    constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
    const unsigned w = reinterpret_cast<const unsigned*>(&v)[j / 2];
    float o;  // bf16: the bits shifted up; f16: cvt
    if (kBf16 && j % 2 == 0)
      asm volatile("shl.b32 %0, %1, 16;" : "=f"(o) : "r"(w));
    else if (kBf16)
      asm volatile("and.b32 %0, %1, 0xffff0000;" : "=f"(o) : "r"(w));
    else if (j % 2 == 0)
      asm volatile("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l;}" : "=f"(o) : "r"(w));
    else
      asm volatile("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h;}" : "=f"(o) : "r"(w));
    return o;
  }
}

__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Count n, sum s and sum of squared deviations m2 of a set of values. Two
// sets combine as Chan et al. in terms of sums: m2 = m2a + m2b + d^2 /
// (na nb (na + nb)), d = na sb - nb sa. The products are rounded on their
// own (no FMA contraction), so swapping the operands negates d exactly and
// both lanes of a shuffle step get the same bits; an empty set (na nb = 0)
// makes d 0 and the term 0.
struct SumM2 {
  float n, s, m2;
};
struct SumM2Op {
  __device__ __forceinline__ SumM2 operator()(SumM2 a, SumM2 b) const {
    const float n = a.n + b.n;
    const float k = rcp_approx(fmaxf(__fmul_rn(__fmul_rn(a.n, b.n), n), 1.0f));
    const float d = __fsub_rn(__fmul_rn(a.n, b.s), __fmul_rn(b.n, a.s));
    return {n, a.s + b.s, (a.m2 + b.m2) + __fmul_rn(d, d) * k};
  }
};

// Whether vector i of thread `lane` lies in the row.
template <int TPR>
__device__ __forceinline__ bool vec_valid(int lane, int i, std::int64_t nvec) {
  return lane + std::int64_t(i) * TPR < nvec;
}

// This thread's element count (VEC per vector in the row); data-independent.
template <int TPR, int NV, int VEC>
__device__ __forceinline__ float thread_count(int lane, std::int64_t nvec) {
  int c = 0;
#pragma unroll
  for (int i = 0; i < NV; ++i) c += vec_valid<TPR>(lane, i, nvec) ? VEC : 0;
  return float(c);
}

// This thread's SumM2, exact two-pass over its registers: the sum, then the
// squared deviations from its own mean (rc = 1 / count, 0 for no elements).
// Vectors past the end hold zeros: they add nothing to the sum and are
// skipped in the second pass.
template <int TPR, int NV, class T>
__device__ __forceinline__ SumM2 local_sum_m2(const Vec<T, 16 / sizeof(T)> (&r)[NV], int lane,
                                              std::int64_t nvec, float c, float rc) {
  constexpr int VEC = 16 / sizeof(T);
  float s[NV], q[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < VEC; ++j) s[i] += widen(r[i], j);
  }
  float st = s[0];
#pragma unroll
  for (int i = 1; i < NV; ++i) st += s[i];
  const float mean = st * rc;
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    q[i] = 0.0f;
    if (vec_valid<TPR>(lane, i, nvec))
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float d = widen(r[i], j) - mean;
        q[i] = fmaf(d, d, q[i]);
      }
  }
  float qt = q[0];
#pragma unroll
  for (int i = 1; i < NV; ++i) qt += q[i];
  return {c, st, qt};
}

// This thread's sum of squares (rms_norm), NV accumulators.
template <int NV, class T>
__device__ __forceinline__ float local_sumsq(const Vec<T, 16 / sizeof(T)> (&r)[NV]) {
  constexpr int VEC = 16 / sizeof(T);
  float q[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    q[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const float x = widen(r[i], j);
      q[i] = fmaf(x, x, q[i]);
    }
  }
  float qt = q[0];
#pragma unroll
  for (int i = 1; i < NV; ++i) qt += q[i];
  return qt;
}

// This thread's maximum (NaN ignored, as MaxOp), NV accumulators.
template <int TPR, int NV, class T>
__device__ __forceinline__ float local_max(const Vec<T, 16 / sizeof(T)> (&r)[NV], int lane,
                                           std::int64_t nvec) {
  constexpr int VEC = 16 / sizeof(T);
  float m[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    m[i] = -INFINITY;
    if (vec_valid<TPR>(lane, i, nvec))
#pragma unroll
      for (int j = 0; j < VEC; ++j) m[i] = MaxOp{}(m[i], widen(r[i], j));
  }
  float mt = m[0];
#pragma unroll
  for (int i = 1; i < NV; ++i) mt = MaxOp{}(mt, m[i]);
  return mt;
}

}  // namespace strata::cuda::fastrow
