// The gradient runner (strata/op_harness.hpp: run_grad_case): an op's
// backward on every backend and layout against the reference backend's in
// f64, and the reference's against central finite differences.
#include <cmath>
#include <sstream>

#include "case_inputs.hpp"
#include "op_inputs.hpp"
#include "strata/autograd.hpp"
#include "strata/registry.hpp"

namespace strata::harness {
namespace {

using detail::contiguous_copy;

OpOutput output_of(const OpDescriptor& d, const std::vector<Tensor>& in, DType dt) {
  return d.output ? d.output(in, dt) : OpOutput{in.at(0).shape(), dt};
}

// The inputs' gradients of sum(out * g) for op d on `in`, run on `backend`
// into an output in layout `out_spec` (host tensors, f64, logical order).
std::vector<std::vector<double>> gradients(const OpDescriptor& d, const std::vector<Tensor>& in,
                                           const std::vector<std::size_t>& wrt, const Tensor& g,
                                           const ViewSpec& out_spec, const std::string& backend) {
  OpOptions opt;
  opt.backend = backend;
  const Device dev = in.at(0).device();
  const Tensor buffer = Tensor::zeros({out_spec.buffer_numel}, g.dtype(), dev);
  const Tensor out = buffer.as_strided(out_spec.shape, out_spec.strides, out_spec.offset);
  autograd::Tape tape;
  for (std::size_t i : wrt) tape.watch(in[i]);
  d.run(out, in, opt);
  tape.backward(out, g.to(dev), opt);
  std::vector<std::vector<double>> grads;
  for (std::size_t i : wrt) grads.push_back(tape.grad(in[i]).to_vector<double>());
  return grads;
}

// sum(op(in) * g) in f64 on the reference backend (finite differences).
double loss_of(const OpDescriptor& d, const std::vector<Tensor>& in, const Tensor& g) {
  OpOptions opt;
  opt.backend = "reference";
  const Tensor out = Tensor::zeros(g.shape(), DType::f64, Device::cpu());
  d.run(out, in, opt);
  const std::vector<double> o = out.to_vector<double>(), gv = g.to_vector<double>();
  double s = 0;
  for (std::size_t i = 0; i < o.size(); ++i) s += o[i] * gv[i];
  return s;
}

// The reference gradient as a view in `spec` reads it: summed over the
// spec's broadcast (stride 0) dims, and repeated along them.
std::vector<double> as_seen_through(const std::vector<double>& ref, const ViewSpec& spec) {
  const Shape& shape = spec.shape;
  std::vector<double> out = ref;
  if (out.empty()) return out;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (spec.strides[d] != 0 || shape[d] <= 1) continue;
    std::int64_t inner = 1;
    for (std::size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    const std::int64_t n = shape[d], outer = static_cast<std::int64_t>(out.size()) / (n * inner);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        double s = 0;
        for (std::int64_t j = 0; j < n; ++j) s += out[(o * n + j) * inner + i];
        for (std::int64_t j = 0; j < n; ++j) out[(o * n + j) * inner + i] = s;
      }
  }
  return out;
}

// dt: the coarser of the case's and the output's dtype (the upstream
// gradient arrives rounded to the output's).
void compare(GradCaseReport& r, const std::string& who, const std::string& input,
             const std::vector<double>& got, const std::vector<double>& ref, DType dt,
             const Tolerance& tol) {
  double scale = 0;
  for (double x : ref) scale = std::max(scale, std::abs(x));
  if (scale == 0) scale = 1;
  const double eps = dtype_eps(dt);
  const double eps_c = dt == DType::f64 ? eps : dtype_eps(DType::f32);
  // A backward chains a few ops (each rounding to dt): 8x the forward's bound.
  const double ulps = 8 * tol.ulps, floor = 8 * tol.floor_ulps * (eps + tol.growth * eps_c) * scale;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double bound = ulps * eps * std::abs(ref[i]) + floor;
    if (std::abs(got[i] - ref[i]) <= bound) continue;  // NaN fails here too
    std::ostringstream os;
    os << who << ": d/d" << input << "[" << i << "] = " << got[i] << ", reference " << ref[i]
       << " (bound " << bound << ")";
    r.failures.push_back(os.str());
    return;
  }
}

}  // namespace

std::string GradCaseReport::summary() const {
  std::ostringstream os;
  os << op << " [" << description << "]: "
     << (skipped() ? "skipped (" + skip_reason + ")"
         : pass()  ? "pass"
                   : "FAIL");
  for (const std::string& f : failures) os << "\n  " << f;
  return os.str();
}

bool grad_case_takes_finite_differences(const OpDescriptor& d, DType dt, OpLayout layout) {
  std::int64_t numel = 0;
  for (const InputSpec& in : d.inputs) numel += shape_numel(in.shape);
  return dt == DType::f64 && layout == OpLayout::contiguous && numel <= 1536;
}

GradCaseReport run_grad_case(const OpDescriptor& d, DType dt, OpLayout layout, std::uint64_t seed,
                             bool finite_differences) {
  GradCaseReport r;
  r.op = d.name;
  r.description = std::string(dtype_name(dt)) + ", " + std::string(op_layout_name(layout));
  const detail::Planned p = detail::plan_inputs(d, dt, layout, seed);
  const std::vector<Tensor> host = detail::views_of(p, Device::cpu());
  std::vector<std::size_t> wrt;
  for (std::size_t i = 0; i < host.size(); ++i)
    if (is_floating(p.dtypes[i])) wrt.push_back(i);
  const OpOutput o = output_of(d, host, dt);
  if (wrt.empty() || !is_floating(o.dtype)) {
    r.skip_reason = "no floating input or output";
    return r;
  }
  // The reference: f64, contiguous copies, contiguous output.
  std::vector<Tensor> ref_in;
  for (std::size_t i = 0; i < host.size(); ++i)
    ref_in.push_back(contiguous_copy(host[i], is_floating(p.dtypes[i]) ? DType::f64 : p.dtypes[i]));
  const std::int64_t n_out = shape_numel(o.shape);
  const Tensor g64 =
      n_out == 0 ? Tensor::zeros(o.shape, DType::f64)
                 : detail::host_tensor(detail::randn_values(n_out, seed ^ 0x9e37), DType::f64)
                       .reshape(o.shape);
  std::vector<std::vector<double>> ref;
  try {
    ref = gradients(d, ref_in, wrt, g64, detail::contiguous_spec(o.shape), "reference");
  } catch (const Error& e) {
    r.skip_reason = std::string("reference: ") + e.what();
    return r;
  }
  const Tolerance tol = d.tolerance ? d.tolerance(dt) : Tolerance{};
  if (finite_differences) {
    for (std::size_t w = 0; w < wrt.size(); ++w) {
      const Tensor x = ref_in[wrt[w]];
      std::vector<double> fd;
      for (std::int64_t e = 0; e < x.numel(); ++e) {
        const Tensor flat = x.reshape({-1});
        const double v = flat.item({e}), h = 1e-6 * std::max(1.0, std::abs(v));
        flat.set_item({e}, v + h);
        const double up = loss_of(d, ref_in, g64);
        flat.set_item({e}, v - h);
        const double down = loss_of(d, ref_in, g64);
        flat.set_item({e}, v);
        fd.push_back((up - down) / (2 * h));
      }
      // Central differences carry h^2 and cancellation errors: 1e-5 of the
      // largest gradient, or of the element, whichever is larger.
      double scale = 1;
      for (double v : fd) scale = std::max(scale, std::abs(v));
      for (std::size_t e = 0; e < fd.size(); ++e) {
        if (std::abs(ref[w][e] - fd[e]) <= 1e-5 * std::max(scale, std::abs(fd[e]))) continue;
        std::ostringstream os;
        os << "reference vs finite differences: d/d" << d.inputs[wrt[w]].name << "[" << e
           << "] = " << ref[w][e] << ", differences give " << fd[e];
        r.failures.push_back(os.str());
        break;
      }
    }
  }
  const ViewSpec out_spec = d.output_follows_layout ? layout_spec(o.shape, layout, true)
                                                    : detail::contiguous_spec(o.shape);
  for (const BackendInfo& b : Registry::get().backends()) {
    if (!b.compiled || !b.available) continue;
    const Device dev = b.device == DeviceType::cpu ? Device::cpu() : Device::cuda(0);
    try {
      const std::vector<Tensor> in = detail::views_of(p, dev);
      const auto got = gradients(d, in, wrt, g64.to(o.dtype), out_spec, b.name);
      for (std::size_t w = 0; w < wrt.size(); ++w)
        compare(r, b.name, d.inputs[wrt[w]].name, got[w], as_seen_through(ref[w], p.specs[wrt[w]]),
                dtype_eps(o.dtype) > dtype_eps(dt) ? o.dtype : dt, tol);
    } catch (const Error& e) {
      r.failures.push_back(b.name + ": " + e.what());
    }
  }
  return r;
}

}  // namespace strata::harness
