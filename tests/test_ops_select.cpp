// tril / triu and dropout on every available backend (reference and cpu
// here; cuda too where a GPU is present):
//   * tril / triu against a mask built here from (row, col), diagonals from
//     below the matrix to past it, square, wide, tall and batched, strided
//     inputs and outputs, in place, every dtype; closed forms; the backward
//     (the same triangle of the gradient); bad input with out untouched;
//   * dropout: the mask is the documented function of (seed, row-major
//     index), bit for bit on every backend and layout; the kept fraction and
//     the mean on 2^20 elements within 5 standard deviations; p = 0, p = 1,
//     training = false, NaN dropped; the backward's mask is the forward's;
//     bad p and bad tensors with out untouched.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "ops_error_util.hpp"
#include "ops_test_util.hpp"
#include "strata/autograd.hpp"
#include "strata/detail/counter_rng.hpp"
#include "strata/elementwise.hpp"
#include "strata/registry.hpp"
#include "strata/select.hpp"
#include "test_core_util.hpp"

using namespace strata;
using ops_test::Backend;
using ops_test::backends;
using ops_test::on;
using ops_test::require_error;

namespace {

constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr double kSentinel = 7.25;

// One ulp of 1 in dt.
double eps(DType dt) { return ops_test::per_dtype(dt, 0x1p-52, 0x1p-23, 0x1p-10, 0x1p-7, 0); }

// x [..., R, C] with tril's (triu's) mask applied, computed from each
// element's (row, col).
std::vector<double> masked(const Tensor& x, std::int64_t diagonal, bool upper) {
  std::vector<double> v = x.to_vector<double>();
  const std::int64_t rows = x.size(-2), cols = x.size(-1);
  for (std::size_t e = 0; e < v.size(); ++e) {
    const auto i = static_cast<std::int64_t>(e) / cols % rows;
    const auto j = static_cast<std::int64_t>(e) % cols;
    const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
    if (!keep) v[e] = 0;
  }
  return v;
}

// A view of shape s whose strides are all unusual: every dim flipped,
// A view of shape s (rank >= 2) whose memory order is not its logical
// order: the last two dims swapped in memory, a gap after each stored row,
// every dim flipped.
Tensor strided_view(const Shape& s, DType dt, Device dev) {
  const int r = static_cast<int>(s.size());
  Shape f = s;
  std::swap(f[r - 1], f[r - 2]);
  f.back() = 2 * f.back() + 1;
  Tensor t = Tensor::full(f, kSentinel, dt, dev).narrow(-1, 1, s[r - 2]).transpose(r - 1, r - 2);
  for (int d = 0; d < r; ++d) t = t.flip(d);
  return t;
}

// Dropout's documented mask: element e is kept when the top 53 bits of
// random_bits(seed, e), read as u in [0, 1), are >= p.
bool kept(std::uint64_t seed, std::int64_t e, double p) {
  const std::uint64_t bits = detail::random_bits(seed, static_cast<std::uint64_t>(e));
  return static_cast<double>(bits >> 11) * 0x1p-53 >= p;
}

}  // namespace

TEST_CASE("tril/triu: closed forms", "[ops][select]") {
  const Tensor ones = Tensor::full({3, 3}, 1.0);
  CHECK(tril(ones).to_vector<float>() == std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1});
  CHECK(triu(ones).to_vector<float>() == std::vector<float>{1, 1, 1, 0, 1, 1, 0, 0, 1});
  const Tensor wide = Tensor::full({2, 4}, 1.0, DType::f64);
  CHECK(triu(wide, 1).to_vector<double>() == std::vector<double>{0, 1, 1, 1, 0, 0, 1, 1});
  CHECK(tril(wide, -1).to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 0, 0, 0});
  // A causal mask as bool, as attention builds one.
  const Tensor causal = tril(Tensor::full({3, 3}, 1.0, DType::boolean));
  CHECK(causal.to_vector<bool>() ==
        std::vector<bool>{true, false, false, true, true, false, true, true, true});
}

TEST_CASE("tril/triu: every element against the mask, every diagonal, shape and layout",
          "[ops][select]") {
  const Shape shapes[] = {{5, 7}, {7, 5}, {1, 6}, {2, 3, 4, 6}};
  for (const Backend& b : backends())
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64})
      for (const Shape& s : shapes)
        for (const bool upper : {false, true})
          for (std::int64_t diag = -8; diag <= 8; diag += 3) {
            INFO(b.name << " " << dtype_name(dt) << " " << shape_str(s)
                        << (upper ? " triu" : " tril") << " diagonal " << diag);
            // x: the last two dims swapped in memory and flipped; out strided.
            Shape st = s;
            std::swap(st[st.size() - 1], st[st.size() - 2]);
            const int r = static_cast<int>(s.size());
            const Tensor x =
                Tensor::randn(st, 5, DType::f64).to(dt).to(b.dev).transpose(r - 1, r - 2).flip(0);
            const std::vector<double> want = masked(x, diag, upper);
            const Tensor out = strided_view(s, dt, b.dev);
            (upper ? triu_out : tril_out)(out, x, diag, on(b.name.c_str()));
            CHECK(out.to_vector<double>() == want);
            CHECK((upper ? triu : tril)(x, diag, on(b.name.c_str())).to_vector<double>() == want);
          }
}

TEST_CASE("tril/triu: in place, and large enough for several cpu threads", "[ops][select]") {
  for (const Backend& b : backends()) {
    INFO(b.name);
    const Tensor x = Tensor::randn({3, 130, 257}, 9, DType::f32, b.dev);
    const std::vector<double> want_lower = masked(x, 4, false), want_upper = masked(x, -3, true);
    const Tensor y = x.clone();
    tril_out(y, y, 4, on(b.name.c_str()));
    CHECK(y.to_vector<double>() == want_lower);
    CHECK(triu(x, -3, on(b.name.c_str())).to_vector<double>() == want_upper);
  }
}

TEST_CASE("tril/triu: the backward is the same triangle of the gradient", "[ops][select]") {
  for (const Backend& b : backends())
    for (const bool upper : {false, true}) {
      INFO(b.name << (upper ? " triu" : " tril"));
      const Tensor x = Tensor::randn({2, 4, 6}, 11, DType::f64, b.dev);
      const Tensor g = Tensor::randn({2, 4, 6}, 12, DType::f64, b.dev);
      autograd::Tape tape;
      tape.watch(x);
      const Tensor y = (upper ? triu : tril)(x, 1, on(b.name.c_str()));
      tape.backward(y, g);
      CHECK(tape.grad(x).to_vector<double>() == masked(g, 1, upper));
    }
}

TEST_CASE("tril/triu: bad input leaves out untouched", "[ops][select][errors]") {
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3, 4}, kSentinel);
  require_error(
      "tril", {"x must have at least 2 dims", "[4]"},
      [&] { tril_out(out.select(0, 0), Tensor::randn({4}, 2)); }, out);
  require_error(
      "triu", {"out has shape [3, 4]", "[4, 3]"}, [&] { triu_out(out, x.transpose(0, 1)); }, out);
  require_error(
      "tril", {"out has dtype f32", "f64"}, [&] { tril_out(out, x.to(DType::f64)); }, out);
  const Tensor buf = Tensor::full({3, 5}, kSentinel);
  require_error(
      "triu", {"out overlaps input x"}, [&] { triu_out(buf.narrow(1, 1, 4), buf.narrow(1, 0, 4)); },
      buf);
  require_error(
      "tril", {"backend", "nope"}, [&] { tril_out(out, x, 0, on("nope")); }, out);
}

TEST_CASE("dropout: the mask is the documented function of (seed, index) on every backend",
          "[ops][select][dropout]") {
  const Shape s = {6, 5, 37};
  const std::int64_t n = shape_numel(s);
  const std::uint64_t seed = 0xfeedULL;
  const double p = 0.3;
  for (const Backend& b : backends())
    for (DType dt : kFloats) {
      INFO(b.name << " " << dtype_name(dt));
      // Inputs that are never 0, so a 0 in out means dropped; x transposed
      // and flipped, out strided: the index is the logical row-major one.
      const Tensor x = add(Tensor::rand({37, 5, 6}, 3, DType::f64), 1.0)
                           .to(dt)
                           .to(b.dev)
                           .permute({2, 1, 0})
                           .flip(1);
      const Tensor out = strided_view(s, dt, b.dev);
      dropout_out(out, x, p, seed, true, on(b.name.c_str()));
      const std::vector<double> xv = x.to_vector<double>(), ov = out.to_vector<double>();
      const double tol = eps(dt) * 4;
      std::int64_t bad_mask = 0, bad_value = 0;
      for (std::int64_t e = 0; e < n; ++e) {
        const auto i = static_cast<std::size_t>(e);
        if ((ov[i] != 0) != kept(seed, e, p)) ++bad_mask;
        if (ov[i] != 0 && std::abs(ov[i] - xv[i] / (1 - p)) > tol * std::abs(ov[i])) ++bad_value;
      }
      CHECK(bad_mask == 0);
      CHECK(bad_value == 0);
      // The allocating form and a contiguous layout draw the same mask.
      const Tensor y = dropout(x.contiguous(), p, seed, true, on(b.name.c_str()));
      CHECK(y.to_vector<double>() == ov);
    }
}

TEST_CASE("dropout: kept fraction and mean on 2^20 elements", "[ops][select][dropout]") {
  const std::int64_t n = std::int64_t(1) << 20;
  const Tensor ones = Tensor::full({1024, 1024}, 1.0);
  for (const Backend& b : backends())
    for (const double p : {0.1, 0.5, 0.8}) {
      INFO(b.name << " p " << p);
      const Tensor y = dropout(ones.to(b.dev), p, 42, true, on(b.name.c_str()));
      const std::vector<float> v = y.to_vector<float>();
      double kept_n = 0, sum = 0;
      for (float f : v) {
        kept_n += f != 0 ? 1 : 0;
        sum += f;
      }
      // Bernoulli(1 - p) per element: 5 standard deviations of the fraction
      // sqrt(p (1 - p) / n), and of the mean of values in {0, 1 / (1 - p)}:
      // sqrt(p / (1 - p) / n).
      const double frac = kept_n / double(n), mean = sum / double(n);
      CHECK(std::abs(frac - (1 - p)) <= 5 * std::sqrt(p * (1 - p) / double(n)));
      CHECK(std::abs(mean - 1.0) <= 5 * std::sqrt(p / (1 - p) / double(n)) + 1e-6);
      // Another seed, another mask: agreement as for independent draws.
      const std::vector<float> w =
          dropout(ones.to(b.dev), p, 43, true, on(b.name.c_str())).to_vector<float>();
      double same = 0;
      for (std::size_t i = 0; i < v.size(); ++i) same += (v[i] != 0) == (w[i] != 0) ? 1 : 0;
      const double agree = p * p + (1 - p) * (1 - p);
      CHECK(std::abs(same / double(n) - agree) <= 5 * std::sqrt(agree * (1 - agree) / double(n)));
    }
}

TEST_CASE("dropout: p = 0, p = 1, eval mode, NaN", "[ops][select][dropout]") {
  for (const Backend& b : backends()) {
    INFO(b.name);
    const auto o = on(b.name.c_str());
    const Tensor x = Tensor::randn({7, 9}, 4, DType::f32, b.dev);
    CHECK(dropout(x, 0.0, 1, true, o).to_vector<float>() == x.to_vector<float>());
    CHECK(dropout(x, 0.7, 1, false, o).to_vector<float>() == x.to_vector<float>());
    const Tensor nan = Tensor::full({4, 64}, std::nan(""), DType::f32, b.dev);
    CHECK(dropout(nan, 1.0, 1, true, o).to_vector<float>() == std::vector<float>(256, 0.0f));
    // A dropped NaN is 0; a kept one stays NaN.
    const std::vector<float> h = dropout(nan, 0.5, 1, true, o).to_vector<float>();
    for (std::size_t e = 0; e < h.size(); ++e)
      CHECK((kept(1, static_cast<std::int64_t>(e), 0.5) ? std::isnan(h[e]) : h[e] == 0.0f));
    // In place.
    const Tensor y = x.clone();
    dropout_out(y, y, 0.4, 9, true, o);
    CHECK(y.to_vector<float>() == dropout(x, 0.4, 9, true, o).to_vector<float>());
  }
}

TEST_CASE("dropout: the backward applies the forward's mask to the gradient",
          "[ops][select][dropout]") {
  for (const Backend& b : backends())
    for (DType dt : {DType::f32, DType::f64}) {
      INFO(b.name << " " << dtype_name(dt));
      const double p = 0.35;
      const Tensor x = add(Tensor::rand({33, 21}, 6, dt, b.dev), 1.0);  // never 0
      const Tensor g = Tensor::randn({21, 33}, 7, dt, b.dev).transpose(0, 1);
      autograd::Tape tape;
      tape.watch(x);
      const Tensor y = dropout(x, p, 1234, true, on(b.name.c_str()));
      tape.backward(y, g.contiguous());
      const std::vector<double> yv = y.to_vector<double>(), gv = g.to_vector<double>(),
                                dx = tape.grad(x).to_vector<double>();
      std::int64_t bad = 0;
      for (std::size_t e = 0; e < yv.size(); ++e) {
        const double want = yv[e] != 0 ? gv[e] / (1 - p) : 0.0;
        if (std::abs(dx[e] - want) > eps(dt) * 4 * std::abs(want)) ++bad;
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("dropout: bad input leaves out untouched", "[ops][select][dropout][errors]") {
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3, 4}, kSentinel);
  require_error(
      "dropout", {"p is -0.1", "[0, 1]"}, [&] { dropout_out(out, x, -0.1, 1); }, out);
  require_error(
      "dropout", {"p is 1.5"}, [&] { dropout_out(out, x, 1.5, 1); }, out);
  require_error(
      "dropout", {"p is nan"}, [&] { dropout_out(out, x, std::nan(""), 1); }, out);
  require_error(
      "dropout", {"x has dtype i32", "floating"},
      [&] {
        dropout_out(out, Tensor::zeros({3, 4}, DType::i32), 0.5, 1);
      },
      out);
  require_error(
      "dropout", {"out has shape [3, 4]", "[4, 3]"},
      [&] { dropout_out(out, x.transpose(0, 1), 0.5, 1); }, out);
  require_error(
      "dropout", {"backend", "nope"}, [&] { dropout_out(out, x, 0.5, 1, true, on("nope")); }, out);
}
