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

// ---- the backward (what autograd runs; no second derivative) ----------------
// Given grad = dL/dout [..., n] and the forward's x and weight (eps as in the
// forward), with xhat = (x - mean) rstd (rms_norm: x rstd), rstd =
// 1 / sqrt(var + eps) (rms_norm: 1 / sqrt(mean(x^2) + eps)) recomputed per
// row, and gh = grad * weight (grad without a weight):
//   dx      = rstd (gh - mean(gh) - xhat mean(gh xhat))   (rms_norm: no mean(gh) term)
//   dweight = sum over rows of grad * xhat                  [n]
//   dbias   = sum over rows of grad                         [n] (layer_norm only)
// Statistics and sums in f32 (f64 for f64). dweight and dbias are summed in
// an order fixed by the shape (the same bits run to run, no atomics).
struct NormGrads {
  Tensor dx;       // [..., n], x's dtype
  Tensor dweight;  // [n], x's dtype; undefined when weight is
  Tensor dbias;    // [n], x's dtype; undefined for rms_norm
};
NormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                              double eps = 1e-5, const OpOptions& opt = {});
NormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                            double eps = 1e-6, const OpOptions& opt = {});
// The _out forms compute what is defined among dx ([..., n], may be exactly
// grad), dweight and dbias ([n]; dweight only with a weight), all of x's
// dtype; at least one must be.
void layer_norm_backward_out(const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                             const Tensor& grad, const Tensor& x, const Tensor& weight,
                             double eps = 1e-5, const OpOptions& opt = {});
void rms_norm_backward_out(const Tensor& dx, const Tensor& dweight, const Tensor& grad,
                           const Tensor& x, const Tensor& weight, double eps = 1e-6,
                           const OpOptions& opt = {});

}  // namespace strata
