#pragma once
// The per-row pieces of the flash attention kernels' softmax: one score
// under the call's bounds, band and mask tensor (masked_score), and the end
// of a thread's two rows: row sums, 1 / l and lse (finish_rows) at the
// CTA's lse rows (flash_lse).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/common/flash_tile.cuh"

namespace strata::cuda::flash {

// The mask tensor (a.mask_kind 1: bool, 2: float of type M) at head (b, h),
// as the kernels read it; both pointers null without a mask.
template <class M>
struct HeadMask {
  bool is_bool, is_float;
  const unsigned char* bytes;  // the bool mask's
  const M* values;             // the float mask's
};
template <class M>
__device__ __forceinline__ HeadMask<M> head_mask(const FlashArgs& a, std::int64_t b,
                                                 std::int64_t h) {
  HeadMask<M> m{a.mask_kind == 1, a.mask_kind == 2, nullptr, nullptr};
  if (a.mask_kind) {
    const std::int64_t off = batch_off(a, b, a.mk_bs) + h * a.mk_hs;
    m.bytes = static_cast<const unsigned char*>(a.mask) + off;
    m.values = static_cast<const M*>(a.mask) + off;
  }
  return m;
}

// One score of row i, key jj under the call's bounds, band and mask, in
// base 2 (a float mask scaled by log2 e): -inf where the key is dropped.
template <class M>
__device__ __forceinline__ float masked_score(const FlashArgs& a, const HeadMask<M>& mk,
                                              std::int64_t i, std::int64_t jj, float s) {
  bool keep = jj < a.N && i < a.M;
  if (a.has_band) keep = keep && jj >= i + a.band_lo && jj <= i + a.band_hi;
  if (keep && mk.is_bool) keep = mk.bytes[i * a.mk_ms + jj * a.mk_ns] != 0;
  if (keep && mk.is_float)
    s += static_cast<float>(mk.values[i * a.mk_ms + jj * a.mk_ns]) * 1.4426950408889634f;
  if (!keep) s = -__int_as_float(0x7f800000);
  return s;
}

// The end of a thread's two rows (i and i + 8): the row sums over the
// quad, 1 / l into inv (0 when nothing was kept, NaN stays NaN), and the
// lse of each row into `lse` (a row pointer, or nullptr) by the quad's
// first lane. Every lane of the warp calls it (shuffles).
__device__ __forceinline__ void finish_rows(const FlashArgs& a, float* lse, std::int64_t i,
                                            const float* row_m, float* row_l, float* inv, int t4) {
  const float kNegInf = -__int_as_float(0x7f800000);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_l[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    row_l[r] = l;
    inv[r] = l > 0.f ? 1.f / l : (l == 0.f ? 0.f : l);
  }
  if (lse == nullptr || t4 != 0) return;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (i + 8 * r >= a.M) continue;
    const float l = row_l[r];
    // In double: the max (in base 2) is up to ~1e2 and would lose its last
    // bits to one more f32 rounding.
    lse[(i + 8 * r) * a.l_ms] =
        l == 0.f ? kNegInf : float((double(row_m[r]) + log2(double(l))) * 0.6931471805599453);
  }
}

// lse of (batch b, head h) at row 0, or nullptr when the call asks for none.
__device__ __forceinline__ float* flash_lse(const FlashArgs& a, std::int64_t b, std::int64_t h) {
  return a.lse ? a.lse + batch_off(a, b, a.l_bs) + h * a.l_hs : nullptr;
}

}  // namespace strata::cuda::flash
