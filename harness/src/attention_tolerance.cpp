// The attention harness's tolerance rule (strata/harness.hpp,
// attention_tolerance): bounds derived from what a naive computation in the
// inputs' dtype achieves on the very same problem. run_case.cpp holds every
// backend to it, and `strata attention` its built-in problem.
#include <algorithm>
#include <cmath>

#include "case_inputs.hpp"  // contiguous_copy
#include "strata/detail/attention_plan.hpp"
#include "strata/harness.hpp"
#include "strata/registry.hpp"

namespace strata::harness {
namespace {

double max_abs_finite(const Tensor& t) {
  double m = 0;
  for (double x : t.to_vector<double>()) {
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  }
  return m;
}

// The relative error a correct result in `dt` may have where the naive
// computation happens to be exact (see attention_tolerance below): ~8 ulp of
// f32, ~4500 ulp of f64, one ulp of f16 / bf16, whose outputs are rounded
// once from f32 and so may land on the other neighbour of the exact value.
double tolerance_floor(DType dt) {
  switch (dt) {
    case DType::f32:
      return 1e-6;
    case DType::f16:
      return 0x1p-10;
    case DType::bf16:
      return 0x1p-7;
    default:
      return 1e-12;
  }
}

// The same computation as the reference but accumulating in the inputs' own
// dtype: what a naive implementation in that precision achieves. The
// registry's reference kernel for f32 accumulates in double, as a reference
// should; this baseline is the reference backend's naive kernel with its
// accumulator in the input dtype, registered as its own op
// (softmax_attention_same_dtype) so that nothing outside the backend
// includes its headers.
AttentionResult naive_same_dtype(const Tensor& q, const Tensor& k, const Tensor& v,
                                 AttentionOptions opt) {
  opt.backend = "reference";
  const DType dt = q.dtype();
  if (dt == DType::f16 || dt == DType::bf16) {
    // These compute in f32 (docs/guide/ops.md): the naive f32 computation on
    // the (exact) f32 values of the inputs, its output rounded to dt; lse is f32.
    auto f32 = [](const Tensor& t) { return detail::contiguous_copy(t, DType::f32); };
    if (opt.mask.defined() && opt.mask.dtype() != DType::boolean) opt.mask = f32(opt.mask);
    AttentionResult r = naive_same_dtype(f32(q), f32(k), f32(v), opt);
    r.out = detail::contiguous_copy(r.out, dt);
    return r;
  }
  const strata::detail::AttentionPlan p = strata::detail::plan_attention("harness", q, k, v, opt);
  AttentionResult r{Tensor::empty(p.out_shape, dt), Tensor::empty(p.lse_shape, dt)};
  if (p.empty_output()) return r;
  const AttentionArgs a = strata::detail::make_attention_args(p, r.out, r.lse, q, k, v, nullptr);
  const Registry& reg = Registry::get();
  static const OpId op = reg.op_id("softmax_attention_same_dtype");
  const BackendId ref = reg.resolve_backend("harness", "reference", Device::cpu());
  reg.find(op, ref, dt, a).run(a);
  return r;
}

}  // namespace

// A correct kernel in dtype T differs from the f64 reference by rounding
// only, of the same order as a naive computation carried out entirely in T
// (scores, softmax and P V all in T). That naive error is measured on this
// very problem and 3x it allowed (FlashAttention's tests allow 2x plus an
// output-rounding term; PyTorch's SDPA tests similar multiples), plus a
// floor for problems where the naive computation happens to be (near)
// exact, e.g. N = 1 or rows all masked: tolerance_floor() of the output's
// and the lse's own dtype (lse is f32 for f16/bf16), relative to their
// magnitude: far under any indexing or masking bug (O(1) errors).
// Large logits are ill-conditioned in any algorithm in T: every rounding of
// a score s perturbs exp(s) by ~eps * |s|; the naive error grows with them
// and so does the bound. A streaming kernel rounds a score about three
// times (scale, running max, exp2 folding) where the naive one rounds it
// once, hence the factor 3 rather than 2.
AttentionTolerance attention_tolerance(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const AttentionOptions& opt, const Tensor& ref_out,
                                       const Tensor& ref_lse) {
  const AttentionResult naive = naive_same_dtype(q, k, v, opt);
  const ErrorStats nd = compare_values(naive.out, ref_out);
  const double floor = tolerance_floor(q.dtype());
  AttentionTolerance t;
  t.naive_rel_fro = nd.rel_fro;
  t.naive_max_abs = nd.max_abs;
  t.rel_fro = 3 * nd.rel_fro + floor;
  t.max_abs = 3 * nd.max_abs + floor * std::max(1.0, max_abs_finite(ref_out));
  if (ref_lse.defined()) {
    const ErrorStats nl = compare_values(naive.lse, ref_lse);
    const double lse_floor = tolerance_floor(strata::detail::lse_dtype(q.dtype()));
    t.naive_lse_abs = nl.max_abs;
    t.lse_abs = 3 * nl.max_abs + lse_floor * std::max(1.0, max_abs_finite(ref_lse));
  }
  return t;
}

}  // namespace strata::harness
