#include "attention_tolerance.hpp"

#include <algorithm>
#include <cmath>

#include "reference/attention_reference.hpp"  // the naive kernel, Acc = T
#include "strata/detail/attention_plan.hpp"
#include "strata/harness.hpp"

namespace strata::cli {

// The same computation as harness/src/run_case.cpp's naive_same_dtype and its
// tolerances(); harness/include does not export them (docs/cli.md), so the
// rule is restated here and kept identical.
Tolerance self_calibrated_tolerance(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& opt, const Tensor& truth) {
  AttentionOptions o = opt;
  o.backend = "reference";
  const detail::AttentionPlan p = detail::plan_attention("attention", q, k, v, o);
  const Tensor out = Tensor::empty(p.out_shape, q.dtype());
  const Tensor lse = Tensor::empty(p.lse_shape, q.dtype());
  if (!p.empty_output()) {
    const AttentionArgs a = detail::make_attention_args(p, out, lse, q, k, v, nullptr);
    if (q.dtype() == DType::f32) {
      reference::attention<float, float>(a);
    } else {
      reference::attention<double, double>(a);
    }
  }
  const harness::ErrorStats nd = harness::compare_values(out, truth);
  double peak = 0;
  for (double x : truth.to_vector<double>())
    if (std::isfinite(x)) peak = std::max(peak, std::abs(x));
  const double floor = q.dtype() == DType::f32 ? 1e-6 : 1e-12;
  Tolerance t;
  t.naive_rel = nd.rel_fro;
  t.naive_abs = nd.max_abs;
  t.rel_fro = 3 * nd.rel_fro + floor;
  t.max_abs = 3 * nd.max_abs + floor * std::max(1.0, peak);
  return t;
}

}  // namespace strata::cli
