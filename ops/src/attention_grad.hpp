#pragma once
// Internal to ops/src: the backward of softmax_attention (attention_grad.cpp),
// recorded by its front end (attention.cpp) only while a tape records.
#include "strata/attention.hpp"
#include "strata/detail/autograd_record.hpp"

namespace strata::detail {

// out (and lse when defined) = softmax_attention(q, k, v, opt).
void record_attention(autograd::TapeState& tape, const Tensor& q, const Tensor& k, const Tensor& v,
                      const AttentionOptions& opt, const Tensor& out, const Tensor& lse);

}  // namespace strata::detail
