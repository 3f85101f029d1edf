// layer_norm / rms_norm front ends and their backward's: validate (x,
// weight and bias [n], eps, devices, the caller's outputs, overlap),
// allocate where the op owns the output, build IterArgs over the last dim
// with make_row_iter and dispatch (docs/guide/ops.md: weight and bias reach
// the kernel with stride 0 over rows, data null when absent; scalar[0] =
// eps; the backward's dweight and dbias come back through `side`).
#include "strata/norm.hpp"

#include <cmath>

#include "row_common.hpp"
#include "row_grad.hpp"
#include "strata/elementwise.hpp"

namespace strata {
namespace {

using detail::Named;

void check_param(const char* op, const Tensor& p, const char* name, const Tensor& x) {
  if (!p.defined()) return;
  detail::check_dtype(op, p, name, x.dtype(), "x");
  const Shape want{x.size(-1)};
  STRATA_CHECK(p.shape() == want, op, name, " has shape ", shape_str(p.shape()), " but must be ",
               shape_str(want), " (the last dim of x, shape ", shape_str(x.shape()), ")");
}

void check_inputs(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  double eps) {
  detail::check_defined(op, x, "x");
  detail::check_floating(op, x, "x");
  detail::check_rank_at_least(op, x, "x", 1);
  check_param(op, weight, "weight", x);
  check_param(op, bias, "bias", x);
  detail::check_same_device(op, {{&x, "x"}, {&weight, "weight"}, {&bias, "bias"}});
  STRATA_CHECK(std::isfinite(eps) && eps >= 0, op, "eps ", eps, " must be finite and non-negative");
}

OpId op_id_of(const char* op) { return Registry::get().op_id(op); }
OpId layer_norm_id() {
  static const OpId id = op_id_of("layer_norm");
  return id;
}

void run(const char* op, OpId id, const Tensor& out, const Tensor& x, const Tensor& weight,
         const Tensor& bias, double eps, const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(op, opt.backend, x.device());
  // layer_norm: out, x, weight, bias; rms_norm: out, x, weight (absent ones null).
  const bool layer = id == layer_norm_id();
  IterArgs it = layer ? detail::make_row_iter(out, {&x, &weight, &bias})
                      : detail::make_row_iter(out, {&x, &weight});
  it.scalar[0] = eps;
  detail::run_row_kernel(id, be, x.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_norm(*tape, op, out, x, weight, bias, eps, opt);
}

void check_out(const char* op, const Tensor& out, const Tensor& x, const Tensor& weight,
               const Tensor& bias) {
  detail::check_output(op, out, "out", x.shape(), x.dtype(), x.device(), "x");
  detail::check_no_overlap(op, out, "out", {{&x, "x"}}, /*allow_same=*/true);
  detail::check_no_overlap(op, out, "out", {{&weight, "weight"}, {&bias, "bias"}});
  // The backward reads x: while a tape records, out may not overwrite it.
  if (autograd::detail::recording_tape() != nullptr)
    detail::check_no_overlap(op, out, "out (while a tape records)", {{&x, "x"}});
}

// ---- the backward -------------------------------------------------------------
struct Backward {
  const char* op;
  bool layer;
};

// outputs_given: the _out form (at least one output must be defined).
void check_backward(const Backward& b, const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                    const Tensor& grad, const Tensor& x, const Tensor& weight, double eps,
                    bool outputs_given) {
  const char* op = b.op;
  check_inputs(op, x, weight, Tensor(), eps);
  detail::check_defined(op, grad, "grad");
  detail::check_dtype(op, grad, "grad", x.dtype(), "x");
  STRATA_CHECK(grad.shape() == x.shape(), op, "grad has shape ", shape_str(grad.shape()),
               " but x has ", shape_str(x.shape()));
  const Device dev = detail::check_same_device(
      op, {{&x, "x"}, {&grad, "grad"}, {&dx, "dx"}, {&dweight, "dweight"}, {&dbias, "dbias"}});
  STRATA_CHECK(!outputs_given || dx.defined() || dweight.defined() || dbias.defined(), op,
               "dx, dweight and dbias are all undefined: nothing to compute");
  const Shape row{x.size(-1)};
  if (dx.defined()) {
    detail::check_output(op, dx, "dx", x.shape(), x.dtype(), dev, "x");
    detail::check_no_overlap(op, dx, "dx", {{&grad, "grad"}}, /*allow_same=*/true);
    detail::check_no_overlap(op, dx, "dx", {{&x, "x"}, {&weight, "weight"}});
  }
  if (dweight.defined()) {
    STRATA_CHECK(weight.defined(), op, "dweight is given but weight is undefined");
    detail::check_output(op, dweight, "dweight", row, x.dtype(), dev, "x");
    detail::check_no_overlap(op, dweight, "dweight",
                             {{&grad, "grad"}, {&x, "x"}, {&weight, "weight"}, {&dx, "dx"}});
  }
  if (dbias.defined()) {
    detail::check_output(op, dbias, "dbias", row, x.dtype(), dev, "x");
    detail::check_no_overlap(
        op, dbias, "dbias",
        {{&grad, "grad"}, {&x, "x"}, {&weight, "weight"}, {&dx, "dx"}, {&dweight, "dweight"}});
  }
  // No second derivative; and a watched tensor is not written while a tape records.
  autograd::detail::refuse_gradient(op, {&grad, &x, &weight});
  for (const Tensor* t : {&dx, &dweight, &dbias})
    if (t->defined()) autograd::detail::refuse_write_to_watched(op, *t);
}

// Runs the kernel: dx where defined; returns `side`, [2, n] (rms_norm [1,
// n]) of the compute dtype holding dweight (row 0) and dbias (row 1) where
// wanted, undefined when neither is.
Tensor run_backward(const Backward& b, OpId id, const Tensor& dx, bool want_w, bool want_b,
                    const Tensor& grad, const Tensor& x, const Tensor& weight, double eps,
                    const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(b.op, opt.backend, x.device());
  const std::int64_t n = x.size(-1);
  Tensor side;
  if (want_w || want_b)
    side = Tensor::empty({b.layer ? 2 : 1, n}, x.dtype() == DType::f64 ? DType::f64 : DType::f32,
                         x.device());
  // Without dx the rows follow grad's layout and op[0] is absent.
  IterArgs it = detail::make_row_iter(dx.defined() ? dx : grad, {&grad, &x, &weight});
  if (!dx.defined()) it.op[0].data = nullptr;
  if (side.defined()) it.side = side.operand();
  it.iparam[0] = (want_w ? 1 : 0) | (want_b ? 2 : 0);
  it.scalar[0] = eps;
  it.stream = opt.stream;
  const auto k = Registry::get().find(id, be, x.dtype(), it);
  if (x.numel() > 0) {
    k.run(it);
  } else if (side.numel() > 0) {  // no rows: sums of nothing
    fill_(side, 0.0, opt);
  }
  return side;
}

void backward_out(const Backward& b, OpId id, const Tensor& dx, const Tensor& dweight,
                  const Tensor& dbias, const Tensor& grad, const Tensor& x, const Tensor& weight,
                  double eps, const OpOptions& opt) {
  check_backward(b, dx, dweight, dbias, grad, x, weight, eps, true);
  const Tensor side =
      run_backward(b, id, dx, dweight.defined(), dbias.defined(), grad, x, weight, eps, opt);
  const autograd::NoGrad internal;  // the copies below are part of this op
  if (dweight.defined()) copy_(dweight, side.select(0, 0), opt);
  if (dbias.defined()) copy_(dbias, side.select(0, 1), opt);
}

NormGrads backward_new(const Backward& b, OpId id, const Tensor& grad, const Tensor& x,
                       const Tensor& weight, double eps, const OpOptions& opt) {
  check_backward(b, Tensor(), Tensor(), Tensor(), grad, x, weight, eps, false);
  detail::resolve_backend(b.op, opt.backend, x.device());
  NormGrads r;
  r.dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  const Tensor side =
      run_backward(b, id, r.dx, weight.defined(), b.layer, grad, x, weight, eps, opt);
  // The sums in x's dtype: views of side when it is the compute dtype already.
  const autograd::NoGrad internal;
  auto row = [&](int k) {
    const Tensor s = side.select(0, k);
    return s.dtype() == x.dtype() ? s : cast(s, x.dtype(), opt);
  };
  if (weight.defined()) r.dweight = row(0);
  if (b.layer) r.dbias = row(1);
  return r;
}

}  // namespace

// x [..., n], weight [n] or undefined, bias [n] or undefined  ->  out [..., n]
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  const OpOptions& opt) {
  const OpId id = layer_norm_id();
  check_inputs("layer_norm", x, weight, bias, eps);
  detail::resolve_backend("layer_norm", opt.backend, x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  run("layer_norm", id, out, x, weight, bias, eps, opt);
  return out;
}
void layer_norm_out(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                    double eps, const OpOptions& opt) {
  const OpId id = layer_norm_id();
  detail::check_defined("layer_norm", out, "out");
  check_inputs("layer_norm", x, weight, bias, eps);
  check_out("layer_norm", out, x, weight, bias);
  run("layer_norm", id, out, x, weight, bias, eps, opt);
}

// x [..., n], weight [n] or undefined  ->  out [..., n]
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, const OpOptions& opt) {
  static const OpId id = op_id_of("rms_norm");
  check_inputs("rms_norm", x, weight, Tensor(), eps);
  detail::resolve_backend("rms_norm", opt.backend, x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  run("rms_norm", id, out, x, weight, Tensor(), eps, opt);
  return out;
}
void rms_norm_out(const Tensor& out, const Tensor& x, const Tensor& weight, double eps,
                  const OpOptions& opt) {
  static const OpId id = op_id_of("rms_norm");
  detail::check_defined("rms_norm", out, "out");
  check_inputs("rms_norm", x, weight, Tensor(), eps);
  check_out("rms_norm", out, x, weight, Tensor());
  run("rms_norm", id, out, x, weight, Tensor(), eps, opt);
}

// grad, x [..., n], weight [n] or undefined -> dx [..., n], dweight [n], dbias [n]
NormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, double eps,
                              const OpOptions& opt) {
  static const OpId id = op_id_of("layer_norm_backward");
  return backward_new({"layer_norm_backward", true}, id, grad, x, weight, eps, opt);
}
void layer_norm_backward_out(const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                             const Tensor& grad, const Tensor& x, const Tensor& weight, double eps,
                             const OpOptions& opt) {
  static const OpId id = op_id_of("layer_norm_backward");
  backward_out({"layer_norm_backward", true}, id, dx, dweight, dbias, grad, x, weight, eps, opt);
}

// grad, x [..., n], weight [n] or undefined -> dx [..., n], dweight [n]
NormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, double eps,
                            const OpOptions& opt) {
  static const OpId id = op_id_of("rms_norm_backward");
  return backward_new({"rms_norm_backward", false}, id, grad, x, weight, eps, opt);
}
void rms_norm_backward_out(const Tensor& dx, const Tensor& dweight, const Tensor& grad,
                           const Tensor& x, const Tensor& weight, double eps,
                           const OpOptions& opt) {
  static const OpId id = op_id_of("rms_norm_backward");
  backward_out({"rms_norm_backward", false}, id, dx, dweight, Tensor(), grad, x, weight, eps, opt);
}

}  // namespace strata
