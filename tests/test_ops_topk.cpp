// topk on every available backend (reference and cpu here; cuda too where a
// GPU is present):
//   * against a selection made here with std::stable_sort (NaN above every
//     number, ties to the lower index), every floating dtype, largest and
//     smallest, k from 0 to n, the last dim and others, strided inputs and
//     outputs, rows longer than cuda's in-shared-memory sort;
//   * the tie rule, NaN, infinities and signed zeros spelled out;
//   * the gradient lands at the chosen positions, zeros elsewhere;
//   * bad k, dim, dtypes and outputs: an error, outputs untouched.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "ops_error_util.hpp"
#include "ops_test_util.hpp"
#include "strata/autograd.hpp"
#include "strata/registry.hpp"
#include "strata/select.hpp"
#include "test_core_util.hpp"

using namespace strata;
using ops_test::Backend;
using ops_test::backends;
using ops_test::on;

namespace {

constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The expected positions of every row of `rows` (row-major, rows of n),
// k per row.
std::vector<std::int64_t> expected(const std::vector<double>& rows, std::int64_t n, std::int64_t k,
                                   bool largest) {
  std::vector<std::int64_t> out;
  for (std::size_t r0 = 0; r0 < rows.size(); r0 += static_cast<std::size_t>(n)) {
    std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
    std::iota(pos.begin(), pos.end(), std::int64_t{0});
    auto at = [&](std::int64_t j) { return rows[r0 + static_cast<std::size_t>(j)]; };
    std::stable_sort(pos.begin(), pos.end(), [&](std::int64_t a, std::int64_t b) {
      const double x = at(a), y = at(b);
      if (std::isnan(x) || std::isnan(y)) return largest ? !std::isnan(y) : !std::isnan(x);
      return largest ? x > y : x < y;
    });
    out.insert(out.end(), pos.begin(), pos.begin() + k);
  }
  return out;
}

// x moved so that `dim` is last, as row-major values.
std::vector<double> rows_of(const Tensor& x, int dim) {
  return x.transpose(dim, x.dim() - 1).to_vector<double>();
}

// A view of shape s (rank >= 2) whose memory order is not its logical
// order: the last two dims swapped in memory, a gap after each stored row,
// every dim flipped.
Tensor strided_view(const Shape& s, DType dt, Device dev) {
  const int r = static_cast<int>(s.size());
  Shape f = s;
  std::swap(f[r - 1], f[r - 2]);
  f.back() = 2 * f.back() + 1;
  Tensor t = Tensor::full(f, -5.0, dt, dev).narrow(-1, 1, s[r - 2]).transpose(r - 1, r - 2);
  for (int d = 0; d < r; ++d) t = t.flip(d);
  return t;
}

// Checks topk(x, k, dim, largest) on backend b: indices as expected(), and
// values the elements of x at them, bit for bit.
void check_topk(const Backend& b, const Tensor& x, std::int64_t k, int dim, bool largest,
                bool strided_out) {
  INFO(b.name << " " << dtype_name(x.dtype()) << " " << shape_str(x.shape()) << " k " << k
              << " dim " << dim << (largest ? " largest" : " smallest"));
  const int d = dim < 0 ? dim + x.dim() : dim;
  Shape s = x.shape();
  s[static_cast<std::size_t>(d)] = k;
  TopkResult r;
  if (strided_out) {
    r = {strided_view(s, x.dtype(), b.dev), strided_view(s, DType::i64, b.dev)};
    topk_out(r.values, r.indices, x, k, dim, largest, true, on(b.name.c_str()));
  } else {
    r = topk(x, k, dim, largest, true, on(b.name.c_str()));
  }
  const std::vector<double> xr = rows_of(x, d);
  const std::int64_t n = x.size(d);
  const std::vector<std::int64_t> want = expected(xr, n, k, largest);
  const std::vector<std::int64_t> got =
      r.indices.transpose(d, x.dim() - 1).to_vector<std::int64_t>();
  REQUIRE(got == want);
  const std::vector<double> vals = rows_of(r.values, d);
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < vals.size(); ++i) {
    const double w = xr[i / static_cast<std::size_t>(k) * static_cast<std::size_t>(n) +
                        static_cast<std::size_t>(want[i])];
    if (!(vals[i] == w || (std::isnan(vals[i]) && std::isnan(w)))) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("topk: against std::stable_sort on every dtype, k, dim and layout", "[ops][topk]") {
  for (const Backend& b : backends())
    for (DType dt : kFloats) {
      // x [4, 6, 33] stored transposed in its last two dims and flipped.
      const Tensor x =
          Tensor::randn({4, 33, 6}, 21, DType::f64).to(dt).to(b.dev).transpose(1, 2).flip(0);
      for (const std::int64_t k : {0, 1, 5, 33}) check_topk(b, x, k, -1, true, k == 5);
      check_topk(b, x, 4, -1, false, true);
      check_topk(b, x, 3, 1, true, false);
      check_topk(b, x, 6, 1, false, true);
      check_topk(b, x, 2, 0, true, true);
    }
}

TEST_CASE("topk: long rows (past cuda's shared-memory sort) and many rows", "[ops][topk]") {
  for (const Backend& b : backends()) {
    const Tensor x = Tensor::randn({3, 5000}, 22, DType::f32, b.dev);
    check_topk(b, x, 50, -1, true, false);
    check_topk(b, x, 13, -1, false, true);
    // Ties in a long row: values in steps of 1/2, many equal.
    const Tensor t = Tensor::randn({2, 4099}, 23, DType::f64);
    const Tensor ties = Tensor::from_vector(
                            [&] {
                              std::vector<double> v = t.to_vector<double>();
                              for (double& e : v) e = std::round(2 * e) / 2;
                              return v;
                            }(),
                            {2, 4099})
                            .to(b.dev);
    check_topk(b, ties, 40, -1, true, false);
    check_topk(b, ties, 40, -1, false, false);
    // Enough rows for several cpu threads.
    check_topk(b, Tensor::randn({400, 300}, 24, DType::f32, b.dev), 7, -1, true, false);
  }
}

TEST_CASE("topk: ties go to the lower index; NaN, inf and signed zeros", "[ops][topk]") {
  for (const Backend& b : backends())
    for (DType dt : kFloats) {
      INFO(b.name << " " << dtype_name(dt));
      auto idx = [&](const std::vector<double>& v, std::int64_t k, bool largest) {
        const Tensor x =
            Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())}).to(dt).to(b.dev);
        return topk(x, k, -1, largest, true, on(b.name.c_str())).indices.to_vector<std::int64_t>();
      };
      using V = std::vector<std::int64_t>;
      CHECK(idx({1, 3, 3, 2, 3}, 3, true) == V{1, 2, 4});
      CHECK(idx({2, 1, 1, 5, 1}, 2, false) == V{1, 2});
      CHECK(idx({-0.0, 0.0, -0.0}, 2, true) == V{0, 1});
      CHECK(idx({0.0, -0.0}, 1, false) == V{0});
      // NaN above every number, +inf below NaN.
      CHECK(idx({1, kNaN, kInf, kNaN, -kInf}, 4, true) == V{1, 3, 2, 0});
      CHECK(idx({1, kNaN, kInf, kNaN, -kInf}, 5, false) == V{4, 0, 2, 1, 3});
      const Tensor x = Tensor::from_vector(std::vector<double>{kNaN, 2, -1}, {3}).to(dt).to(b.dev);
      const std::vector<double> v =
          topk(x, 2, -1, true, true, on(b.name.c_str())).values.to_vector<double>();
      CHECK(std::isnan(v[0]));
      CHECK(v[1] == 2.0);
    }
}

TEST_CASE("topk: the gradient goes to the chosen positions", "[ops][topk]") {
  for (const Backend& b : backends())
    for (const int dim : {-1, 0}) {
      INFO(b.name << " dim " << dim);
      const Tensor x = Tensor::randn({5, 8}, 31, DType::f64, b.dev);
      const std::int64_t k = 3;
      autograd::Tape tape;
      tape.watch(x);
      const TopkResult r = topk(x, k, dim, true, true, on(b.name.c_str()));
      const Tensor g = Tensor::randn(r.values.shape(), 32, DType::f64, b.dev);
      tape.backward(r.values, g);
      // Expected: g scattered into zeros at the indices along dim.
      const int d = dim < 0 ? dim + 2 : dim;
      std::vector<double> want(40, 0.0);
      const std::vector<std::int64_t> ix = r.indices.to_vector<std::int64_t>();
      const std::vector<double> gv = g.to_vector<double>();
      for (std::int64_t i = 0; i < r.values.size(0); ++i)
        for (std::int64_t j = 0; j < r.values.size(1); ++j) {
          const std::int64_t e = i * r.values.size(1) + j;
          const std::int64_t row = d == 1 ? i : ix[e], col = d == 1 ? ix[e] : j;
          want[row * 8 + col] += gv[e];
        }
      CHECK(tape.grad(x).to_vector<double>() == want);
    }
}

TEST_CASE("topk: bad input leaves the outputs untouched", "[ops][topk][errors]") {
  const Tensor x = Tensor::randn({2, 8}, 1);
  const Tensor v = Tensor::full({2, 3}, -5.0), i = Tensor::full({2, 3}, -5.0, DType::i64);
  auto require_error = [&](const std::vector<std::string>& parts, auto f) {
    const std::vector<double> bv = v.to_vector<double>(), bi = i.to_vector<double>();
    const std::string msg = core_test::error_of(f);
    INFO("message: " << msg);
    REQUIRE(msg.rfind("topk: ", 0) == 0);
    for (const std::string& p : parts) {
      INFO("expected part: " << p);
      CHECK(msg.find(p) != std::string::npos);
    }
    CHECK(v.to_vector<double>() == bv);
    CHECK(i.to_vector<double>() == bi);
  };
  require_error({"k is 9", "size 8", "[0, 8]"}, [&] { topk(x, 9); });
  require_error({"k is -1"}, [&] { topk(x, -1); });
  require_error({"dim 2", "out of range"}, [&] { topk_out(v, i, x, 3, 2); });
  require_error({"x has dtype i32", "floating"}, [&] {
    topk(Tensor::zeros({2, 8}, DType::i32), 3);
  });
  require_error({"x must have at least 1 dims"}, [&] { topk(Tensor::full({}, 1.0), 1); });
  require_error({"values has shape [2, 3]", "[2, 4]"}, [&] { topk_out(v, i, x, 4); });
  require_error({"indices has dtype f32", "i64"}, [&] { topk_out(v, v.clone(), x, 3); });
  require_error({"values has dtype i64", "f32"}, [&] { topk_out(i.clone(), i, x, 3); });
  const Tensor buf = Tensor::full({2, 11}, -5.0);
  require_error({"values overlaps input x"},
                [&] { topk_out(buf.narrow(1, 0, 3), i, buf.narrow(1, 3, 8), 3); });
}
