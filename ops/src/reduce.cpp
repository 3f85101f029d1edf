// Reduction and softmax front ends (and softmax's backward): validate (dim,
// dtype, device, the caller's out, overlap), allocate where the op owns the
// output, move the op's dim last with transpose views, build IterArgs with
// make_row_iter and dispatch through the registry. No maths here
// (docs/guide/ops.md: row ops).
#include "strata/reduce.hpp"

#include <limits>

#include "row_common.hpp"
#include "row_grad.hpp"
#include "strata/elementwise.hpp"

namespace strata {
namespace {

using detail::Named;

enum class Kind { sum, mean, max, argmax };

struct Reduce {
  const char* op;
  Kind kind;
};

// Validates x and dim; returns the wrapped dim (0 for a 0-d x).
int check_reduce_input(const Reduce& r, const Tensor& x, int dim) {
  detail::check_defined(r.op, x, "x");
  detail::check_floating(r.op, x, "x");
  const int d = detail::wrap_dim(r.op, dim, x.dim(), "dim");
  if (x.dim() > 0 && (r.kind == Kind::max || r.kind == Kind::argmax))
    STRATA_CHECK(x.size(d) > 0, r.op, "dim ", dim, " of x (shape ", shape_str(x.shape()),
                 ") has size 0; the ", r.op, " of an empty reduction is undefined");
  return d;
}

Shape reduced_shape(const Tensor& x, int d, bool keepdim) {
  Shape s = x.shape();
  if (x.dim() == 0) return s;
  if (keepdim)
    s[d] = 1;
  else
    s.erase(s.begin() + d);
  return s;
}

DType out_dtype(const Reduce& r, const Tensor& x) {
  return r.kind == Kind::argmax ? DType::i64 : x.dtype();
}

// out has the reduced shape (validated); x's dim d becomes the row and
// out's view of it has stride 0 along the row.
void run_reduce(const Reduce& r, OpId id, const Tensor& out, const Tensor& x, int d, bool keepdim,
                const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(r.op, opt.backend, x.device());
  if (x.dim() > 0 && x.size(d) == 0) {
    // sum and mean of nothing (max and argmax were refused): a fill, so
    // that no kernel sees a row of length 0.
    if (out.numel() > 0)
      fill_(out, r.kind == Kind::sum ? 0.0 : std::numeric_limits<double>::quiet_NaN(), opt);
    // Recorded still: x's (empty) gradient is then defined.
    if (autograd::TapeState* tape = autograd::detail::recording_tape())
      detail::record_reduce(*tape, r.op, out, x, d, keepdim, opt);
    return;
  }
  const Tensor xv = detail::dim_last(x, d);
  Tensor ov = out;
  if (x.dim() > 0) {
    ov = detail::dim_last(keepdim ? out : out.unsqueeze(d), d).expand(xv.shape());
  }
  IterArgs it = detail::make_row_iter(ov, {&xv});
  detail::run_row_kernel(id, be, x.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_reduce(*tape, r.op, out, x, d, keepdim, opt);
}

Tensor reduce_new(const Reduce& r, OpId id, const Tensor& x, int dim, bool keepdim,
                  const OpOptions& opt) {
  const int d = check_reduce_input(r, x, dim);
  detail::resolve_backend(r.op, opt.backend, x.device());
  Tensor out = Tensor::empty(reduced_shape(x, d, keepdim), out_dtype(r, x), x.device());
  run_reduce(r, id, out, x, d, keepdim, opt);
  return out;
}

void reduce_out(const Reduce& r, OpId id, const Tensor& out, const Tensor& x, int dim, bool keepdim,
                const OpOptions& opt) {
  detail::check_defined(r.op, out, "out");
  const int d = check_reduce_input(r, x, dim);
  detail::check_output(r.op, out, "out", reduced_shape(x, d, keepdim), out_dtype(r, x), x.device(),
                       "x");
  detail::check_no_overlap(r.op, out, "out", {{&x, "x"}});
  run_reduce(r, id, out, x, d, keepdim, opt);
}

// softmax / log_softmax: out has x's shape; out may be exactly x.
void check_softmax(const char* op, const Tensor& x, int dim, int* d) {
  detail::check_defined(op, x, "x");
  detail::check_floating(op, x, "x");
  *d = detail::wrap_dim(op, dim, x.dim(), "dim");
}

void run_softmax(const char* op, OpId id, const Tensor& out, const Tensor& x, int d,
                 const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(op, opt.backend, x.device());
  const Tensor xv = detail::dim_last(x, d);
  const Tensor ov = detail::dim_last(out, d);
  IterArgs it = detail::make_row_iter(ov, {&xv});
  detail::run_row_kernel(id, be, x.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_softmax(*tape, op, out, x, d, opt);
}

Tensor softmax_new(const char* op, OpId id, const Tensor& x, int dim, const OpOptions& opt) {
  int d = 0;
  check_softmax(op, x, dim, &d);
  detail::resolve_backend(op, opt.backend, x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_softmax(op, id, out, x, d, opt);
  return out;
}

void softmax_out_impl(const char* op, OpId id, const Tensor& out, const Tensor& x, int dim,
                      const OpOptions& opt) {
  detail::check_defined(op, out, "out");
  int d = 0;
  check_softmax(op, x, dim, &d);
  detail::check_output(op, out, "out", x.shape(), x.dtype(), x.device(), "x");
  detail::check_no_overlap(op, out, "out", {{&x, "x"}}, /*allow_same=*/true);
  run_softmax(op, id, out, x, d, opt);
}

// softmax_backward / log_softmax_backward: grad and y of one shape and
// dtype; dx has y's and may be exactly grad.
int check_softmax_backward(const char* op, const Tensor& grad, const Tensor& y, int dim) {
  detail::check_defined(op, grad, "grad");
  detail::check_defined(op, y, "y");
  detail::check_floating(op, y, "y");
  detail::check_dtype(op, grad, "grad", y.dtype(), "y");
  STRATA_CHECK(grad.shape() == y.shape(), op, "grad has shape ", shape_str(grad.shape()),
               " but y has ", shape_str(y.shape()));
  detail::check_same_device(op, {{&y, "y"}, {&grad, "grad"}});
  return detail::wrap_dim(op, dim, y.dim(), "dim");
}

void run_softmax_backward(const char* op, OpId id, const Tensor& dx, const Tensor& grad,
                          const Tensor& y, int d, const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(op, opt.backend, y.device());
  autograd::detail::refuse_gradient(op, {&grad, &y});  // no second derivative
  const Tensor dv = detail::dim_last(dx, d), gv = detail::dim_last(grad, d);
  const Tensor yv = detail::dim_last(y, d);
  IterArgs it = detail::make_row_iter(dv, {&gv, &yv});
  detail::run_row_kernel(id, be, y.dtype(), it, dx, opt);
}

Tensor softmax_backward_new(const char* op, OpId id, const Tensor& grad, const Tensor& y, int dim,
                            const OpOptions& opt) {
  const int d = check_softmax_backward(op, grad, y, dim);
  detail::resolve_backend(op, opt.backend, y.device());
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  run_softmax_backward(op, id, dx, grad, y, d, opt);
  return dx;
}

void softmax_backward_out_impl(const char* op, OpId id, const Tensor& dx, const Tensor& grad,
                               const Tensor& y, int dim, const OpOptions& opt) {
  detail::check_defined(op, dx, "dx");
  const int d = check_softmax_backward(op, grad, y, dim);
  detail::check_output(op, dx, "dx", y.shape(), y.dtype(), y.device(), "y");
  detail::check_no_overlap(op, dx, "dx", {{&grad, "grad"}}, /*allow_same=*/true);
  detail::check_no_overlap(op, dx, "dx", {{&y, "y"}});
  autograd::detail::refuse_write_to_watched(op, dx);
  run_softmax_backward(op, id, dx, grad, y, d, opt);
}

OpId op_id_of(const char* op) { return Registry::get().op_id(op); }

}  // namespace

#define STRATA_REDUCE(name)                                                   \
  Tensor name(const Tensor& x, int dim, bool keepdim, const OpOptions& opt) { \
    static const OpId id = op_id_of(#name);                                   \
    return reduce_new({#name, Kind::name}, id, x, dim, keepdim, opt);         \
  }                                                                           \
  void name##_out(const Tensor& out, const Tensor& x, int dim, bool keepdim,  \
                  const OpOptions& opt) {                                     \
    static const OpId id = op_id_of(#name);                                   \
    reduce_out({#name, Kind::name}, id, out, x, dim, keepdim, opt);           \
  }
STRATA_REDUCE(sum)
STRATA_REDUCE(mean)
STRATA_REDUCE(max)
STRATA_REDUCE(argmax)
#undef STRATA_REDUCE

Tensor softmax(const Tensor& x, int dim, const OpOptions& opt) {
  static const OpId id = op_id_of("softmax");
  return softmax_new("softmax", id, x, dim, opt);
}
Tensor log_softmax(const Tensor& x, int dim, const OpOptions& opt) {
  static const OpId id = op_id_of("log_softmax");
  return softmax_new("log_softmax", id, x, dim, opt);
}
void softmax_out(const Tensor& out, const Tensor& x, int dim, const OpOptions& opt) {
  static const OpId id = op_id_of("softmax");
  softmax_out_impl("softmax", id, out, x, dim, opt);
}
void log_softmax_out(const Tensor& out, const Tensor& x, int dim, const OpOptions& opt) {
  static const OpId id = op_id_of("log_softmax");
  softmax_out_impl("log_softmax", id, out, x, dim, opt);
}

// grad, y [..., n, ...] -> dx, same shape (the softmax / log_softmax backward along dim)
#define STRATA_SOFTMAX_BACKWARD(name)                                               \
  Tensor name(const Tensor& grad, const Tensor& y, int dim, const OpOptions& opt) { \
    static const OpId id = op_id_of(#name);                                         \
    return softmax_backward_new(#name, id, grad, y, dim, opt);                      \
  }                                                                                 \
  void name##_out(const Tensor& dx, const Tensor& grad, const Tensor& y, int dim,   \
                  const OpOptions& opt) {                                           \
    static const OpId id = op_id_of(#name);                                         \
    softmax_backward_out_impl(#name, id, dx, grad, y, dim, opt);                    \
  }
STRATA_SOFTMAX_BACKWARD(softmax_backward)
STRATA_SOFTMAX_BACKWARD(log_softmax_backward)
#undef STRATA_SOFTMAX_BACKWARD

}  // namespace strata
