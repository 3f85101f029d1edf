// matmul and linear front ends: validate (ranks, K, batch broadcast, dtypes,
// devices, the caller's out), allocate the output where the op owns it,
// build MatmulArgs over views (1-D operands unsqueezed, batch dims expanded
// with stride 0, weight^T a transpose view: never a copy) and dispatch
// through the registry. Both ops are the one registry op "matmul"; linear's
// bias travels in MatmulArgs.bias. No maths here.
#include "strata/matmul.hpp"

#include <algorithm>

#include "matmul_grad.hpp"
#include "strata/detail/op_checks.hpp"
#include "strata/matmul_args.hpp"

namespace strata {
namespace {

using detail::Named;

// a and b as the kernel sees them: rank >= 2, and the output's shape.
struct Plan {
  Tensor a2, b2;    // 1-D operands unsqueezed: a [K] -> [1, K], b [K] -> [K, 1]
  Shape batch;      // broadcast batch shape
  Shape out_shape;  // what the caller sees (1-D dims dropped)
  bool a_1d = false, b_1d = false;
  std::int64_t M = 0, N = 0, K = 0;
};

// Shared checks of matmul and linear; `an`/`bn` name the arguments.
Plan plan_matmul(const char* op, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  detail::check_defined(op, a, an);
  detail::check_defined(op, b, bn);
  detail::check_rank_at_least(op, a, an, 1);
  detail::check_rank_at_least(op, b, bn, 1);
  detail::check_floating(op, a, an);
  detail::check_dtype(op, b, bn, a.dtype(), an);
  detail::check_same_device(op, {{&a, an}, {&b, bn}});
  Plan p;
  p.a_1d = a.dim() == 1;
  p.b_1d = b.dim() == 1;
  p.a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  p.b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  p.K = p.a2.size(-1);
  const std::int64_t kb = p.b2.size(-2);
  STRATA_CHECK(p.K == kb, op, an, " has K = ", p.K, " (last dim) but ", bn, " has ", kb,
               b.dim() == 1 ? " elements (1-D)" : " rows (dim -2)");
  p.M = p.a2.size(-2);
  p.N = p.b2.size(-1);
  const Shape ab(p.a2.shape().begin(), p.a2.shape().end() - 2);
  const Shape bb(p.b2.shape().begin(), p.b2.shape().end() - 2);
  // NumPy broadcast of the batch dims, with a message naming both operands.
  const std::size_t nb = std::max(ab.size(), bb.size());
  p.batch.assign(nb, 1);
  for (std::size_t i = 0; i < nb; ++i) {
    const std::int64_t x = i < nb - ab.size() ? 1 : ab[i - (nb - ab.size())];
    const std::int64_t y = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    STRATA_CHECK(x == y || x == 1 || y == 1, op, an, " has batch dims ", shape_str(ab), " and ", bn,
                 " has batch dims ", shape_str(bb), ", which do not broadcast");
    p.batch[i] = x == 1 ? y : x;
  }
  // Views are capped at kMaxDims, and a 1-D operand adds no batch dims, so
  // batch + [M, N] always fits; checked anyway since the kernels rely on it.
  STRATA_CHECK(p.batch.size() + 2 <= static_cast<std::size_t>(kMaxDims), op, "batch shape ",
               shape_str(p.batch), " has more than ", kMaxDims - 2, " dims");
  p.out_shape = p.batch;
  if (a.dim() > 1) p.out_shape.push_back(p.M);
  if (b.dim() > 1) p.out_shape.push_back(p.N);
  return p;
}

void check_bias(const char* op, const Tensor& bias, const Tensor& x, std::int64_t n) {
  if (!bias.defined()) return;
  STRATA_CHECK(bias.dim() == 1 && bias.size(0) == n, op, "bias has shape ", shape_str(bias.shape()),
               " but must be [", n, "] (weight's rows)");
  detail::check_dtype(op, bias, "bias", x.dtype(), "x");
}

// t [batch..., R, C] as [prod(batch) * R, C] when its batch dims and rows
// walk as one dim (a view; false when they do not, or t is empty).
bool fold_rows(const Tensor& t, Tensor* folded) {
  const int r = t.dim();
  std::int64_t rows = 1, rs = 1;
  bool have = false;
  for (int d = r - 2; d >= 0; --d) {
    const std::int64_t n = t.size(d);
    if (n == 0) return false;
    if (n == 1) continue;
    if (!have) {
      rs = t.stride(d);
      have = true;
    } else if (t.stride(d) != rs * rows) {
      return false;
    }
    rows *= n;
  }
  *folded = t.as_strided({rows, t.size(r - 1)}, {rs, t.stride(r - 1)});
  return true;
}

// accumulate adds into the caller's out: a fresh output has no values.
void check_no_accumulate(const char* op, const char* out_form, const MatmulOptions& opt) {
  STRATA_CHECK(!opt.accumulate, op, "accumulate = true needs an output to add into; use ",
               out_form);
}

// MatmulArgs fields that do not depend on the layout, then the kernel.
void dispatch(MatmulArgs& args, const Tensor& out, const Tensor& bias, const MatmulOptions& opt,
              BackendId be) {
  static const OpId id = Registry::get().op_id("matmul");
  if (bias.defined()) args.bias = bias.operand();
  args.precision = opt.precision;
  args.accumulate = opt.accumulate;
  args.stream = opt.stream;
  const auto k = Registry::get().find(id, be, out.dtype(), args);
  if (out.numel() == 0) return;
  k.run(args);
}

void run(const Plan& p, const Tensor& out, const Tensor& bias, const MatmulOptions& opt,
         BackendId be) {
  if (p.batch.empty() && !p.a_1d && !p.b_1d) {
    // Two 2-D operands: the kernel sees them and out as they are (no views
    // to make, no shared ownership to copy).
    MatmulArgs args;
    args.M = p.M;
    args.N = p.N;
    args.K = p.K;
    args.a = p.a2.operand();
    args.b = p.b2.operand();
    args.out = out.operand();
    dispatch(args, out, bias, opt, be);
    return;
  }
  Shape sa = p.batch, sb = p.batch;
  sa.push_back(p.M);
  sa.push_back(p.K);
  sb.push_back(p.K);
  sb.push_back(p.N);
  // out as [batch..., M, N]: the dims a 1-D operand dropped come back as views.
  Tensor o = out;
  if (p.a_1d) o = o.unsqueeze(static_cast<int>(p.batch.size()));
  if (p.b_1d) o = o.unsqueeze(o.dim());
  Tensor ta = p.a2.expand(sa), tb = p.b2.expand(sb);
  int br = static_cast<int>(p.batch.size());
  std::int64_t M = p.M;
  // One b for the whole batch (every batch stride 0: linear's weight, a 2-D
  // b) against an a and out whose batch dims walk as one with their rows:
  // a single product with batch * M rows, on every backend.
  bool b_shared = br > 0;
  for (int d = 0; d < br && b_shared; ++d) b_shared = tb.stride(d) == 0 || tb.size(d) == 1;
  Tensor fa, fo;
  if (b_shared && fold_rows(ta, &fa) && fold_rows(o, &fo)) {
    ta = fa;
    o = fo;
    tb = tb.as_strided({p.K, p.N}, {tb.stride(-2), tb.stride(-1)});
    M = fa.size(0);
    br = 0;
  }
  MatmulArgs args;
  args.batch_rank = br;
  for (int i = 0; i < br; ++i) args.batch_shape[i] = p.batch[i];
  args.M = M;
  args.N = p.N;
  args.K = p.K;
  args.a = ta.operand();
  args.b = tb.operand();
  args.out = o.operand();
  dispatch(args, out, bias, opt, be);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& opt) {
  check_no_accumulate("matmul", "matmul_out", opt);
  const Plan p = plan_matmul("matmul", a, "a", b, "b");
  const BackendId be = detail::resolve_backend("matmul", opt.backend, a.device());
  Tensor out = Tensor::empty(p.out_shape, a.dtype(), a.device());
  run(p, out, Tensor(), opt, be);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_matmul(*tape, out, a, b, opt);
  return out;
}

void matmul_out(const Tensor& out, const Tensor& a, const Tensor& b, const MatmulOptions& opt) {
  const Plan p = plan_matmul("matmul", a, "a", b, "b");
  detail::check_output("matmul", out, "out", p.out_shape, a.dtype(), a.device());
  detail::check_no_overlap("matmul", out, "out", {{&a, "a"}, {&b, "b"}});
  const BackendId be = detail::resolve_backend("matmul", opt.backend, a.device());
  run(p, out, Tensor(), opt, be);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_matmul(*tape, out, a, b, opt);
}

namespace {

Plan plan_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const char* op = "linear";
  detail::check_defined(op, x, "x");
  detail::check_defined(op, weight, "weight");
  STRATA_CHECK(weight.dim() == 2, op, "weight has shape ", shape_str(weight.shape()),
               " but must be 2-D [out, in]");
  detail::check_rank_at_least(op, x, "x", 1);
  STRATA_CHECK(x.size(-1) == weight.size(1), op, "x has ", x.size(-1),
               " features (last dim) but weight has ", weight.size(1), " columns (dim 1, in)");
  detail::check_floating(op, x, "x");
  detail::check_dtype(op, weight, "weight", x.dtype(), "x");
  check_bias(op, bias, x, weight.size(0));
  detail::check_same_device(op, {{&x, "x"}, {&weight, "weight"}, {&bias, "bias"}});
  return plan_matmul(op, x, "x", weight.transpose(0, 1), "weight^T");
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const MatmulOptions& opt) {
  check_no_accumulate("linear", "linear_out", opt);
  const Plan p = plan_linear(x, weight, bias);
  const BackendId be = detail::resolve_backend("linear", opt.backend, x.device());
  Tensor out = Tensor::empty(p.out_shape, x.dtype(), x.device());
  run(p, out, bias, opt, be);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_linear(*tape, out, x, weight, bias, opt);
  return out;
}

void linear_out(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias,
                const MatmulOptions& opt) {
  const Plan p = plan_linear(x, weight, bias);
  detail::check_output("linear", y, "y", p.out_shape, x.dtype(), x.device());
  detail::check_no_overlap("linear", y, "y", {{&x, "x"}, {&weight, "weight"}, {&bias, "bias"}});
  const BackendId be = detail::resolve_backend("linear", opt.backend, x.device());
  run(p, y, bias, opt, be);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    detail::record_linear(*tape, y, x, weight, bias, opt);
}

}  // namespace strata
