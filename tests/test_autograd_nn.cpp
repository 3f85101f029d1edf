// nn modules under autograd: parameters and their gradients by name,
// zero_grad, accumulation over two backward passes, and an MLP's weight
// gradients against central finite differences.
#include <cmath>

#include "catch.hpp"
#include "finite_diff.hpp"
#include "strata/elementwise.hpp"
#include "strata/nn/layers.hpp"
#include "strata/reduce.hpp"

using namespace strata;

namespace {

Tensor total(const Tensor& t) {
  Tensor s = t;
  while (s.dim() > 0) s = sum(s, 0);
  return s;
}

double loss_of(const nn::MLP& mlp, const Tensor& x) {
  const Tensor y = mlp.forward(x);
  return total(mul(y, y)).item({});
}

}  // namespace

TEST_CASE("autograd nn: an MLP's gradients by name match finite differences", "[autograd][nn]") {
  nn::MLP mlp(4, 6, /*bias=*/true, nn::Activation::gelu_tanh, DType::f64);
  nn::init_normal(mlp, 21, 0.5);
  const Tensor x = Tensor::randn({3, 4}, 22, DType::f64);
  {
    autograd::Tape tape;
    mlp.watch(tape);
    const Tensor y = mlp.forward(x);
    tape.backward(total(mul(y, y)));
  }
  for (const auto& [name, param] : mlp.named_parameters()) {
    const Tensor g = mlp.grad(name);
    REQUIRE(g.shape() == param->shape());
    const Tensor flat = param->reshape({-1});
    const Tensor gflat = g.reshape({-1});
    for (std::int64_t e = 0; e < flat.numel(); e += 5) {
      const double fd = fd_test::central_difference(flat, e, 1e-6, [&] { return loss_of(mlp, x); });
      INFO(name << "[" << e << "]");
      CHECK(std::abs(gflat.item({e}) - fd) < 1e-6);
    }
  }
}

TEST_CASE("autograd nn: gradients accumulate over passes until zero_grad", "[autograd][nn]") {
  nn::Linear lin(3, 2, /*bias=*/true, DType::f64);
  nn::init_normal(lin, 23);
  const Tensor x = Tensor::randn({5, 3}, 24, DType::f64);
  auto pass = [&] {
    autograd::Tape tape;
    lin.watch(tape);
    tape.backward(total(lin.forward(x)));
  };
  pass();
  const Tensor once = lin.grad("weight").clone();
  // d sum(x W^T + b) / dW[o] = sum of x's rows; / db = rows
  const auto w = once.to_vector<double>(), xs = sum(x, 0).to_vector<double>();
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(std::abs(w[i] - xs[i % 3]) < 1e-12);
  pass();
  const auto twice = lin.grad("weight").to_vector<double>();
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(std::abs(twice[i] - 2 * w[i]) < 1e-12);
  CHECK(lin.grad("bias").to_vector<double>() == std::vector<double>{10, 10});
  lin.zero_grad();
  for (const auto& [name, g] : lin.named_gradients())
    for (double v : g.to_vector<double>()) CHECK(v == 0);
  CHECK_THROWS_WITH(lin.grad("nope"), ContainsText("nope"));
}
