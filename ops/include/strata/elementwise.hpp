#pragma once
// Elementwise ops on any strided layout, with NumPy broadcasting. Every op
// has a form that returns a fresh contiguous tensor and an `_out` form that
// writes into a caller's view (any strides; it may be exactly one of the
// inputs, for an in-place op, but must not otherwise overlap them). Inputs
// of a binary or ternary op share one dtype (no implicit promotion: use
// cast); f16 and bf16 compute in f32. Semantics: docs/guide/ops.md.
#include <optional>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// ---- binary: a [...], b [...] broadcast  ->  out [broadcast(a, b)] ----------
Tensor add(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
Tensor sub(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
Tensor mul(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
Tensor div(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void add_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void sub_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void mul_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void div_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
// silu(a) * b in one pass (the gated MLP of Llama: silu(gate) * up); f16/bf16
// round once, at the end.
Tensor silu_mul(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void silu_mul_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
// a^b (x^y: a < 0 with a non-integer b is NaN); maximum and minimum pick the
// larger/smaller element, a NaN in either input wins (as PyTorch).
Tensor pow(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
Tensor maximum(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
Tensor minimum(const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void pow_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void maximum_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void minimum_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});

// ---- with a scalar: a [...]  ->  out [...] --------------------------------------
Tensor add(const Tensor& a, double s, const OpOptions& opt = {});   // a + s
Tensor sub(const Tensor& a, double s, const OpOptions& opt = {});   // a - s
Tensor rsub(const Tensor& a, double s, const OpOptions& opt = {});  // s - a
Tensor mul(const Tensor& a, double s, const OpOptions& opt = {});   // a * s
Tensor div(const Tensor& a, double s, const OpOptions& opt = {});   // a / s
Tensor rdiv(const Tensor& a, double s, const OpOptions& opt = {});  // s / a
Tensor pow(const Tensor& a, double s, const OpOptions& opt = {});   // a^s
void add_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void sub_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void rsub_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void mul_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void div_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void rdiv_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void pow_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
// min(max(x, lo), hi) with either bound optional (at least one; not NaN):
// lo > hi gives hi everywhere, a NaN x stays NaN (as PyTorch's clamp).
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi,
             const OpOptions& opt = {});
void clamp_out(const Tensor& out, const Tensor& x, std::optional<double> lo,
               std::optional<double> hi, const OpOptions& opt = {});

// ---- unary, floating dtypes: x [...]  ->  out [...] -------------------------------
Tensor neg(const Tensor& x, const OpOptions& opt = {});
Tensor exp(const Tensor& x, const OpOptions& opt = {});
Tensor log(const Tensor& x, const OpOptions& opt = {});
Tensor sqrt(const Tensor& x, const OpOptions& opt = {});
Tensor rsqrt(const Tensor& x, const OpOptions& opt = {});
Tensor tanh(const Tensor& x, const OpOptions& opt = {});
Tensor sigmoid(const Tensor& x, const OpOptions& opt = {});
Tensor relu(const Tensor& x, const OpOptions& opt = {});
Tensor gelu(const Tensor& x, const OpOptions& opt = {});       // x/2 (1 + erf(x/sqrt 2))
Tensor gelu_tanh(const Tensor& x, const OpOptions& opt = {});  // GPT-2's tanh approximation
Tensor silu(const Tensor& x, const OpOptions& opt = {});       // x sigmoid(x)
Tensor abs(const Tensor& x, const OpOptions& opt = {});
void neg_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void exp_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void log_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void sqrt_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void rsqrt_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void tanh_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void sigmoid_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void relu_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void gelu_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void gelu_tanh_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void silu_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});
void abs_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {});

// ---- backward of the activations: grad [...], x [...] broadcast -> dx ---------------
// dx = grad * f'(x); sigmoid_backward and tanh_backward take the forward's
// output y instead of x. What autograd runs; callable directly too.
// abs_backward: grad * sign(x), 0 at x = 0.
Tensor relu_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor gelu_tanh_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor silu_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor sigmoid_backward(const Tensor& grad, const Tensor& y, const OpOptions& opt = {});
Tensor tanh_backward(const Tensor& grad, const Tensor& y, const OpOptions& opt = {});
Tensor abs_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
void relu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                       const OpOptions& opt = {});
void gelu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                       const OpOptions& opt = {});
void gelu_tanh_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                            const OpOptions& opt = {});
void silu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                       const OpOptions& opt = {});
void sigmoid_backward_out(const Tensor& out, const Tensor& grad, const Tensor& y,
                          const OpOptions& opt = {});
void tanh_backward_out(const Tensor& out, const Tensor& grad, const Tensor& y,
                       const OpOptions& opt = {});
void abs_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                      const OpOptions& opt = {});

// ---- comparisons: a [...], b [...] broadcast (or a scalar)  ->  out bool -----------
// Inputs of one dtype, any of the seven; no gradient flows through them.
// With a scalar s: a floating a compares with s rounded to its dtype
// (x > 0.1 on f32 means x > 0.1f, as PyTorch), an integer or bool a with s
// in f64. NaN compares false, but for ne.
Tensor gt(const Tensor& a, const Tensor& b, const OpOptions& opt = {});  // a > b
Tensor ge(const Tensor& a, const Tensor& b, const OpOptions& opt = {});  // a >= b
Tensor lt(const Tensor& a, const Tensor& b, const OpOptions& opt = {});  // a < b
Tensor le(const Tensor& a, const Tensor& b, const OpOptions& opt = {});  // a <= b
Tensor eq(const Tensor& a, const Tensor& b, const OpOptions& opt = {});  // a == b
Tensor ne(const Tensor& a, const Tensor& b, const OpOptions& opt = {});  // a != b
Tensor gt(const Tensor& a, double s, const OpOptions& opt = {});
Tensor ge(const Tensor& a, double s, const OpOptions& opt = {});
Tensor lt(const Tensor& a, double s, const OpOptions& opt = {});
Tensor le(const Tensor& a, double s, const OpOptions& opt = {});
Tensor eq(const Tensor& a, double s, const OpOptions& opt = {});
Tensor ne(const Tensor& a, double s, const OpOptions& opt = {});
void gt_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void ge_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void lt_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void le_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void eq_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void ne_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void gt_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void ge_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void lt_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void le_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void eq_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void ne_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});

// ---- where(cond bool [...], a [...], b [...]) broadcast  ->  out ---------------------
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const OpOptions& opt = {});
void where_out(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b,
               const OpOptions& opt = {});

// ---- dtype conversion and copies ------------------------------------------------
// x [...] (any dtype)  ->  out [...] of dtype `dt`. Float to integer truncates
// toward zero and saturates (NaN -> 0); to bool is x != 0.
Tensor cast(const Tensor& x, DType dt, const OpOptions& opt = {});
// Writes src, broadcast to dst's shape and converted to dst's dtype, into the
// view dst (a KV-cache append is copy_(cache.narrow(t, pos, n), k_new)).
void copy_(const Tensor& dst, const Tensor& src, const OpOptions& opt = {});
// Sets every element of the view t to `value` (converted as cast does).
void fill_(const Tensor& t, double value, const OpOptions& opt = {});

// ---- operators: the same kernels as the named functions ---------------------------
// Declared here, beside the ops, and found by argument-dependent lookup, so
// core's Tensor knows nothing of them.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return sub(a, s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return div(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator/(double s, const Tensor& a) { return rdiv(a, s); }

// Comparisons, bool out. a == b compares elements, as in PyTorch (core's
// Tensor has no identity operator==, so nothing else is meant by it).
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator>(const Tensor& a, double s) { return gt(a, s); }
inline Tensor operator>=(const Tensor& a, double s) { return ge(a, s); }
inline Tensor operator<(const Tensor& a, double s) { return lt(a, s); }
inline Tensor operator<=(const Tensor& a, double s) { return le(a, s); }
inline Tensor operator==(const Tensor& a, double s) { return eq(a, s); }
inline Tensor operator!=(const Tensor& a, double s) { return ne(a, s); }
inline Tensor operator>(double s, const Tensor& a) { return lt(a, s); }
inline Tensor operator>=(double s, const Tensor& a) { return le(a, s); }
inline Tensor operator<(double s, const Tensor& a) { return gt(a, s); }
inline Tensor operator<=(double s, const Tensor& a) { return ge(a, s); }
inline Tensor operator==(double s, const Tensor& a) { return eq(a, s); }
inline Tensor operator!=(double s, const Tensor& a) { return ne(a, s); }

// Compound assignment: writes into a's own memory through the `_out` forms
// (a += b is add_out(a, a, b)), so a view's base changes; b broadcasts to
// a's shape, which does not grow. Returns a (the same view). Under an
// autograd tape these are in-place writes: *= and /= by a tensor are
// refused there, since their backward reads the a they overwrite.
inline Tensor operator+=(const Tensor& a, const Tensor& b) {
  add_out(a, a, b);
  return a;
}
inline Tensor operator-=(const Tensor& a, const Tensor& b) {
  sub_out(a, a, b);
  return a;
}
inline Tensor operator*=(const Tensor& a, const Tensor& b) {
  mul_out(a, a, b);
  return a;
}
inline Tensor operator/=(const Tensor& a, const Tensor& b) {
  div_out(a, a, b);
  return a;
}
inline Tensor operator+=(const Tensor& a, double s) {
  add_out(a, a, s);
  return a;
}
inline Tensor operator-=(const Tensor& a, double s) {
  sub_out(a, a, s);
  return a;
}
inline Tensor operator*=(const Tensor& a, double s) {
  mul_out(a, a, s);
  return a;
}
inline Tensor operator/=(const Tensor& a, double s) {
  div_out(a, a, s);
  return a;
}

}  // namespace strata
