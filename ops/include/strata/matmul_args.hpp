#pragma once
// MatmulArgs: the plain argument struct of matmul and linear kernels.
//
//   a [B..., M, K]   b [B..., K, N]   out [B..., M, N]   bias [N] (optional)
//
// a, b and out are operands of rank batch_rank + 2 over the same broadcast
// batch shape (broadcast batch dims have stride 0). Any strides: a
// transposed view arrives as a unit row stride (column-major), which BLAS
// libraries take as a transpose flag, not a copy. bias.data == nullptr when
// there is no bias; else bias is rank 1, [N], any stride.
// out = a b (+ bias broadcast over rows), or with accumulate
// out += a b (+ bias): BLAS beta = 1, out's values read and added in the
// compute type (f64 reference, f32 for f32/f16/bf16, f64 for f64) with the
// product and the bias, rounded once. M, N >= 1 and the batch is not
// empty when a kernel is called; K may be 0 (out = bias or 0; with
// accumulate out += bias, or out unchanged). out never overlaps a, b or
// bias.
#include <cstdint>

#include "strata/op_options.hpp"
#include "strata/operand.hpp"

namespace strata {

struct MatmulArgs {
  int batch_rank = 0;
  std::int64_t batch_shape[kMaxDims] = {};
  std::int64_t M = 0, N = 0, K = 0;
  Operand a, b, out, bias;
  Precision precision = Precision::highest;
  bool accumulate = false;  // out += a b (+ bias)
  void* stream = nullptr;

  std::int64_t batch_count() const {
    std::int64_t n = 1;
    for (int i = 0; i < batch_rank; ++i) n *= batch_shape[i];
    return n;
  }
};

}  // namespace strata
