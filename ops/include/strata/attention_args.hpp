#pragma once
// The plain argument struct every softmax_attention kernel receives, by
// value or const&. Built by the front end (ops/src/attention_args_build.cpp)
// after all validation; kernels never see a Tensor and may trust every field.
//
// Every tensor is an Operand of the fixed rank kMaxDims (8), laid out
// [B0, ..., B4, heads, rows, cols]:
//
//   q    [B..., Hq,  M, d ]     k [B..., Hkv, N, d]     v [B..., Hkv, N, dv]
//   out  [B..., Hq,  M, dv]     lse [B..., Hq, M, 1]     mask [B..., Hq, M, N]
//
// B... are the broadcast batch dims (batch_rank of them, possibly 0), the
// same sizes in every operand, right-aligned in the five batch slots; the
// unused leading slots have size 1 and stride 0. The rank is fixed so that
// head, row and column strides sit at fixed places, which device code reads
// straight from the kernel parameters (as ggml keeps ne[4] / nb[4]).
// Broadcast is already applied: a dim the tensor lacks or holds once has its
// full size here and stride 0 (a 2-D q, k or v has head stride 0). Strides
// are in elements and may be negative; data points at element [0, ..., 0]
// (offset already applied). lse's last dim is a unit column so that one set
// of helpers (below) serves all six.
// lse.data and mask.data are null when absent (their shape and zero strides
// are still set, so offsets computed for them are 0); mask.dtype is boolean
// (true = keep) or q's dtype (added to scores). lse.dtype may differ from
// q's (f32 for f16/bf16 inputs).
//
// The front end never calls a kernel with nothing to write (M == 0, Hq == 0
// or an empty batch), so M >= 1 and batch_count() >= 1 here. N == 0 does
// reach kernels: every row is then empty (out = 0, lse = -inf), exactly like
// a row whose keys are all masked. d >= 1 and dv >= 1.
#include <cstdint>
#include <limits>

#include "strata/dtype.hpp"
#include "strata/op_options.hpp"
#include "strata/operand.hpp"

#if defined(__CUDACC__)
#define STRATA_ATTN_HD __host__ __device__
#else
#define STRATA_ATTN_HD
#endif

namespace strata {

inline constexpr int kMaxBatchDims = kMaxDims - 3;  // the rest are head, row, col
inline constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max() / 4;

struct AttentionArgs {
  int batch_rank = 0;
  std::int64_t batch_shape[kMaxBatchDims] = {};
  std::int64_t Hq = 1, Hkv = 1;  // Hq % Hkv == 0; q head h reads kv head h / (Hq / Hkv)
  std::int64_t M = 0, N = 0, d = 1, dv = 1;

  Operand q, k, v, out;
  Operand lse;   // optional: data == nullptr when not asked for
  Operand mask;  // optional: data == nullptr when there is none

  double scale = 1.0;  // finite

  // Causal and sliding-window masks folded into one band: query row i keeps
  // key j when i + band_lo <= j <= i + band_hi. band_lo = -kNoLimit and
  // band_hi = kNoLimit mean no band. E.g. bottom-right causal: band_hi = N - M.
  std::int64_t band_lo = -kNoLimit;
  std::int64_t band_hi = kNoLimit;

  // f32 product precision the caller asked for (AttentionOptions::precision);
  // always highest for other dtypes. A kernel may serve only some values
  // (its supports() says so); highest is always served.
  Precision precision = Precision::highest;

  // Opaque stream handle for device backends (cudaStream_t); null = default.
  void* stream = nullptr;

  // The dtype the kernel is registered for: q's (k, v and out share it).
  DType dtype() const { return q.dtype; }
  std::int64_t batch_count() const {
    std::int64_t n = 1;
    for (int i = 0; i < batch_rank; ++i) n *= batch_shape[i];
    return n;
  }
  bool has_band() const { return band_lo > -kNoLimit || band_hi < kNoLimit; }
};

// softmax_attention_backward's arguments: the forward's (with the lse it
// wrote, required here, and the out it wrote), the gradient of out (and of
// lse, optional) and the three gradients, which the kernel overwrites.
// Every gradient has the full broadcast batch and its own heads (no stride
// 0): summing a broadcast input's gradient is the front end's job.
//
//   dout [B..., Hq, M, dv]   dlse [B..., Hq, M, 1] (data == nullptr when absent)
//   dq   [B..., Hq, M, d ]   dk [B..., Hkv, N, d]   dv [B..., Hkv, N, dv]
struct AttentionBackwardArgs {
  AttentionArgs fwd;
  Operand dout, dlse;
  Operand dq, dk, dv;
  DType dtype() const { return fwd.dtype(); }
};

}  // namespace strata

// Element offsets in AttentionArgs' operands, shared by every backend (host
// and device code): the one place that knows the [B0..B4, heads, rows, cols]
// layout. x is one of the operands; b is a flat batch index (row-major over
// the batch dims), h a head of x (for k and v: the kv head).
namespace strata::attn {

inline constexpr int kHeadDim = kMaxBatchDims, kRowDim = kMaxBatchDims + 1,
                     kColDim = kMaxBatchDims + 2;

// Strides of x's head, row and column dims (row = query for q, out, lse and
// mask; key for k and v; column = mask key).
STRATA_ATTN_HD inline std::int64_t head_stride(const Operand& x) { return x.strides[kHeadDim]; }
STRATA_ATTN_HD inline std::int64_t row_stride(const Operand& x) { return x.strides[kRowDim]; }
STRATA_ATTN_HD inline std::int64_t col_stride(const Operand& x) { return x.strides[kColDim]; }

// Element offset of batch item b. The loop ends once b is used up (the
// remaining slots then add 0), so it runs batch_rank times at most and
// never reaches the padding slots.
STRATA_ATTN_HD inline std::int64_t batch_offset(const Operand& x, std::int64_t b) {
  std::int64_t off = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int i = kMaxBatchDims - 1; i >= 0 && b != 0; --i) {
    const std::int64_t n = x.shape[i];
    off += (b % n) * x.strides[i];
    b /= n;
  }
  return off;
}

// Element offset of head h of batch item b: the head's [rows, cols] matrix.
STRATA_ATTN_HD inline std::int64_t head_offset(const Operand& x, std::int64_t b, std::int64_t h) {
  return batch_offset(x, b) + h * head_stride(x);
}

// Element offset of row i of head h of batch item b.
STRATA_ATTN_HD inline std::int64_t row_offset(const Operand& x, std::int64_t b, std::int64_t h,
                                              std::int64_t i) {
  return head_offset(x, b, h) + i * row_stride(x);
}

// Typed address of head h of batch item b (T may be const).
template <class T>
STRATA_ATTN_HD inline T* head_ptr(const Operand& x, std::int64_t b, std::int64_t h) {
  return static_cast<T*>(x.data) + head_offset(x, b, h);
}

// The kv head that query head h reads (grouped-query attention).
STRATA_ATTN_HD inline std::int64_t kv_head(const AttentionArgs& a, std::int64_t h) {
  return h / (a.Hq / a.Hkv);
}

}  // namespace strata::attn

#undef STRATA_ATTN_HD
