// cuda unary maths (neg, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, gelu,
// gelu_tanh, silu, abs) on f32, f64, f16, bf16 (f16/bf16 computed in f32).
// gelu on f32 runs GeluF32 (gelu_f32.cuh), on f16/bf16 GeluLowp
// (gelu_lowp.cuh): each measured faster than fn::Gelu's erfcf, and GeluLowp
// faster than GeluF32 on 16-bit data (docs/log/ops.md, "Elementwise and row
// ops on cuda").
#include <type_traits>

#include "common/elementwise_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/elementwise/gelu_f32.cuh"
#include "cuda/elementwise/gelu_lowp.cuh"

namespace strata::cuda {
namespace {

template <class F, class T>
void unary(const IterArgs& a) {
  launch_elementwise<T, T>(a, UnaryOp<F, T>{F{}});
}

// x -> gelu(x) on T: GeluLowp for 16-bit T (its error is far below their
// half ulp), GeluF32 for f32, fn::Gelu for double.
template <class T>
void gelu(const IterArgs& a) {
  if constexpr (std::is_same_v<T, double>) {
    unary<fn::Gelu, T>(a);
  } else {
    if constexpr (sizeof(T) == 2)
      launch_elementwise<T, T>(a, UnaryOp<GeluLowp, T>{});
    else
      launch_elementwise<T, T>(a, UnaryOp<GeluF32, T>{});
  }
}

template <class F>
void add(std::vector<EwEntry>& v, const char* op) {
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({op, dt, &unary<F, typename decltype(t)::type>});
  });
}

}  // namespace

std::vector<EwEntry> ew_unary_entries() {
  std::vector<EwEntry> v;
  add<fn::Neg>(v, "neg");
  add<fn::Exp>(v, "exp");
  add<fn::Log>(v, "log");
  add<fn::Sqrt>(v, "sqrt");
  add<fn::Rsqrt>(v, "rsqrt");
  add<fn::Tanh>(v, "tanh");
  add<fn::Sigmoid>(v, "sigmoid");
  add<fn::Relu>(v, "relu");
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({"gelu", dt, &gelu<typename decltype(t)::type>});
  });
  add<fn::GeluTanh>(v, "gelu_tanh");
  add<fn::Silu>(v, "silu");
  add<fn::Abs>(v, "abs");
  return v;
}

}  // namespace strata::cuda
