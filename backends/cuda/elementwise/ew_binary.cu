// cuda add, sub, mul, div, pow, maximum, minimum and the activations' backward (grad, x) on f32,
// f64, f16, bf16 (f16/bf16 computed in f32).
#include "common/elementwise_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"

namespace strata::cuda {
namespace {

template <class F, class T>
void binary(const IterArgs& a) {
  launch_elementwise<T, T, T>(a, BinaryOp<F, T>{F{}});
}

template <class F>
void add(std::vector<EwEntry>& v, const char* op) {
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({op, dt, &binary<F, typename decltype(t)::type>});
  });
}

}  // namespace

std::vector<EwEntry> ew_binary_entries() {
  std::vector<EwEntry> v;
  add<fn::Add>(v, "add");
  add<fn::Sub>(v, "sub");
  add<fn::Mul>(v, "mul");
  add<fn::SiluMul>(v, "silu_mul");
  add<fn::Div>(v, "div");
  add<fn::Pow>(v, "pow");
  add<fn::Maximum>(v, "maximum");
  add<fn::Minimum>(v, "minimum");
  add<fn::ReluBackward>(v, "relu_backward");
  add<fn::GeluBackward>(v, "gelu_backward");
  add<fn::GeluTanhBackward>(v, "gelu_tanh_backward");
  add<fn::SiluBackward>(v, "silu_backward");
  add<fn::SigmoidBackward>(v, "sigmoid_backward");
  add<fn::TanhBackward>(v, "tanh_backward");
  add<fn::AbsBackward>(v, "abs_backward");
  return v;
}

}  // namespace strata::cuda
