// topk front end: validate (x floating, rank >= 1, dim, k in [0, n], the
// caller's outputs), move dim last with transpose views and dispatch one
// row op (docs/guide/ops.md, "IterArgs conventions"):
//
//   op[0] = values [..., k], op[1] = indices (i64) [..., k],
//   op[2] = x narrowed to its first k elements along the row: the outer
//           dims walk with the outputs; the kernel reads the whole row of
//           iparam[0] = n elements through op[2]'s row stride
//   iparam[1] = 1 for the largest, 0 for the smallest; key = x's dtype
//
// Why IterArgs: make_row_iter already merges and flips the outer dims every
// operand walks alike; only x's row is longer than the outputs', which the
// narrowed view and iparam[0] carry. The backward scatters the values'
// gradient to the indices through index_copy_ (the positions of one row
// are distinct, so a scatter into zeros is the scatter-add).
#include "row_common.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/elementwise.hpp"
#include "strata/index_copy.hpp"
#include "strata/select.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "topk";

// Validates x, dim and k; returns the wrapped dim and the outputs' shape.
std::pair<int, Shape> check_topk(const Tensor& x, std::int64_t k, int dim) {
  detail::check_defined(kOp, x, "x");
  detail::check_floating(kOp, x, "x");
  detail::check_rank_at_least(kOp, x, "x", 1);
  const int d = detail::wrap_dim(kOp, dim, x.dim(), "dim");
  STRATA_CHECK(k >= 0 && k <= x.size(d), kOp, "k is ", k, " but dim ", dim, " of x (shape ",
               shape_str(x.shape()), ") has size ", x.size(d), "; k must be in [0, ", x.size(d),
               "]");
  Shape s = x.shape();
  s[static_cast<std::size_t>(d)] = k;
  return {d, s};
}

// values and indices hold the selection of x along d: the gradient of the
// values goes to those positions of x, zeros elsewhere.
void record_topk(autograd::TapeState& tape, const Tensor& values, const Tensor& indices,
                 const Tensor& x, int d, const OpOptions& opt) {
  autograd::detail::record(
      tape, kOp, {&x}, {&values, &indices}, {indices},
      [d, xshape = x.shape()](autograd::GradContext& c) {
        const Tensor& g = c.grad_out(0);
        if (!g.defined()) return;
        const OpOptions& o = c.options();
        const int last = static_cast<int>(xshape.size()) - 1;
        const Tensor il = c.saved(0).transpose(d, last), gl = g.transpose(d, last);
        const std::int64_t n = xshape[static_cast<std::size_t>(d)], k = il.size(-1);
        const std::int64_t rows = k == 0 ? 0 : il.numel() / k;
        Shape xl = xshape;  // x's shape with d last
        std::swap(xl[static_cast<std::size_t>(d)], xl.back());
        const Tensor gx = Tensor::zeros({shape_numel(xl)}, g.dtype(), g.device());
        if (rows > 0) {
          // Flat positions r * n + index, in f64 (exact below 2^53), as max's backward.
          const Tensor base = mul(Tensor::arange(rows, DType::f64, g.device()), double(n), o);
          const Tensor pos =
              add(base.reshape({rows, 1}), cast(il.reshape_copy({rows, k}), DType::f64, o), o);
          index_copy_(gx, 0, cast(pos, DType::i64, o).reshape({rows * k}),
                      gl.reshape_copy({rows * k}), o);
        }
        c.accumulate(0, gx.reshape(xl).transpose(d, last));
      },
      opt);
}

void run_topk(const Tensor& values, const Tensor& indices, const Tensor& x, std::int64_t k, int d,
              bool largest, const OpOptions& opt) {
  static const OpId id = Registry::get().op_id(kOp);
  const BackendId be = detail::resolve_backend(kOp, opt.backend, x.device());
  const Tensor xv = detail::dim_last(x, d), vv = detail::dim_last(values, d),
               iv = detail::dim_last(indices, d);
  const Tensor xk = xv.narrow(-1, 0, k);
  IterArgs it = detail::make_row_iter(vv, {&iv, &xk});
  it.iparam[0] = xv.size(-1);
  it.iparam[1] = largest ? 1 : 0;
  detail::run_row_kernel(id, be, x.dtype(), it, values, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    record_topk(*tape, values, indices, x, d, opt);
}

}  // namespace

TopkResult topk(const Tensor& x, std::int64_t k, int dim, bool largest, bool /*sorted*/,
                const OpOptions& opt) {
  const auto [d, shape] = check_topk(x, k, dim);
  detail::resolve_backend(kOp, opt.backend, x.device());
  TopkResult r{Tensor::empty(shape, x.dtype(), x.device()),
               Tensor::empty(shape, DType::i64, x.device())};
  run_topk(r.values, r.indices, x, k, d, largest, opt);
  return r;
}

void topk_out(const Tensor& values, const Tensor& indices, const Tensor& x, std::int64_t k, int dim,
              bool largest, bool /*sorted*/, const OpOptions& opt) {
  detail::check_defined(kOp, values, "values");
  detail::check_defined(kOp, indices, "indices");
  const auto [d, shape] = check_topk(x, k, dim);
  detail::check_output(kOp, values, "values", shape, x.dtype(), x.device(), "x");
  detail::check_output(kOp, indices, "indices", shape, DType::i64, x.device(), "x");
  detail::check_no_overlap(kOp, values, "values", {{&x, "x"}, {&indices, "indices"}});
  detail::check_no_overlap(kOp, indices, "indices", {{&x, "x"}});
  autograd::detail::refuse_write_to_watched(kOp, values);
  run_topk(values, indices, x, k, d, largest, opt);
}

}  // namespace strata
