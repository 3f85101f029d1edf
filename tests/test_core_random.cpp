// rand/randn: determinism, pinned values (a cross-platform regression check,
// cross-checked once against a Python re-implementation of the documented
// splitmix64 counter formula), range and moment sanity.
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

using strata::DType;
using strata::Tensor;

TEST_CASE("core: rand and randn pinned first values", "[core][random]") {
  CHECK(Tensor::rand({4}, 0).to_vector<float>() ==
        std::vector<float>{0x1.4e0dbap-1f, 0x1.670546p-1f, 0x1.8c6a44p-2f, 0x1.501574p-1f});
  CHECK(Tensor::rand({3}, 12345, DType::f64).to_vector<double>() ==
        std::vector<double>{0x1.035808208feep-6, 0x1.007bea91bc742p-1, 0x1.6b8af24d1da94p-3});
  // randn goes through log/cos/sqrt, which libms may round differently in
  // the last bit: pin to 1e-12.
  const std::vector<double> pinned{-0.94225766538407718, -1.0013831968636933, 0.38178265192226435,
                                   1.8145455183274595};
  const auto n = Tensor::randn({4}, 7, DType::f64).to_vector<double>();
  for (std::size_t i = 0; i < pinned.size(); ++i) {
    INFO("i " << i);
    CHECK(std::fabs(n[i] - pinned[i]) <= 1e-12 * std::fabs(pinned[i]));
  }
}

TEST_CASE("core: rand is a pure function of (seed, row-major index)", "[core][random]") {
  for (std::uint64_t seed : {0ull, 1ull, 99ull, 0xffffffffffffffffull}) {
    INFO("seed " << seed);
    const auto a = Tensor::rand({6, 7}, seed).to_vector<float>();
    CHECK(a == Tensor::rand({6, 7}, seed).to_vector<float>());
    CHECK(a == Tensor::rand({42}, seed).to_vector<float>());  // shape does not matter
    const auto prefix = Tensor::rand({5}, seed).to_vector<float>();
    CHECK(std::vector<float>(a.begin(), a.begin() + 5) == prefix);
    CHECK(a != Tensor::rand({6, 7}, seed + 1).to_vector<float>());
    const auto n = Tensor::randn({3, 5}, seed, DType::f64).to_vector<double>();
    CHECK(n == Tensor::randn({15}, seed, DType::f64).to_vector<double>());
    // f32 randn is the f64 value rounded, so backends in either dtype agree.
    const auto n32 = Tensor::randn({15}, seed, DType::f32).to_vector<float>();
    for (std::size_t i = 0; i < n.size(); ++i) CHECK(n32[i] == static_cast<float>(n[i]));
  }
  CORE_REQUIRE_ERROR(Tensor::randn({2}, 1, DType::boolean), "Tensor::randn", "bool");
}

TEST_CASE("core: rand range and moments on 1e5 samples", "[core][random]") {
  const std::int64_t n = 100000;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const std::uint64_t seed = 2026;
    INFO("dtype " << strata::dtype_name(dt) << " seed " << seed);
    const auto u = Tensor::rand({n}, seed, dt).to_vector<double>();
    double sum = 0, sq = 0, lo = 1, hi = 0;
    for (double v : u) {
      sum += v;
      sq += v * v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    REQUIRE(lo >= 0.0);
    REQUIRE(hi < 1.0);  // never 1.0, even after rounding to f16/bf16
    // Standard error of the mean is sqrt(1/12/n) = 9e-4: 6 sigma. bf16 keeps
    // 8 bits (mean bias 2^-9 = 2e-3).
    CHECK(std::fabs(mean - 0.5) < 0.0055 + (dt == DType::bf16 ? 0.002 : 0.0));
    CHECK(std::fabs(var - 1.0 / 12.0) < 0.004);
  }
  const auto b = Tensor::rand({n}, 3, DType::boolean).to_vector<double>();
  double ones = 0;
  for (double v : b) ones += v;
  CHECK(std::fabs(ones / n - 0.5) < 0.01);  // 6 sigma of a fair coin
  for (DType dt : {DType::f32, DType::f64}) {
    INFO("randn dtype " << strata::dtype_name(dt));
    const auto z = Tensor::randn({n}, 11, dt).to_vector<double>();
    double sum = 0, sq = 0, q = 0;
    for (double v : z) {
      sum += v;
      sq += v * v;
      q += std::fabs(v) < 1.0;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    CHECK(std::fabs(mean) < 0.02);               // 6 sigma: 6 / sqrt(n)
    CHECK(std::fabs(var - 1.0) < 0.027);         // 6 sigma: 6 * sqrt(2 / n)
    CHECK(std::fabs(q / n - 0.682689) < 0.009);  // P(|z| < 1), 6 sigma
  }
}
