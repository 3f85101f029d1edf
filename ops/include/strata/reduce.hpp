#pragma once
// Reductions and softmax over one dim, on any strided layout. `dim` may be
// negative. Floating dtypes; f16/bf16 accumulate in f32, f32 in f32 with a
// pairwise/blocked sum (the reference in f64). Semantics: docs/guide/ops.md.
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// x [..., n, ...]  ->  out [..., ...] (dim removed), or [..., 1, ...] with keepdim.
// An empty reduction (n == 0): sum 0, mean NaN, max and argmax an error.
Tensor sum(const Tensor& x, int dim, bool keepdim = false, const OpOptions& opt = {});
Tensor mean(const Tensor& x, int dim, bool keepdim = false, const OpOptions& opt = {});
Tensor max(const Tensor& x, int dim, bool keepdim = false, const OpOptions& opt = {});
// out has dtype i64; the first index of the maximum; a NaN is the maximum (as in PyTorch).
Tensor argmax(const Tensor& x, int dim, bool keepdim = false, const OpOptions& opt = {});
void sum_out(const Tensor& out, const Tensor& x, int dim, bool keepdim = false,
             const OpOptions& opt = {});
void mean_out(const Tensor& out, const Tensor& x, int dim, bool keepdim = false,
              const OpOptions& opt = {});
void max_out(const Tensor& out, const Tensor& x, int dim, bool keepdim = false,
             const OpOptions& opt = {});
void argmax_out(const Tensor& out, const Tensor& x, int dim, bool keepdim = false,
                const OpOptions& opt = {});

// x [..., n, ...]  ->  out, same shape: exp(x - max) / sum exp(x - max) along dim
// (log_softmax: x - max - log sum exp(x - max)). A row that is all -inf gives NaN,
// as in PyTorch.
Tensor softmax(const Tensor& x, int dim, const OpOptions& opt = {});
Tensor log_softmax(const Tensor& x, int dim, const OpOptions& opt = {});
void softmax_out(const Tensor& out, const Tensor& x, int dim, const OpOptions& opt = {});
void log_softmax_out(const Tensor& out, const Tensor& x, int dim, const OpOptions& opt = {});

// The backward of softmax / log_softmax along dim, given y (the forward's
// output) and grad = dL/dy, both [..., n, ...] of one shape and dtype:
//   softmax_backward:     dx = y (grad - sum(grad y))
//   log_softmax_backward: dx = grad - exp(y) sum(grad)
// (sums along dim, in f32 for f16/bf16/f32, f64 for f64). dx has y's shape
// and dtype; the _out form's dx may be exactly grad. What autograd runs
// (docs/guide/autograd.md); no second derivative.
Tensor softmax_backward(const Tensor& grad, const Tensor& y, int dim, const OpOptions& opt = {});
Tensor log_softmax_backward(const Tensor& grad, const Tensor& y, int dim,
                            const OpOptions& opt = {});
void softmax_backward_out(const Tensor& dx, const Tensor& grad, const Tensor& y, int dim,
                          const OpOptions& opt = {});
void log_softmax_backward_out(const Tensor& dx, const Tensor& grad, const Tensor& y, int dim,
                              const OpOptions& opt = {});

}  // namespace strata
