// cuda unary maths (neg, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, gelu,
// gelu_tanh, silu) on f32, f64, f16, bf16 (f16/bf16 computed in f32).
#include "common/elementwise_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"

namespace strata::cuda {
namespace {

template <class F, class T>
void unary(const IterArgs& a) {
  launch_elementwise<T, T>(a, UnaryOp<F, T>{F{}});
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
  add<fn::Gelu>(v, "gelu");
  add<fn::GeluTanh>(v, "gelu_tanh");
  add<fn::Silu>(v, "silu");
  return v;
}

}  // namespace strata::cuda
