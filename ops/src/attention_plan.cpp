// Validation of softmax_attention calls. Everything a caller can get wrong is
// checked here, before any output is allocated or written, and reported as
// strata::Error("<op>: <argument> <what> <value>").
#include "strata/detail/attention_plan.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "strata/detail/op_checks.hpp"

namespace strata::detail {
namespace {

void check_rank(const char* op, const Tensor& t, const char* name) {
  if (t.dim() < 2 || t.dim() > kMaxDims) {
    fail(op, name, " must have 2 to ", kMaxDims, " dims ([..., H, rows, cols]) but has ", t.dim(),
         " (shape ", shape_str(t.shape()), ")");
  }
}

void check_dtype(const char* op, const Tensor& t, const char* name, DType want) {
  detail::check_dtype(op, t, name, want, "q");
}

void check_device(const char* op, const Tensor& t, const char* name, Device want) {
  STRATA_CHECK(t.device() == want, op, name, " is on ", t.device().str(), " but q is on ",
               want.str());
}

// Leading dims before [H, rows, cols]; a 2-D tensor has none and one head.
Shape batch_of(const Tensor& t) {
  if (t.dim() <= 3) return {};
  return Shape(t.shape().begin(), t.shape().end() - 3);
}
std::int64_t heads_of(const Tensor& t) { return t.dim() >= 3 ? dim_size(t, -3) : 1; }

// NumPy broadcast of batch dims with a message naming both arguments.
Shape broadcast_batch(const char* op, const Shape& a, const char* an, const Shape& b,
                      const char* bn) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape r(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) {
      fail(op, "batch dims of ", an, " ", shape_str(a), " and ", bn, " ", shape_str(b),
           " do not broadcast (", x, " vs ", y, ")");
    }
    r[i] = x == 1 ? y : x;
  }
  return r;
}

}  // namespace

AttentionPlan plan_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                             const AttentionOptions& opt) {
  check_defined(op, q, "q");
  check_defined(op, k, "k");
  check_defined(op, v, "v");

  const DType dt = q.dtype();
  STRATA_CHECK(is_floating(dt), op, "q has dtype ", dtype_name(dt),
               " but must be f32, f64, f16 or bf16");
  check_dtype(op, k, "k", dt);
  check_dtype(op, v, "v", dt);
  const Device dev = q.device();
  check_device(op, k, "k", dev);
  check_device(op, v, "v", dev);

  check_rank(op, q, "q");
  check_rank(op, k, "k");
  check_rank(op, v, "v");

  AttentionPlan p;
  p.M = dim_size(q, -2);
  p.d = dim_size(q, -1);
  p.N = dim_size(k, -2);
  p.dv = dim_size(v, -1);
  p.Hq = heads_of(q);
  p.Hkv = heads_of(k);
  check(p.d >= 1, op, "q has head size d = 0 (last dim); d must be >= 1");
  check(p.dv >= 1, op, "v has head size dv = 0 (last dim); dv must be >= 1");
  check(dim_size(k, -1) == p.d, op, "q has head size d = ", p.d, " but k has ", dim_size(k, -1),
        " (last dims differ)");
  check(dim_size(v, -2) == p.N, op, "k has ", p.N, " keys but v has ", dim_size(v, -2));
  check(heads_of(v) == p.Hkv, op, "k has ", p.Hkv, " heads but v has ", heads_of(v));
  if (p.Hkv == 0) {
    check(p.Hq == 0, op, "k has 0 heads but q has ", p.Hq);
  } else {
    check(p.Hq % p.Hkv == 0, op, "q has ", p.Hq, " heads, not a multiple of k's ", p.Hkv,
          " heads (grouped-query attention needs Hq % Hkv == 0)");
  }

  const Shape qb = batch_of(q);
  const Shape kb = batch_of(k);
  const Shape vb = batch_of(v);
  const Shape qkb = broadcast_batch(op, qb, "q", kb, "k");
  p.batch = broadcast_batch(op, qkb, "q and k", vb, "v");
  p.has_head = q.dim() >= 3 || !p.batch.empty();

  p.out_shape = p.batch;
  p.lse_shape = p.batch;
  if (p.has_head) {
    p.out_shape.push_back(p.Hq);
    p.lse_shape.push_back(p.Hq);
  }
  p.out_shape.insert(p.out_shape.end(), {p.M, p.dv});
  p.lse_shape.push_back(p.M);

  if (opt.scale) {
    check(std::isfinite(*opt.scale), op, "scale is ", *opt.scale, " but must be finite");
    p.scale = *opt.scale;
  } else {
    p.scale = 1.0 / std::sqrt(static_cast<double>(p.d));
  }

  // Causal and window fold into one band i + band_lo <= j <= i + band_hi.
  const std::int64_t off_br = p.N - p.M;
  if (opt.window) {
    const auto [left, right] = *opt.window;
    check(left >= -1, op, "window left is ", left, " but must be >= 0 (or -1 for unbounded)");
    check(right >= -1, op, "window right is ", right, " but must be >= 0 (or -1 for unbounded)");
    const bool top_left = opt.window_top_left || opt.causal == Causal::top_left;
    const std::int64_t off = top_left ? 0 : off_br;
    if (left >= 0) p.band_lo = std::max(off - std::min(left, kNoLimit), -kNoLimit);
    if (right >= 0) p.band_hi = std::min(off + std::min(right, kNoLimit), kNoLimit);
  }
  if (opt.causal != Causal::none) {
    const std::int64_t off = opt.causal == Causal::top_left ? 0 : off_br;
    p.band_hi = std::min(p.band_hi, off);
  }

  if (opt.mask.defined()) {
    const Tensor& m = opt.mask;
    check(m.dtype() == DType::boolean || m.dtype() == dt, op, "mask has dtype ",
          dtype_name(m.dtype()), " but must be bool or q's dtype ", dtype_name(dt));
    if (m.device() != dev) fail(op, "mask is on ", m.device().str(), " but q is on ", dev.str());
    Shape target = p.batch;
    if (p.has_head) target.push_back(p.Hq);
    target.insert(target.end(), {p.M, p.N});
    bool ok = m.dim() <= static_cast<int>(target.size());
    for (int i = 1; ok && i <= m.dim(); ++i) {
      const std::int64_t have = dim_size(m, -i);
      ok = have == 1 || have == target[target.size() - i];
    }
    if (!ok) {
      fail(op, "mask has shape ", shape_str(m.shape()), " which does not broadcast to ",
           shape_str(target), " ([..., Hq, M, N])");
    }
    p.mask = m.expand(target);
  }

  p.backend = resolve_backend(op, opt.backend, dev);
  return p;
}

void check_attention_outputs(const char* op, const AttentionPlan& plan, const Tensor& out,
                             const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& mask) {
  check_defined(op, out, "out");
  const DType dt = q.dtype();
  const Device dev = q.device();
  check_output(op, out, "out", plan.out_shape, dt, dev, "q");
  if (lse.defined()) check_output(op, lse, "lse", plan.lse_shape, lse_dtype(dt), dev, "q");

  const std::pair<const Tensor*, const char*> inputs[] = {
      {&q, "q"}, {&k, "k"}, {&v, "v"}, {&mask, "mask"}};
  const std::pair<const Tensor*, const char*> outputs[] = {{&out, "out"}, {&lse, "lse"}};
  for (const auto& [o, oname] : outputs) {
    if (!o->defined()) continue;
    for (const auto& [in, iname] : inputs) {
      if (in->defined() && may_overlap(*o, *in)) {
        fail(op, oname, " overlaps input ", iname, " in memory; outputs must not alias inputs");
      }
    }
  }
  if (lse.defined() && may_overlap(out, lse)) {
    fail(op, "out and lse overlap in memory");
  }
}

}  // namespace strata::detail
