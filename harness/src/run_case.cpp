// Runs one AttentionCase on every available backend and compares each with
// the reference backend run in f64 on contiguous copies of the same inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "case_inputs.hpp"
#include "reference/attention_reference.hpp"
#include "strata/detail/attention_plan.hpp"
#include "strata/registry.hpp"

namespace strata::harness {
namespace {

using detail::BufferView;
using detail::CaseInputs;
using detail::ViewSpec;

// Output buffers: a sentinel everywhere (guard regions before and after the
// view and in its gaps), a NaN with a recognisable payload at every element
// of the view. Both are compared bit for bit afterwards.
constexpr std::int64_t kGuard = 19;
constexpr double kSentinel = -31337.25;           // exact in f32 and f64
constexpr std::uint32_t kPoison32 = 0x7FE1B2C3u;  // quiet NaN, unusual payload
constexpr std::uint64_t kPoison64 = 0x7FFC1B2C3D4E5F60ull;

struct GuardedOutput {
  ViewSpec spec;  // offset includes the leading guard
  Tensor host;    // the initial host buffer
};

GuardedOutput make_guarded(ViewSpec spec, DType dt) {
  spec.offset += kGuard;
  spec.buffer_numel += 2 * kGuard;
  GuardedOutput g{spec, Tensor::empty({spec.buffer_numel}, dt, Device::cpu())};
  char* base = static_cast<char*>(g.host.data_ptr());
  for (std::int64_t i = 0; i < spec.buffer_numel; ++i) {
    store_from_double(base + i * itemsize(dt), dt, kSentinel);
  }
  for (std::int64_t p : detail::positions(spec)) {
    if (dt == DType::f32) {
      std::memcpy(base + p * 4, &kPoison32, 4);
    } else {
      std::memcpy(base + p * 8, &kPoison64, 8);
    }
  }
  return g;
}

bool is_poison(const char* p, DType dt) {
  if (dt == DType::f32) {
    std::uint32_t b;
    std::memcpy(&b, p, 4);
    return b == kPoison32;
  }
  std::uint64_t b;
  std::memcpy(&b, p, 8);
  return b == kPoison64;
}

bool is_sentinel(const char* p, DType dt) {
  if (dt == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f == static_cast<float>(kSentinel);
  }
  double f;
  std::memcpy(&f, p, 8);
  return f == kSentinel;
}

struct Checked {
  std::vector<double> values;  // logical row-major order
  bool guard_intact = true;
  bool fully_written = true;
};

// Reads back a guarded output buffer (any device) and checks it.
Checked read_guarded(const Tensor& dev_buffer, const ViewSpec& spec, DType dt) {
  const Tensor host = dev_buffer.to(Device::cpu());
  const char* base = static_cast<const char*>(host.data_ptr());
  const std::size_t isz = itemsize(dt);
  const std::vector<std::int64_t> pos = detail::positions(spec);
  std::vector<char> covered(static_cast<std::size_t>(spec.buffer_numel), 0);
  Checked c;
  c.values.reserve(pos.size());
  for (std::int64_t p : pos) {
    covered[p] = 1;
    if (is_poison(base + p * isz, dt)) c.fully_written = false;
    c.values.push_back(load_as_double(base + p * isz, dt));
  }
  for (std::int64_t i = 0; i < spec.buffer_numel; ++i) {
    if (!covered[i] && !is_sentinel(base + i * isz, dt)) c.guard_intact = false;
  }
  return c;
}

double max_abs_finite(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) {
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  }
  return m;
}

// A fresh contiguous f64 (or bool) host copy of a view's logical values.
Tensor contiguous_copy(const Tensor& t, DType dt) {
  Tensor flat = detail::host_tensor(t.to_vector<double>(), dt);
  return flat.as_strided(t.shape(), detail::row_major_strides(t.shape()), 0);
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

// The same computation as the reference but accumulating in the case's own
// dtype: what a naive implementation in that precision achieves.
AttentionResult naive_same_dtype(const Tensor& q, const Tensor& k, const Tensor& v,
                                 AttentionOptions opt) {
  opt.backend = "reference";
  const strata::detail::AttentionPlan p = strata::detail::plan_attention("harness", q, k, v, opt);
  AttentionResult r{Tensor::empty(p.out_shape, q.dtype()), Tensor::empty(p.lse_shape, q.dtype())};
  if (p.empty_output()) return r;
  const AttentionArgs a = strata::detail::make_attention_args(p, r.out, r.lse, q, k, v, nullptr);
  if (q.dtype() == DType::f32) {
    reference::attention<float, float>(a);
  } else {
    reference::attention<double, double>(a);
  }
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
  const AttentionResult ref =
      softmax_attention_lse(contiguous_copy(hq, DType::f64), contiguous_copy(hk, DType::f64),
                            contiguous_copy(hv, DType::f64), ref_opt);
  const std::vector<double> ref_out = ref.out.to_vector<double>();
  const std::vector<double> ref_lse = ref.lse.to_vector<double>();

  // Tolerances. A correct kernel in dtype T differs from the f64 reference by
  // rounding only, of the same order as a naive computation carried out
  // entirely in T (scores, softmax and P V all in T). We measure that naive
  // error on this very case and allow 3x it (FlashAttention's tests allow 2x
  // plus an output-rounding term; PyTorch's SDPA tests similar multiples),
  // plus a floor for cases where the naive computation happens to be (near)
  // exact, e.g. N = 1 or rows all masked. The floors are ~8 ulp of f32
  // (eps = 1.2e-7) and ~4500 ulp of f64, relative to the output's magnitude:
  // far under any indexing or masking bug, which shows up as O(1) errors.
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
  const double floor = c.dtype == DType::f32 ? 1e-6 : 1e-12;
  const double tol_rel = 3 * nd.rel_fro + floor;
  const double tol_abs = 3 * nd.max_abs + floor * std::max(1.0, max_abs_finite(ref_out));
  const double tol_lse = 3 * nl.max_abs + floor * std::max(1.0, max_abs_finite(ref_lse));

  // Runs one registry backend (extra_runner == nullptr) or one extra runner.
  auto run_one = [&](const std::string& name, Device dev, const ExtraRunner* extra_runner) {
    BackendResult r;
    r.backend = name;
    r.tol_rel_fro = tol_rel;
    r.tol_abs = tol_abs;
    r.tol_lse = tol_lse;
    try {
      std::vector<Tensor> bufs;
      for (const Tensor& b : in.buffers) bufs.push_back(b.to(dev));
      const Tensor q = detail::view_of(in.q, bufs);
      const Tensor k = detail::view_of(in.k, bufs);
      const Tensor v = detail::view_of(in.v, bufs);
      AttentionOptions opt = in.options;
      opt.backend = extra_runner ? "auto" : name;
      if (in.mask) opt.mask = detail::view_of(*in.mask, bufs);

      const GuardedOutput go = make_guarded(output_spec(in, c, false), c.dtype);
      const Tensor out_buf = go.host.to(dev).clone();  // never share the host original
      const Tensor out = out_buf.as_strided(go.spec.shape, go.spec.strides, go.spec.offset);
      GuardedOutput gl;
      Tensor lse_buf, lse;
      if (c.with_lse) {
        gl = make_guarded(output_spec(in, c, true), c.dtype);
        lse_buf = gl.host.to(dev).clone();
        lse = lse_buf.as_strided(gl.spec.shape, gl.spec.strides, gl.spec.offset);
      }

      if (extra_runner) {
        r.kernel = "extra";
        extra_runner->run(out, q, k, v, opt, lse);
      } else {
        r.kernel = softmax_attention_kernel(q, k, v, opt);
        softmax_attention_out(out, q, k, v, opt, lse);
      }

      const Checked co = read_guarded(out_buf, go.spec, c.dtype);
      const ErrorStats d = compare_values(co.values, ref_out);
      r.max_abs_err = d.max_abs;
      r.rel_fro_err = d.rel_fro;
      r.nan_mismatch = d.nan_mismatch;
      r.inf_mismatch = d.inf_mismatch;
      r.guard_intact = co.guard_intact;
      r.fully_written = co.fully_written;
      if (c.with_lse) {
        const Checked cl = read_guarded(lse_buf, gl.spec, c.dtype);
        const ErrorStats dl = compare_values(cl.values, ref_lse);
        r.lse_max_abs_err = dl.max_abs;
        r.nan_mismatch += dl.nan_mismatch;
        r.inf_mismatch += dl.inf_mismatch;
        r.guard_intact = r.guard_intact && cl.guard_intact;
        r.fully_written = r.fully_written && cl.fully_written;
      }
      r.pass = r.nan_mismatch == 0 && r.inf_mismatch == 0 && r.guard_intact && r.fully_written &&
               r.max_abs_err <= tol_abs && r.rel_fro_err <= tol_rel && r.lse_max_abs_err <= tol_lse;
    } catch (const std::exception& e) {
      r.error = e.what();
      r.pass = false;
    }
    rep.results.push_back(std::move(r));
  };

  for (const BackendInfo& info : Registry::get().backends()) {
    if (!info.compiled || !info.available) continue;
    run_one(info.name, info.device == DeviceType::cpu ? Device::cpu() : Device{info.device, 0},
            nullptr);
  }
  for (const ExtraRunner& x : extra) run_one(x.name, x.device, &x);
  return rep;
}

}  // namespace strata::harness
