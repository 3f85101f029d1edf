// rotary front end: validate (x floating with a last dim, positions i32/i64
// broadcastable to x.shape[:-1], rotary_dims even and <= d, theta, one
// device, the caller's out, overlap), allocate where the op owns the output
// and dispatch: op = out, x, positions with stride 0 along the row;
// scalar[0] = theta, iparam = {r, style} (docs/guide/ops.md).
#include "strata/rotary.hpp"

#include <cmath>

#include "row_common.hpp"
#include "row_grad.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "rotary";

// Returns r, the number of rotated dims.
std::int64_t check_inputs(const Tensor& x, const Tensor& positions, const RotaryOptions& ro) {
  detail::check_defined(kOp, x, "x");
  detail::check_defined(kOp, positions, "positions");
  detail::check_floating(kOp, x, "x");
  detail::check_integer(kOp, positions, "positions");
  detail::check_rank_at_least(kOp, x, "x", 1);
  detail::check_same_device(kOp, {{&x, "x"}, {&positions, "positions"}});
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  detail::check_broadcasts_to(kOp, positions, "positions", lead);
  const std::int64_t d = x.size(-1);
  STRATA_CHECK(ro.rotary_dims >= -1 && ro.rotary_dims <= d, kOp, "rotary_dims ", ro.rotary_dims,
               " must be -1 (all) or in [0, ", d, "] (the last dim of x)");
  const std::int64_t r = ro.rotary_dims == -1 ? d : ro.rotary_dims;
  STRATA_CHECK(r % 2 == 0, kOp, "rotary_dims ", ro.rotary_dims, " (", r,
               " rotated dims) must be even");
  STRATA_CHECK(std::isfinite(ro.theta) && ro.theta > 0, kOp, "theta ", ro.theta,
               " must be finite and positive");
  STRATA_CHECK(ro.style == RotaryStyle::half || ro.style == RotaryStyle::interleaved, kOp, "style ",
               static_cast<int>(ro.style), " is not a RotaryStyle");
  return r;
}

void run(const Tensor& out, const Tensor& x, const Tensor& positions, std::int64_t r,
         const RotaryOptions& ro, const OpOptions& opt) {
  static const OpId id = Registry::get().op_id(kOp);
  const BackendId be = detail::resolve_backend(kOp, opt.backend, x.device());
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  const Tensor pv =
      positions.expand(lead).unsqueeze(static_cast<int>(lead.size())).expand(x.shape());
  IterArgs it = detail::make_row_iter(out, {&x, &pv});
  it.scalar[0] = ro.theta;
  it.iparam[0] = r;
  it.iparam[1] = ro.style == RotaryStyle::half ? 0 : 1;
  detail::run_row_kernel(id, be, x.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_rotary(*tape, out, x, positions, ro, opt);
}

}  // namespace

// x [..., T, d], positions broadcastable to [..., T]  ->  out [..., T, d]
Tensor rotary(const Tensor& x, const Tensor& positions, const RotaryOptions& ro,
              const OpOptions& opt) {
  const std::int64_t r = check_inputs(x, positions, ro);
  detail::resolve_backend(kOp, opt.backend, x.device());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  run(out, x, positions, r, ro, opt);
  return out;
}

void rotary_out(const Tensor& out, const Tensor& x, const Tensor& positions,
                const RotaryOptions& ro, const OpOptions& opt) {
  detail::check_defined(kOp, out, "out");
  const std::int64_t r = check_inputs(x, positions, ro);
  detail::check_output(kOp, out, "out", x.shape(), x.dtype(), x.device(), "x");
  detail::check_no_overlap(kOp, out, "out", {{&x, "x"}}, /*allow_same=*/true);
  detail::check_no_overlap(kOp, out, "out", {{&positions, "positions"}});
  run(out, x, positions, r, ro, opt);
}

}  // namespace strata
