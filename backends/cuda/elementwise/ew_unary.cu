// cuda unary maths (neg, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, gelu,
// gelu_tanh, silu) on f32, f64, f16, bf16 (f16/bf16 computed in f32).
// gelu on f32/f16/bf16 runs GeluF32 (gelu_f32.cuh): on the H200 64M f32
// elements at 99% of copy and bf16 at 79%, against 87% and 48% with
// fn::Gelu's erfcf (docs/ops.md).
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "common/elementwise_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/elementwise/gelu_f32.cuh"
#include "cuda/elementwise/gelu_lowp.cuh"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

template <class F, class T>
void unary(const IterArgs& a) {
  launch_elementwise<T, T>(a, UnaryOp<F, T>{F{}});
}

// STRATA_CUDA_GELU16=lowp (an A/B switch for the H200 run, read at each
// call so that one test process forces both): f16/bf16 gelu by GeluLowp.
inline bool gelu16_lowp() {
  const char* e = std::getenv("STRATA_CUDA_GELU16");
  if (e == nullptr || *e == '\0' || std::strcmp(e, "f32") == 0) return false;
  check(std::strcmp(e, "lowp") == 0, "gelu", "STRATA_CUDA_GELU16 is '", e,
        "'; expected f32 or lowp");
  return true;
}

// x -> gelu(x) on T: GeluF32 in f32 (or GeluLowp for 16-bit T, above),
// fn::Gelu for double.
template <class T>
void gelu(const IterArgs& a) {
  if constexpr (std::is_same_v<T, double>) {
    unary<fn::Gelu, T>(a);
  } else {
    if constexpr (sizeof(T) == 2) {
      if (gelu16_lowp()) {
        launch_elementwise<T, T>(a, UnaryOp<GeluLowp, T>{});
        return;
      }
    }
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
  return v;
}

}  // namespace strata::cuda
