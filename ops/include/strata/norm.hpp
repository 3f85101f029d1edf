#pragma once
// Normalisation over the last dim, statistics in f32 (f64 for f64 inputs).
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// x [..., n], weight [n] or undefined, bias [n] or undefined  ->  out [..., n]
// out = (x - mean) / sqrt(var + eps) * weight + bias, var the biased variance.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5,
                  const OpOptions& opt = {});
void layer_norm_out(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                    double eps = 1e-5, const OpOptions& opt = {});

// x [..., n], weight [n] or undefined  ->  out [..., n]
// out = x / sqrt(mean(x^2) + eps) * weight.
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6,
                const OpOptions& opt = {});
void rms_norm_out(const Tensor& out, const Tensor& x, const Tensor& weight, double eps = 1e-6,
                  const OpOptions& opt = {});

}  // namespace strata
