// The backward of the row ops: softmax, log_softmax, layer_norm and
// rms_norm run their backward kernels (softmax_backward ... rms_norm_backward,
// which read f16/bf16 as they are and compute in f32); the reductions and
// rotary are written with the forward ops.
#include "row_grad.hpp"

#include <cstring>

#include "strata/cross_entropy.hpp"
#include "strata/elementwise.hpp"
#include "strata/embedding.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"

namespace strata::detail {
namespace {

using autograd::GradContext;

// max: the gradient goes to the first maximum of each row (the index
// argmax gives, as PyTorch's max(dim) does). A scatter-add of g into the
// rows' flat positions r * n + argmax_r (exact in f64 below 2^53).
void record_max(autograd::TapeState& tape, const Tensor& out, const Tensor& x, int d, bool keepdim,
                const OpOptions& opt) {
  autograd::detail::record(
      tape, "max", {&x}, {&out}, {x},
      [d, keepdim](GradContext& c) {
        const OpOptions& o = c.options();
        const Tensor& x = c.saved(0);
        if (x.dim() == 0) {
          c.accumulate(0, c.grad_out(0));
          return;
        }
        const Tensor xl = x.transpose(d, x.dim() - 1);  // the reduced dim last
        const std::int64_t n = xl.size(-1), rows = xl.numel() / n;
        const Tensor arg = argmax(xl, -1, false, o).reshape({rows});
        const Tensor base = mul(Tensor::arange(rows, DType::f64, x.device()), double(n), o);
        const Tensor flat = cast(add(base, cast(arg, DType::f64, o), o), DType::i64, o);
        // g with the reduced dim kept (size 1) and moved last as in xl: its
        // elements then run in the order of xl's rows.
        const Tensor& g = c.grad_out(0);
        const Tensor gl = (keepdim ? g : g.unsqueeze(d)).transpose(d, x.dim() - 1);
        const Tensor g_rows = gl.reshape_copy({rows, 1});
        const Tensor gx = Tensor::zeros({rows * n, 1}, g.dtype(), g.device());
        embedding_backward_out(gx, g_rows, flat, o);
        c.accumulate(0, gx.reshape(xl.shape()).transpose(d, x.dim() - 1));
      },
      opt);
}

}  // namespace

void record_reduce(autograd::TapeState& tape, const char* op, const Tensor& out, const Tensor& x,
                   int d, bool keepdim, const OpOptions& opt) {
  const bool is_sum = std::strcmp(op, "sum") == 0, is_mean = std::strcmp(op, "mean") == 0;
  if (std::strcmp(op, "max") == 0) {
    record_max(tape, out, x, d, keepdim, opt);
    return;
  }
  if (!is_sum && !is_mean) return;  // argmax: an integer output, no gradient
  // g has the reduced shape: put the dim back (size 1) and let accumulate
  // broadcast it over x's shape.
  const bool unsqueeze = x.dim() > 0 && !keepdim;
  const double scale = is_mean && x.dim() > 0 ? 1.0 / static_cast<double>(x.size(d)) : 1.0;
  autograd::detail::record(
      tape, op, {&x}, {&out}, {},
      [d, unsqueeze, scale](GradContext& c) {
        Tensor g = c.grad_out(0);
        if (unsqueeze) g = g.unsqueeze(d);
        c.accumulate(0, scale == 1.0 ? g : mul(g, scale, c.options()));
      },
      opt);
}

void record_softmax(autograd::TapeState& tape, const char* op, const Tensor& out, const Tensor& x,
                    int d, const OpOptions& opt) {
  const bool log = std::strcmp(op, "log_softmax") == 0;
  autograd::detail::record(
      tape, op, {&x}, {&out}, {out},
      [d, log](GradContext& c) {
        const OpOptions& o = c.options();
        const Tensor &g = c.grad_out(0), &y = c.saved(0);
        c.accumulate(0, log ? log_softmax_backward(g, y, d, o) : softmax_backward(g, y, d, o));
      },
      opt);
}

void record_norm(autograd::TapeState& tape, const char* op, const Tensor& out, const Tensor& x,
                 const Tensor& weight, const Tensor& bias, double eps, const OpOptions& opt) {
  const bool layer = std::strcmp(op, "layer_norm") == 0;
  autograd::detail::record(
      tape, op, {&x, &weight, &bias}, {&out}, {x, weight},
      [layer, eps](GradContext& c) {
        const OpOptions& o = c.options();
        const Tensor &g = c.grad_out(0), &x = c.saved(0), &w = c.saved(1);
        // Only the gradients wanted; the kernel recomputes each row's
        // statistics rather than keeping them from the forward.
        auto wanted = [&](bool want, const Shape& s) {
          return want ? Tensor::empty(s, x.dtype(), x.device()) : Tensor();
        };
        const Shape row{x.size(-1)};
        const Tensor dx = wanted(c.needs(0), x.shape());
        const Tensor dw = wanted(w.defined() && c.needs(1), row);
        const Tensor db = wanted(layer && c.needs(2), row);
        if (!dx.defined() && !dw.defined() && !db.defined()) return;
        if (layer)
          layer_norm_backward_out(dx, dw, db, g, x, w, eps, o);
        else
          rms_norm_backward_out(dx, dw, g, x, w, eps, o);
        if (dx.defined()) c.accumulate(0, dx);
        if (dw.defined()) c.accumulate(1, dw);
        if (db.defined()) c.accumulate(2, db);
      },
      opt);
}

// cross_entropy: the cross_entropy_backward kernel, straight into the
// logits' gradient (accumulate) where it is a plain view, else into a fresh
// tensor that accumulate() sums over the broadcast dims. A mean's gradient
// is grad_out / count; ignored rows get nothing.
void record_cross_entropy(autograd::TapeState& tape, const Tensor& out, const Tensor& logits,
                          const Tensor& target, const Tensor& lse, const Tensor& count,
                          std::int64_t ignore_index, const OpOptions& opt) {
  autograd::detail::record(
      tape, "cross_entropy", {&logits}, {&out}, {logits, target, lse, count},
      [ignore_index](GradContext& c) {
        const OpOptions& o = c.options();
        Tensor g = c.grad_out(0);
        if (!g.defined()) return;
        if (c.saved(3).defined()) g = div(g, c.saved(3), o);
        const Tensor &x = c.saved(0), &target = c.saved(1), &lse = c.saved(2);
        bool overwrite = false;
        const Tensor into = c.grad_view(0, overwrite);
        if (into.defined()) {
          cross_entropy_backward_out(into, g, x, target, lse, ignore_index, !overwrite, o);
          return;
        }
        Tensor t = Tensor::empty(x.shape(), x.dtype(), x.device());
        cross_entropy_backward_out(t, g, x, target, lse, ignore_index, false, o);
        c.accumulate(0, std::move(t));
      },
      opt);
}

void record_rotary(autograd::TapeState& tape, const Tensor& out, const Tensor& x,
                   const Tensor& positions, const RotaryOptions& ro, const OpOptions& opt) {
  autograd::detail::record(
      tape, "rotary", {&x}, {&out}, {positions},
      [ro](GradContext& c) {
        // A rotation's inverse is its transpose: the rotation by the opposite
        // angle, that is at the negated positions (cos even, sin odd).
        const OpOptions& o = c.options();
        const Tensor& pos = c.saved(0);
        const Tensor back = cast(neg(cast(pos, DType::f64, o), o), pos.dtype(), o);
        c.accumulate(0, rotary(c.grad_out(0), back, ro, o));
      },
      opt);
}

}  // namespace strata::detail
