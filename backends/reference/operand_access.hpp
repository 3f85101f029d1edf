#pragma once
// Element access for the reference kernels: any dtype read as f64 and
// written from f64 (rounded once), through typed pointers and element
// offsets.
#include <cstdint>

#include "strata/dtype.hpp"
#include "strata/operand.hpp"

namespace strata::reference {

inline double load(const Operand& o, std::int64_t off) {
  switch (o.dtype) {
    case DType::f32:
      return load_as_double(static_cast<const float*>(o.data) + off, o.dtype);
    case DType::f64:
      return load_as_double(static_cast<const double*>(o.data) + off, o.dtype);
    case DType::f16:
      return load_as_double(static_cast<const half*>(o.data) + off, o.dtype);
    case DType::bf16:
      return load_as_double(static_cast<const bfloat16*>(o.data) + off, o.dtype);
    case DType::boolean:
      return load_as_double(static_cast<const bool*>(o.data) + off, o.dtype);
    case DType::i32:
      return load_as_double(static_cast<const std::int32_t*>(o.data) + off, o.dtype);
    case DType::i64:
      return load_as_double(static_cast<const std::int64_t*>(o.data) + off, o.dtype);
  }
  return 0.0;
}

inline void store(const Operand& o, std::int64_t off, double v) {
  switch (o.dtype) {
    case DType::f32:
      return store_from_double(static_cast<float*>(o.data) + off, o.dtype, v);
    case DType::f64:
      return store_from_double(static_cast<double*>(o.data) + off, o.dtype, v);
    case DType::f16:
      return store_from_double(static_cast<half*>(o.data) + off, o.dtype, v);
    case DType::bf16:
      return store_from_double(static_cast<bfloat16*>(o.data) + off, o.dtype, v);
    case DType::boolean:
      return store_from_double(static_cast<bool*>(o.data) + off, o.dtype, v);
    case DType::i32:
      return store_from_double(static_cast<std::int32_t*>(o.data) + off, o.dtype, v);
    case DType::i64:
      return store_from_double(static_cast<std::int64_t*>(o.data) + off, o.dtype, v);
  }
}

}  // namespace strata::reference
