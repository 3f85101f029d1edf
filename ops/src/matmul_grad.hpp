#pragma once
// Internal to ops/src: the backward of matmul and linear (matmul_grad.cpp),
// recorded by their front ends (matmul.cpp) only while a tape records.
#include "strata/detail/autograd_record.hpp"
#include "strata/matmul.hpp"

namespace strata::detail {

void record_matmul(autograd::TapeState& tape, const Tensor& out, const Tensor& a, const Tensor& b,
                   const MatmulOptions& opt);
void record_linear(autograd::TapeState& tape, const Tensor& y, const Tensor& x,
                   const Tensor& weight, const Tensor& bias, const MatmulOptions& opt);

}  // namespace strata::detail
