// Optimizers (strata/nn/optim.hpp) against torch.optim's update rules written
// out here in double, element by element: AdamW (decoupled decay, bias
// correction), SGD (momentum, dampening, Nesterov, L2 decay), global-norm
// clipping, the learning-rate schedules, state save and load, bad options.
#include <cmath>
#include <numbers>
#include <vector>

#include "catch.hpp"
#include "strata/nn/layers.hpp"
#include "strata/nn/optim.hpp"

using namespace strata;

namespace {

// A Linear(3 -> 2) in f64 with set weights and gradients per step.
struct Fixture {
  nn::Linear lin{3, 2, /*bias=*/true, DType::f64};
  Fixture() { nn::init_normal(lin, 5, 0.5); }
  void set_grads(int step) {
    for (const auto& [name, g] : lin.named_gradients()) {
      std::vector<double> v(static_cast<std::size_t>(g.numel()));
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = std::sin(1.0 + static_cast<double>(i) * 0.7 + step) * (name == "bias" ? 3 : 1);
      g.copy_from(Tensor::from_vector(v, g.shape()));
    }
  }
  std::vector<double> values(const std::string& name) {
    for (const auto& [n, p] : lin.named_parameters())
      if (n == name) return p->to_vector<double>();
    return {};
  }
  std::vector<double> grads(const std::string& name) { return lin.grad(name).to_vector<double>(); }
};

void require_close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": " << a[i] << " vs " << b[i]);
    CHECK(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])));
  }
}

}  // namespace

TEST_CASE("optim: AdamW follows torch.optim.AdamW step by step", "[nn][optim]") {
  Fixture f;
  nn::AdamWOptions o;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  o.eps = 1e-6;
  o.weight_decay = 0.1;
  nn::AdamW opt(f.lin, o);
  // The reference: torch.optim.AdamW's single-tensor update in double.
  struct Ref {
    std::vector<double> p, m, v;
  };
  Ref w{f.values("weight"), {}, {}}, b{f.values("bias"), {}, {}};
  w.m.assign(w.p.size(), 0);
  w.v = w.m;
  b.m.assign(b.p.size(), 0);
  b.v = b.m;
  const double lrs[] = {1e-2, 5e-3, 2e-2};
  for (int s = 0; s < 3; ++s) {
    f.set_grads(s);
    const double lr = lrs[s], t = s + 1;
    const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
    auto update = [&](Ref& r, const std::vector<double>& g, bool decay) {
      for (std::size_t i = 0; i < r.p.size(); ++i) {
        if (decay) r.p[i] *= 1 - lr * o.weight_decay;
        r.m[i] = o.beta1 * r.m[i] + (1 - o.beta1) * g[i];
        r.v[i] = o.beta2 * r.v[i] + (1 - o.beta2) * g[i] * g[i];
        r.p[i] -= lr / bc1 * r.m[i] / (std::sqrt(r.v[i]) / std::sqrt(bc2) + o.eps);
      }
    };
    update(w, f.grads("weight"), true);  // a matrix: decayed
    update(b, f.grads("bias"), false);   // a bias: not decayed by default
    opt.step(lr);
    require_close(f.values("weight"), w.p, 1e-13);
    require_close(f.values("bias"), b.p, 1e-13);
  }
  CHECK(opt.steps() == 3);
}

TEST_CASE("optim: SGD with momentum, dampening, Nesterov and L2 decay", "[nn][optim]") {
  for (const bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    Fixture f;
    nn::SGDOptions o;
    o.momentum = 0.9;
    o.dampening = nesterov ? 0.0 : 0.3;
    o.nesterov = nesterov;
    o.weight_decay = 0.05;
    o.decay = [](const std::string&, const Tensor&) { return true; };  // every parameter
    nn::SGD opt(f.lin, o);
    std::vector<double> p = f.values("weight"), buf;
    for (int s = 0; s < 3; ++s) {
      f.set_grads(s);
      const std::vector<double> g = f.grads("weight");
      std::vector<double> d(p.size());
      for (std::size_t i = 0; i < p.size(); ++i) d[i] = g[i] + o.weight_decay * p[i];
      if (buf.empty()) {
        buf = d;
      } else {
        for (std::size_t i = 0; i < p.size(); ++i)
          buf[i] = o.momentum * buf[i] + (1 - o.dampening) * d[i];
      }
      for (std::size_t i = 0; i < p.size(); ++i)
        p[i] -= 0.1 * (nesterov ? d[i] + o.momentum * buf[i] : buf[i]);
      opt.step(0.1);
      require_close(f.values("weight"), p, 1e-14);
    }
  }
}

TEST_CASE("optim: clipping by global norm", "[nn][optim]") {
  Fixture f;
  f.set_grads(0);
  double sq = 0;
  for (const char* n : {"weight", "bias"})
    for (double g : f.grads(n)) sq += g * g;
  const double norm = std::sqrt(sq);
  const std::vector<double> before = f.grads("weight");
  CHECK(nn::clip_grad_norm(f.lin, norm * 2) == Approx(norm).epsilon(1e-14));
  CHECK(f.grads("weight") == before);  // under the bound: untouched
  CHECK(nn::clip_grad_norm(f.lin, norm / 4) == Approx(norm).epsilon(1e-14));
  CHECK(nn::grad_norm(f.lin) == Approx(norm / 4).epsilon(1e-5));
  const double coef = (norm / 4) / (norm + 1e-6);
  std::vector<double> want = before;
  for (double& g : want) g *= coef;
  require_close(f.grads("weight"), want, 1e-14);
  CHECK_THROWS_WITH(nn::clip_grad_norm(f.lin, 0.0), ContainsText("max_norm"));
}

TEST_CASE("optim: learning-rate schedules", "[nn][optim]") {
  nn::LrSchedule s;
  s.lr = 1.0;
  s.warmup = 4;
  CHECK(s.at(0) == 0.25);
  CHECK(s.at(3) == 1.0);
  CHECK(s.at(100) == 1.0);
  s.kind = nn::LrSchedule::Kind::cosine;
  s.min_lr = 0.1;
  s.total_steps = 14;
  CHECK(s.at(4) == Approx(1.0));
  CHECK(s.at(9) == Approx(0.1 + 0.45 * (1 + std::cos(std::numbers::pi * 0.5))));
  CHECK(s.at(14) == 0.1);
  CHECK(s.at(1000) == 0.1);
  CHECK_THROWS_WITH(s.at(-1), ContainsText("LrSchedule"));
}

TEST_CASE("optim: state saved and loaded continues the same steps", "[nn][optim]") {
  Fixture a, b;
  nn::AdamW oa(a.lin), ob(b.lin);
  for (int s = 0; s < 2; ++s) {
    a.set_grads(s);
    oa.step(1e-2);
  }
  // b takes a's weights and optimizer state, then both run two more steps.
  const auto pa = a.lin.named_parameters(), pb = b.lin.named_parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) pb[i].second->copy_from(*pa[i].second);
  ob.load_state(oa.state());
  CHECK(ob.steps() == 2);
  for (int s = 2; s < 4; ++s) {
    a.set_grads(s);
    b.set_grads(s);
    oa.step(1e-2);
    ob.step(1e-2);
  }
  CHECK(a.values("weight") == b.values("weight"));
  CHECK(a.values("bias") == b.values("bias"));
  // A state missing an entry changes nothing and names it.
  nn::NamedState partial = oa.state();
  partial.pop_back();
  const std::vector<double> w = b.values("weight");
  CHECK_THROWS_WITH(ob.load_state(partial),
                    ContainsText("exp_avg_sq.bias") && ContainsText("missing"));
  CHECK(ob.steps() == 4);
  CHECK(b.values("weight") == w);
}

TEST_CASE("optim: bf16 parameters keep f32 state and round once", "[nn][optim]") {
  nn::Linear lin(4, 4, false, DType::bf16);
  nn::init_normal(lin, 9, 0.5);
  const std::vector<double> before = lin.weight.to_vector<double>();
  lin.grad("weight").copy_from(Tensor::full({4, 4}, 1.0, DType::bf16));
  nn::AdamWOptions o;
  o.weight_decay = 0;
  nn::AdamW opt(lin, o);
  opt.step(0.25);
  for (const auto& [name, t] : opt.state())
    if (name != "step") CHECK(t.dtype() == DType::f32);
  // First AdamW step with g = 1: p -= lr * 1 / (1 + eps) ~ lr, rounded to bf16.
  const std::vector<double> after = lin.weight.to_vector<double>();
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double want = Tensor::full({}, before[i] - 0.25, DType::bf16).item({});
    CHECK(std::abs(after[i] - want) <= std::abs(want) * 1e-2);
  }
}

TEST_CASE("optim: bad options are errors naming the option", "[nn][optim][errors]") {
  nn::Linear lin(2, 2, true, DType::f32);
  nn::AdamWOptions a;
  a.beta1 = 1.0;
  CHECK_THROWS_WITH(nn::AdamW(lin, a), ContainsText("AdamW") && ContainsText("beta1"));
  nn::SGDOptions s;
  s.nesterov = true;
  CHECK_THROWS_WITH(nn::SGD(lin, s), ContainsText("SGD") && ContainsText("nesterov"));
  nn::SGD sgd(lin);
  CHECK_THROWS_WITH(sgd.step(std::nan("")), ContainsText("lr"));
}
