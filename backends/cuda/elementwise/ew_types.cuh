#pragma once
// Every stored dtype and its CUDA type, for the kernels that take any dtype
// (cast, where, fill); the functors that apply a maths op, a cast, a select
// or a fill to CUDA stored types; the dtype loops of the registration
// tables.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/elementwise/ew_params.cuh"
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

// ---- functors over the CUDA stored types ------------------------------------------------
// A maths functor F (common/elementwise_functors.hpp) on a floating stored
// type T: inputs to the compute type, the result back to T.
template <class F, class T>
struct UnaryOp {
  F f;
  __device__ __forceinline__ T operator()(T x) const { return cvt<T>(f(cvt<compute_t<T>>(x))); }
};
template <class F, class T>
struct BinaryOp {
  F f;
  __device__ __forceinline__ T operator()(T x, T y) const {
    return cvt<T>(f(cvt<compute_t<T>>(x), cvt<compute_t<T>>(y)));
  }
};
template <class T>
struct WhereOp {
  __device__ __forceinline__ T operator()(bool c, T x, T y) const { return c ? x : y; }
};
template <class To, class From>
struct CastOp {
  __device__ __forceinline__ To operator()(From x) const { return cvt<To>(x); }
};
// fill: the value converted once on the host side of the kernel argument.
// (cvt is host and device code.)
template <class T>
struct FillOp {
  T v;
  __device__ __forceinline__ T operator()() const { return v; }
};

// Registration tables: calls add(dtype, TypeTag<T>{}) once for each of the
// four floating dtypes with T its device type, so that every op family's
// table lists its ops once instead of once per dtype.
template <class T>
struct TypeTag {
  using type = T;
};
template <class Add>
void for_float_dtypes(Add add) {
  add(DType::f32, TypeTag<float>{});
  add(DType::f64, TypeTag<double>{});
  add(DType::f16, TypeTag<__half>{});
  add(DType::bf16, TypeTag<__nv_bfloat16>{});
}

}  // namespace strata::cuda
