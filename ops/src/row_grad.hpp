#pragma once
// Internal to ops/src: the backward of the row ops (row_grad.cpp), recorded
// by their front ends (reduce.cpp, norm.cpp, cross_entropy.cpp) only while a tape records.
#include "strata/detail/autograd_record.hpp"
#include "strata/rotary.hpp"

namespace strata::detail {

// sum / mean / max of x over dim d into out (argmax: no gradient).
void record_reduce(autograd::TapeState& tape, const char* op, const Tensor& out, const Tensor& x,
                   int d, bool keepdim, const OpOptions& opt);
// softmax / log_softmax of x over dim d into out.
void record_softmax(autograd::TapeState& tape, const char* op, const Tensor& out, const Tensor& x,
                    int d, const OpOptions& opt);
// layer_norm (bias may be undefined) / rms_norm (bias undefined) over the last dim.
void record_norm(autograd::TapeState& tape, const char* op, const Tensor& out, const Tensor& x,
                 const Tensor& weight, const Tensor& bias, double eps, const OpOptions& opt);

// cross_entropy of logits against target into out: lse the rows' logsumexp
// (the stats dtype), count the non-ignored rows (0-d) for a mean, undefined
// for sum and none.
void record_cross_entropy(autograd::TapeState& tape, const Tensor& out, const Tensor& logits,
                          const Tensor& target, const Tensor& lse, const Tensor& count,
                          std::int64_t ignore_index, const OpOptions& opt);

// rotary of x at positions into out (out may be x: the backward reads only positions).
void record_rotary(autograd::TapeState& tape, const Tensor& out, const Tensor& x,
                   const Tensor& positions, const RotaryOptions& ro, const OpOptions& opt);

}  // namespace strata::detail
