#pragma once
// Operand: how every kernel sees one tensor. A plain struct (no Tensor, no
// shared ownership) that device code can take by value: the address of
// element [0, ..., 0], the dtype, and shape and strides in elements (strides
// may be 0 or negative). Built only by Tensor::operand(), the one place that
// turns an element offset into a byte address.
#include <cstdint>

#include "strata/dtype.hpp"

namespace strata {

inline constexpr int kMaxDims = 8;

struct Operand {
  void* data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::int64_t shape[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};
};

// The name device runtimes use for a copy's source and destination.
using StridedLayout = Operand;

}  // namespace strata
