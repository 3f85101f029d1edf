#pragma once
// The plain argument struct every softmax_attention kernel receives, by
// value or const&. Built by the front end (ops/src/attention.cpp) after all
// validation; kernels never see a Tensor and may trust every field.
//
//   q    [B..., Hq,  M, d ]     k [B..., Hkv, N, d]     v [B..., Hkv, N, dv]
//   out  [B..., Hq,  M, dv]     lse [B..., Hq, M]        mask [B..., Hq, M, N]
//
// B... are the broadcast batch dims (batch_rank of them, possibly 0). Every
// stride is in elements and may be 0 (broadcast) or negative; pointers point
// at element [0, ..., 0] of each tensor (offset already applied).
//
// The front end never calls a kernel with nothing to write (M == 0, Hq == 0
// or an empty batch), so M >= 1 and batch_count() >= 1 here. N == 0 does
// reach kernels: every row is then empty (out = 0, lse = -inf), exactly like
// a row whose keys are all masked. d >= 1 and dv >= 1.
#include <cstdint>
#include <limits>

#include "strata/dtype.hpp"

namespace strata {

inline constexpr int kMaxBatchDims = 5;  // kMaxDims (8) minus head, row, col
inline constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max() / 4;

struct AttentionArgs {
  DType dtype = DType::f32;  // of q, k, v, out and lse

  int batch_rank = 0;
  std::int64_t batch_shape[kMaxBatchDims] = {};
  std::int64_t Hq = 1, Hkv = 1;  // Hq % Hkv == 0; q head h reads kv head h / (Hq / Hkv)
  std::int64_t M = 0, N = 0, d = 1, dv = 1;

  // Strides: [batch...], head, row, col.
  const void* q = nullptr;
  std::int64_t q_bs[kMaxBatchDims] = {}, q_hs = 0, q_ms = 0, q_ds = 0;
  const void* k = nullptr;
  std::int64_t k_bs[kMaxBatchDims] = {}, k_hs = 0, k_ns = 0, k_ds = 0;
  const void* v = nullptr;
  std::int64_t v_bs[kMaxBatchDims] = {}, v_hs = 0, v_ns = 0, v_ds = 0;
  void* out = nullptr;
  std::int64_t o_bs[kMaxBatchDims] = {}, o_hs = 0, o_ms = 0, o_ds = 0;
  void* lse = nullptr;  // optional
  std::int64_t l_bs[kMaxBatchDims] = {}, l_hs = 0, l_ms = 0;

  // Optional mask, already broadcast (zero strides) to [B..., Hq, M, N].
  // mask_dtype is boolean (true = keep) or equal to dtype (added to scores).
  const void* mask = nullptr;
  DType mask_dtype = DType::boolean;
  std::int64_t mk_bs[kMaxBatchDims] = {}, mk_hs = 0, mk_ms = 0, mk_ns = 0;

  double scale = 1.0;  // finite

  // Causal and sliding-window masks folded into one band: query row i keeps
  // key j when i + band_lo <= j <= i + band_hi. band_lo = -kNoLimit and
  // band_hi = kNoLimit mean no band. E.g. bottom-right causal: band_hi = N - M.
  std::int64_t band_lo = -kNoLimit;
  std::int64_t band_hi = kNoLimit;

  // Opaque stream handle for device backends (cudaStream_t); null = default.
  void* stream = nullptr;

  std::int64_t batch_count() const {
    std::int64_t n = 1;
    for (int i = 0; i < batch_rank; ++i) n *= batch_shape[i];
    return n;
  }
  bool has_band() const { return band_lo > -kNoLimit || band_hi < kNoLimit; }
};

// Element offset of batch item `b` (flat, row-major over batch_shape) for
// the batch strides `bs`. Host and device code share this one definition.
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline std::int64_t
    batch_offset(const AttentionArgs& a, std::int64_t b, const std::int64_t* bs) {
  std::int64_t off = 0;
  for (int i = a.batch_rank - 1; i >= 0; --i) {
    const std::int64_t n = a.batch_shape[i];
    off += (b % n) * bs[i];
    b /= n;
  }
  return off;
}

}  // namespace strata
