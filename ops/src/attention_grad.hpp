#pragma once
// Internal to ops/src: the backward of softmax_attention (attention_grad.cpp),
// recorded by its front end (attention.cpp) only while a tape records.
#include "strata/attention.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/registry.hpp"

namespace strata::detail {

// True when `backend` has a softmax_attention_backward kernel for inputs
// of dtype dt: its own, or for 16-bit inputs the f32 one (which they are
// widened for).
bool attention_backward_has_kernel(BackendId backend, DType dt);

// out (and lse when defined) = softmax_attention(q, k, v, opt) on
// `backend`. saved_lse: the forward's lse (the caller's or one made for
// the backward) when the backend's backward kernel will run; undefined for
// the formula written with ops.
void record_attention(autograd::TapeState& tape, const Tensor& q, const Tensor& k, const Tensor& v,
                      const AttentionOptions& opt, const Tensor& out, const Tensor& lse,
                      const Tensor& saved_lse, BackendId backend);

}  // namespace strata::detail
