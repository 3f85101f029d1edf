#pragma once
// Every stored dtype and its CUDA type, for the kernels that take any dtype
// (cast, where, fill).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "strata/dtype.hpp"

namespace strata::cuda {

template <DType D>
struct cuda_type;
template <>
struct cuda_type<DType::f32> {
  using type = float;
};
template <>
struct cuda_type<DType::f64> {
  using type = double;
};
template <>
struct cuda_type<DType::f16> {
  using type = __half;
};
template <>
struct cuda_type<DType::bf16> {
  using type = __nv_bfloat16;
};
template <>
struct cuda_type<DType::boolean> {
  using type = bool;
};
template <>
struct cuda_type<DType::i32> {
  using type = std::int32_t;
};
template <>
struct cuda_type<DType::i64> {
  using type = std::int64_t;
};
template <DType D>
using cuda_t = typename cuda_type<D>::type;

inline constexpr DType kAllDTypes[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                                       DType::boolean, DType::i32, DType::i64};

// f(std::integral_constant<DType, D>{}) for the runtime dtype dt.
template <class F>
void visit_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      return f(std::integral_constant<DType, DType::f32>{});
    case DType::f64:
      return f(std::integral_constant<DType, DType::f64>{});
    case DType::f16:
      return f(std::integral_constant<DType, DType::f16>{});
    case DType::bf16:
      return f(std::integral_constant<DType, DType::bf16>{});
    case DType::boolean:
      return f(std::integral_constant<DType, DType::boolean>{});
    case DType::i32:
      return f(std::integral_constant<DType, DType::i32>{});
    case DType::i64:
      return f(std::integral_constant<DType, DType::i64>{});
  }
}

}  // namespace strata::cuda
