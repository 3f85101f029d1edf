// tril / triu and dropout front ends: validate, allocate where the op owns
// the output, build IterArgs in out's logical order (make_ordered_iter: the
// kernels need each element's row-major index, for tril's row and column
// and dropout's counter) and dispatch; record the backward, which is the
// same op applied to the gradient (the same triangle, the same mask
// regenerated from the seed). Operands and parameters (docs/guide/ops.md,
// "IterArgs conventions"):
//
//   tril, triu: op[0] = out, op[1] = x; iparam[0] = R, iparam[1] = C (the
//     last two dims of x); scalar[0] = the diagonal clamped to [-R, C]
//     (an integer, exact as a double; clamping changes no element).
//   dropout: op[0] = out, op[1] = x; scalar[0] = p in (0, 1] (p = 1 keeps
//     nothing: the kernels never use its infinite scale);
//     iparam[0] = the seed's bits.
#include "strata/select.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "row_common.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/elementwise.hpp"

namespace strata {
namespace {

// ---- tril / triu ------------------------------------------------------------

struct Tri {
  const char* op;
  bool upper;
};

OpId tri_id(bool upper) {
  static const OpId lower_id = Registry::get().op_id("tril");
  static const OpId upper_id = Registry::get().op_id("triu");
  return upper ? upper_id : lower_id;
}

void check_tri_input(const Tri& t, const Tensor& x) {
  detail::check_defined(t.op, x, "x");
  detail::check_rank_at_least(t.op, x, "x", 2);
}

void run_tri(const Tri& t, const Tensor& out, const Tensor& x, std::int64_t diagonal,
             const OpOptions& opt);

void record_tri(autograd::TapeState& tape, const Tri& t, const Tensor& out, const Tensor& x,
                std::int64_t diagonal, const OpOptions& opt) {
  autograd::detail::record(
      tape, t.op, {&x}, {&out}, {},
      [t, diagonal](autograd::GradContext& c) {
        // Linear in x, the mask its own transpose: the gradient's triangle.
        const Tensor& g = c.grad_out(0);
        const Tensor gx = Tensor::empty(g.shape(), g.dtype(), g.device());
        run_tri(t, gx, g, diagonal, c.options());
        c.accumulate(0, gx);
      },
      opt);
}

void run_tri(const Tri& t, const Tensor& out, const Tensor& x, std::int64_t diagonal,
             const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(t.op, opt.backend, x.device());
  const std::int64_t r = x.size(-2), c = x.size(-1);
  IterArgs it = detail::make_ordered_iter(out, {&x});
  it.iparam[0] = r;
  it.iparam[1] = c;
  it.scalar[0] = static_cast<double>(std::clamp(diagonal, -r, c));
  detail::run_row_kernel(tri_id(t.upper), be, x.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    record_tri(*tape, t, out, x, diagonal, opt);
}

Tensor tri_new(const Tri& t, const Tensor& x, std::int64_t diagonal, const OpOptions& opt) {
  check_tri_input(t, x);
  detail::resolve_backend(t.op, opt.backend, x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_tri(t, out, x, diagonal, opt);
  return out;
}

void tri_out(const Tri& t, const Tensor& out, const Tensor& x, std::int64_t diagonal,
             const OpOptions& opt) {
  detail::check_defined(t.op, out, "out");
  check_tri_input(t, x);
  detail::check_output(t.op, out, "out", x.shape(), x.dtype(), x.device(), "x");
  detail::check_no_overlap(t.op, out, "out", {{&x, "x"}}, /*allow_same=*/true);
  autograd::detail::refuse_write_to_watched(t.op, out);
  run_tri(t, out, x, diagonal, opt);
}

// ---- dropout ------------------------------------------------------------------

constexpr const char* kDropout = "dropout";

void check_dropout_input(const Tensor& x, double p) {
  detail::check_defined(kDropout, x, "x");
  detail::check_floating(kDropout, x, "x");
  STRATA_CHECK(p >= 0.0 && p <= 1.0, kDropout, "p is ", p, " but must be a probability in [0, 1]");
}

void run_dropout(const Tensor& out, const Tensor& x, double p, std::uint64_t seed, bool training,
                 const OpOptions& opt) {
  if (!training || p == 0.0) {  // the identity: a copy (recorded as one)
    if (!detail::same_view(out, x)) copy_(out, x, opt);
    return;
  }
  static const OpId id = Registry::get().op_id(kDropout);
  const BackendId be = detail::resolve_backend(kDropout, opt.backend, x.device());
  IterArgs it = detail::make_ordered_iter(out, {&x});
  it.scalar[0] = p;
  it.iparam[0] = std::bit_cast<std::int64_t>(seed);
  detail::run_row_kernel(id, be, x.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape()) {
    autograd::detail::record(
        *tape, kDropout, {&x}, {&out}, {},
        [p, seed](autograd::GradContext& c) {
          // grad * mask / (1 - p): the forward's own kernel on the gradient,
          // which has out's shape, so every element meets its own counter.
          const Tensor& g = c.grad_out(0);
          c.accumulate(0, dropout(g, p, seed, true, c.options()));
        },
        opt);
  }
}

}  // namespace

Tensor tril(const Tensor& x, std::int64_t diagonal, const OpOptions& opt) {
  return tri_new({"tril", false}, x, diagonal, opt);
}
Tensor triu(const Tensor& x, std::int64_t diagonal, const OpOptions& opt) {
  return tri_new({"triu", true}, x, diagonal, opt);
}
void tril_out(const Tensor& out, const Tensor& x, std::int64_t diagonal, const OpOptions& opt) {
  tri_out({"tril", false}, out, x, diagonal, opt);
}
void triu_out(const Tensor& out, const Tensor& x, std::int64_t diagonal, const OpOptions& opt) {
  tri_out({"triu", true}, out, x, diagonal, opt);
}

Tensor dropout(const Tensor& x, double p, std::uint64_t seed, bool training, const OpOptions& opt) {
  check_dropout_input(x, p);
  detail::resolve_backend(kDropout, opt.backend, x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_dropout(out, x, p, seed, training, opt);
  return out;
}

void dropout_out(const Tensor& out, const Tensor& x, double p, std::uint64_t seed, bool training,
                 const OpOptions& opt) {
  detail::check_defined(kDropout, out, "out");
  check_dropout_input(x, p);
  detail::check_output(kDropout, out, "out", x.shape(), x.dtype(), x.device(), "x");
  detail::check_no_overlap(kDropout, out, "out", {{&x, "x"}}, /*allow_same=*/true);
  autograd::detail::refuse_write_to_watched(kDropout, out);
  detail::resolve_backend(kDropout, opt.backend, x.device());
  run_dropout(out, x, p, seed, training, opt);
}

}  // namespace strata
