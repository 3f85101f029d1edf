// The attention contract checked against closed forms, on every available
// backend (the reference included): these do not depend on the reference
// being right, so they anchor the cross-backend harness.
#include <cmath>
#include <limits>

#include "attention_test_util.hpp"
#include "strata/attention.hpp"

using namespace strata;
using strata::test::require_close;
using strata::test::runnable_backends;
using strata::test::tol_for;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

AttentionResult run_on(const std::string& backend, Device dev, const Tensor& q, const Tensor& k,
                       const Tensor& v, AttentionOptions opt = {}) {
  opt.backend = backend;
  if (opt.mask.defined()) opt.mask = opt.mask.to(dev);
  return softmax_attention_lse(q.to(dev), k.to(dev), v.to(dev), opt);
}

// Row-major values of a [rows, cols] slice of a host tensor [..., rows, cols].
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace

TEST_CASE("attention closed form: N = 1 gives v, lse = the score", "[attention]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      INFO("backend " << be.name << " dtype " << dtype_name(dt) << " seed 11");
      const Tensor q = Tensor::randn({2, 3, 5, 7}, 11, dt);
      const Tensor k = Tensor::randn({2, 3, 1, 7}, 12, dt);
      const Tensor v = Tensor::randn({2, 3, 1, 4}, 13, dt);
      const AttentionResult r = run_on(be.name, be.device, q, k, v);
      REQUIRE(r.out.shape() == Shape{2, 3, 5, 4});
      REQUIRE(r.lse.shape() == Shape{2, 3, 5});
      std::vector<double> want_out, want_lse;
      for (std::int64_t b = 0; b < 2; ++b) {
        for (std::int64_t h = 0; h < 3; ++h) {
          for (std::int64_t i = 0; i < 5; ++i) {
            double s = 0;
            for (std::int64_t c = 0; c < 7; ++c) s += q.item({b, h, i, c}) * k.item({b, h, 0, c});
            want_lse.push_back(s / std::sqrt(7.0));
            for (std::int64_t c = 0; c < 4; ++c) want_out.push_back(v.item({b, h, 0, c}));
          }
        }
      }
      require_close(values(r.out), want_out, tol_for(dt));
      require_close(values(r.lse), want_lse, 4 * tol_for(dt));
    }
  }
}

TEST_CASE("attention closed form: equal keys give the mean of v", "[attention]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      for (const std::int64_t N : {2, 33, 100}) {
        INFO("backend " << be.name << " dtype " << dtype_name(dt) << " N " << N << " seed 21");
        const Tensor q = Tensor::randn({4, 6, 5}, 21, dt);
        // One key row repeated N times through a stride-0 view.
        const Tensor k = Tensor::randn({4, 1, 5}, 22, dt).expand({4, N, 5});
        const Tensor v = Tensor::randn({4, N, 3}, 23, dt);
        const AttentionResult r = run_on(be.name, be.device, q, k, v);
        std::vector<double> want_out, want_lse;
        for (std::int64_t h = 0; h < 4; ++h) {
          for (std::int64_t i = 0; i < 6; ++i) {
            double s = 0;
            for (std::int64_t c = 0; c < 5; ++c) s += q.item({h, i, c}) * k.item({h, 0, c});
            want_lse.push_back(s / std::sqrt(5.0) + std::log(static_cast<double>(N)));
            for (std::int64_t c = 0; c < 3; ++c) {
              double m = 0;
              for (std::int64_t j = 0; j < N; ++j) m += v.item({h, j, c});
              want_out.push_back(m / static_cast<double>(N));
            }
          }
        }
        require_close(values(r.out), want_out, 4 * tol_for(dt));
        require_close(values(r.lse), want_lse, 4 * tol_for(dt));
      }
    }
  }
}

TEST_CASE("attention closed form: a one-hot bool mask picks one row of v", "[attention]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      INFO("backend " << be.name << " dtype " << dtype_name(dt) << " seed 31");
      const std::int64_t M = 9, N = 65;
      const Tensor q = Tensor::randn({2, M, 8}, 31, dt);
      const Tensor k = Tensor::randn({2, N, 8}, 32, dt);
      const Tensor v = Tensor::randn({2, N, 6}, 33, dt);
      std::vector<bool> keep(static_cast<std::size_t>(M * N), false);
      auto pick = [&](std::int64_t i) { return (7 * i + 3) % N; };
      for (std::int64_t i = 0; i < M; ++i) keep[static_cast<std::size_t>(i * N + pick(i))] = true;
      AttentionOptions opt;
      opt.mask = Tensor::from_vector(keep, {M, N});  // broadcast over the 2 heads
      const AttentionResult r = run_on(be.name, be.device, q, k, v, opt);
      std::vector<double> want;
      for (std::int64_t h = 0; h < 2; ++h) {
        for (std::int64_t i = 0; i < M; ++i) {
          for (std::int64_t c = 0; c < 6; ++c) want.push_back(v.item({h, pick(i), c}));
        }
      }
      require_close(values(r.out), want, tol_for(dt));
    }
  }
}

TEST_CASE("attention closed form: hand-computed 2 x 2", "[attention]") {
  // q = k = I, v = [[1, 2], [3, 4]], scale 1: row 0 scores (1, 0), row 1 (0, 1).
  const double e = std::exp(1.0);
  const std::vector<double> want_out = {(e * 1 + 3) / (e + 1), (e * 2 + 4) / (e + 1),
                                        (1 + e * 3) / (e + 1), (2 + e * 4) / (e + 1)};
  const std::vector<double> want_lse = {std::log(e + 1), std::log(e + 1)};
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      INFO("backend " << be.name << " dtype " << dtype_name(dt));
      const Tensor eye = Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2}).to(dt);
      const Tensor v = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}).to(dt);
      AttentionOptions opt;
      opt.scale = 1.0;
      const AttentionResult r = run_on(be.name, be.device, eye, eye, v, opt);
      REQUIRE(r.out.shape() == Shape{2, 2});
      REQUIRE(r.lse.shape() == Shape{2});
      require_close(values(r.out), want_out, tol_for(dt));
      require_close(values(r.lse), want_lse, tol_for(dt));

      // Causal, bottom-right vs top-left, M = 2 and N = 3 (keys 0, 1, 2 with
      // k2 = k1): bottom-right row 0 sees keys 0..1, top-left row 0 key 0 only.
      const Tensor k3 = Tensor::from_vector<double>({1, 0, 0, 1, 0, 1}, {3, 2}).to(dt);
      const Tensor v3 = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2}).to(dt);
      opt.causal = Causal::bottom_right;
      const AttentionResult br = run_on(be.name, be.device, eye, k3, v3, opt);
      // row 0: keys 0, 1 -> scores (1, 0); row 1: keys 0..2 -> scores (0, 1, 1)
      const std::vector<double> want_br = {(e * 1 + 3) / (e + 1), (e * 2 + 4) / (e + 1),
                                           (1 + e * 3 + e * 5) / (1 + 2 * e),
                                           (2 + e * 4 + e * 6) / (1 + 2 * e)};
      require_close(values(br.out), want_br, tol_for(dt));
      opt.causal = Causal::top_left;
      const AttentionResult tl = run_on(be.name, be.device, eye, k3, v3, opt);
      // row 0: key 0 only -> v0; row 1: keys 0, 1 -> scores (0, 1)
      const std::vector<double> want_tl = {1, 2, (1 + e * 3) / (e + 1), (2 + e * 4) / (e + 1)};
      require_close(values(tl.out), want_tl, tol_for(dt));
      require_close(values(tl.lse), {1.0, std::log(1 + e)}, tol_for(dt));
    }
  }
}

TEST_CASE("attention: fully masked rows give out = 0 and lse = -inf, never NaN", "[attention]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      INFO("backend " << be.name << " dtype " << dtype_name(dt) << " seed 41");
      const Tensor q = Tensor::randn({3, 4, 5}, 41, dt);
      const Tensor k = Tensor::randn({3, 6, 5}, 42, dt);
      const Tensor v = Tensor::randn({3, 6, 2}, 43, dt);
      // Row 1 masked by a bool mask; below, row 2 by -inf in a float mask.
      std::vector<bool> keep(4 * 6, true);
      for (int j = 0; j < 6; ++j) keep[1 * 6 + j] = false;
      AttentionOptions opt;
      opt.mask = Tensor::from_vector(keep, {4, 6});
      const AttentionResult r = run_on(be.name, be.device, q, k, v, opt);
      const std::vector<double> out = values(r.out), lse = values(r.lse);
      for (std::int64_t h = 0; h < 3; ++h) {
        CHECK(lse[h * 4 + 1] == -kInf);
        CHECK(std::isfinite(lse[h * 4 + 0]));
        for (int c = 0; c < 2; ++c) CHECK(out[(h * 4 + 1) * 2 + c] == 0.0);
      }
      for (double x : out) CHECK(!std::isnan(x));

      std::vector<double> fm(4 * 6, 0.5);
      for (int j = 0; j < 6; ++j) fm[2 * 6 + j] = -kInf;
      opt.mask = Tensor::from_vector(fm, {4, 6}).to(dt);
      const AttentionResult rf = run_on(be.name, be.device, q, k, v, opt);
      const std::vector<double> outf = values(rf.out), lsef = values(rf.lse);
      for (std::int64_t h = 0; h < 3; ++h) {
        CHECK(lsef[h * 4 + 2] == -kInf);
        for (int c = 0; c < 2; ++c) CHECK(outf[(h * 4 + 2) * 2 + c] == 0.0);
      }
      for (double x : outf) CHECK(!std::isnan(x));

      // Bottom-right causal with M = 4 > N = 2 leaves rows 0 and 1 without keys.
      opt.mask = Tensor();
      opt.causal = Causal::bottom_right;
      const AttentionResult rc =
          run_on(be.name, be.device, q, k.slice(1, 0, 2), v.slice(1, 0, 2), opt);
      const std::vector<double> lc = values(rc.lse), oc = values(rc.out);
      for (std::int64_t h = 0; h < 3; ++h) {
        CHECK(lc[h * 4 + 0] == -kInf);
        CHECK(lc[h * 4 + 1] == -kInf);
        CHECK(std::isfinite(lc[h * 4 + 2]));
        for (int c = 0; c < 4; ++c) CHECK(oc[h * 8 + c] == 0.0);
      }
    }
  }
}

TEST_CASE("attention: N = 0 gives out = 0 and lse = -inf; M = 0 gives empty results",
          "[attention]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      INFO("backend " << be.name << " dtype " << dtype_name(dt));
      const Tensor q = Tensor::randn({2, 3, 4}, 51, dt);
      const Tensor k = Tensor::randn({2, 0, 4}, 52, dt);
      const Tensor v = Tensor::randn({2, 0, 5}, 53, dt);
      const AttentionResult r = run_on(be.name, be.device, q, k, v);
      REQUIRE(r.out.shape() == Shape{2, 3, 5});
      for (double x : values(r.out)) CHECK(x == 0.0);
      for (double x : values(r.lse)) CHECK(x == -kInf);

      const Tensor q0 = Tensor::randn({2, 0, 4}, 54, dt);
      const Tensor k1 = Tensor::randn({2, 7, 4}, 55, dt);
      const Tensor v1 = Tensor::randn({2, 7, 5}, 56, dt);
      const AttentionResult r0 = run_on(be.name, be.device, q0, k1, v1);
      CHECK(r0.out.shape() == Shape{2, 0, 5});
      CHECK(r0.lse.shape() == Shape{2, 0});
    }
  }
}

TEST_CASE("attention: NaN reaching a kept score poisons its row; a bool-masked NaN key does not",
          "[attention]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      INFO("backend " << be.name << " dtype " << dtype_name(dt) << " seed 61");
      const Tensor q = Tensor::randn({3, 4}, 61, dt).clone();
      const Tensor k = Tensor::randn({5, 4}, 62, dt).clone();
      const Tensor v = Tensor::randn({5, 2}, 63, dt).clone();
      q.set_item({1, 2}, kNaN);  // row 1 of q: every score of row 1 is NaN
      k.set_item({4, 0}, kNaN);  // key 4: masked (bool) for rows 0 and 2 below
      std::vector<bool> keep(3 * 5, true);
      keep[0 * 5 + 4] = false;
      keep[2 * 5 + 4] = false;
      AttentionOptions opt;
      opt.mask = Tensor::from_vector(keep, {3, 5});
      const AttentionResult r = run_on(be.name, be.device, q, k, v, opt);
      const std::vector<double> out = values(r.out), lse = values(r.lse);
      CHECK(std::isnan(out[1 * 2 + 0]));
      CHECK(std::isnan(out[1 * 2 + 1]));
      CHECK(std::isnan(lse[1]));
      for (int i : {0, 2}) {
        CHECK(std::isfinite(out[i * 2 + 0]));
        CHECK(std::isfinite(out[i * 2 + 1]));
        CHECK(std::isfinite(lse[i]));
      }
    }
  }
}
