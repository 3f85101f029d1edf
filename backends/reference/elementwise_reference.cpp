// reference elementwise kernels: a plain N-d loop, every value read as f64,
// the op's formula written out in f64 here (independently of the cpu/cuda
// functors), the result rounded once to the output's dtype.
#include <cmath>
#include <cstdint>
#include <string>

#include "reference/operand_access.hpp"
#include "strata/iter_args.hpp"
#include "strata/registry.hpp"

namespace strata::reference {
namespace {

// Calls body(offsets) for every element, offsets[k] the element offset of
// operand k; plain odometer over the iteration shape.
template <class Body>
void for_each_index(const IterArgs& a, Body body) {
  const std::int64_t total = a.numel();
  std::int64_t idx[kMaxDims] = {};
  std::int64_t off[kMaxOperands] = {};
  for (std::int64_t e = 0; e < total; ++e) {
    body(off);
    for (int d = a.ndim - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < a.nops; ++k) off[k] += a.op[k].strides[d];
      if (idx[d] < a.shape[d]) break;
      for (int k = 0; k < a.nops; ++k) off[k] -= a.op[k].strides[d] * a.shape[d];
      idx[d] = 0;
    }
  }
}

using Formula1 = double (*)(double x, double s);
using Formula2 = double (*)(double x, double y);

template <Formula1 F>
void unary(const IterArgs& a) {
  const double s = a.scalar[0];
  for_each_index(
      a, [&](const std::int64_t* off) { store(a.op[0], off[0], F(load(a.op[1], off[1]), s)); });
}

template <Formula2 F>
void binary(const IterArgs& a) {
  for_each_index(a, [&](const std::int64_t* off) {
    store(a.op[0], off[0], F(load(a.op[1], off[1]), load(a.op[2], off[2])));
  });
}

// x compared with the scalar rounded to x's dtype first (integers: as it is),
// the rule the cpu and cuda kernels follow; bool out.
template <Formula2 F>
void compare_scalar(const IterArgs& a) {
  double s = a.scalar[0];
  if (is_floating(a.op[1].dtype)) {
    alignas(8) unsigned char b[8];
    store_from_double(b, a.op[1].dtype, s);
    s = load_as_double(b, a.op[1].dtype);
  }
  for_each_index(
      a, [&](const std::int64_t* off) { store(a.op[0], off[0], F(load(a.op[1], off[1]), s)); });
}

// min(max(x, lo), hi) with NaN bounds absent and a NaN x kept.
void clamp(const IterArgs& a) {
  const double lo = a.scalar[0], hi = a.scalar[1];
  for_each_index(a, [&](const std::int64_t* off) {
    const double x = load(a.op[1], off[1]);
    store(a.op[0], off[0], std::isnan(x) ? x : std::fmin(std::fmax(x, lo), hi));
  });
}

void where(const IterArgs& a) {
  for_each_index(a, [&](const std::int64_t* off) {
    const bool c = load(a.op[1], off[1]) != 0.0;
    store(a.op[0], off[0], c ? load(a.op[2], off[2]) : load(a.op[3], off[3]));
  });
}

void fill(const IterArgs& a) {
  for_each_index(a, [&](const std::int64_t* off) { store(a.op[0], off[0], a.scalar[0]); });
}

void cast(const IterArgs& a) {
  for_each_index(a,
                 [&](const std::int64_t* off) { store(a.op[0], off[0], load(a.op[1], off[1])); });
}

double f_add(double x, double y) { return x + y; }
double f_sub(double x, double y) { return x - y; }
double f_mul(double x, double y) { return x * y; }
double f_silu_mul(double x, double y) { return x / (1.0 + std::exp(-x)) * y; }
double f_div(double x, double y) { return x / y; }
double f_pow(double x, double y) { return std::pow(x, y); }
double f_maximum(double x, double y) {
  return std::isnan(y) ? y : std::isnan(x) ? x : std::fmax(x, y);
}
double f_minimum(double x, double y) {
  return std::isnan(y) ? y : std::isnan(x) ? x : std::fmin(x, y);
}
double f_gt(double x, double y) { return x > y ? 1.0 : 0.0; }
double f_ge(double x, double y) { return x >= y ? 1.0 : 0.0; }
double f_lt(double x, double y) { return x < y ? 1.0 : 0.0; }
double f_le(double x, double y) { return x <= y ? 1.0 : 0.0; }
double f_eq(double x, double y) { return x == y ? 1.0 : 0.0; }
double f_ne(double x, double y) { return x != y ? 1.0 : 0.0; }
double f_add_s(double x, double s) { return x + s; }
double f_sub_s(double x, double s) { return x - s; }
double f_rsub_s(double x, double s) { return s - x; }
double f_mul_s(double x, double s) { return x * s; }
double f_div_s(double x, double s) { return x / s; }
double f_rdiv_s(double x, double s) { return s / x; }
double f_pow_s(double x, double s) { return std::pow(x, s); }
double f_neg(double x, double) { return -x; }
double f_exp(double x, double) { return std::exp(x); }
double f_log(double x, double) { return std::log(x); }
double f_sqrt(double x, double) { return std::sqrt(x); }
double f_rsqrt(double x, double) { return 1.0 / std::sqrt(x); }
double f_tanh(double x, double) { return std::tanh(x); }
double f_sigmoid(double x, double) { return 1.0 / (1.0 + std::exp(-x)); }
double f_relu(double x, double) { return std::isnan(x) ? x : std::fmax(x, 0.0); }
double f_gelu(double x, double) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double f_gelu_tanh(double x, double) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double f_silu(double x, double) { return x / (1.0 + std::exp(-x)); }
double f_abs(double x, double) { return std::fabs(x); }
// Backward of the activations, (grad, x or y) -> grad * f'(x): here written
// from the derivative's textbook form, apart from the cpu/cuda functors.
double f_relu_bw(double g, double x) { return x > 0.0 ? g : 0.0; }
double f_gelu_bw(double g, double x) {
  const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return g * (0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * phi);
}
double f_gelu_tanh_bw(double g, double x) {
  const double k = std::sqrt(2.0 / M_PI), u = k * (x + 0.044715 * x * x * x);
  const double sech2 = 1.0 / (std::cosh(u) * std::cosh(u));
  return g * (0.5 * (1.0 + std::tanh(u)) + 0.5 * x * sech2 * k * (1.0 + 3 * 0.044715 * x * x));
}
double f_silu_bw(double g, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return g * (s + x * s * (1.0 - s));
}
double f_sigmoid_bw(double g, double y) { return g * y * (1.0 - y); }
double f_tanh_bw(double g, double y) { return g * (1.0 - y * y); }
double f_abs_bw(double g, double x) {
  return x == 0.0 || std::isnan(x) ? 0.0 : g * std::copysign(1.0, x);
}

constexpr DType kFloat[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr DType kAll[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                          DType::boolean, DType::i32, DType::i64};

template <class List>
void add(Registry& r, const char* op, void (*run)(const IterArgs&), const List& dtypes) {
  for (DType dt : dtypes)
    r.add_kernel<IterArgs>(op, "reference", dt, std::string("reference.elementwise.") + op, run);
}

}  // namespace

void register_reference_elementwise(Registry& r) {
  add(r, "add", &binary<f_add>, kFloat);
  add(r, "sub", &binary<f_sub>, kFloat);
  add(r, "mul", &binary<f_mul>, kFloat);
  add(r, "silu_mul", &binary<f_silu_mul>, kFloat);
  add(r, "div", &binary<f_div>, kFloat);
  add(r, "pow", &binary<f_pow>, kFloat);
  add(r, "maximum", &binary<f_maximum>, kFloat);
  add(r, "minimum", &binary<f_minimum>, kFloat);
  add(r, "add_scalar", &unary<f_add_s>, kFloat);
  add(r, "sub_scalar", &unary<f_sub_s>, kFloat);
  add(r, "rsub_scalar", &unary<f_rsub_s>, kFloat);
  add(r, "mul_scalar", &unary<f_mul_s>, kFloat);
  add(r, "div_scalar", &unary<f_div_s>, kFloat);
  add(r, "rdiv_scalar", &unary<f_rdiv_s>, kFloat);
  add(r, "pow_scalar", &unary<f_pow_s>, kFloat);
  add(r, "clamp", &clamp, kFloat);
  add(r, "neg", &unary<f_neg>, kFloat);
  add(r, "exp", &unary<f_exp>, kFloat);
  add(r, "log", &unary<f_log>, kFloat);
  add(r, "sqrt", &unary<f_sqrt>, kFloat);
  add(r, "rsqrt", &unary<f_rsqrt>, kFloat);
  add(r, "tanh", &unary<f_tanh>, kFloat);
  add(r, "sigmoid", &unary<f_sigmoid>, kFloat);
  add(r, "relu", &unary<f_relu>, kFloat);
  add(r, "gelu", &unary<f_gelu>, kFloat);
  add(r, "gelu_tanh", &unary<f_gelu_tanh>, kFloat);
  add(r, "silu", &unary<f_silu>, kFloat);
  add(r, "abs", &unary<f_abs>, kFloat);
  add(r, "relu_backward", &binary<f_relu_bw>, kFloat);
  add(r, "gelu_backward", &binary<f_gelu_bw>, kFloat);
  add(r, "gelu_tanh_backward", &binary<f_gelu_tanh_bw>, kFloat);
  add(r, "silu_backward", &binary<f_silu_bw>, kFloat);
  add(r, "sigmoid_backward", &binary<f_sigmoid_bw>, kFloat);
  add(r, "tanh_backward", &binary<f_tanh_bw>, kFloat);
  add(r, "abs_backward", &binary<f_abs_bw>, kFloat);
  // Comparisons: keyed by the inputs' dtype, bool out.
  add(r, "gt", &binary<f_gt>, kAll);
  add(r, "ge", &binary<f_ge>, kAll);
  add(r, "lt", &binary<f_lt>, kAll);
  add(r, "le", &binary<f_le>, kAll);
  add(r, "eq", &binary<f_eq>, kAll);
  add(r, "ne", &binary<f_ne>, kAll);
  add(r, "gt_scalar", &compare_scalar<f_gt>, kAll);
  add(r, "ge_scalar", &compare_scalar<f_ge>, kAll);
  add(r, "lt_scalar", &compare_scalar<f_lt>, kAll);
  add(r, "le_scalar", &compare_scalar<f_le>, kAll);
  add(r, "eq_scalar", &compare_scalar<f_eq>, kAll);
  add(r, "ne_scalar", &compare_scalar<f_ne>, kAll);
  add(r, "where", &where, kAll);
  add(r, "cast", &cast, kAll);
  add(r, "fill", &fill, kAll);
}

}  // namespace strata::reference
