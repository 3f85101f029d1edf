#pragma once
// cuda adamw_step_ / sgd_step_ (optim_step.cu): one launcher for every
// param dtype (f32, f64, f16, bf16), the rule and dtypes read from the args;
// sum_of_squares (sum_of_squares.cu), one launcher for every dtype.
#include "strata/optim_args.hpp"

namespace strata::cuda {

void optim_step(const OptimStepArgs& a);
void sum_of_squares(const SumOfSquaresArgs& a);

}  // namespace strata::cuda
