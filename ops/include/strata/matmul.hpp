#pragma once
// Matrix products through the libraries made for them (Eigen's GEMM on the
// CPU, cuBLAS on CUDA), on any strided layout with broadcast batch dims.
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

struct MatmulOptions : OpOptions {
  Precision precision = Precision::highest;  // f32 only; see op_options.hpp
  // out += result (BLAS beta = 1): out's current values are added, in out's
  // dtype; only for the _out forms (matmul() and linear() reject it). One
  // pass over out: f16/bf16 add out's values in f32 to the f32 product
  // (and the bias) and round once. out must not overlap the inputs.
  bool accumulate = false;
};

// a [..., M, K], b [..., K, N] (batch dims broadcast)  ->  out [..., M, N].
// A 1-D a is [K] (a row, dropped from the result), a 1-D b is [K] (a column,
// dropped), as in NumPy and PyTorch. Same dtype for both; f16/bf16
// accumulate in f32.
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& opt = {});
void matmul_out(const Tensor& out, const Tensor& a, const Tensor& b, const MatmulOptions& opt = {});

// x [..., in], weight [out, in], bias [out] or undefined  ->  y [..., out]
// y = x weight^T + bias (weight^T is a view: no copy); with
// opt.accumulate, y += x weight^T + bias (the bias added once), as a
// residual stream's x = x + o_proj(h) in one call.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const MatmulOptions& opt = {});
void linear_out(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias,
                const MatmulOptions& opt = {});

}  // namespace strata
