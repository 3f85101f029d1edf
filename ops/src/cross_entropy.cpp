// cross_entropy front ends (the loss and its backward): validate, allocate
// where the op owns the output, and dispatch two row ops whose row is the
// logits' last dim (docs/guide/ops.md, "cross_entropy"):
//   cross_entropy: op[0] = the rows' losses (stride 0 along the row),
//     op[1] = logits, op[2] = target (stride 0 along the row), op[3] = the
//     rows' (lse, valid) pairs; iparam[0] = ignore_index.
//   cross_entropy_backward: op[0] = grad_logits, op[1] = logits,
//     op[2] = target, op[3] = the rows' (lse, grad) pairs; iparam[0] =
//     ignore_index, iparam[1] = 1 to add into op[0].
// A pair operand is column 0 of a fresh [..., 2] tensor of the stats dtype
// (f32, f64 for f64 logits) seen with stride 0 along the row: the second
// value sits one element after the first. IterArgs holds four operands, and
// the pairs keep both per-row values in one. sum and mean reduce the rows'
// losses with the sum op (deterministic on every backend); mean divides by
// the sum of the valid column. No maths here.
#include "strata/cross_entropy.hpp"

#include "row_common.hpp"
#include "row_grad.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "cross_entropy";
constexpr const char* kBackwardOp = "cross_entropy_backward";
using Reduction = CrossEntropyOptions::Reduction;

DType stats_dtype(const Tensor& logits) {
  return logits.dtype() == DType::f64 ? DType::f64 : DType::f32;
}

// Validates logits and target for `op`; returns the rows' shape [...].
Shape check_inputs(const char* op, const Tensor& logits, const Tensor& target) {
  detail::check_defined(op, logits, "logits");
  detail::check_defined(op, target, "target");
  detail::check_floating(op, logits, "logits");
  detail::check_integer(op, target, "target");
  STRATA_CHECK(logits.dim() >= 1, op, "logits is 0-d but must be [..., V]");
  STRATA_CHECK(logits.size(-1) > 0, op, "logits has shape ", shape_str(logits.shape()),
               ": no classes (its last dim is empty)");
  Shape rows = logits.shape();
  rows.pop_back();
  STRATA_CHECK(target.shape() == rows, op, "target has shape ", shape_str(target.shape()),
               " but must be ", shape_str(rows), " (logits' shape without the last dim)");
  detail::check_same_device(op, {{&logits, "logits"}, {&target, "target"}});
  return rows;
}

Shape out_shape(const Shape& rows, Reduction r) { return r == Reduction::none ? rows : Shape{}; }

// v [...] seen along the rows of `shape` [..., V] (stride 0 along the row).
Tensor along_rows(const Tensor& v, const Shape& shape) {
  return v.unsqueeze(v.dim()).expand(shape);
}

// A fresh [..., 2] pair tensor of the rows.
Tensor new_pairs(const Shape& rows, DType dt, Device dev) {
  Shape s = rows;
  s.push_back(2);
  return Tensor::empty(s, dt, dev);
}

OpId op_id(const char* name) { return Registry::get().op_id(name); }

void run_forward(OpId id, const Tensor& out, const Tensor& logits, const Tensor& target,
                 const CrossEntropyOptions& ce, const OpOptions& opt, const Tensor& lse_out) {
  const BackendId be = detail::resolve_backend(kOp, opt.backend, logits.device());
  const Shape rows = target.shape();
  const DType sdt = stats_dtype(logits);
  const Tensor stats = new_pairs(rows, sdt, logits.device());
  const Tensor lse = stats.select(-1, 0);
  const bool none = ce.reduction == Reduction::none;
  const Tensor loss = none ? out : Tensor::empty(rows, sdt, logits.device());
  const Tensor lv = along_rows(loss, logits.shape());
  const Tensor tv = along_rows(target, logits.shape());
  const Tensor sv = along_rows(lse, logits.shape());
  IterArgs it = detail::make_row_iter(lv, {&logits, &tv, &sv});
  it.iparam[0] = ce.ignore_index;
  detail::run_row_kernel(id, be, logits.dtype(), it, lv, opt);
  Tensor count;  // mean's divisor, kept for the backward
  {
    const autograd::NoGrad inside;  // the reductions are part of this op
    if (!none) {
      const Tensor flat = loss.reshape({-1});
      if (ce.reduction == Reduction::sum) {
        sum_out(out, flat, 0, false, opt);
      } else {
        count = sum(stats.select(-1, 1).reshape({-1}), 0, false, opt);
        div_out(out, sum(flat, 0, false, opt), count, opt);
      }
    }
    if (lse_out.defined()) copy_(lse_out, lse, opt);
  }
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_cross_entropy(*tape, out, logits, target, lse, count, ce.ignore_index, opt);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& ce,
                     const OpOptions& opt) {
  static const OpId id = op_id(kOp);
  const Shape rows = check_inputs(kOp, logits, target);
  detail::resolve_backend(kOp, opt.backend, logits.device());
  Tensor out = Tensor::empty(out_shape(rows, ce.reduction), stats_dtype(logits), logits.device());
  run_forward(id, out, logits, target, ce, opt, Tensor());
  return out;
}

void cross_entropy_out(const Tensor& out, const Tensor& logits, const Tensor& target,
                       const CrossEntropyOptions& ce, const OpOptions& opt, const Tensor& lse) {
  static const OpId id = op_id(kOp);
  detail::check_defined(kOp, out, "out");
  const Shape rows = check_inputs(kOp, logits, target);
  const DType sdt = stats_dtype(logits);
  detail::check_output(kOp, out, "out", out_shape(rows, ce.reduction), sdt, logits.device(),
                       "logits");
  detail::check_no_overlap(kOp, out, "out", {{&logits, "logits"}, {&target, "target"}});
  if (lse.defined()) {
    detail::check_output(kOp, lse, "lse", rows, sdt, logits.device(), "logits");
    detail::check_no_overlap(kOp, lse, "lse",
                             {{&logits, "logits"}, {&target, "target"}, {&out, "out"}});
  }
  run_forward(id, out, logits, target, ce, opt, lse);
}

void cross_entropy_backward_out(const Tensor& grad_logits, const Tensor& grad, const Tensor& logits,
                                const Tensor& target, const Tensor& lse, std::int64_t ignore_index,
                                bool accumulate, const OpOptions& opt) {
  static const OpId id = op_id(kBackwardOp);
  const char* op = kBackwardOp;
  detail::check_defined(op, grad_logits, "grad_logits");
  detail::check_defined(op, grad, "grad");
  detail::check_defined(op, lse, "lse");
  const Shape rows = check_inputs(op, logits, target);
  const DType sdt = stats_dtype(logits);
  const Device dev = logits.device();
  detail::check_output(op, grad_logits, "grad_logits", logits.shape(), logits.dtype(), dev,
                       "logits");
  detail::check_floating(op, grad, "grad");
  detail::check_broadcasts_to(op, grad, "grad", rows);
  detail::check_dtype(op, lse, "lse", sdt, "logits");
  STRATA_CHECK(lse.shape() == rows, op, "lse has shape ", shape_str(lse.shape()), " but must be ",
               shape_str(rows), " (logits' shape without the last dim)");
  detail::check_same_device(
      op, {{&logits, "logits"}, {&grad_logits, "grad_logits"}, {&grad, "grad"}, {&lse, "lse"}});
  detail::check_no_overlap(
      op, grad_logits, "grad_logits",
      {{&grad, "grad"}, {&logits, "logits"}, {&target, "target"}, {&lse, "lse"}});
  autograd::detail::refuse_gradient(op, {&grad, &logits, &lse});  // no second derivative
  const BackendId be = detail::resolve_backend(op, opt.backend, dev);
  const Tensor pairs = new_pairs(rows, sdt, dev);
  {
    const autograd::NoGrad inside;
    copy_(pairs.select(-1, 0), lse, opt);
    copy_(pairs.select(-1, 1), grad, opt);
  }
  const Tensor tv = along_rows(target, logits.shape());
  const Tensor pv = along_rows(pairs.select(-1, 0), logits.shape());
  IterArgs it = detail::make_row_iter(grad_logits, {&logits, &tv, &pv});
  it.iparam[0] = ignore_index;
  it.iparam[1] = accumulate ? 1 : 0;
  detail::run_row_kernel(id, be, logits.dtype(), it, grad_logits, opt);
}

}  // namespace strata
