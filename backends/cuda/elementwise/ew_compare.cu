// cuda comparisons, bool out, on every dtype (keyed by the inputs' dtype):
// gt, ge, lt, le, eq, ne of two tensors and their `_scalar` forms. The
// rules are the cpu engine's (common/elementwise_functors.hpp): compared in
// the stored type (f32 for f16/bf16, exactly); a scalar rounded to a
// floating x's dtype first, compared in double with an integer or bool x.
#include <type_traits>

#include "common/elementwise_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/elementwise/ew_types.cuh"

namespace strata::cuda {
namespace {

template <class T>
using cmp_t = std::conditional_t<is_narrow_v<T>, float, T>;
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_narrow_v<T>;
// What x is compared in against a scalar.
template <class T>
using cmp_scalar_t = std::conditional_t<is_float_v<T>, cmp_t<T>, double>;

template <class F, class T>
struct CompareOp {
  F f;
  __device__ __forceinline__ bool operator()(T x, T y) const {
    return f(cvt<cmp_t<T>>(x), cvt<cmp_t<T>>(y));
  }
};
template <class F, class T>
struct CompareScalarOp {
  F f;
  __device__ __forceinline__ bool operator()(T x) const { return f(cvt<cmp_scalar_t<T>>(x)); }
};

template <class F, DType D>
void compare(const IterArgs& a) {
  using T = cuda_t<D>;
  launch_elementwise<bool, T, T>(a, CompareOp<F, T>{F{}});
}

template <class F, DType D>
void compare_scalar(const IterArgs& a) {
  using T = cuda_t<D>;
  double s = a.scalar[0];
  if constexpr (is_float_v<T>) s = cvt<double>(cvt<T>(s));
  launch_elementwise<bool, T>(a, CompareScalarOp<F, T>{F{s}});
}

template <class F, class FScalar>
void add(std::vector<EwEntry>& v, const char* op, const char* op_scalar) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (v.push_back({op, kAllDTypes[I], &compare<F, kAllDTypes[I]>}), ...);
    (v.push_back({op_scalar, kAllDTypes[I], &compare_scalar<FScalar, kAllDTypes[I]>}), ...);
  }
  (std::make_index_sequence<7>{});
}

}  // namespace

std::vector<EwEntry> ew_compare_entries() {
  std::vector<EwEntry> v;
  add<fn::Gt, fn::GtScalar>(v, "gt", "gt_scalar");
  add<fn::Ge, fn::GeScalar>(v, "ge", "ge_scalar");
  add<fn::Lt, fn::LtScalar>(v, "lt", "lt_scalar");
  add<fn::Le, fn::LeScalar>(v, "le", "le_scalar");
  add<fn::Eq, fn::EqScalar>(v, "eq", "eq_scalar");
  add<fn::Ne, fn::NeScalar>(v, "ne", "ne_scalar");
  return v;
}

}  // namespace strata::cuda
