#pragma once
// A fused optimizer update (adamw_step_ / sgd_step_) run on one backend and
// on the reference from the same seeded lists, step after step, and every
// tensor it writes (params, state, masters) compared: the cpu suite
// (test_nn_optim_fused.cpp) and the cuda one (cuda/test_cuda_optim.cpp)
// share it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/elementwise.hpp"
#include "strata/optim_ops.hpp"

namespace optim_test {

using namespace strata;

struct Case {
  DType param = DType::f32, grad = DType::f32;
  bool master = false;
  bool adamw = true;
  double momentum = 0.9, dampening = 0.0;  // SGD
  bool nesterov = false;
  std::vector<Shape> shapes;
  // > 0: every odd-numbered tensor of every list is a view `offset`
  // elements into a larger buffer (contiguous, but not aligned as its own
  // allocation is), the others fresh tensors.
  std::int64_t offset = 0;
  double grad_scale = 1.0;
};

// Everything one call reads and writes, on one device.
struct Lists {
  std::vector<Tensor> params, grads, s0, s1, masters;
};

inline DType state_of(DType p) { return p == DType::f64 ? DType::f64 : DType::f32; }

inline Tensor seeded(const Shape& s, std::uint64_t seed, DType dt, Device dev, double scale,
                     bool positive = false) {
  std::vector<double> v = Tensor::randn(s, seed, DType::f64).to_vector<double>();
  for (double& x : v) x = (positive ? std::abs(x) : x) * scale;
  return Tensor::from_vector(v, s).to(dt).to(dev);
}

// t's values in a view `offset` elements into a buffer of its dtype on its
// device (t itself when offset is 0).
inline Tensor at_offset(const Tensor& t, std::int64_t offset) {
  if (offset == 0) return t;
  Tensor buf = Tensor::zeros({t.numel() + offset}, t.dtype(), t.device());
  Tensor view = buf.narrow(0, offset, t.numel()).reshape(t.shape());
  view.copy_from(t);
  return view;
}

inline Lists make_lists(const Case& c, Device dev) {
  Lists l;
  const DType st = state_of(c.param);
  for (std::size_t i = 0; i < c.shapes.size(); ++i) {
    const Shape& s = c.shapes[i];
    const std::uint64_t seed = 100 + 10 * i;
    const std::int64_t off = i % 2 == 1 ? c.offset : 0;
    l.params.push_back(at_offset(seeded(s, seed, c.param, dev, 0.5), off));
    l.grads.push_back(at_offset(seeded(s, seed + 1, c.grad, dev, 1.0), off));
    if (c.adamw || c.momentum != 0)
      l.s0.push_back(at_offset(seeded(s, seed + 2, st, dev, 0.1), off));
    if (c.adamw) l.s1.push_back(at_offset(seeded(s, seed + 3, st, dev, 0.01, true), off));
    if (c.master) l.masters.push_back(at_offset(l.params.back().to(DType::f32).clone(), off));
  }
  return l;
}

// The case's update of step `step` (1-based) on l's grads as they are, with
// gradient scale `grad_scale`.
inline void update(const Case& c, Lists& l, int step, double grad_scale, const OpOptions& o) {
  if (c.adamw) {
    AdamWStep s;
    s.lr = 1e-2 * step;
    s.beta1 = 0.8;
    s.beta2 = 0.95;
    s.eps = 1e-6;
    s.weight_decay = 0.1;
    s.step = step;
    s.grad_scale = grad_scale;
    adamw_step_(l.params, l.grads, l.s0, l.s1, l.masters, s, o);
  } else {
    SGDStep s;
    s.lr = 0.05;
    s.momentum = c.momentum;
    s.dampening = c.dampening;
    s.nesterov = c.nesterov;
    s.weight_decay = 0.05;
    s.first_step = step == 1;
    s.grad_scale = grad_scale;
    sgd_step_(l.params, l.grads, l.s0, l.masters, s, o);
  }
}

// Step `step` (1-based) of the case on backend `be`; new grads each step.
inline void run_step(const Case& c, Lists& l, int step, const char* be) {
  for (std::size_t i = 0; i < l.grads.size(); ++i)
    l.grads[i].copy_from(seeded(c.shapes[i], 1000 * step + i, c.grad, Device::cpu(), 1.0));
  update(c, l, step, c.grad_scale, ops_test::on(be));
}

// Tolerances against the f64 reference: the kernels compute in f32 (f64 for
// f64 params); a 16-bit param may round one ulp apart.
inline void require_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                          const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const DType dt = got[i].dtype();
    const double rtol = ops_test::per_dtype(dt, 1e-12, 2e-5, 1e-3, 8e-3, 0);
    const double atol = ops_test::per_dtype(dt, 1e-14, 1e-6, 1e-4, 1e-3, 0);
    const std::vector<double> g = got[i].to(Device::cpu()).to_vector<double>();
    const std::vector<double> w = want[i].to(Device::cpu()).to_vector<double>();
    const std::size_t bad = ops_test::first_out_of_tolerance(g, w, atol, rtol);
    INFO(what << "[" << i << "] (" << dtype_name(dt) << ") element " << bad << ": "
              << (bad < g.size() ? g[bad] : 0.0) << " vs reference "
              << (bad < g.size() ? w[bad] : 0.0));
    CHECK(bad == g.size());
  }
}

// Runs three steps of c on `be` (tensors on dev) and on the reference, and
// compares everything written after each step; each step starts from the
// reference's values (a 16-bit param one ulp apart would otherwise feed
// the next step's decay and momentum). A master's param must be the master
// rounded, bit for bit.
inline void check_against_reference(const Case& c, const char* be, Device dev) {
  Lists ref = make_lists(c, Device::cpu()), got = make_lists(c, dev);
  for (int step = 1; step <= 3; ++step) {
    INFO("step " << step);
    run_step(c, ref, step, "reference");
    run_step(c, got, step, be);
    require_close(got.params, ref.params, "params");
    require_close(got.s0, ref.s0, "state0");
    require_close(got.s1, ref.s1, "state1");
    require_close(got.masters, ref.masters, "masters");
    for (std::size_t i = 0; i < got.masters.size(); ++i) {
      const Tensor rounded = got.masters[i].to(Device::cpu()).to(c.param);
      CHECK(rounded.to_vector<double>() == got.params[i].to(Device::cpu()).to_vector<double>());
    }
    for (auto [g, r] : {std::pair{&got.params, &ref.params}, std::pair{&got.s0, &ref.s0},
                        std::pair{&got.s1, &ref.s1}, std::pair{&got.masters, &ref.masters}})
      for (std::size_t i = 0; i < g->size(); ++i) (*g)[i].copy_from((*r)[i]);
  }
}

// Element for element equal (sizes too), without printing whole tensors on
// a failure: the first index that differs.
inline void require_equal(const Tensor& got, const Tensor& want, const char* what) {
  const std::vector<double> g = got.to(Device::cpu()).to_vector<double>();
  const std::vector<double> w = want.to(Device::cpu()).to_vector<double>();
  REQUIRE(g.size() == w.size());
  const std::size_t bad = ops_test::first_out_of_tolerance(g, w, 0.0, 0.0);
  INFO(what << " element " << bad << ": " << (bad < g.size() ? g[bad] : 0.0) << " vs "
            << (bad < g.size() ? w[bad] : 0.0));
  CHECK(bad == g.size());
}

// Bit for bit: the update with c.grad_scale equals mul_out(g, g,
// grad_scale) on the same backend followed by the update without one, and
// leaves the gradients as they were. Three steps from the same lists.
inline void check_grad_scale(Case c, const char* be, Device dev) {
  const double scale = c.grad_scale;
  Lists fused = make_lists(c, dev), separate = make_lists(c, dev);
  for (int step = 1; step <= 3; ++step) {
    INFO("step " << step);
    c.grad_scale = scale;
    run_step(c, fused, step, be);
    c.grad_scale = 1.0;
    for (std::size_t i = 0; i < separate.grads.size(); ++i) {
      separate.grads[i].copy_from(seeded(c.shapes[i], 1000 * step + i, c.grad, Device::cpu(), 1.0));
      require_equal(fused.grads[i], separate.grads[i], "grads (not written)");
    }
    // The separate form: the step's grads scaled by mul_out on the same
    // backend, then the update without a scale.
    Lists scaled = separate;
    const OpOptions o = ops_test::on(be);
    for (std::size_t i = 0; i < scaled.grads.size(); ++i) {
      scaled.grads[i] = seeded(c.shapes[i], 1000 * step + i, c.grad, dev, 1.0);
      mul_out(scaled.grads[i], scaled.grads[i], scale, o);
    }
    update(c, scaled, step, 1.0, o);
    for (auto [a, b] :
         {std::pair{&fused.params, &separate.params}, std::pair{&fused.s0, &separate.s0},
          std::pair{&fused.s1, &separate.s1}, std::pair{&fused.masters, &separate.masters}})
      for (std::size_t i = 0; i < a->size(); ++i) {
        INFO("tensor " << i);
        require_equal((*a)[i], (*b)[i], "fused against separate");
      }
  }
}

// The cases every backend runs: each rule on each param dtype, with and
// without masters, 16-bit grads and f32 grads, tensors of several chunks
// and of none.
inline std::vector<Case> standard_cases(const std::vector<Shape>& shapes) {
  std::vector<Case> cases;
  for (const bool adamw : {true, false}) {
    for (const DType p : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      const bool low = p == DType::bf16 || p == DType::f16;
      for (const bool master : {false, true}) {
        if (master && !low) continue;
        for (const DType g : {p, DType::f32}) {
          if (g == DType::f32 && !low) continue;
          Case c;
          c.param = p;
          c.grad = g;
          c.master = master;
          c.adamw = adamw;
          c.shapes = shapes;
          cases.push_back(c);
        }
      }
    }
  }
  for (const bool nesterov : {false, true}) {  // SGD's other forms, f32
    Case c;
    c.adamw = false;
    c.nesterov = nesterov;
    c.dampening = nesterov ? 0.0 : 0.3;
    c.shapes = shapes;
    cases.push_back(c);
  }
  Case plain;  // SGD without momentum: no buffers
  plain.adamw = false;
  plain.momentum = 0;
  plain.shapes = shapes;
  cases.push_back(plain);
  return cases;
}

inline std::string describe(const Case& c) {
  std::string d = c.adamw ? "adamw" : "sgd";
  d += " param ";
  d += dtype_name(c.param);
  d += " grad ";
  d += dtype_name(c.grad);
  if (c.master) d += " master";
  if (c.nesterov) d += " nesterov";
  if (!c.adamw) d += " momentum " + std::to_string(c.momentum);
  if (c.offset != 0) d += " offset " + std::to_string(c.offset);
  if (c.grad_scale != 1.0) d += " grad_scale " + std::to_string(c.grad_scale);
  return d;
}

}  // namespace optim_test
