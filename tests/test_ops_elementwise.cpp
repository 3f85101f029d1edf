// Elementwise ops on the host backends: values against closed forms computed
// here (not by the reference backend), broadcasting and layouts, in-place
// forms, operators, dtype conversion rules, and bad input (message, and a
// caller's output left untouched).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/elementwise.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

const char* const kHostBackends[] = {"reference", "cpu"};

using ops_test::on;

// Every element of got against f(index) with a relative tolerance.
template <class F>
void require_each(const Tensor& got, F expected, double rel, double abs_floor = 0) {
  for (const auto& idx : core_test::all_indices(got.shape())) {
    const double want = expected(idx);
    const double have = got.item(idx);
    INFO("index " << shape_str(idx) << ": got " << have << ", want " << want);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(have));
    } else {
      REQUIRE(std::abs(have - want) <= rel * std::abs(want) + abs_floor);
    }
  }
}

}  // namespace

TEST_CASE("elementwise: binary ops broadcast over transposed, flipped and sliced views",
          "[ops][elementwise]") {
  const Tensor base = Tensor::randn({6, 5, 4}, 11);
  const Tensor a = base.transpose(0, 2).flip(1);  // [4, 5, 6], negative stride
  const Tensor wide = Tensor::randn({5, 9}, 12);
  const Tensor b = wide.slice(1, 2, 8);  // [5, 6] at an offset, row stride 9
  for (const char* be : kHostBackends) {
    INFO(be);
    const OpOptions o = on(be);
    auto A = [&](const std::vector<std::int64_t>& i) { return a.item(i); };
    auto B = [&](const std::vector<std::int64_t>& i) { return b.item({i[1], i[2]}); };
    require_each(
        add(a, b, o), [&](auto& i) { return A(i) + B(i); }, 1e-6);
    require_each(
        sub(a, b, o), [&](auto& i) { return A(i) - B(i); }, 1e-6, 1e-7);
    require_each(
        mul(a, b, o), [&](auto& i) { return A(i) * B(i); }, 1e-6);
    require_each(
        div(a, b, o), [&](auto& i) { return A(i) / B(i); }, 1e-6);
    require_each(
        rsub(a, 2.5, o), [&](auto& i) { return 2.5 - A(i); }, 1e-6, 1e-7);
    require_each(
        rdiv(a, 2.5, o), [&](auto& i) { return 2.5 / A(i); }, 1e-6);
  }
}

TEST_CASE("elementwise: unary ops match their formulas in every float dtype",
          "[ops][elementwise]") {
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&, const OpOptions&);
    double (*f)(double);
    bool positive;
  };
  const Case cases[] = {
      {"neg", &neg, [](double x) { return -x; }, false},
      {"exp", &strata::exp, [](double x) { return std::exp(x); }, false},
      {"log", &strata::log, [](double x) { return std::log(x); }, true},
      {"sqrt", &strata::sqrt, [](double x) { return std::sqrt(x); }, true},
      {"rsqrt", &rsqrt, [](double x) { return 1 / std::sqrt(x); }, true},
      {"tanh", &strata::tanh, [](double x) { return std::tanh(x); }, false},
      {"sigmoid", &sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {"relu", &relu, [](double x) { return x > 0 ? x : 0.0; }, false},
      {"gelu", &gelu, [](double x) { return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }, false},
      {"gelu_tanh", &gelu_tanh,
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       false},
      {"silu", &silu, [](double x) { return x / (1 + std::exp(-x)); }, false},
  };
  // Tolerance: the f32 functions are within a few ulp (2^-23 ~ 1.2e-7); f16
  // and bf16 round the result once (2^-11, 2^-8 relative) after an f32
  // computation on an input that is already exactly representable.
  const std::pair<DType, double> dtypes[] = {
      {DType::f32, 1e-6}, {DType::f64, 1e-14}, {DType::f16, 1e-3}, {DType::bf16, 8e-3}};
  for (const Case& c : cases) {
    for (const auto& [dt, rel] : dtypes) {
      Tensor x = Tensor::randn({3, 37}, 5, dt);
      if (c.positive) x = Tensor::rand({3, 37}, 6, dt).to(DType::f64).to(dt);
      if (c.positive) x = add(x, 0.05);
      for (const char* be : kHostBackends) {
        INFO(c.name << " " << dtype_name(dt) << " " << be);
        const Tensor y = c.op(x.transpose(0, 1), on(be));
        REQUIRE(y.dtype() == dt);
        require_each(
            y,
            [&](auto& i) {
              return c.f(x.item({i[1], i[0]}));
            },
            rel, rel * 1e-3);
      }
    }
  }
}

TEST_CASE("elementwise: NaN propagates through relu and the arithmetic", "[ops][elementwise]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x =
      Tensor::from_vector(std::vector<float>{-1.0f, static_cast<float>(nan), 2.0f}, {3});
  for (const char* be : kHostBackends) {
    INFO(be);
    const Tensor r = relu(x, on(be));
    CHECK(r.item({0}) == 0.0);
    CHECK(std::isnan(r.item({1})));
    CHECK(r.item({2}) == 2.0);
    CHECK(std::isnan(add(x, x, on(be)).item({1})));
  }
}

TEST_CASE("elementwise: where, cast, copy_ and fill_ across dtypes", "[ops][elementwise]") {
  const Tensor cond = Tensor::from_vector(std::vector<bool>{true, false, false, true}, {4});
  const Tensor a = Tensor::from_vector(std::vector<std::int64_t>{1, 2, 3, 4}, {4});
  const Tensor b = Tensor::from_vector(std::vector<std::int64_t>{-1, -2, -3, -4}, {1, 4});
  const Tensor f = Tensor::from_vector(std::vector<float>{-2.7f, 0.0f, 3.9f, 1e20f}, {4});
  for (const char* be : kHostBackends) {
    INFO(be);
    const OpOptions o = on(be);
    CHECK(where(cond, a, b, o).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{1, -2, -3, 4});
    // Float to integer truncates toward zero and saturates; to bool is != 0.
    CHECK(cast(f, DType::i32, o).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{-2, 0, 3, std::numeric_limits<std::int32_t>::max()});
    CHECK(cast(f, DType::boolean, o).to_vector<bool>() ==
          std::vector<bool>{true, false, true, true});
    CHECK(cast(a, DType::f16, o).to_vector<double>() == std::vector<double>{1, 2, 3, 4});
    // bf16 keeps 8 significant bits: 3.9 -> 3.90625.
    CHECK(cast(f, DType::bf16, o).item({2}) == 3.90625);

    // copy_ broadcasts a row into a strided view and converts the dtype.
    const Tensor big = Tensor::full({3, 8}, -7.0, DType::f64);
    const Tensor view = big.slice(1, 1, 7, 2);  // [3, 3], column stride 2
    copy_(view, Tensor::from_vector(std::vector<float>{0.5f, 1.5f, 2.5f}, {3}), o);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 8; ++j) {
        const bool inside = j >= 1 && j < 7 && (j - 1) % 2 == 0;
        CHECK(big.item({i, j}) == (inside ? 0.5 + (j - 1) / 2 : -7.0));
      }
    fill_(view.flip(0), 9.0, o);
    CHECK(big.item({2, 5}) == 9.0);
    CHECK(big.item({2, 6}) == -7.0);
  }
}

TEST_CASE("elementwise: in-place on exactly one input, operators, 0-d and empty tensors",
          "[ops][elementwise]") {
  for (const char* be : kHostBackends) {
    INFO(be);
    const OpOptions o = on(be);
    const Tensor x = Tensor::randn({4, 6}, 3).transpose(0, 1);
    const Tensor before = x.clone();
    mul_out(x, x, x, o);  // x = x * x in place
    require_each(
        x, [&](auto& i) { return before.item(i) * before.item(i); }, 1e-6);

    const Tensor s = Tensor::full({}, 3.0);
    CHECK(add(s, s, o).dim() == 0);
    CHECK(add(s, s, o).item({}) == 6.0);
    const Tensor e = Tensor::empty({0, 5});
    CHECK(exp(e, o).shape() == Shape{0, 5});
  }
  const Tensor a = Tensor::full({2}, 3.0), b = Tensor::full({2}, 4.0);
  CHECK((a + b).item({1}) == 7.0);
  CHECK((a - b).item({1}) == -1.0);
  CHECK((a * b * 2.0).item({0}) == 24.0);
  CHECK((1.0 / b).item({0}) == 0.25);
  CHECK((2.0 - a).item({0}) == -1.0);
  CHECK((-a).item({0}) == -3.0);
}

TEST_CASE("elementwise: bad input is an error and leaves the output untouched",
          "[ops][elementwise]") {
  const Tensor a = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3, 4}, 42.0);
  auto untouched = [&] {
    for (double v : out.to_vector<double>()) REQUIRE(v == 42.0);
  };
  CORE_REQUIRE_ERROR(add_out(out, a, Tensor::randn({5}, 2)), "add: b has shape [5]",
                     "does not broadcast with a's [3, 4]");
  untouched();
  CORE_REQUIRE_ERROR(add_out(out, a, a.to(DType::f64)), "add: b has dtype f64 but a has f32");
  untouched();
  CORE_REQUIRE_ERROR(exp_out(out, Tensor::zeros({3, 4}, DType::i32)),
                     "exp: x has dtype i32 but must be a floating type");
  untouched();
  CORE_REQUIRE_ERROR(add_out(Tensor::full({3, 5}, 42.0), a, a), "add: out has shape [3, 5]",
                     "must be [3, 4]");
  CORE_REQUIRE_ERROR(neg_out(out.slice(1, 0, 3), out.slice(1, 1, 4)), "neg: out overlaps input x");
  untouched();
  CORE_REQUIRE_ERROR(add_out(Tensor::full({4}, 42.0).expand({3, 4}), a, a), "share memory");
  CORE_REQUIRE_ERROR(add(a, a, on("tpu")), "add: unknown backend 'tpu'");
  CORE_REQUIRE_ERROR(where(a, a, a), "where: cond has dtype f32 but must be bool");
  CORE_REQUIRE_ERROR(copy_(out, Tensor::randn({2, 4}, 1)), "copy_: src has shape [2, 4]",
                     "does not broadcast to [3, 4]");
  untouched();
  CORE_REQUIRE_ERROR(add(a, Tensor()), "add: b is an undefined tensor");
}
