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

  // Tolerances: the harness's rule (attention_tolerance.cpp), from a naive
  // computation in the case's dtype on the case's own inputs and mask.
  AttentionOptions naive_opt = in.options;
  naive_opt.mask = hmask;
  const AttentionTolerance tol = attention_tolerance(hq, hk, hv, naive_opt, ref_out_t, ref_lse_t);
  rep.naive_rel_fro = tol.naive_rel_fro;
  rep.naive_max_abs = tol.naive_max_abs;
  rep.naive_lse_abs = tol.naive_lse_abs;
  const double tol_rel = tol.rel_fro, tol_abs = tol.max_abs, tol_lse = tol.lse_abs;
  const DType lse_dt = strata::detail::lse_dtype(c.dtype);  // f32 for f16/bf16

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
