// The backward of softmax_attention, the whole forward contract (causal
// alignments, windows, bool and float masks, GQA, dv != d, lse). Two ways:
// - the backend's softmax_attention_backward kernel, when it has one
//   (FlashAttention-2's recomputation of P from the saved lse, block by
//   block): in the inputs' own dtype where the backend registers it (cuda:
//   f32, f64, bf16, f16), else f16/bf16 widen to f32 first, as the forward's
//   detour does (cpu);
// - otherwise, and for a float mask that needs its own gradient, the
//   formula written with the ops on every backend. P comes from the forward
//   itself, run with v = the identity [N, N] (so every mask rule is the
//   forward's own), in f32 (f64 for f64); then, per group of q heads sharing
//   a kv head (G = Hq / Hkv):
//     dV = sum_G P^T dO      dP = dO V^T      dS = P (dP - rowsum(dP P))
//     dQ = scale dS K        dK = scale sum_G dS^T Q     d(float mask) = dS
//   and a gradient into lse adds P dlse to dS. P is M x N per head there
//   (docs/guide/autograd.md).
#include "attention_grad.hpp"

#include <cmath>

#include "strata/detail/attention_plan.hpp"
#include "strata/elementwise.hpp"
#include "strata/matmul.hpp"
#include "strata/reduce.hpp"

namespace strata::detail {
namespace {

using autograd::GradContext;

constexpr const char* kBackwardOp = "softmax_attention_backward";

DType compute_dtype(DType dt) { return dt == DType::f64 ? DType::f64 : DType::f32; }

Tensor widened(const Tensor& t, DType ct, const OpOptions& o) {
  return t.dtype() == ct ? t : cast(t, ct, o);
}

// t [..., H, R, C] as [..., H / g, g, R, C] (a view where the strides allow).
Tensor grouped(const Tensor& t, std::int64_t g) {
  Shape s(t.shape().begin(), t.shape().end() - 3);
  s.push_back(t.size(-3) / g);
  s.push_back(g);
  s.push_back(t.size(-2));
  s.push_back(t.size(-1));
  try {
    return t.reshape(s);
  } catch (const Error&) {
    return t.reshape_copy(s);
  }
}

// [..., Hkv, G, R, C] back to [..., Hkv * G, R, C].
Tensor ungrouped(const Tensor& t) {
  Shape s(t.shape().begin(), t.shape().end() - 4);
  s.push_back(t.size(-4) * t.size(-3));
  s.push_back(t.size(-2));
  s.push_back(t.size(-1));
  return t.is_contiguous() ? t.reshape(s) : t.reshape_copy(s);
}

OpId backward_op() {
  static const OpId id = Registry::get().op_id(kBackwardOp);
  return id;
}

// The dtype the backend's backward kernel runs in for inputs of dtype dt:
// dt itself where the backend registers it, else the compute dtype.
DType kernel_dtype(BackendId backend, DType dt) {
  return Registry::get().has_kernel(backward_op(), backend, dt) ? dt : compute_dtype(dt);
}

// dq, dk, dv by the backend's backward kernel; saved = q, k, v, out, lse.
void backward_by_kernel(GradContext& c, const AttentionOptions& opt, BackendId backend) {
  const OpOptions& o = c.options();
  const DType ct = kernel_dtype(backend, c.saved(0).dtype());
  const Tensor q = widened(c.saved(0), ct, o), k = widened(c.saved(1), ct, o),
               v = widened(c.saved(2), ct, o), out = widened(c.saved(3), ct, o);
  const Tensor& lse = c.saved(4);
  AttentionOptions wo = opt;
  wo.precision = Precision::highest;
  if (wo.mask.defined() && wo.mask.dtype() != DType::boolean) wo.mask = widened(wo.mask, ct, o);
  const detail::AttentionPlan p = detail::plan_attention(kBackwardOp, q, k, v, wo);
  const Tensor dout = c.grad_out(0).defined() ? widened(c.grad_out(0), ct, o)
                                              : Tensor::zeros(out.shape(), ct, out.device());
  const Tensor dlse = c.num_outputs() > 1 && c.grad_out(1).defined()
                          ? widened(c.grad_out(1), lse.dtype(), o)
                          : Tensor();
  // The kernel writes every element of the gradients; with nothing to run
  // (M == 0, say), dk and dv are zeros.
  auto full = [&](std::int64_t h, std::int64_t rows, std::int64_t cols) {
    Shape s = p.batch;
    s.insert(s.end(), {h, rows, cols});
    return p.empty_output() ? Tensor::zeros(s, ct, q.device()) : Tensor::empty(s, ct, q.device());
  };
  const Tensor dq = full(p.Hq, p.M, p.d), dk = full(p.Hkv, p.N, p.d), dv = full(p.Hkv, p.N, p.dv);
  if (!p.empty_output()) {
    const AttentionBackwardArgs g = detail::make_attention_backward_args(
        p, out, lse, q, k, v, dout, dlse, dq, dk, dv, opt.stream);
    Registry::get().find(backward_op(), backend, ct, g).run(g);
  }
  if (c.needs(0)) c.accumulate(0, dq);
  if (c.needs(1)) c.accumulate(1, dk);
  if (c.needs(2)) c.accumulate(2, dv);
}

}  // namespace

bool attention_backward_has_kernel(BackendId backend, DType dt) {
  return Registry::get().has_kernel(backward_op(), backend, kernel_dtype(backend, dt));
}

void record_attention(autograd::TapeState& tape, const Tensor& q, const Tensor& k, const Tensor& v,
                      const AttentionOptions& opt, const Tensor& out, const Tensor& lse,
                      const Tensor& saved_lse, BackendId backend) {
  OpOptions o;
  o.backend = opt.backend;
  o.stream = opt.stream;
  const Tensor& mask = opt.mask;
  const bool float_mask = mask.defined() && mask.dtype() != DType::boolean;
  const bool by_kernel = saved_lse.defined();
  autograd::BackwardFn backward = [opt, float_mask, by_kernel, backend](GradContext& c) {
    if (by_kernel && !(float_mask && c.needs(3))) {
      backward_by_kernel(c, opt, backend);
      return;
    }
    const OpOptions& o = c.options();
    const Tensor &q = c.saved(0), &k = c.saved(1);
    const DType ct = compute_dtype(q.dtype());
    const std::int64_t n = k.size(-2), d = q.size(-1), g = q.size(-3) / k.size(-3);
    if (n == 0) return;  // no keys: out is 0 whatever q is; k, v (and a mask) are empty
    const double scale = opt.scale.value_or(1.0 / std::sqrt(static_cast<double>(d)));
    // P from the forward with v = I: [..., Hq, M, N].
    AttentionOptions po = opt;
    po.precision = Precision::highest;
    if (float_mask) po.mask = widened(opt.mask, ct, o);
    MatmulOptions mo;
    mo.backend = o.backend;
    mo.stream = o.stream;
    Shape id_shape(k.shape().begin(), k.shape().end() - 2);
    id_shape.push_back(n);
    id_shape.push_back(n);
    Tensor eye = Tensor::zeros({n, n}, ct, q.device());
    fill_(eye.as_strided({n}, {n + 1}), 1.0, o);  // the diagonal
    const Tensor q32 = widened(q, ct, o), k32 = widened(k, ct, o);
    const Tensor p = grouped(softmax_attention(q32, k32, eye.expand(id_shape), po), g);
    Tensor ds;
    const Tensor& go = c.grad_out(0);
    if (go.defined()) {
      const Tensor g5 = grouped(widened(go, ct, o), g);
      const Tensor v4 = widened(c.saved(2), ct, o).unsqueeze(-3);
      if (c.needs(2)) c.accumulate(2, sum(matmul(p.transpose(-1, -2), g5, mo), -3, false, o));
      const Tensor dp = matmul(g5, v4.transpose(-1, -2), mo);
      ds = mul(p, sub(dp, sum(mul(dp, p, o), -1, true, o), o), o);
    }
    if (c.num_outputs() > 1 && c.grad_out(1).defined()) {  // d lse / d s = P
      const Tensor gl = grouped(widened(c.grad_out(1), ct, o).unsqueeze(-1), g);
      const Tensor add_l = mul(p, gl, o);
      ds = ds.defined() ? add(ds, add_l, o) : add_l;
    }
    if (!ds.defined()) return;
    if (c.needs(3)) c.accumulate(3, ungrouped(ds));  // an additive float mask
    if (c.needs(0)) c.accumulate(0, ungrouped(mul(matmul(ds, k32.unsqueeze(-3), mo), scale, o)));
    if (c.needs(1)) {
      const Tensor q5 = grouped(q32, g);
      c.accumulate(1, mul(sum(matmul(ds.transpose(-1, -2), q5, mo), -3, false, o), scale, o));
    }
  };
  const Tensor no_mask;
  const Tensor& m = float_mask ? mask : no_mask;
  std::vector<Tensor> saved = {q, k, v};
  if (by_kernel) saved.insert(saved.end(), {out, saved_lse});
  if (lse.defined()) {
    autograd::detail::record(tape, "softmax_attention", {&q, &k, &v, &m}, {&out, &lse},
                             std::move(saved), backward, o);
  } else {
    autograd::detail::record(tape, "softmax_attention", {&q, &k, &v, &m}, {&out}, std::move(saved),
                             backward, o);
  }
}

}  // namespace strata::detail
