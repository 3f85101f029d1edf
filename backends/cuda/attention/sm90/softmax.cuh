#pragma once
// The softmax of a wgmma accumulator tile of scores, shared by the wgmma
// kernels (sm90/kernel_16bit.cuh, sm90/kernel_tf32.cuh): the bounds and band
// in 32 bits (mask_bounds_band) and the online softmax of the tile in base 2
// (online_softmax_tile).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/common/flash_ops.cuh"

namespace strata::cuda::flash {

// Bounds and band of a wgmma accumulator tile of scores (this thread's
// rows i0 and i0 + 8, keys n0 + 8 j + 2 t4 + {0, 1}, the C layout of the
// wgmma kernels, sm90/kernel_16bit.cuh and sm90/kernel_tf32.cuh): scores outside
// become -inf. In 32 bits relative to the thread's first key and row; key -
// row is rel + col - ro, and the limits are clamped to +-2^30, far outside
// the tile, which keeps every comparison exact.
template <int BN>
__device__ __forceinline__ void mask_bounds_band(const FlashArgs& a, float* s, std::int64_t n0,
                                                 std::int64_t i0, int t4) {
  auto clamp32 = [](std::int64_t x) {
    return int(x < -(1 << 30) ? -(1 << 30) : x > (1 << 30) ? (1 << 30) : x);
  };
  const std::int64_t rel = n0 - i0;
  const int n_left = clamp32(a.N - n0), m_left = clamp32(a.M - i0);
  const int lo = a.has_band ? clamp32(a.band_lo - rel) : -(1 << 30);
  const int hi = a.has_band ? clamp32(a.band_hi - rel) : (1 << 30);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = j * 8 + 2 * t4 + (e & 1), ro = (e >> 1) * 8;
      const bool keep = col < n_left && ro < m_left && col - ro >= lo && col - ro <= hi;
      if (!keep) s[4 * j + e] = -__int_as_float(0x7f800000);
    }
  }
}

// The online softmax of a wgmma accumulator tile in base 2, rows g (r = 0)
// and g + 8 (r = 1): the scores, times f where FACTOR (the scale of raw
// scores, folded into the exp2's FFMA; f = 1 for scaled ones), against the
// running max row_m and sum row_l. alpha: the factor O must take; returns
// whether any of the warp's alphas is not 1 (once the maxima settle they
// are exactly 1 and the rescale is skipped).
template <int BN, bool FACTOR>
__device__ __forceinline__ bool online_softmax_tile(float* s, float* row_m, float* row_l,
                                                    float* alpha, float f) {
  const float kNegInf = -__int_as_float(0x7f800000);
  bool moved = false;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = kNegInf;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx = fmaxf(FACTOR ? mx * f : mx, row_m[r]);
    const float m_use = mx == kNegInf ? 0.f : mx;  // a row with nothing kept yet
    alpha[r] = ex2(row_m[r] - m_use);
    moved = moved || alpha[r] != 1.f;
    row_m[r] = mx;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const float x0 = s[4 * j + 2 * r], x1 = s[4 * j + 2 * r + 1];
      s[4 * j + 2 * r] = ex2(FACTOR ? fmaf(x0, f, -m_use) : x0 - m_use);
      s[4 * j + 2 * r + 1] = ex2(FACTOR ? fmaf(x1, f, -m_use) : x1 - m_use);
      sum += s[4 * j + 2 * r] + s[4 * j + 2 * r + 1];
    }
    row_l[r] = row_l[r] * alpha[r] + sum;
  }
  return __any_sync(0xffffffffu, moved);
}

}  // namespace strata::cuda::flash
