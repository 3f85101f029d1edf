// cross_entropy and its backward on the reference and cpu backends, against
// values worked out by hand or from other ops (log_softmax, softmax):
//   * closed forms: uniform logits give log V; a known row; ignore_index
//     rows left out of mean (and 0 under none); mean vs sum; every row
//     ignored gives NaN; masked (-inf) classes; the lse output;
//   * the gradient through the tape: (softmax - onehot) g, / count for a
//     mean, rows summing to zero, ignored rows zero, accumulate;
//   * bad input: a strata::Error naming op, argument and value, with the
//     caller's out untouched.
// Every layout and dtype against the reference, and finite differences: the
// op runner's and gradient runner's descriptors (family "cross_entropy").
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_error_util.hpp"
#include "ops_test_util.hpp"
#include "strata/autograd.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"
#include "test_core_util.hpp"

using namespace strata;
using R = CrossEntropyOptions::Reduction;
using ops_test::on;
using ops_test::require_error;

namespace {

const char* const kBackends[] = {"reference", "cpu"};
constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr double kInf = std::numeric_limits<double>::infinity();

CrossEntropyOptions with(R r, std::int64_t ignore = -100) {
  CrossEntropyOptions ce;
  ce.reduction = r;
  ce.ignore_index = ignore;
  return ce;
}

// The loss is f32 (f64 for f64) computed from the logits as stored: f32's
// sums of exp and its log err by a few ulp of the row's lse.
double tol(DType dt) { return dt == DType::f64 ? 1e-12 : 2e-6; }

void require_near(double got, double want, double t) {
  INFO("got " << got << " want " << want);
  REQUIRE(std::abs(got - want) <= t * (1 + std::abs(want)));
}

void require_close(const Tensor& got, const std::vector<double>& want, double t) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  const std::size_t bad = ops_test::first_out_of_tolerance(g, want, t, t);
  INFO("first bad element " << bad);
  REQUIRE(bad == g.size());
}

Tensor ids(const std::vector<std::int64_t>& v, const Shape& s, DType dt = DType::i64) {
  return Tensor::from_vector(v, s).to(dt);
}

// Per-row losses from log_softmax (an independent op): -log_softmax(x)[r, t].
std::vector<double> losses_by_log_softmax(const Tensor& x, const std::vector<std::int64_t>& t,
                                          std::int64_t ignore) {
  const Tensor ls = log_softmax(x.to(DType::f64), -1, on("reference"));
  std::vector<double> l;
  for (std::size_t r = 0; r < t.size(); ++r)
    l.push_back(t[r] == ignore ? 0.0 : -ls.item({static_cast<std::int64_t>(r), t[r]}));
  return l;
}

// d loss / d logits through the tape, with seed `seed` (ones when undefined).
Tensor grad_of(const Tensor& x, const Tensor& target, const CrossEntropyOptions& ce, const char* be,
               const Tensor& seed = {}) {
  autograd::Tape tape;
  const Tensor g = Tensor::zeros(x.shape(), x.dtype());
  tape.watch(x, g);
  tape.backward(cross_entropy(x, target, ce, on(be)), seed);
  return g;
}

}  // namespace

TEST_CASE("cross_entropy: uniform logits give log V; mean against sum", "[ops][cross_entropy]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      const Tensor x = Tensor::full({3, 2, 7}, 1.5, dt);
      const Tensor t = ids({0, 6, 3, 3, 1, 5}, {3, 2}, DType::i32);
      const double lv = std::log(7.0);
      require_close(cross_entropy(x, t, with(R::none), on(be)), std::vector<double>(6, lv),
                    tol(dt));
      require_near(cross_entropy(x, t, with(R::mean), on(be)).item({}), lv, tol(dt));
      require_near(cross_entropy(x, t, with(R::sum), on(be)).item({}), 6 * lv, tol(dt));
      CHECK(cross_entropy(x, t, {}, on(be)).dtype() == (dt == DType::f64 ? dt : DType::f32));
      CHECK(cross_entropy(x, t, {}, on(be)).dim() == 0);
    }
}

TEST_CASE("cross_entropy: a row worked by hand; the lse output", "[ops][cross_entropy]") {
  // lse(1, 2, 3) = 3 + log(1 + e^-1 + e^-2); loss = lse - x[t].
  const double lse = 3 + std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  for (const char* be : kBackends) {
    const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 3, 2, 1}, {2, 3});
    const Tensor out = Tensor::zeros({2}), l = Tensor::zeros({2});
    cross_entropy_out(out, x, ids({0, 0}, {2}), with(R::none), on(be), l);
    require_close(out, {lse - 1, lse - 3}, 2e-6);
    require_close(l, {lse, lse}, 2e-6);
    // A 1-D row and a 0-d target.
    require_near(cross_entropy(x.select(0, 0), ids({2}, {}), {}, on(be)).item({}), lse - 3, 2e-6);
  }
}

TEST_CASE("cross_entropy: ignore_index rows are left out of the mean", "[ops][cross_entropy]") {
  const Tensor x = Tensor::randn({4, 5}, 11, DType::f64);
  for (const std::int64_t ignore : {std::int64_t{-100}, std::int64_t{2}}) {
    const std::vector<std::int64_t> tv = {1, ignore, 3, ignore};
    const std::vector<double> want = losses_by_log_softmax(x, tv, ignore);
    for (const char* be : kBackends) {
      INFO(be << " ignore_index " << ignore);
      const Tensor t = ids(tv, {4});
      require_close(cross_entropy(x, t, with(R::none, ignore), on(be)), want, 1e-12);
      require_near(cross_entropy(x, t, with(R::sum, ignore), on(be)).item({}), want[0] + want[2],
                   1e-12);
      require_near(cross_entropy(x, t, with(R::mean, ignore), on(be)).item({}),
                   (want[0] + want[2]) / 2, 1e-12);
    }
  }
}

TEST_CASE("cross_entropy: every row ignored, no rows, masked classes", "[ops][cross_entropy]") {
  for (const char* be : kBackends) {
    INFO(be);
    const Tensor x = Tensor::randn({3, 4}, 5);
    const Tensor t = ids({-100, -100, -100}, {3});
    // PyTorch: mean over no rows is 0 / 0.
    CHECK(std::isnan(cross_entropy(x, t, with(R::mean), on(be)).item({})));
    CHECK(cross_entropy(x, t, with(R::sum), on(be)).item({}) == 0.0);
    const Tensor g = grad_of(x, t, with(R::mean), be);
    require_close(g, std::vector<double>(12, 0.0), 0);
    const Tensor none = Tensor::zeros({0, 4});
    CHECK(std::isnan(cross_entropy(none, ids({}, {0}), {}, on(be)).item({})));
    CHECK(cross_entropy(none, ids({}, {0}), with(R::sum), on(be)).item({}) == 0.0);
    // -inf logits (masked classes) are fine; their gradient is 0.
    const Tensor m = Tensor::from_vector(std::vector<float>{0, -INFINITY, 0, -INFINITY}, {1, 4});
    require_near(cross_entropy(m, ids({2}, {1}), {}, on(be)).item({}), std::log(2.0), 2e-6);
    require_close(grad_of(m, ids({2}, {1}), {}, be), {0.5, 0, -0.5, 0}, 2e-6);
  }
}

TEST_CASE("cross_entropy: the gradient is (softmax - onehot) g", "[ops][cross_entropy][autograd]") {
  const std::int64_t rows = 6, v = 9;
  const Tensor x = Tensor::randn({rows, v}, 21, DType::f64);
  const std::vector<std::int64_t> tv = {0, 8, -100, 4, 4, -100};
  const Tensor t = ids(tv, {rows});
  const Tensor p = softmax(x, -1, on("reference"));
  const Tensor seed = Tensor::randn({rows}, 22, DType::f64);
  // What each reduction's gradient is, row r, class j.
  auto want = [&](R red) {
    std::vector<double> w;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < v; ++j) {
        const bool ignored = tv[static_cast<std::size_t>(r)] == -100;
        const double g = red == R::none ? seed.item({r}) : red == R::mean ? 1.0 / 4 : 1.0;
        const double hot = j == tv[static_cast<std::size_t>(r)] ? 1.0 : 0.0;
        w.push_back(ignored ? 0.0 : g * (p.item({r, j}) - hot));
      }
    return w;
  };
  for (const char* be : kBackends) {
    INFO(be);
    for (R red : {R::mean, R::sum, R::none}) {
      const Tensor g = grad_of(x, t, with(red), be, red == R::none ? seed : Tensor());
      require_close(g, want(red), 1e-12);
      // Each row of (softmax - onehot) sums to zero.
      require_close(sum(g, -1, false, on("reference")), std::vector<double>(rows, 0.0), 1e-12);
    }
    // 16-bit logits: the gradient in their dtype, rounded once from the
    // f64 gradient of the same (rounded) logits; rows summing to ~0.
    for (DType dt : {DType::f16, DType::bf16}) {
      const Tensor xr = x.to(dt);
      const Tensor g = grad_of(xr, t, with(R::sum), be).to(DType::f64);
      const Tensor w = grad_of(xr.to(DType::f64), t, with(R::sum), "reference");
      require_close(g, w.to_vector<double>(), dt == DType::f16 ? 1e-3 : 8e-3);
      require_close(sum(g, -1, false, on("reference")), std::vector<double>(rows, 0.0), 2e-2);
    }
  }
}

TEST_CASE("cross_entropy_backward_out: written or added, ignored rows", "[ops][cross_entropy]") {
  const Tensor x = Tensor::randn({3, 5}, 31, DType::f64);
  const Tensor t = ids({4, 1, 7}, {3});  // row 2 ignored (ignore_index 7, outside [0, 5))
  const Tensor lse = Tensor::randn({3}, 32, DType::f64), g = Tensor::randn({3}, 33, DType::f64);
  const Tensor start = Tensor::randn({3, 5}, 34, DType::f64);
  for (const char* be : kBackends) {
    INFO(be);
    for (const bool acc : {false, true}) {
      const Tensor out = start.clone();
      cross_entropy_backward_out(out, g, x, t, lse, 7, acc, on(be));
      std::vector<double> w;
      for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t j = 0; j < 5; ++j) {
          double d = 0;
          if (r != 2)
            d = g.item({r}) * (std::exp(x.item({r, j}) - lse.item({r})) - (j == t.item({r})));
          w.push_back(acc ? start.item({r, j}) + d : d);
        }
      require_close(out, w, 1e-12);
    }
  }
}

TEST_CASE("cross_entropy: cpu matches the reference on rows for many threads",
          "[ops][cross_entropy]") {
  // 64 x 3000: for_rows splits the rows between threads; each row spans
  // two blocks of the online logsumexp.
  const Tensor x = Tensor::randn({64, 3000}, 41);
  std::vector<std::int64_t> tv;
  for (std::int64_t r = 0; r < 64; ++r) tv.push_back(r % 5 == 0 ? -100 : (r * 977) % 3000);
  const Tensor t = ids(tv, {64});
  for (R red : {R::mean, R::none}) {
    require_close(cross_entropy(x, t, with(red), on("cpu")),
                  cross_entropy(x, t, with(red), on("reference")).to_vector<double>(), 2e-6);
    require_close(grad_of(x, t, with(red), "cpu"),
                  grad_of(x, t, with(red), "reference").to_vector<double>(), 2e-6);
  }
}

TEST_CASE("cross_entropy: errors", "[ops][cross_entropy][errors]") {
  const Tensor x = Tensor::randn({3, 5}, 1);
  const Tensor out = Tensor::full({3}, 7.25);
  for (const char* be : kBackends) {
    INFO(be);
    require_error(
        "cross_entropy", {"target holds 5 at index 1", "outside [0, 5)", "(-100)"},
        [&] {
          cross_entropy_out(out, x, ids({0, 5, 1}, {3}), with(R::none), on(be));
        },
        out);
    require_error(
        "cross_entropy", {"target holds -1 at index 2"},
        [&] {
          cross_entropy_out(out, x, ids({0, 1, -1}, {3}, DType::i32), with(R::none), on(be));
        },
        out);
    const Tensor gl = Tensor::full({3, 5}, 7.25);
    require_error(
        "cross_entropy_backward", {"target holds 9 at index 0", "not ignore_index (3)"},
        [&] {
          cross_entropy_backward_out(gl, Tensor::full({3}, 1.0), x, ids({9, 1, 3}, {3}),
                                     Tensor::zeros({3}), 3, false, on(be));
        },
        gl);
  }
  require_error(
      "cross_entropy", {"target has dtype f32", "i32 or i64"},
      [&] { cross_entropy_out(out, x, Tensor::zeros({3}), with(R::none)); }, out);
  require_error(
      "cross_entropy", {"target has shape [5]", "[3]"},
      [&] {
        cross_entropy_out(out, x, ids({0, 0, 0, 0, 0}, {5}), with(R::none));
      },
      out);
  require_error(
      "cross_entropy", {"logits has dtype i64"},
      [&] {
        cross_entropy_out(out, Tensor::zeros({3, 5}, DType::i64), ids({0, 0, 0}, {3}),
                          with(R::none));
      },
      out);
  require_error(
      "cross_entropy", {"logits has shape [3, 0]", "no classes"},
      [&] {
        cross_entropy_out(out, Tensor::zeros({3, 0}), ids({0, 0, 0}, {3}), with(R::none));
      },
      out);
  // Output: 16-bit logits still give an f32 loss; mean and sum a 0-d one.
  require_error(
      "cross_entropy", {"out has dtype f16"},
      [&] {
        const Tensor o16 = Tensor::zeros({3}, DType::f16);
        cross_entropy_out(o16, x.to(DType::f16), ids({0, 0, 0}, {3}), with(R::none));
      },
      out);
  require_error(
      "cross_entropy", {"out has shape [3]"},
      [&] {
        cross_entropy_out(out, x, ids({0, 0, 0}, {3}), with(R::mean));
      },
      out);
  const Tensor lse = Tensor::zeros({3}, DType::f16);
  require_error(
      "cross_entropy_backward", {"lse has dtype f16"},
      [&] {
        cross_entropy_backward_out(Tensor::zeros({3, 5}), Tensor::full({3}, 1.0), x,
                                   ids({0, 0, 0}, {3}), lse);
      },
      out);
}
