#pragma once
// Every stored dtype and its CUDA type, for the kernels that take any dtype
// (cast, where, fill); the functors that apply a maths op, a cast, a select
// or a fill to CUDA stored types; the dtype loops of the registration
// tables.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda/elementwise/ew_params.cuh"
#include "strata/dtype.hpp"

namespace strata::cuda {

// Every stored dtype, and its CUDA type at the same place in CudaTypes.
inline constexpr DType kAllDTypes[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                                       DType::boolean, DType::i32, DType::i64};
using CudaTypes =
    std::tuple<float, double, __half, __nv_bfloat16, bool, std::int32_t, std::int64_t>;

template <DType D>
constexpr std::size_t dtype_index() {
  std::size_t i = 0;
  while (i < std::size(kAllDTypes) && kAllDTypes[i] != D) ++i;
  return i;
}
template <DType D>
struct cuda_type {
  using type = std::tuple_element_t<dtype_index<D>(), CudaTypes>;
};
template <DType D>
using cuda_t = typename cuda_type<D>::type;

// f(std::integral_constant<DType, D>{}) for the runtime dtype dt: tries
// kAllDTypes[I], then the ones after it.
template <std::size_t I = 0, class F>
void visit_dtype(DType dt, F&& f) {
  if constexpr (I < std::size(kAllDTypes)) {
    if (dt == kAllDTypes[I]) return f(std::integral_constant<DType, kAllDTypes[I]>{});
    visit_dtype<I + 1>(dt, std::forward<F>(f));
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
