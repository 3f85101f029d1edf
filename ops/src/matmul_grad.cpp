// The backward of matmul and linear: da = g b^T, db = a^T g, through the
// same GEMMs as the forward, straight into the inputs' gradient memory where
// that is a plain view: the first contribution written (BLAS beta = 0), a
// later one added (beta = 1), with no product of its own to add in after.
#include "matmul_grad.hpp"

#include "strata/reduce.hpp"

namespace strata::detail {
namespace {

using autograd::GradContext;

// t [..., n] as [rows, n]: a view when the strides allow, else a copy.
Tensor rows_of(const Tensor& t) {
  if (t.dim() == 1) return t.unsqueeze(0);
  const Shape s{-1, t.size(-1)};
  return t.is_contiguous() ? t.reshape(s) : t.reshape_copy(s);
}

MatmulOptions with(const OpOptions& o, Precision p, bool accumulate = false) {
  MatmulOptions m;
  m.backend = o.backend;
  m.stream = o.stream;
  m.precision = p;
  m.accumulate = accumulate;
  return m;
}

// Input i's gradient (+)= a b. Straight into its gradient memory where that
// is a plain view of the product's shape and dtype: written (beta = 0) as
// its first contribution, added into (beta = 1) after others. Else a
// product of its own, handed to accumulate (a 1-D input's, a batch-broadcast
// input's, summed back there).
void add_product(GradContext& c, int i, const Tensor& input, const Tensor& a, const Tensor& b,
                 Precision p) {
  Shape prod;
  if (a.dim() >= 2 && b.dim() >= 2) {
    prod = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                            Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
    prod.push_back(a.size(-2));
    prod.push_back(b.size(-1));
  }
  if (!prod.empty() && input.shape() == prod && input.dtype() == a.dtype()) {
    bool overwrite = false;
    const Tensor view = c.grad_view(i, overwrite);
    if (view.defined()) {
      matmul_out(view, a, b, with(c.options(), p, !overwrite));
      return;
    }
  }
  c.accumulate(i, matmul(a, b, with(c.options(), p)));
}

}  // namespace

void record_matmul(autograd::TapeState& tape, const Tensor& out, const Tensor& a, const Tensor& b,
                   const MatmulOptions& opt) {
  const Precision p = opt.precision;
  const bool acc = opt.accumulate;
  autograd::BackwardFn backward = [p, acc](GradContext& c) {
    const Tensor &a = c.saved(0), &b = c.saved(1);
    Tensor g = c.grad_out(0);
    if (acc) c.accumulate(2, g);  // out += a b: the old out's gradient is g
    // 1-D operands as the forward saw them: a [K] -> [1, K], b [K] -> [K, 1].
    if (a.dim() == 1) g = g.unsqueeze(g.dim() - (b.dim() == 1 ? 0 : 1));
    if (b.dim() == 1) g = g.unsqueeze(g.dim());
    const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
    const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    const MatmulOptions m = with(c.options(), p);
    if (c.needs(0)) {
      if (a.dim() == 1) {
        c.accumulate(0, matmul(g, b2.transpose(-1, -2), m).squeeze(-2));
      } else {
        add_product(c, 0, a, g, b2.transpose(-1, -2), p);
      }
    }
    if (c.needs(1)) {
      if (b.dim() == 1) {
        c.accumulate(1, matmul(a2.transpose(-1, -2), g, m).squeeze(-1));
      } else if (b.dim() == 2 && a2.dim() > 2) {
        // One b for the whole batch: one product over every row.
        add_product(c, 1, b, rows_of(a2).transpose(0, 1), rows_of(g), p);
      } else {
        add_product(c, 1, b, a2.transpose(-1, -2), g, p);
      }
    }
  };
  if (acc) {
    autograd::detail::record(tape, "matmul", {&a, &b, &out}, {&out}, {a, b}, backward, opt);
  } else {
    autograd::detail::record(tape, "matmul", {&a, &b}, {&out}, {a, b}, backward, opt);
  }
}

void record_linear(autograd::TapeState& tape, const Tensor& y, const Tensor& x,
                   const Tensor& weight, const Tensor& bias, const MatmulOptions& opt) {
  const Precision p = opt.precision;
  const bool acc = opt.accumulate;
  autograd::BackwardFn backward = [p, acc](GradContext& c) {
    const Tensor &x = c.saved(0), &w = c.saved(1);
    const Tensor& g = c.grad_out(0);
    if (acc) c.accumulate(3, g);
    if (c.needs(0)) add_product(c, 0, x, g, w, p);  // dx = g W
    const Tensor g2 = rows_of(g);
    if (c.needs(1)) add_product(c, 1, w, g2.transpose(0, 1), rows_of(x), p);  // dW = g^T x
    if (c.needs(2)) c.accumulate(2, sum(g2, 0, false, c.options()));
  };
  if (acc) {
    autograd::detail::record(tape, "linear", {&x, &weight, &bias, &y}, {&y}, {x, weight}, backward,
                             opt);
  } else {
    autograd::detail::record(tape, "linear", {&x, &weight, &bias}, {&y}, {x, weight}, backward,
                             opt);
  }
}

}  // namespace strata::detail
