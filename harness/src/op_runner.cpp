// The generic op runner (strata/op_harness.hpp): one descriptor, dtype and
// layout on every available backend against the reference backend in f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "case_inputs.hpp"
#include "each_backend.hpp"
#include "op_inputs.hpp"
#include "strata/registry.hpp"

namespace strata::harness {
namespace {

using detail::plan_inputs;
using detail::Planned;
using detail::views_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string spec_str(const ViewSpec& s) {
  std::ostringstream os;
  os << shape_str(s.shape) << " strides " << shape_str(s.strides) << " offset " << s.offset
     << " in " << s.buffer_numel;
  return os.str();
}

// Fill's values in order.
constexpr const char* kFillNames[] = {"normal", "positive",  "nonzero", "bool",
                                      "ids",    "positions", "ties",    "permutation"};
std::string fill_name(Fill f) { return kFillNames[static_cast<int>(f)]; }

Shape unravel(std::int64_t i, const Shape& shape) {
  Shape c(shape.size(), 0);
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0 && shape[d] > 0; --d) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

std::string kernels_of(const OpDescriptor& d, const std::string& backend, DType dt, DType out_dt) {
  std::string names;
  for (const std::string& op : d.registry_ops) {
    for (const KernelInfo& k : Registry::get().kernels(op)) {
      if (k.backend != backend || (k.dtype != dt && k.dtype != out_dt)) continue;
      if (names.find(k.name) != std::string::npos) continue;
      names += (names.empty() ? "" : ",") + k.name;
    }
  }
  return names;
}

// Registry ops of d that `backend` has no kernel for.
std::vector<std::string> missing_on(const OpDescriptor& d, const std::string& backend) {
  std::vector<std::string> missing;
  for (const std::string& op : d.registry_ops) {
    const std::vector<KernelInfo> ks = Registry::get().kernels(op);
    if (std::none_of(ks.begin(), ks.end(),
                     [&](const KernelInfo& k) { return k.backend == backend; }))
      missing.push_back(op);
  }
  return missing;
}

// Element-wise comparison of a result with the reference under the descriptor's bound.
void compare(OpBackendResult& r, const std::vector<double>& got, const std::vector<double>& ref,
             const Shape& shape, DType dt, DType out_dt, const Tolerance& tol) {
  const bool exact = !is_floating(out_dt);
  double scale = 0;
  for (double x : ref)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  if (scale == 0) scale = 1;
  const double eps_out = dtype_eps(out_dt);
  const double eps_c = dt == DType::f64 ? dtype_eps(DType::f64) : dtype_eps(DType::f32);
  const double floor = tol.floor_ulps * (eps_out + tol.growth * eps_c) * scale;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i], f = ref[i];
    double ratio = 0, bound = 0;
    if (std::isnan(g) || std::isnan(f)) {
      if (std::isnan(g) != std::isnan(f)) {
        ++r.nan_mismatch;
        ratio = std::numeric_limits<double>::infinity();
      }
    } else if (std::isinf(g) || std::isinf(f)) {
      if (g != f) {
        ++r.inf_mismatch;
        ratio = std::numeric_limits<double>::infinity();
      }
    } else {
      const double err = std::abs(g - f);
      r.max_abs_err = std::max(r.max_abs_err, err);
      bound = exact ? 0.0 : tol.ulps * eps_out * std::abs(f) + floor;
      if (err > bound) {
        ++r.over_tol;
        ratio = bound > 0 ? err / bound : std::numeric_limits<double>::infinity();
      } else {
        ratio = bound > 0 ? err / bound : 0.0;
      }
    }
    if (r.worst_index < 0 || ratio > r.worst_ratio) {
      r.worst_ratio = ratio;
      r.worst_index = static_cast<std::int64_t>(i);
      r.worst_got = g;
      r.worst_ref = f;
      r.worst_bound = bound;
    }
  }
  if (r.worst_index >= 0) r.worst_coord = unravel(r.worst_index, shape);
}

}  // namespace

std::string OpDescriptor::describe() const {
  std::ostringstream os;
  os << name << " (" << family << "):";
  for (const InputSpec& in : inputs) {
    os << ' ' << in.name << shape_str(in.shape) << ':'
       << (in.dtype ? std::string(dtype_name(*in.dtype)) : std::string("T")) << '/'
       << fill_name(in.fill);
    if (in.range) os << "<" << in.range;
    if (!in.follows_layout) os << "/contiguous";
  }
  os << "; T in {";
  for (std::size_t i = 0; i < dtypes.size(); ++i) os << (i ? "," : "") << dtype_name(dtypes[i]);
  os << "}";
  return os.str();
}

std::vector<std::string> unlanded_registry_ops(const OpDescriptor& d) {
  std::vector<std::string> missing;
  for (const std::string& op : d.registry_ops)
    if (Registry::get().kernels(op).empty()) missing.push_back(op);
  return missing;
}

bool OpCaseReport::all_pass() const {
  if (!error.empty()) return false;
  return std::all_of(results.begin(), results.end(),
                     [](const OpBackendResult& r) { return !r.checked || r.pass; });
}

std::string OpBackendResult::summary() const {
  std::ostringstream os;
  if (!checked) {
    os << "NOT CHECKED " << backend << ": " << skip_reason;
    return os.str();
  }
  os << (pass ? "PASS " : "FAIL ") << backend << " [" << kernels << "]";
  if (!error.empty()) {
    os << " error: " << error;
    return os.str();
  }
  os << " max_abs=" << max_abs_err << " over_tol=" << over_tol << " nan_mismatch=" << nan_mismatch
     << " inf_mismatch=" << inf_mismatch << " guard=" << (guard_intact ? "ok" : "BROKEN");
  if (!guard_intact) os << " (" << guard_hits << " elements)";
  os << " written=" << (fully_written ? "all" : "NOT ALL");
  if (!fully_written) os << " (" << unwritten << " unwritten)";
  if (worst_index >= 0) {
    os << " worst at " << shape_str(worst_coord) << ": got " << worst_got << " ref " << worst_ref
       << " bound " << worst_bound << " (err/bound " << worst_ratio << ")";
  }
  return os.str();
}

std::string OpCaseReport::summary() const {
  std::ostringstream os;
  os << description;
  if (!not_landed.empty()) {
    os << "\n  not checked: no kernel registered for";
    for (const std::string& s : not_landed) os << ' ' << s;
  }
  if (!error.empty()) os << "\n  error: " << error;
  for (const OpBackendResult& r : results) os << "\n  " << r.summary();
  return os.str();
}

OpCaseReport run_op_case(const OpDescriptor& d, DType dt, OpLayout layout, std::uint64_t seed,
                         const std::vector<OpExtraRunner>& extra) {
  OpCaseReport rep;
  rep.op = d.name;
  rep.dtype = dt;
  rep.layout = layout;
  rep.seed = seed;
  std::ostringstream desc;
  desc << d.describe() << " | dtype " << dtype_name(dt) << " layout " << op_layout_name(layout)
       << " seed " << seed;
  rep.not_landed = unlanded_registry_ops(d);
  if (!rep.not_landed.empty()) {
    rep.description = desc.str();
    return rep;
  }

  Planned p;
  OpOutput o{};
  ViewSpec out_spec;
  std::vector<double> ref;
  try {
    p = plan_inputs(d, dt, layout, seed);
    const std::vector<Tensor> host = views_of(p, Device::cpu());
    o = d.output ? d.output(host, dt) : OpOutput{host.at(0).shape(), dt};
    out_spec = d.output_follows_layout ? layout_spec(o.shape, layout, true)
                                       : detail::contiguous_spec(o.shape);
    for (std::size_t i = 0; i < host.size(); ++i)
      desc << "\n  " << d.inputs[i].name << ": " << dtype_name(p.dtypes[i]) << ' '
           << spec_str(p.specs[i]);
    desc << "\n  out: " << dtype_name(o.dtype) << ' ' << spec_str(out_spec);
    rep.description = desc.str();

    // The reference: the same public op on the reference backend, on
    // contiguous f64 copies of the case-dtype inputs (other dtypes as they are).
    std::vector<Tensor> ref_in;
    for (std::size_t i = 0; i < host.size(); ++i) {
      const bool widen = p.dtypes[i] == dt && is_floating(dt);
      ref_in.push_back(detail::contiguous_copy(host[i], widen ? DType::f64 : p.dtypes[i]));
    }
    const Tensor ref_out = Tensor::empty(o.shape, is_floating(o.dtype) ? DType::f64 : o.dtype);
    OpOptions ro;
    ro.backend = "reference";
    d.run(ref_out, ref_in, ro);
    ref = ref_out.to_vector<double>();
  } catch (const std::exception& e) {
    rep.description = desc.str();
    rep.error = std::string("reference: ") + e.what();
    return rep;
  }
  const Tolerance tol = d.tolerance ? d.tolerance(dt) : Tolerance{};

  detail::run_each_backend(
      rep.results, extra, [&](OpBackendResult& r, Device dev, const OpExtraRunner* x) {
        if (!x) {
          const std::vector<std::string> missing = missing_on(d, r.backend);
          if (!missing.empty()) {
            r.checked = false;
            r.skip_reason = "no kernel registered on this backend for";
            for (const std::string& m : missing) r.skip_reason += " " + m;
            return;
          }
          r.kernels = kernels_of(d, r.backend, dt, o.dtype);
        } else {
          r.kernels = "extra";
        }
        const std::vector<Tensor> in = views_of(p, dev);
        // Contiguous cases keep the output's data 16-byte aligned (a 64-element
        // lead), so vectorised fast paths run; every other layout leaves it off
        // alignment (19 elements), as a view into a caller's buffer can be.
        const GuardedOutput g = make_guarded_output(
            out_spec, o.dtype, layout == OpLayout::contiguous ? 64 : kGuardElements);
        Tensor buf;
        const Tensor out = g.make_view(dev, &buf);
        OpOptions opt;
        opt.backend = x ? "auto" : r.backend;
        if (x) {
          x->run(out, in, opt);
        } else {
          d.run(out, in, opt);
        }
        const GuardedRead gr = read_guarded_output(buf, g.spec, o.dtype);
        r.guard_intact = gr.guard_intact;
        r.fully_written = gr.fully_written;
        r.unwritten = gr.unwritten;
        r.guard_hits = gr.guard_hits;
        compare(r, gr.values, ref, o.shape, dt, o.dtype, tol);
        r.pass = r.guard_intact && r.fully_written && r.nan_mismatch == 0 && r.inf_mismatch == 0 &&
                 r.over_tol == 0;
      });
  return rep;
}

std::vector<OpCaseReport> run_op(const OpDescriptor& d, std::uint64_t seed,
                                 const std::vector<OpExtraRunner>& extra) {
  std::vector<OpCaseReport> reps;
  std::uint64_t k = 0;
  for (const DType dt : d.dtypes) {
    for (const OpLayout l : d.layouts) {
      reps.push_back(run_op_case(d, dt, l, seed * 1000 + k++, extra));
      if (!reps.back().checked()) return reps;  // the same for every dtype and layout
    }
  }
  return reps;
}

}  // namespace strata::harness
