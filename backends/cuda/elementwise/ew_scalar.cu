// cuda ops with a scalar (IterArgs::scalar[0]): add_scalar, sub_scalar,
// rsub_scalar, mul_scalar, div_scalar, rdiv_scalar, pow_scalar, and clamp
// (scalar[0] and [1]) on f32, f64, f16, bf16.
#include "common/elementwise_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"

namespace strata::cuda {
namespace {

template <class F, class T>
void scalar_op(const IterArgs& a) {
  launch_elementwise<T, T>(a, UnaryOp<F, T>{fn::make_functor<F>(a.scalar)});
}

template <class F>
void add(std::vector<EwEntry>& v, const char* op) {
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({op, dt, &scalar_op<F, typename decltype(t)::type>});
  });
}

}  // namespace

std::vector<EwEntry> ew_scalar_entries() {
  std::vector<EwEntry> v;
  add<fn::AddScalar>(v, "add_scalar");
  add<fn::SubScalar>(v, "sub_scalar");
  add<fn::RsubScalar>(v, "rsub_scalar");
  add<fn::MulScalar>(v, "mul_scalar");
  add<fn::DivScalar>(v, "div_scalar");
  add<fn::RdivScalar>(v, "rdiv_scalar");
  add<fn::PowScalar>(v, "pow_scalar");
  add<fn::Clamp>(v, "clamp");
  return v;
}

}  // namespace strata::cuda
