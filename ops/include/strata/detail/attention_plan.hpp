#pragma once
// Internal (strata::detail, not a stable API) to the softmax_attention front end (and the
// cross-backend harness, which reuses it to run the same-dtype naive baseline): the validated
// geometry of one call, and the AttentionArgs built from it.
#include <cstdint>
#include <string>

#include "strata/attention.hpp"
#include "strata/attention_args.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"

namespace strata::detail {

// Size and stride of dim `i` (negative counts from the end) without
// Tensor::size()'s checked wrap: the front end only asks for dims it has
// already bounded, and this runs on every call (host overhead matters for
// small GPU problems).
inline std::int64_t dim_size(const Tensor& t, int i) {
  return t.shape()[static_cast<std::size_t>(i < 0 ? t.dim() + i : i)];
}
inline std::int64_t dim_stride(const Tensor& t, int i) {
  return t.strides()[static_cast<std::size_t>(i < 0 ? t.dim() + i : i)];
}

struct AttentionPlan {
  Shape batch;           // broadcast batch dims of q, k, v (possibly empty)
  bool has_head = true;  // out has a head dim (false only for 2-D q without batch)
  std::int64_t Hq = 1, Hkv = 1, M = 0, N = 0, d = 1, dv = 1;
  Shape out_shape;  // batch + [Hq] + [M, dv]   (head dim only when has_head)
  Shape lse_shape;  // batch + [Hq] + [M]
  double scale = 1.0;
  std::int64_t band_lo = -kNoLimit, band_hi = kNoLimit;
  Tensor mask;            // expanded (stride 0) to batch + [Hq] + [M, N]; undefined if none
  BackendId backend = 0;  // resolved through the registry
  bool empty_output() const {
    for (std::int64_t n : out_shape) {
      if (n == 0) return true;
    }
    return false;
  }
};

// lse's dtype for inputs of dtype dt: f32 for f16/bf16 (log-sum-exp values
// need more than 8 or 11 bits), else dt.
inline DType lse_dtype(DType dt) { return dt == DType::f16 || dt == DType::bf16 ? DType::f32 : dt; }

// Validates q, k, v and the options (everything but the outputs) and
// resolves the backend. Throws strata::Error("<op>: ...") on bad input.
AttentionPlan plan_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                             const AttentionOptions& opt);

// Validates caller-supplied out (required) and lse (optional: undefined)
// against the plan: shape, dtype, device, self-overlap, overlap with inputs.
void check_attention_outputs(const char* op, const AttentionPlan& plan, const Tensor& out,
                             const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& mask);

// The plain kernel struct for a validated call.
AttentionArgs make_attention_args(const AttentionPlan& plan, const Tensor& out, const Tensor& lse,
                                  const Tensor& q, const Tensor& k, const Tensor& v, void* stream);

// The backward kernel's struct: the forward's (lse required) plus dout,
// dlse (optional: undefined) and the gradients dq [batch..., Hq, M, d],
// dk [batch..., Hkv, N, d], dv [batch..., Hkv, N, dv] it writes.
AttentionBackwardArgs make_attention_backward_args(const AttentionPlan& plan, const Tensor& out,
                                                   const Tensor& lse, const Tensor& q,
                                                   const Tensor& k, const Tensor& v,
                                                   const Tensor& dout, const Tensor& dlse,
                                                   const Tensor& dq, const Tensor& dk,
                                                   const Tensor& dv, void* stream);

}  // namespace strata::detail
