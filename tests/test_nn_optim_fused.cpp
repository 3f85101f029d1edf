// The fused optimizer updates (strata/optim_ops.hpp) and mixed precision:
// adamw_step_ / sgd_step_ on every host backend against the reference's own
// f64 formulas (optim_case.hpp); bad input; nn::AdamW / nn::SGD taking the
// fused path equal to their per-op path; bf16 parameters with f32 master
// weights tracking an f32 run, the params equal to the rounded masters, the
// masters in state() and load_state.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "optim_case.hpp"
#include "strata/elementwise.hpp"
#include "strata/nn/layers.hpp"
#include "strata/nn/optim.hpp"

using namespace strata;

TEST_CASE("adamw_step_ / sgd_step_: cpu against the reference", "[optim][fused]") {
  // 70000 elements: three cpu chunks; a 0-element tensor is skipped.
  const std::vector<Shape> shapes{{3}, {70000}, {17, 5}, {0, 4}, {1}};
  for (const optim_test::Case& c : optim_test::standard_cases(shapes)) {
    INFO(optim_test::describe(c));
    optim_test::check_against_reference(c, "cpu", Device::cpu());
  }
}

TEST_CASE("adamw_step_ / sgd_step_: views at odd offsets against the reference", "[optim][fused]") {
  const std::vector<Shape> shapes{{3}, {70001}, {17, 5}, {9}, {1}, {4}};
  for (optim_test::Case c : optim_test::standard_cases(shapes)) {
    c.offset = 1;
    INFO(optim_test::describe(c));
    optim_test::check_against_reference(c, "cpu", Device::cpu());
  }
}

TEST_CASE("adamw_step_ / sgd_step_: grad_scale is a separate mul_out, bit for bit",
          "[optim][fused]") {
  const std::vector<Shape> shapes{{3}, {70000}, {17, 5}, {0, 4}, {1}};
  for (const char* be : {"reference", "cpu"})
    for (optim_test::Case c : optim_test::standard_cases(shapes)) {
      c.grad_scale = 0.3712345678901;
      INFO(be << " " << optim_test::describe(c));
      optim_test::check_grad_scale(c, be, Device::cpu());
    }
}

TEST_CASE("adamw_step_: bad input is an error naming the list and index, nothing written",
          "[optim][fused][errors]") {
  auto make = [](DType dt, const Shape& s) { return Tensor::full(s, 0.5, dt); };
  std::vector<Tensor> p{make(DType::f32, {4}), make(DType::f32, {2, 3})};
  std::vector<Tensor> g{make(DType::f32, {4}), make(DType::f32, {2, 3})};
  std::vector<Tensor> m{make(DType::f32, {4}), make(DType::f32, {2, 3})};
  std::vector<Tensor> v{make(DType::f32, {4}), make(DType::f32, {2, 3})};
  const AdamWStep s;
  auto untouched = [&] {
    for (const auto* l : {&p, &m, &v})
      for (const Tensor& t : *l)
        for (double x : t.to_vector<double>()) CHECK(x == 0.5);
  };
  std::vector<Tensor> short_v{v[0]};
  CHECK_THROWS_WITH(adamw_step_(p, g, m, short_v, {}, s),
                    ContainsText("adamw_step_") && ContainsText("exp_avg_sq has 1"));
  std::vector<Tensor> bad_g{g[0], make(DType::f64, {2, 3})};
  CHECK_THROWS_WITH(adamw_step_(p, bad_g, m, v, {}, s),
                    ContainsText("grads[1] is f64") && ContainsText("f32"));
  std::vector<Tensor> bad_shape{m[0], make(DType::f32, {3, 2})};
  CHECK_THROWS_WITH(adamw_step_(p, g, bad_shape, v, {}, s),
                    ContainsText("exp_avg[1] has shape [3, 2]"));
  std::vector<Tensor> strided{v[0], make(DType::f32, {3, 2}).transpose(0, 1)};
  CHECK_THROWS_WITH(adamw_step_(p, g, m, strided, {}, s),
                    ContainsText("exp_avg_sq[1] is not contiguous"));
  std::vector<Tensor> shared{m[0], p[1]};  // a state in the memory of a param
  CHECK_THROWS_WITH(adamw_step_(p, g, shared, v, {}, s),
                    ContainsText("overlaps") && ContainsText("params[1]"));
  std::vector<Tensor> masters{make(DType::f32, {4}), make(DType::f32, {2, 3})};
  CHECK_THROWS_WITH(adamw_step_(p, g, m, v, masters, s), ContainsText("masters are for f16/bf16"));
  AdamWStep bad = s;
  bad.beta2 = 1.0;
  CHECK_THROWS_WITH(adamw_step_(p, g, m, v, {}, bad), ContainsText("beta2 is 1"));
  AdamWStep bad_scale = s;
  bad_scale.grad_scale = -0.5;
  CHECK_THROWS_WITH(adamw_step_(p, g, m, v, {}, bad_scale), ContainsText("grad_scale is -0.5"));
  bad_scale.grad_scale = std::nan("");
  CHECK_THROWS_WITH(adamw_step_(p, g, m, v, {}, bad_scale), ContainsText("grad_scale is nan"));
  std::vector<Tensor> mixed{p[0], make(DType::bf16, {2, 3})};
  CHECK_THROWS_WITH(adamw_step_(mixed, g, m, v, {}, s),
                    ContainsText("params[1] is bf16 but params[0] is f32"));
  untouched();
  SGDStep sg;
  sg.momentum = 0;
  CHECK_THROWS_WITH(sgd_step_(p, g, m, {}, sg), ContainsText("momentum_buffers has 2"));
  untouched();
}

namespace {

// Gradients from a seed, the same values in any dtype of the module.
void set_grads(nn::Module& m, int step) {
  for (const auto& [name, g] : m.named_gradients()) {
    const Tensor v = Tensor::randn(g.shape(), 50 + step, DType::f64);
    g.copy_from(v.to(DType::bf16).to(g.dtype()));  // bf16-exact: equal in every dtype
  }
}

std::vector<double> values(nn::Module& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return p->to_vector<double>();
  return {};
}

// AdamW, or SGD with momentum 0.9, over m; `set` adjusts either's options.
template <class Set>
std::unique_ptr<nn::Optimizer> make_optimizer(bool adamw, nn::Module& m, const Set& set) {
  if (adamw) {
    nn::AdamWOptions o;
    set(o);
    return std::make_unique<nn::AdamW>(m, o);
  }
  nn::SGDOptions o;
  o.momentum = 0.9;
  set(o);
  return std::make_unique<nn::SGD>(m, o);
}

// With weight decay (AdamW 0.1, SGD 0.05), the fused update or the per-op one.
auto decayed(bool adamw, bool fused) {
  return [=](auto& o) {
    o.weight_decay = adamw ? 0.1 : 0.05;
    o.fused = fused;
  };
}

// Without weight decay, with f32 master weights or without.
auto masters(bool on) {
  return [=](auto& o) { o.master_weights = on; };
}

}  // namespace

TEST_CASE("optim: the fused path equals the per-op path", "[nn][optim][fused]") {
  for (const bool adamw : {true, false}) {
    INFO((adamw ? "AdamW" : "SGD"));
    nn::Linear a(24, 16, true, DType::f32), b(24, 16, true, DType::f32);
    nn::init_normal(a, 3, 0.5);
    nn::init_normal(b, 3, 0.5);
    const std::unique_ptr<nn::Optimizer> fa = make_optimizer(adamw, a, decayed(adamw, true));
    const std::unique_ptr<nn::Optimizer> fb = make_optimizer(adamw, b, decayed(adamw, false));
    for (int s = 0; s < 4; ++s) {
      set_grads(a, s);
      set_grads(b, s);
      fa->step(1e-2);
      fb->step(1e-2);
      for (const char* n : {"weight", "bias"}) {
        const std::vector<double> x = values(a, n), y = values(b, n);
        for (std::size_t i = 0; i < x.size(); ++i)
          CHECK(std::abs(x[i] - y[i]) <= 1e-6 * (1 + std::abs(y[i])));
      }
    }
  }
}

TEST_CASE("optim: step(lr, grad_scale) equals clip_grad_norm then step(lr), bit for bit",
          "[nn][optim][fused]") {
  for (const DType dt : {DType::f32, DType::bf16})
    for (const bool fused : {true, false})
      for (const bool adamw : {true, false}) {
        INFO(dtype_name(dt) << (fused ? " fused " : " per-op ") << (adamw ? "AdamW" : "SGD"));
        nn::Linear a(24, 16, true, dt), b(24, 16, true, dt);
        nn::init_normal(a, 3, 0.5);
        nn::init_normal(b, 3, 0.5);
        const std::unique_ptr<nn::Optimizer> oa = make_optimizer(adamw, a, decayed(adamw, fused));
        const std::unique_ptr<nn::Optimizer> ob = make_optimizer(adamw, b, decayed(adamw, fused));
        for (int s = 0; s < 3; ++s) {
          for (nn::Linear* l : {&a, &b})
            for (const auto& [name, g] : l->named_gradients())
              g.copy_from(Tensor::randn(g.shape(), 60 + s, DType::f64).to(g.dtype()));
          const double max_norm = 0.7;
          const double norm = nn::grad_norm(a);
          REQUIRE(norm > max_norm);
          oa->step(1e-2, nn::clip_coefficient(norm, max_norm));
          CHECK(nn::clip_grad_norm(b, max_norm) == norm);
          ob->step(1e-2);
          for (const char* n : {"weight", "bias"}) {
            const std::vector<double> x = values(a, n), y = values(b, n);
            CHECK(ops_test::first_out_of_tolerance(x, y, 0.0, 0.0) == x.size());
          }
          const nn::NamedState sa = oa->state(), sb = ob->state();
          REQUIRE(sa.size() == sb.size());
          for (std::size_t i = 0; i < sa.size(); ++i) {
            INFO(sa[i].first);
            optim_test::require_equal(sa[i].second, sb[i].second, "state");
          }
        }
      }
}

TEST_CASE("optim: a parameter the fused ops cannot take sends the step to the per-op path",
          "[nn][optim][fused]") {
  // b's weight is a transposed view (not contiguous): the whole step runs
  // per op, and lands where a's fused step does.
  nn::Linear a(6, 5, true, DType::f32), b(6, 5, true, DType::f32);
  nn::init_normal(a, 12, 0.5);
  b.weight = Tensor::zeros({6, 5}, DType::f32).transpose(0, 1);
  b.weight.copy_from(a.weight);
  b.bias.copy_from(a.bias);
  REQUIRE(!b.weight.is_contiguous());
  const std::vector<double> start = values(a, "weight");
  nn::AdamW oa(a), ob(b);
  for (int s = 0; s < 3; ++s) {
    set_grads(a, s);
    set_grads(b, s);
    oa.step(1e-2);
    ob.step(1e-2);
  }
  const std::vector<double> x = values(a, "weight"), y = values(b, "weight");
  for (std::size_t i = 0; i < x.size(); ++i)
    CHECK(std::abs(x[i] - y[i]) <= 1e-6 * (1 + std::abs(y[i])));
  CHECK(x != start);  // the weights did move
}

namespace {

const Tensor& state_named(const nn::NamedState& s, const std::string& name) {
  for (const auto& [n, t] : s)
    if (n == name) return t;
  FAIL("no state " << name);
  static const Tensor none;
  return none;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace

TEST_CASE("optim: bf16 with f32 master weights tracks an f32 run", "[nn][optim][fused][bf16]") {
  for (const bool adamw : {true, false}) {
    INFO((adamw ? "AdamW" : "SGD"));
    // The same bf16-exact start in f32 and in bf16 (with and without masters).
    nn::Linear f32(32, 32, true, DType::f32);
    nn::init_normal(f32, 4, 0.5);
    for (const auto& [n, p] : f32.named_parameters())
      p->copy_from(p->to(DType::bf16).to(DType::f32));
    nn::Linear mixed(32, 32, true, DType::bf16), plain(32, 32, true, DType::bf16);
    for (nn::Linear* l : {&mixed, &plain}) {
      l->weight.copy_from(f32.weight.to(DType::bf16));
      l->bias.copy_from(f32.bias.to(DType::bf16));
    }
    auto of = make_optimizer(adamw, f32, masters(true)),
         om = make_optimizer(adamw, mixed, masters(true)),
         op = make_optimizer(adamw, plain, masters(false));
    const double lr = adamw ? 1e-3 : 1e-4;
    for (int s = 0; s < 20; ++s) {
      for (nn::Module* m : {static_cast<nn::Module*>(&f32), static_cast<nn::Module*>(&mixed),
                            static_cast<nn::Module*>(&plain)})
        set_grads(*m, s);
      of->step(lr);
      om->step(lr);
      op->step(lr);
    }
    const nn::NamedState st = om->state();
    for (const char* n : {"weight", "bias"}) {
      INFO(n);
      const Tensor& master = state_named(st, std::string("master.") + n);
      REQUIRE(master.dtype() == DType::f32);
      // The master follows the f32 run (same f32 update on the same values).
      const std::vector<double> want = values(f32, n);
      CHECK(max_abs_diff(master.to_vector<double>(), want) <= 1e-6);
      // The bf16 param is the master rounded, bit for bit.
      CHECK(master.to(DType::bf16).to_vector<double>() == values(mixed, n));
      // Without masters the small updates are lost to bf16 rounding.
      CHECK(max_abs_diff(values(plain, n), want) > 1e-4);
    }
    for (const auto& [n, t] : op->state()) CHECK(n.rfind("master.", 0) != 0);
  }
}

TEST_CASE("optim: masters are saved and loaded with the state", "[nn][optim][fused][bf16]") {
  nn::Linear a(8, 8, true, DType::bf16), b(8, 8, true, DType::bf16);
  nn::init_normal(a, 6, 0.5);
  nn::AdamW oa(a), ob(b);
  for (int s = 0; s < 2; ++s) {
    set_grads(a, s);
    oa.step(1e-3);
  }
  b.weight.copy_from(a.weight);
  b.bias.copy_from(a.bias);
  ob.load_state(oa.state());
  for (int s = 2; s < 5; ++s) {
    set_grads(a, s);
    set_grads(b, s);
    oa.step(1e-3);
    ob.step(1e-3);
  }
  CHECK(values(a, "weight") == values(b, "weight"));
  CHECK(state_named(oa.state(), "master.weight").to_vector<double>() ==
        state_named(ob.state(), "master.weight").to_vector<double>());
  // A state without a master it needs is an error naming it; nothing changes.
  nn::NamedState partial;
  for (const auto& [n, t] : oa.state())
    if (n != "master.bias") partial.emplace_back(n, t);
  const std::vector<double> before = state_named(ob.state(), "master.bias").to_vector<double>();
  CHECK_THROWS_WITH(ob.load_state(partial), ContainsText("master.bias") && ContainsText("missing"));
  CHECK(state_named(ob.state(), "master.bias").to_vector<double>() == before);
}
