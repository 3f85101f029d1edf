#pragma once
// Elementwise ops on any strided layout, with NumPy broadcasting. Every op
// has a form that returns a fresh contiguous tensor and an `_out` form that
// writes into a caller's view (any strides; it may be exactly one of the
// inputs, for an in-place op, but must not otherwise overlap them). Inputs
// of a binary or ternary op share one dtype (no implicit promotion: use
// cast); f16 and bf16 compute in f32. Semantics: docs/guide/ops.md.
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

// ---- with a scalar: a [...]  ->  out [...] --------------------------------------
Tensor add(const Tensor& a, double s, const OpOptions& opt = {});   // a + s
Tensor sub(const Tensor& a, double s, const OpOptions& opt = {});   // a - s
Tensor rsub(const Tensor& a, double s, const OpOptions& opt = {});  // s - a
Tensor mul(const Tensor& a, double s, const OpOptions& opt = {});   // a * s
Tensor div(const Tensor& a, double s, const OpOptions& opt = {});   // a / s
Tensor rdiv(const Tensor& a, double s, const OpOptions& opt = {});  // s / a
void add_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void sub_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void rsub_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void mul_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void div_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});
void rdiv_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt = {});

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

// ---- backward of the activations: grad [...], x [...] broadcast -> dx ---------------
// dx = grad * f'(x); sigmoid_backward and tanh_backward take the forward's
// output y instead of x. What autograd runs; callable directly too.
Tensor relu_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor gelu_tanh_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor silu_backward(const Tensor& grad, const Tensor& x, const OpOptions& opt = {});
Tensor sigmoid_backward(const Tensor& grad, const Tensor& y, const OpOptions& opt = {});
Tensor tanh_backward(const Tensor& grad, const Tensor& y, const OpOptions& opt = {});
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

}  // namespace strata
