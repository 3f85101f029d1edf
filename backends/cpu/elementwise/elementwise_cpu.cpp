// cpu elementwise kernels: every op is a functor run by engine.hpp's loop;
// registration covers f32, f64, f16 and bf16 (where, cast, copy_, fill and
// the comparisons every dtype).
#include <string>

#include "common/elementwise_functors.hpp"
#include "cpu/elementwise/engine.hpp"
#include "strata/error.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

template <class T>
void where_kernel(const IterArgs& a) {
  for_each<T, bool, T, T>(a, [](bool c, T x, T y) { return c ? x : y; });
}

template <class Out>
void fill_kernel(const IterArgs& a) {
  const Out v = convert<Out>(a.scalar[0]);
  for_each<Out>(a, [v]() { return v; });
}

template <class Out, class In>
void cast_from(const IterArgs& a) {
  for_each<Out, In>(a, [](In x) { return convert<Out>(x); });
}

// Keyed by the output's dtype; the input's dtype is read here.
template <class Out>
void cast_kernel(const IterArgs& a) {
  switch (a.op[1].dtype) {
    case DType::f32:
      return cast_from<Out, float>(a);
    case DType::f64:
      return cast_from<Out, double>(a);
    case DType::f16:
      return cast_from<Out, half>(a);
    case DType::bf16:
      return cast_from<Out, bfloat16>(a);
    case DType::boolean:
      return cast_from<Out, bool>(a);
    case DType::i32:
      return cast_from<Out, std::int32_t>(a);
    case DType::i64:
      return cast_from<Out, std::int64_t>(a);
  }
  fail("cast", "invalid source dtype");
}

// Calls f(static_cast<T*>(nullptr)) for each element type T of a kernel
// family, so one registration line serves every dtype.
template <class... Ts, class F>
void for_types(const F& f) {
  (f(static_cast<Ts*>(nullptr)), ...);
}
template <class F>
void for_float_types(const F& f) {
  for_types<float, double, half, bfloat16>(f);
}
template <class F>
void for_all_types(const F& f) {
  for_types<float, double, half, bfloat16, bool, std::int32_t, std::int64_t>(f);
}

template <class F>
void add_unary(Registry& r, const char* op) {
  const std::string name = std::string("cpu.elementwise.") + op;
  for_float_types([&]<class T>(T*) {
    r.add_kernel<IterArgs>(op, "cpu", dtype_of_v<T>, name, &unary_kernel<F, T>);
  });
}
template <class F>
void add_binary(Registry& r, const char* op) {
  const std::string name = std::string("cpu.elementwise.") + op;
  for_float_types([&]<class T>(T*) {
    r.add_kernel<IterArgs>(op, "cpu", dtype_of_v<T>, name, &binary_kernel<F, T>);
  });
}

// Comparisons on every dtype (the key: the inputs' dtype; out is bool).
template <class F, class FScalar>
void add_comparison(Registry& r, const std::string& op) {
  const std::string name = "cpu.elementwise." + op, sname = name + "_scalar";
  for_all_types([&]<class T>(T*) {
    r.add_kernel<IterArgs>(op, "cpu", dtype_of_v<T>, name, &compare_kernel<F, T>);
    r.add_kernel<IterArgs>(op + "_scalar", "cpu", dtype_of_v<T>, sname,
                           &compare_scalar_kernel<FScalar, T>);
  });
}

}  // namespace

void register_cpu_elementwise(Registry& r) {
  add_binary<fn::Add>(r, "add");
  add_binary<fn::Sub>(r, "sub");
  add_binary<fn::Mul>(r, "mul");
  add_binary<fn::SiluMul>(r, "silu_mul");
  add_binary<fn::Div>(r, "div");
  add_binary<fn::Pow>(r, "pow");
  add_binary<fn::Maximum>(r, "maximum");
  add_binary<fn::Minimum>(r, "minimum");
  add_unary<fn::AddScalar>(r, "add_scalar");
  add_unary<fn::SubScalar>(r, "sub_scalar");
  add_unary<fn::RsubScalar>(r, "rsub_scalar");
  add_unary<fn::MulScalar>(r, "mul_scalar");
  add_unary<fn::DivScalar>(r, "div_scalar");
  add_unary<fn::RdivScalar>(r, "rdiv_scalar");
  add_unary<fn::PowScalar>(r, "pow_scalar");
  add_unary<fn::Clamp>(r, "clamp");
  add_unary<fn::Neg>(r, "neg");
  add_unary<fn::Exp>(r, "exp");
  add_unary<fn::Log>(r, "log");
  add_unary<fn::Sqrt>(r, "sqrt");
  add_unary<fn::Rsqrt>(r, "rsqrt");
  add_unary<fn::Tanh>(r, "tanh");
  add_unary<fn::Sigmoid>(r, "sigmoid");
  add_unary<fn::Relu>(r, "relu");
  add_unary<fn::Gelu>(r, "gelu");
  add_unary<fn::GeluTanh>(r, "gelu_tanh");
  add_unary<fn::Silu>(r, "silu");
  add_unary<fn::Abs>(r, "abs");
  add_binary<fn::ReluBackward>(r, "relu_backward");
  add_binary<fn::GeluBackward>(r, "gelu_backward");
  add_binary<fn::GeluTanhBackward>(r, "gelu_tanh_backward");
  add_binary<fn::SiluBackward>(r, "silu_backward");
  add_binary<fn::SigmoidBackward>(r, "sigmoid_backward");
  add_binary<fn::TanhBackward>(r, "tanh_backward");
  add_binary<fn::AbsBackward>(r, "abs_backward");
  add_comparison<fn::Gt, fn::GtScalar>(r, "gt");
  add_comparison<fn::Ge, fn::GeScalar>(r, "ge");
  add_comparison<fn::Lt, fn::LtScalar>(r, "lt");
  add_comparison<fn::Le, fn::LeScalar>(r, "le");
  add_comparison<fn::Eq, fn::EqScalar>(r, "eq");
  add_comparison<fn::Ne, fn::NeScalar>(r, "ne");
  for_all_types([&]<class T>(T*) {
    r.add_kernel<IterArgs>("where", "cpu", dtype_of_v<T>, "cpu.elementwise.where",
                           &where_kernel<T>);
  });
  for_all_types([&]<class T>(T*) {
    r.add_kernel<IterArgs>("cast", "cpu", dtype_of_v<T>, "cpu.elementwise.cast", &cast_kernel<T>);
  });
  for_all_types([&]<class T>(T*) {
    r.add_kernel<IterArgs>("fill", "cpu", dtype_of_v<T>, "cpu.elementwise.fill", &fill_kernel<T>);
  });
}

}  // namespace strata::cpu
