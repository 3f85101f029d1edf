// Runs one AttentionCase on every available backend and compares each with
// the reference backend run in f64 on contiguous copies of the same inputs.
// Guarded outputs, layout primitives and the comparison are the op runner's
// (strata/op_harness.hpp); what is attention's own here is the case, its
// inputs and its tolerance (derived from a naive same-dtype computation).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "case_inputs.hpp"
#include "each_backend.hpp"
#include "strata/detail/attention_plan.hpp"
#include "strata/registry.hpp"

namespace strata::harness {
namespace {

using detail::BufferView;
using detail::CaseInputs;
using detail::contiguous_copy;
using detail::ViewSpec;

double max_abs_finite(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) {
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  }
  return m;
}

ViewSpec output_spec(const CaseInputs& in, const AttentionCase& c, bool lse) {
  const Shape& shape = lse ? in.lse_shape : in.out_shape;
  if (in.layout == Layout::fused_qkv) {
    if (lse) return detail::contiguous_spec(shape);
    // As a fused projection's consumer would want it: [batch..., M, Hq * dv].
    Shape buf = c.batch;
    buf.insert(buf.end(), {c.M, c.Hq * c.dv});
    const Shape bst = detail::row_major_strides(buf);
    Shape st(bst.begin(), bst.end() - 2);
    st.insert(st.end(), {c.dv, c.Hq * c.dv, 1});
    return ViewSpec{shape, st, 0, shape_numel(buf)};
  }
  return detail::make_spec(shape, in.layout, lse ? detail::Role::lse : detail::Role::out);
}

// The relative error a correct result in `dt` may have where the naive
// computation happens to be exact (see the tolerances below): ~8 ulp of f32,
// ~4500 ulp of f64, one ulp of f16 / bf16, whose outputs are rounded once
// from f32 and so may land on the other neighbour of the exact value.
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

// The same computation as the reference but accumulating in the case's own
// dtype: what a naive implementation in that precision achieves. This one
// calls the reference kernel template directly, not through the op: the
// registry's reference kernel for f32 is attention<float, double> (it
// accumulates in double, as a reference should), and no registered kernel
// accumulates in f32, which is the point of this baseline.
AttentionResult naive_same_dtype(const Tensor& q, const Tensor& k, const Tensor& v,
                                 AttentionOptions opt) {
  opt.backend = "reference";
  const DType dt = q.dtype();
  if (dt == DType::f16 || dt == DType::bf16) {
    // These compute in f32 (docs/ops.md): the naive f32 computation on the
    // (exact) f32 values of the inputs, its output rounded to dt; lse is f32.
    auto f32 = [](const Tensor& t) { return contiguous_copy(t, DType::f32); };
    if (opt.mask.defined() && opt.mask.dtype() != DType::boolean) opt.mask = f32(opt.mask);
    AttentionResult r = naive_same_dtype(f32(q), f32(k), f32(v), opt);
    r.out = contiguous_copy(r.out, dt);
    return r;
  }
  const strata::detail::AttentionPlan p = strata::detail::plan_attention("harness", q, k, v, opt);
  AttentionResult r{Tensor::empty(p.out_shape, dt), Tensor::empty(p.lse_shape, dt)};
  if (p.empty_output()) return r;
  const AttentionArgs a = strata::detail::make_attention_args(p, r.out, r.lse, q, k, v, nullptr);
  // The reference backend's naive kernel with its accumulator in the input
  // dtype, registered as its own op so that nothing outside the backend
  // includes its headers.
  const Registry& reg = Registry::get();
  static const OpId op = reg.op_id("softmax_attention_same_dtype");
  const BackendId ref = reg.resolve_backend("harness", "reference", Device::cpu());
  reg.find(op, ref, dt, a).run(a);
  return r;
}

}  // namespace

bool CaseReport::all_pass() const {
  return std::all_of(results.begin(), results.end(), [](const BackendResult& r) { return r.pass; });
}

std::string BackendResult::summary() const {
  std::ostringstream os;
  os << (pass ? "PASS " : "FAIL ") << backend << " [" << kernel << "]";
  if (!error.empty()) {
    os << " error: " << error;
    return os.str();
  }
  os << " max_abs=" << max_abs_err << " (tol " << tol_abs << ") rel_fro=" << rel_fro_err << " (tol "
     << tol_rel_fro << ") lse_abs=" << lse_max_abs_err << " (tol " << tol_lse
     << ") nan_mismatch=" << nan_mismatch << " inf_mismatch=" << inf_mismatch
     << " guard=" << (guard_intact ? "ok" : "BROKEN")
     << " written=" << (fully_written ? "all" : "NOT ALL");
  return os.str();
}

std::string CaseReport::summary() const {
  std::ostringstream os;
  os << description << "\n  naive same-dtype error: rel_fro=" << naive_rel_fro
     << " max_abs=" << naive_max_abs << " lse_abs=" << naive_lse_abs;
  for (const BackendResult& r : results) os << "\n  " << r.summary();
  return os.str();
}

CaseReport run_attention_case(const AttentionCase& c, const std::vector<ExtraRunner>& extra) {
  const CaseInputs in = detail::plan_case_inputs(c);
  CaseReport rep;
  rep.description = c.describe();

  // Reference: f64, contiguous copies, reference backend.
  const Tensor hq = detail::view_of(in.q, in.buffers);
  const Tensor hk = detail::view_of(in.k, in.buffers);
  const Tensor hv = detail::view_of(in.v, in.buffers);
  const Tensor hmask = in.mask ? detail::view_of(*in.mask, in.buffers) : Tensor();
  AttentionOptions ref_opt = in.options;
  ref_opt.backend = "reference";
  if (hmask.defined()) {
    ref_opt.mask =
        contiguous_copy(hmask, hmask.dtype() == DType::boolean ? DType::boolean : DType::f64);
  }
  // Through the public op and the registry, like every backend under test.
  const Tensor ref_out_t = Tensor::empty(in.out_shape, DType::f64);
  const Tensor ref_lse_t = Tensor::empty(in.lse_shape, DType::f64);
  softmax_attention_out(ref_out_t, contiguous_copy(hq, DType::f64), contiguous_copy(hk, DType::f64),
                        contiguous_copy(hv, DType::f64), ref_opt, ref_lse_t);
  const std::vector<double> ref_out = ref_out_t.to_vector<double>();
  const std::vector<double> ref_lse = ref_lse_t.to_vector<double>();

  // Tolerances. A correct kernel in dtype T differs from the f64 reference by
  // rounding only, of the same order as a naive computation carried out
  // entirely in T (scores, softmax and P V all in T). We measure that naive
  // error on this very case and allow 3x it (FlashAttention's tests allow 2x
  // plus an output-rounding term; PyTorch's SDPA tests similar multiples),
  // plus a floor for cases where the naive computation happens to be (near)
  // exact, e.g. N = 1 or rows all masked: tolerance_floor() of the output's
  // and the lse's own dtype (lse is f32 for f16/bf16), relative to their
  // magnitude: far under any indexing or masking bug (O(1) errors).
  // Large logits (input_scale) are ill-conditioned in any algorithm in T:
  // every rounding of a score s perturbs exp(s) by ~eps * |s|; the naive
  // error grows with them and so does the bound. A streaming kernel rounds a
  // score about three times (scale, running max, exp2 folding) where the
  // naive one rounds it once, hence the factor 3 rather than 2.
  AttentionOptions naive_opt = in.options;
  naive_opt.mask = hmask;
  const AttentionResult naive = naive_same_dtype(hq, hk, hv, naive_opt);
  const ErrorStats nd = compare_values(naive.out.to_vector<double>(), ref_out);
  const ErrorStats nl = compare_values(naive.lse.to_vector<double>(), ref_lse);
  rep.naive_rel_fro = nd.rel_fro;
  rep.naive_max_abs = nd.max_abs;
  rep.naive_lse_abs = nl.max_abs;
  const DType lse_dt = strata::detail::lse_dtype(c.dtype);  // f32 for f16/bf16
  const double floor = tolerance_floor(c.dtype), lse_floor = tolerance_floor(lse_dt);
  const double tol_rel = 3 * nd.rel_fro + floor;
  const double tol_abs = 3 * nd.max_abs + floor * std::max(1.0, max_abs_finite(ref_out));
  const double tol_lse = 3 * nl.max_abs + lse_floor * std::max(1.0, max_abs_finite(ref_lse));

  // Each registry backend (extra_runner == nullptr), then each extra runner.
  detail::run_each_backend(
      rep.results, extra, [&](BackendResult& r, Device dev, const ExtraRunner* extra_runner) {
        r.tol_rel_fro = tol_rel;
        r.tol_abs = tol_abs;
        r.tol_lse = tol_lse;
        std::vector<Tensor> bufs;
        for (const Tensor& b : in.buffers) bufs.push_back(b.to(dev));
        const Tensor q = detail::view_of(in.q, bufs);
        const Tensor k = detail::view_of(in.k, bufs);
        const Tensor v = detail::view_of(in.v, bufs);
        AttentionOptions opt = in.options;
        opt.backend = extra_runner ? "auto" : r.backend;
        if (in.mask) opt.mask = detail::view_of(*in.mask, bufs);

        const GuardedOutput go = make_guarded_output(output_spec(in, c, false), c.dtype);
        Tensor out_buf;
        const Tensor out = go.make_view(dev, &out_buf);
        GuardedOutput gl;
        Tensor lse_buf, lse;
        if (c.with_lse) {
          gl = make_guarded_output(output_spec(in, c, true), lse_dt);
          lse = gl.make_view(dev, &lse_buf);
        }

        if (extra_runner) {
          r.kernel = "extra";
          extra_runner->run(out, q, k, v, opt, lse);
        } else {
          r.kernel = softmax_attention_kernel(q, k, v, opt);
          softmax_attention_out(out, q, k, v, opt, lse);
        }

        const GuardedRead co = read_guarded_output(out_buf, go.spec, c.dtype);
        const ErrorStats d = compare_values(co.values, ref_out);
        r.max_abs_err = d.max_abs;
        r.rel_fro_err = d.rel_fro;
        r.nan_mismatch = d.nan_mismatch;
        r.inf_mismatch = d.inf_mismatch;
        r.guard_intact = co.guard_intact;
        r.fully_written = co.fully_written;
        if (c.with_lse) {
          const GuardedRead cl = read_guarded_output(lse_buf, gl.spec, lse_dt);
          const ErrorStats dl = compare_values(cl.values, ref_lse);
          r.lse_max_abs_err = dl.max_abs;
          r.nan_mismatch += dl.nan_mismatch;
          r.inf_mismatch += dl.inf_mismatch;
          r.guard_intact = r.guard_intact && cl.guard_intact;
          r.fully_written = r.fully_written && cl.fully_written;
        }
        r.pass = r.nan_mismatch == 0 && r.inf_mismatch == 0 && r.guard_intact && r.fully_written &&
                 r.max_abs_err <= tol_abs && r.rel_fro_err <= tol_rel &&
                 r.lse_max_abs_err <= tol_lse;
      });
  return rep;
}

}  // namespace strata::harness
