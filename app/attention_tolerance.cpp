#include "attention_tolerance.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/attention_reference.hpp"  // the naive kernel, Acc = T
#include "strata/detail/attention_plan.hpp"
#include "strata/harness.hpp"

namespace strata::cli {
namespace {

// x rounded to TF32 (10 mantissa bits) to nearest, ties away from zero: what
// cvt.rna.tf32.f32 gives the tensor cores.
Tensor tf32_rounded_f64(const Tensor& x) {
  std::vector<float> v = x.to_vector<float>();
  for (float& e : v) {
    if (!std::isfinite(e)) continue;
    e = std::bit_cast<float>((std::bit_cast<std::uint32_t>(e) + 0x1000u) & 0xffffe000u);
  }
  return Tensor::from_vector(v, x.shape()).to(DType::f64);
}

}  // namespace

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
  if (q.dtype() == DType::f32 && opt.precision == Precision::medium) {
    const Tensor o32 =
        softmax_attention(tf32_rounded_f64(q), tf32_rounded_f64(k), tf32_rounded_f64(v), o);
    const harness::ErrorStats td = harness::compare_values(o32, truth);
    t.tf32 = true;
    t.tf32_rel = td.rel_fro;
    t.tf32_abs = td.max_abs;
    t.rel_fro += 3 * td.rel_fro;
    t.max_abs += 3 * td.max_abs;
  }
  return t;
}

}  // namespace strata::cli
