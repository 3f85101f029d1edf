#pragma once
// IterArgs: the plain argument struct of every elementwise and row op
// (everything but attention and matmul). Built by make_iter / make_row_iter
// (ops/src/iter.cpp) after validation; kernels never see a Tensor.
//
// Elementwise (row == false): op[0] is the output, op[1..nops-1] the inputs,
// every one of rank ndim over the iteration shape `shape`, broadcast inputs
// already expanded (stride 0). Size-1 dims are dropped, dims are ordered so
// the output's smallest |stride| is innermost and its strides are positive,
// and adjacent dims are merged wherever every operand allows it: a
// contiguous op arrives as ndim == 1. ndim >= 1 always (a 0-d op is [1]).
//
// Row ops (row == true): as above, but the last dim (length shape[ndim-1])
// is a row that the kernel handles as a whole (a softmax, a norm, a
// reduction, a rotary rotation); only the outer dims are reordered and
// merged. A reduction's output has stride 0 along the row.
//
// An absent optional operand (layer_norm without bias, say) has data ==
// nullptr. `side` is an operand that is not iterated (embedding's table).
#include <cstdint>

#include "strata/operand.hpp"

namespace strata {

inline constexpr int kMaxOperands = 4;

struct IterArgs {
  int ndim = 1;
  std::int64_t shape[kMaxDims] = {};
  int nops = 0;
  Operand op[kMaxOperands];
  Operand side;
  bool row = false;
  double scalar[2] = {};        // op parameters: a scalar operand, eps, rotary theta ...
  std::int64_t iparam[2] = {};  // integer parameters: rotary dims and style ...
  void* stream = nullptr;       // cudaStream_t for device backends; null = default

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  std::int64_t row_len() const { return shape[ndim - 1]; }
  std::int64_t rows() const { return numel() / (shape[ndim - 1] == 0 ? 1 : shape[ndim - 1]); }
};

}  // namespace strata
