// abs, pow (a scalar or a tensor exponent), clamp, maximum and minimum on
// the host backends: values against closed forms (NaN, signed zero, lo > hi,
// broadcasting), their gradients at the points the op runner's finite
// differences stay away from (abs at 0, clamp at its bounds, ties of
// maximum/minimum, pow at x = 0 or p = 0), and bad input.
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"
#include "test_core_util.hpp"

using namespace strata;
using ops_test::on;

namespace {

const char* const kHostBackends[] = {"reference", "cpu"};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor vec(const std::vector<double>& v) {
  return Tensor::from_vector<double>(v, {static_cast<std::int64_t>(v.size())});
}

// NaN wants NaN; anything else within rel (0: exactly, signed zero apart).
void require_values(const Tensor& got, const std::vector<double>& want, double rel = 0) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      REQUIRE(std::isnan(g[i]));
    else
      REQUIRE((g[i] == want[i] || std::abs(g[i] - want[i]) <= rel * std::abs(want[i])));
  }
}

// The gradient of sum(f(inputs) * seed) for each input, on `backend`.
template <class F>
std::vector<Tensor> grads(const std::vector<Tensor>& in, const Tensor& seed, const char* backend,
                          F f) {
  const OpOptions o = on(backend);
  autograd::Tape tape;
  for (const Tensor& t : in) tape.watch(t);
  const Tensor out = f(in, o);
  tape.backward(out, seed, o);
  std::vector<Tensor> g;
  for (const Tensor& t : in) g.push_back(tape.grad(t));
  return g;
}

}  // namespace

TEST_CASE("abs: values, signed zero, NaN; its gradient is sign(x) g, 0 at 0",
          "[ops][math][autograd]") {
  const Tensor x = vec({-2.5, -0.0, 0.0, 3.0, kNaN, -kInf});
  for (const char* be : kHostBackends) {
    INFO(be);
    for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      const Tensor r = abs(x.to(dt), on(be));
      REQUIRE(r.dtype() == dt);
      require_values(r, {2.5, 0.0, 0.0, 3.0, kNaN, kInf});
      CHECK_FALSE(std::signbit(r.item({1})));  // abs(-0) is +0
    }
    const Tensor p = vec({-2.0, 0.0, 0.5, -0.0});
    const Tensor g = vec({3.0, 5.0, 7.0, 11.0});
    require_values(grads({p}, g, be, [](auto& in, auto& o) { return abs(in[0], o); })[0],
                   {-3, 0, 7, 0});
    require_values(abs_backward(g, p, on(be)), {-3, 0, 7, 0});
  }
}

TEST_CASE("pow: values of both forms, and PyTorch's gradients at x = 0 and p = 0",
          "[ops][math][autograd]") {
  for (const char* be : kHostBackends) {
    INFO(be);
    const Tensor x = vec({-2.0, 0.0, 0.5, 3.0});
    require_values(pow(x, 3.0, on(be)), {-8, 0, 0.125, 27}, 1e-15);
    require_values(pow(x, 0.5, on(be)), {kNaN, 0, std::sqrt(0.5), std::sqrt(3.0)}, 1e-15);
    require_values(pow(x.to(DType::f32), 2.0, on(be)), {4, 0, 0.25, 9}, 1e-7);
    // Tensor exponent, broadcast: [2, 1] ^ [3].
    const Tensor b = Tensor::from_vector<double>({2.0, 0.5}, {2, 1});
    require_values(pow(b, vec({0.0, 1.0, -1.0}), on(be)), {1, 2, 0.5, 1, 0.5, 2}, 1e-15);

    const Tensor g = vec({1.0, 2.0, 3.0, 4.0});
    // d x^p = p x^(p-1) g; p = 2 at x = 0 is 0; p = 0 is 0 everywhere (not 0 * inf at 0).
    const auto dp = [&](double p) {
      return grads({x}, g, be, [p](auto& in, auto& o) { return pow(in[0], p, o); })[0];
    };
    require_values(dp(2.0), {-4, 0, 3, 24}, 1e-15);
    require_values(dp(0.0), {0, 0, 0, 0});
    require_values(dp(3.0), {12, 0, 2.25, 108}, 1e-15);
    // Tensor exponent: dx = y x^(y-1) g, dy = x^y log(x) g; at x = 0 with
    // y >= 0, dy = 0; at y = 0, dx = 0 (both as PyTorch).
    const Tensor bx = vec({0.0, 0.0, 2.0, 0.5});
    const Tensor by = vec({0.0, 2.0, 3.0, -1.0});
    const std::vector<Tensor> d =
        grads({bx, by}, g, be, [](auto& in, auto& o) { return pow(in[0], in[1], o); });
    require_values(d[0], {0, 0, 3 * 4 * 3, -1 * 4 * 4}, 1e-15);
    require_values(d[1], {0, 0, 8 * std::log(2.0) * 3, 2 * std::log(0.5) * 4}, 1e-15);
  }
  CORE_REQUIRE_ERROR(pow(Tensor::zeros({2}, DType::i32), 2.0),
                     "pow_scalar: a has dtype i32 but must be a floating type");
  CORE_REQUIRE_ERROR(pow(Tensor::zeros({2}), Tensor::zeros({2}, DType::f64)),
                     "pow: b has dtype f64 but a has f32");
}

TEST_CASE("clamp: either bound, lo > hi, NaN; the gradient passes at the bounds",
          "[ops][math][autograd]") {
  const Tensor x = vec({-3.0, -1.0, -0.5, 0.0, 1.0, 2.0, kNaN});
  for (const char* be : kHostBackends) {
    INFO(be);
    const OpOptions o = on(be);
    for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      INFO(dtype_name(dt));
      const Tensor xd = x.to(dt);
      require_values(clamp(xd, -1.0, 1.0, o), {-1, -1, -0.5, 0, 1, 1, kNaN});
      require_values(clamp(xd, -0.5, std::nullopt, o), {-0.5, -0.5, -0.5, 0, 1, 2, kNaN});
      require_values(clamp(xd, std::nullopt, 0.0, o), {-3, -1, -0.5, 0, 0, 0, kNaN});
      require_values(clamp(xd, 1.0, -1.0, o), {-1, -1, -1, -1, -1, -1, kNaN});  // lo > hi: hi
      const Tensor out = Tensor::zeros({7}, dt);
      clamp_out(out, xd, -kInf, 0.5, o);
      require_values(out, {-3, -1, -0.5, 0, 0.5, 0.5, kNaN});
    }
    // The gradient: g where lo <= x <= hi, the bounds included; nothing for NaN.
    const Tensor g = vec({1, 2, 3, 4, 5, 6, 7});
    const auto dclamp = [&](std::optional<double> lo, std::optional<double> hi) {
      return grads({x}, g, be,
                   [lo, hi](auto& in, auto& oo) { return clamp(in[0], lo, hi, oo); })[0];
    };
    require_values(dclamp(-1.0, 1.0), {0, 2, 3, 4, 5, 0, 0});
    require_values(dclamp(-0.5, std::nullopt), {0, 0, 3, 4, 5, 6, 0});
    require_values(dclamp(std::nullopt, 0.0), {1, 2, 3, 4, 0, 0, 0});
    require_values(dclamp(1.0, -1.0), {0, 0, 0, 0, 0, 0, 0});
  }
  const Tensor out = Tensor::full({7}, 42.0, DType::f64);
  CORE_REQUIRE_ERROR(clamp_out(out, x, std::nullopt, std::nullopt),
                     "clamp: lo and hi are both absent");
  CORE_REQUIRE_ERROR(clamp_out(out, x, kNaN, 1.0), "clamp: lo is nan");
  CORE_REQUIRE_ERROR(clamp_out(out, x, 0.0, kNaN), "clamp: hi is nan");
  CORE_REQUIRE_ERROR(clamp_out(out, x.to(DType::f32), 0.0, 1.0),
                     "clamp: out has dtype f64 but must be f32");
  for (double v : out.to_vector<double>()) REQUIRE(v == 42.0);
}

TEST_CASE("maximum and minimum: values, NaN, broadcasting; ties split the gradient",
          "[ops][math][autograd]") {
  const Tensor a = vec({1.0, -2.0, 3.0, kNaN, 0.5});
  const Tensor b = vec({2.0, -3.0, 3.0, 1.0, kNaN});
  for (const char* be : kHostBackends) {
    INFO(be);
    const OpOptions o = on(be);
    for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      require_values(maximum(a.to(dt), b.to(dt), o), {2, -2, 3, kNaN, kNaN});
      require_values(minimum(a.to(dt), b.to(dt), o), {1, -3, 3, kNaN, kNaN});
    }
    // Broadcast: [2, 1] against [3].
    const Tensor c = Tensor::from_vector<double>({0.0, 5.0}, {2, 1});
    require_values(maximum(c, vec({-1.0, 0.0, 6.0}), o), {0, 0, 6, 5, 5, 6});
    require_values(minimum(c, vec({-1.0, 0.0, 6.0}), o), {-1, 0, 0, -1, 0, 5});

    // Gradients: to the selected input, g/2 each on a tie (3 vs 3); a NaN
    // sends g to both (as PyTorch).
    const Tensor g = vec({1, 2, 4, 8, 16});
    const auto dmax =
        grads({a, b}, g, be, [](auto& in, auto& oo) { return maximum(in[0], in[1], oo); });
    require_values(dmax[0], {0, 2, 2, 8, 16});
    require_values(dmax[1], {1, 0, 2, 8, 16});
    const auto dmin =
        grads({a, b}, g, be, [](auto& in, auto& oo) { return minimum(in[0], in[1], oo); });
    require_values(dmin[0], {1, 0, 2, 8, 16});
    require_values(dmin[1], {0, 2, 2, 8, 16});
    // A broadcast input's gradient sums over the broadcast dim, ties included:
    // maximum(m [2, 3], r [3]) with r tied to m[0] at columns 0 and 2.
    const Tensor m = Tensor::from_vector<double>({1, 5, 2, 0, 0, 9}, {2, 3});
    const Tensor r = vec({1.0, 2.0, 2.0});
    const Tensor gm = Tensor::from_vector<double>({1, 2, 4, 8, 16, 32}, {2, 3});
    const auto d =
        grads({m, r}, gm, be, [](auto& in, auto& oo) { return maximum(in[0], in[1], oo); });
    require_values(d[0], {0.5, 2, 2, 0, 0, 32});
    require_values(d[1], {0.5 + 8, 16, 2});
  }
  CORE_REQUIRE_ERROR(maximum(a, Tensor::zeros({4}, DType::f64)), "maximum: b has shape [4]");
  CORE_REQUIRE_ERROR(minimum(a.to(DType::f32), a), "minimum: b has dtype f64 but a has f32");
}
