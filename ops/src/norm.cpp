// layer_norm / rms_norm front ends: validate (x, weight and bias [n], eps,
// devices, the caller's out, overlap), allocate where the op owns the
// output, build IterArgs over the last dim with make_row_iter and dispatch
// (docs/guide/ops.md: weight and bias reach the kernel with stride 0 over rows,
// data null when absent; scalar[0] = eps).
#include "strata/norm.hpp"

#include <cmath>

#include "row_common.hpp"
#include "row_grad.hpp"

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

}  // namespace strata
