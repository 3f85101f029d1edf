// Row ops (sum, mean, max, argmax, softmax, log_softmax, layer_norm,
// rms_norm, embedding, index_copy_, rotary, concat) on the reference and cpu
// backends:
//   * closed forms each backend must meet on its own (uniform softmax,
//     one-hot argmax, norms of constant rows, rotations by known angles...),
//   * cpu against reference on non-contiguous layouts for every floating
//     dtype (transposed, flipped, broadcast, a narrow slice of a fused
//     buffer, a non-unit last-dim stride, strided outputs),
//   * bad input: a strata::Error naming op, argument and value, with the
//     caller's out (filled with a sentinel) untouched.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_error_util.hpp"
#include "ops_test_util.hpp"
#include "strata/concat.hpp"
#include "strata/elementwise.hpp"
#include "strata/embedding.hpp"
#include "strata/index_copy.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/rotary.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

const char* const kBackends[] = {"reference", "cpu"};
constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSentinel = 7.25;  // what a caller's out holds before a bad call

using ops_test::on;
using ops_test::require_error;

// Tolerance of a result stored as dt, against an exact (or f64) expectation.
// Both backends compute in f32 (f64 for f64) or f64 and round once to dt, so
// the two may land one ulp of dt apart: f16 keeps 11 significant bits (one
// ulp <= 2^-10 = 9.8e-4 relative), bf16 8 (one ulp <= 2^-7 = 7.8e-3); two
// ulps are allowed. For f32 the cpu's pairwise f32 sums err by about
// (32 + log2 n) 2^-24 ~ 3e-6 of sum |x| on the rows used here (n <= 64),
// and exp/log by an ulp or two: 2e-5. f64: 1e-12 (sums of <= 64 terms).
double tol(DType dt) { return ops_test::per_dtype(dt, 1e-12, 2e-5, 2e-3, 1.6e-2, 0); }

// got ~ want elementwise: |g - w| <= atol + rtol |w|; NaN only where NaN
// is expected; infinities equal.
void require_close(const Tensor& got, const std::vector<double>& want, double atol, double rtol) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  // One assertion per call (the element loop is plain code): the first
  // element out of tolerance is reported.
  const std::size_t bad = ops_test::first_out_of_tolerance(g, want, atol, rtol);
  INFO("first bad element " << bad << ": got " << (bad < g.size() ? g[bad] : 0.0) << " want "
                            << (bad < g.size() ? want[bad] : 0.0) << " (atol " << atol << ", rtol "
                            << rtol << ")");
  REQUIRE(bad == g.size());
}

void require_close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  REQUIRE(got.shape() == want.shape());
  require_close(got, want.to_vector<double>(), atol, rtol);
}

Tensor f64_tensor(const std::vector<double>& v, const Shape& s, DType dt) {
  return Tensor::from_vector(v, s).to(dt);
}

// ---- layouts of an input of logical shape s (rank >= 2), values from seed.
// Each is a view that is not plain contiguous, built over a bigger buffer.
enum class Layout { contiguous, transposed, flipped, broadcast, fused_slice, strided_last };
constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed,  Layout::flipped,
                               Layout::broadcast,  Layout::fused_slice, Layout::strided_last};
// Layout's values in order (kLayouts lists them all).
constexpr const char* kLayoutNames[] = {"contiguous", "transposed",  "flipped",
                                        "broadcast",  "fused_slice", "strided_last"};
static_assert(std::size(kLayoutNames) == std::size(kLayouts));
const char* layout_name(Layout l) { return kLayoutNames[static_cast<int>(l)]; }

Tensor make_layout(Layout l, const Shape& s, std::uint64_t seed, DType dt) {
  const int r = static_cast<int>(s.size());
  const std::int64_t n = s[r - 1];
  switch (l) {
    case Layout::contiguous:
      return Tensor::randn(s, seed, dt);
    case Layout::transposed: {  // the last two dims swapped in memory
      Shape t = s;
      std::swap(t[r - 1], t[r - 2]);
      return Tensor::randn(t, seed, dt).transpose(r - 1, r - 2);
    }
    case Layout::flipped:
      return Tensor::randn(s, seed, dt).flip(r - 1).flip(0);
    case Layout::broadcast: {  // dim 0 has stride 0
      Shape b = s;
      b[0] = 1;
      return Tensor::randn(b, seed, dt).expand(s);
    }
    case Layout::fused_slice: {  // the middle third of a [.., 3n + 1] fused buffer
      Shape f = s;
      f[r - 1] = 3 * n + 1;
      return Tensor::randn(f, seed, dt).narrow(r - 1, n + 1, n);
    }
    case Layout::strided_last: {  // last-dim stride 2
      Shape f = s;
      f[r - 1] = 2 * n;
      return Tensor::randn(f, seed, dt).slice(r - 1, 0, 2 * n, 2);
    }
  }
  return {};
}

// An output view of shape s that is not contiguous (outputs cannot be
// broadcast): flipped rows in a fused buffer, so every stride is unusual.
Tensor strided_out(const Shape& s, DType dt) {
  const int r = static_cast<int>(s.size());
  if (r == 0) return Tensor::full(s, kSentinel, dt);
  Shape f = s;
  f[r - 1] = 2 * s[r - 1] + 3;
  return Tensor::full(f, kSentinel, dt).narrow(r - 1, 3, s[r - 1]).flip(r - 1);
}

}  // namespace

// ============================ reductions =====================================

TEST_CASE("rows: sum, mean, max, argmax of known values", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      // x[i][j] = 10 i + j, i < 3, j < 4: integers, exact in every dtype.
      std::vector<double> v;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) v.push_back(10 * i + j);
      const Tensor x = f64_tensor(v, {3, 4}, dt);
      require_close(sum(x, 1, false, on(be)), {6, 46, 86}, 0, 0);
      require_close(sum(x, 0, false, on(be)), {30, 33, 36, 39}, 0, 0);
      require_close(mean(x, -1, false, on(be)), {1.5, 11.5, 21.5}, 0, 0);
      require_close(mean(x, 0, false, on(be)), {10, 11, 12, 13}, 0, 0);
      require_close(max(x, 1, false, on(be)), {3, 13, 23}, 0, 0);
      require_close(max(x.flip(1), 1, false, on(be)), {3, 13, 23}, 0, 0);
      const Tensor am = argmax(x.flip(0), 0, false, on(be));
      CHECK(am.dtype() == DType::i64);
      require_close(am, {0, 0, 0, 0}, 0, 0);
      require_close(argmax(x, 1, false, on(be)), {3, 3, 3}, 0, 0);
      // keepdim keeps a size-1 dim; a 3-d x reduced over its middle dim.
      CHECK(sum(x, 1, true, on(be)).shape() == Shape{3, 1});
      const Tensor x3 = x.reshape({3, 2, 2});
      const Tensor s3 = sum(x3, 1, true, on(be));
      CHECK(s3.shape() == Shape{3, 1, 2});
      require_close(s3, {2, 4, 22, 24, 42, 44}, 0, 0);
    }
}

TEST_CASE("rows: argmax of one-hot rows, ties, NaN; empty reductions", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      // Row i is one-hot at (3 i + 1) mod 7, every other entry -1.
      std::vector<double> v(5 * 7, -1.0);
      for (int i = 0; i < 5; ++i) v[i * 7 + (3 * i + 1) % 7] = 1.0;
      const Tensor x = f64_tensor(v, {5, 7}, dt);
      require_close(argmax(x, 1, false, on(be)), {1, 4, 0, 3, 6}, 0, 0);
      // Ties: the first index; a NaN is the max (first NaN wins) and max is NaN.
      const Tensor t = f64_tensor({2, 5, 5, 1, 0, kNaN, 3, kNaN}, {2, 4}, dt);
      require_close(argmax(t, 1, false, on(be)), {1, 1}, 0, 0);
      require_close(max(t, 1, false, on(be)), {5, kNaN}, 0, 0);
      const Tensor neg = f64_tensor({-kInf, -kInf, -3}, {1, 3}, dt);
      require_close(argmax(neg, 1, false, on(be)), {2}, 0, 0);
      // n == 0: sum 0, mean NaN (max and argmax are errors, see below).
      const Tensor e = Tensor::zeros({3, 0}, dt);
      require_close(sum(e, 1, false, on(be)), {0, 0, 0}, 0, 0);
      require_close(mean(e, 1, false, on(be)), {kNaN, kNaN, kNaN}, 0, 0);
      // A 0-d x reduces to itself.
      const Tensor z = Tensor::full({}, 4.0, dt);
      require_close(sum(z, 0, false, on(be)), {4}, 0, 0);
      require_close(argmax(z, -1, true, on(be)), {0}, 0, 0);
    }
}

TEST_CASE("rows: reductions cpu vs reference on strided layouts", "[ops][rows]") {
  const Shape s{4, 6, 37};
  for (DType dt : kFloats)
    for (Layout l : kLayouts)
      for (int dim : {0, 1, 2, -1}) {
        INFO(dtype_name(dt) << " " << layout_name(l) << " dim " << dim);
        const Tensor x = make_layout(l, s, 11, dt);
        const double t = tol(dt);
        const double n = static_cast<double>(x.size(dim));
        // sum: atol scaled by n (|x| < ~4 and the error is relative to sum |x|).
        require_close(sum(x, dim, false, on("cpu")), sum(x, dim, false, on("reference")), t * n, t);
        require_close(mean(x, dim, true, on("cpu")), mean(x, dim, true, on("reference")), t, t);
        require_close(max(x, dim, false, on("cpu")), max(x, dim, false, on("reference")), 0, 0);
        require_close(argmax(x, dim, false, on("cpu")), argmax(x, dim, false, on("reference")), 0,
                      0);
        // _out into a strided (flipped, sliced) output.
        Shape os = s;
        os.erase(os.begin() + (dim < 0 ? dim + 3 : dim));
        const Tensor oc = strided_out(os, dt), orf = strided_out(os, dt);
        mean_out(oc, x, dim, false, on("cpu"));
        mean_out(orf, x, dim, false, on("reference"));
        require_close(oc, orf, t, t);
        const Tensor ac = strided_out(os, DType::i64), ar = strided_out(os, DType::i64);
        argmax_out(ac, x, dim, false, on("cpu"));
        argmax_out(ar, x, dim, false, on("reference"));
        require_close(ac, ar, 0, 0);
      }
}

TEST_CASE("rows: cpu f32 sum of a long row is accurate (pairwise)", "[ops][rows]") {
  // 2^20 copies of 0.1f: a naive f32 running sum drifts by ~1e-2 relative
  // (each add rounds at the partial sum's magnitude); pairwise stays near eps.
  const std::int64_t n = std::int64_t(1) << 20;
  const Tensor x = Tensor::full({2, n}, 0.1, DType::f32);
  const double exact = static_cast<double>(n) * static_cast<double>(0.1f);
  require_close(sum(x, 1, false, on("cpu")), {exact, exact}, 0, 1e-6);
  require_close(mean(x, 1, false, on("cpu")), {0.1f, 0.1f}, 0, 1e-6);
}

TEST_CASE("rows: reduction errors", "[ops][rows][errors]") {
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3}, kSentinel);
  const Tensor iout = Tensor::full({3}, 7.0, DType::i64);
  require_error("sum", {"dim 2", "out of range"}, [&] { sum_out(out, x, 2); }, {&out});
  require_error("mean", {"x has dtype i32", "floating"},
                [&] {
                  mean_out(out, Tensor::zeros({3, 4}, DType::i32), 1);
                },
                {&out});
  require_error("max", {"out has shape [3]", "[4]"}, [&] { max_out(out, x, 0); }, {&out});
  require_error("argmax", {"out has dtype f32", "i64"}, [&] { argmax_out(out, x, 1); }, {&out});
  require_error("argmax", {"dim 1", "size 0", "empty"},
                [&] {
                  argmax_out(iout, Tensor::zeros({3, 0}), 1);
                },
                {&iout});
  require_error("max", {"dim -1", "size 0"},
                [&] {
                  max_out(out, Tensor::zeros({3, 0}), -1);
                },
                {&out});
  // out overlapping x (a reduction is never in place).
  const Tensor buf = Tensor::full({3, 5}, kSentinel);
  const Tensor xo = buf.narrow(1, 1, 4);
  const Tensor o2 = buf.select(1, 0);
  require_error("sum", {"out overlaps input x"}, [&] { sum_out(o2, xo, 1); }, {&o2});
  require_error("sum", {"backend", "nope"}, [&] { sum_out(out, x, 1, false, on("nope")); }, {&out});
}

// ============================ softmax ========================================

TEST_CASE("rows: softmax and log_softmax closed forms", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      const double t = tol(dt);
      // Equal values: uniform 1/n, log_softmax -log n; large values do not overflow.
      const Tensor eq = Tensor::full({3, 5}, 1000.0, dt == DType::f16 ? DType::f32 : dt);
      require_close(softmax(eq, 1, on(be)), std::vector<double>(15, 0.2), t, t);
      require_close(log_softmax(eq, -1, on(be)), std::vector<double>(15, -std::log(5.0)), t, t);
      // softmax(log 1, log 2, log 3) = (1, 2, 3) / 6, along dim 0 here.
      const Tensor lg = f64_tensor({0, std::log(2.0), std::log(3.0)}, {3, 1}, dt);
      require_close(softmax(lg, 0, on(be)), {1 / 6.0, 2 / 6.0, 3 / 6.0}, t, 2 * t);
      require_close(log_softmax(lg, 0, on(be)),
                    {std::log(1 / 6.0), std::log(2 / 6.0), std::log(3 / 6.0)}, 2 * t, 2 * t);
      // A row of -inf is NaN (as in PyTorch); -inf next to finite values is 0.
      const Tensor ni = f64_tensor({-kInf, -kInf, -kInf, -kInf, 0, -kInf}, {2, 3}, dt);
      require_close(softmax(ni, 1, on(be)), {kNaN, kNaN, kNaN, 0, 1, 0}, 0, 0);
      require_close(log_softmax(ni, 1, on(be)), {kNaN, kNaN, kNaN, -kInf, 0, -kInf}, 0, 0);
      // A NaN anywhere in a row makes the whole row NaN; other rows are untouched.
      const Tensor nn = f64_tensor({0, kNaN, 0, 0, 0, 0}, {2, 3}, dt);
      require_close(softmax(nn, 1, on(be)), {kNaN, kNaN, kNaN, 1 / 3.0, 1 / 3.0, 1 / 3.0}, t, t);
      // In place: out is exactly x.
      const Tensor ip = f64_tensor({1, 1, 1, 1}, {1, 4}, dt);
      softmax_out(ip, ip, 1, on(be));
      require_close(ip, {0.25, 0.25, 0.25, 0.25}, 0, 0);
    }
}

TEST_CASE("rows: softmax cpu vs reference on strided layouts", "[ops][rows]") {
  const Shape s{5, 3, 33};
  for (DType dt : kFloats)
    for (Layout l : kLayouts)
      for (int dim : {0, 1, -1}) {
        INFO(dtype_name(dt) << " " << layout_name(l) << " dim " << dim);
        const double t = tol(dt);
        const Tensor x = make_layout(l, s, 21, dt);
        require_close(softmax(x, dim, on("cpu")), softmax(x, dim, on("reference")), t, t);
        // log_softmax values reach ~-20: relative tolerance carries it.
        require_close(log_softmax(x, dim, on("cpu")), log_softmax(x, dim, on("reference")), t, t);
        const Tensor oc = strided_out(s, dt), orf = strided_out(s, dt);
        softmax_out(oc, x, dim, on("cpu"));
        softmax_out(orf, x, dim, on("reference"));
        require_close(oc, orf, t, t);
        // Rows sum to 1.
        require_close(sum(oc, dim, false, on("reference")),
                      std::vector<double>(static_cast<std::size_t>(x.numel() / x.size(dim)), 1.0),
                      4 * t, 0);
      }
}

TEST_CASE("rows: softmax errors", "[ops][rows][errors]") {
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3, 4}, kSentinel);
  require_error("softmax", {"dim -3", "out of range"}, [&] { softmax_out(out, x, -3); }, {&out});
  require_error("log_softmax", {"x has dtype i64", "floating"},
                [&] {
                  log_softmax_out(out, Tensor::zeros({3, 4}, DType::i64), 1);
                },
                {&out});
  require_error("softmax", {"out has dtype f64", "f32"},
                [&] {
                  softmax_out(Tensor::full({3, 4}, kSentinel, DType::f64), x, 1);
                },
                {&out});
  const Tensor outt = out.transpose(0, 1);
  require_error("softmax", {"out has shape [4, 3]", "[3, 4]"}, [&] { softmax_out(outt, x, 1); },
                {&out});
  // Partial overlap (not exactly x) is refused; exactly x is in place.
  const Tensor buf = Tensor::full({3, 5}, kSentinel);
  const Tensor a = buf.narrow(1, 0, 4), b = buf.narrow(1, 1, 4);
  require_error("softmax", {"out overlaps input x"}, [&] { softmax_out(a, b, 1); }, {&buf});
}

// ============================ norms ==========================================

// Row statistics of a [rows, n] tensor in f64, in plain loops.
std::vector<double> row_stat(const Tensor& t, bool var) {
  const std::vector<double> v = t.to_vector<double>();
  const std::int64_t n = t.size(-1), rows = t.numel() / n;
  std::vector<double> out;
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0, q = 0;
    for (std::int64_t j = 0; j < n; ++j) s += v[r * n + j];
    for (std::int64_t j = 0; j < n; ++j) q += (v[r * n + j] - s / n) * (v[r * n + j] - s / n);
    out.push_back(var ? q / n : s / n);
  }
  return out;
}

TEST_CASE("rows: layer_norm and rms_norm closed forms", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      const double t = tol(dt);
      const std::int64_t n = 48;
      // Rows with mean 0.5 and spread 2, stored as dt.
      std::vector<double> xv = Tensor::randn({6, n}, 5, DType::f64).to_vector<double>();
      for (double& e : xv) e = 2 * e + 0.5;
      const Tensor x = f64_tensor(xv, {6, n}, dt);
      // No affine: every row has mean 0 and (biased) variance 1 (eps 0).
      const Tensor z = layer_norm(x, Tensor(), Tensor(), 0.0, on(be));
      require_close(f64_tensor(row_stat(z, false), {6}, DType::f64), std::vector<double>(6, 0.0),
                    2 * t, 0);
      require_close(f64_tensor(row_stat(z, true), {6}, DType::f64), std::vector<double>(6, 1.0),
                    4 * t, 4 * t);
      // Affine = w * z + b elementwise (z as computed above, so only the affine step is tested).
      const Tensor w = Tensor::randn({n}, 6, dt), b = Tensor::randn({n}, 7, dt);
      const std::vector<double> zv = z.to_vector<double>(), wv = w.to_vector<double>(),
                                bv = b.to_vector<double>();
      std::vector<double> want;
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < n; ++j) want.push_back(zv[i * n + j] * wv[j] + bv[j]);
      require_close(layer_norm(x, w, b, 0.0, on(be)), want, 3 * t, 3 * t);
      // rms_norm of a constant row c is weight * sign(c) (eps 0).
      std::vector<double> cv, wexp;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < n; ++j) {
          cv.push_back(i % 2 ? -0.75 * (i + 1) : 3.0 * (i + 1));
          wexp.push_back((i % 2 ? -1 : 1) * wv[j]);
        }
      require_close(rms_norm(f64_tensor(cv, {4, n}, dt), w, 0.0, on(be)), wexp, t, 2 * t);
      // rms of the row (3, 4) is sqrt(12.5); eps is added inside the sqrt.
      const Tensor r = f64_tensor({3, 4}, {1, 2}, dt);
      const double k = 1 / std::sqrt(12.5 + 0.5);
      require_close(rms_norm(r, Tensor(), 0.5, on(be)), {3 * k, 4 * k}, t, 2 * t);
      // In place gives what the allocating form gives.
      const Tensor ip = x.clone();
      rms_norm_out(ip, ip, w, 1e-6, on(be));
      require_close(ip, rms_norm(x, w, 1e-6, on(be)), 0, 0);
      const Tensor ip2 = x.clone();
      layer_norm_out(ip2, ip2, w, b, 1e-5, on(be));
      require_close(ip2, layer_norm(x, w, b, 1e-5, on(be)), 0, 0);
    }
}

TEST_CASE("rows: norms cpu vs reference on strided layouts", "[ops][rows]") {
  const Shape s{3, 4, 40};
  for (DType dt : kFloats)
    for (Layout l : kLayouts) {
      INFO(dtype_name(dt) << " " << layout_name(l));
      const double t = tol(dt);
      const Tensor x = make_layout(l, s, 31, dt);
      // weight: a non-unit stride view; bias: flipped.
      const Tensor w = Tensor::randn({80}, 32, dt).slice(0, 0, 80, 2);
      const Tensor b = Tensor::randn({40}, 33, dt).flip(0);
      require_close(layer_norm(x, w, b, 1e-5, on("cpu")),
                    layer_norm(x, w, b, 1e-5, on("reference")), 3 * t, 3 * t);
      require_close(layer_norm(x, Tensor(), b, 1e-5, on("cpu")),
                    layer_norm(x, Tensor(), b, 1e-5, on("reference")), 3 * t, 3 * t);
      require_close(rms_norm(x, w, 1e-6, on("cpu")), rms_norm(x, w, 1e-6, on("reference")), 3 * t,
                    3 * t);
      require_close(rms_norm(x, Tensor(), 1e-6, on("cpu")),
                    rms_norm(x, Tensor(), 1e-6, on("reference")), 3 * t, 3 * t);
      const Tensor oc = strided_out(s, dt), orf = strided_out(s, dt);
      layer_norm_out(oc, x, w, Tensor(), 1e-5, on("cpu"));
      layer_norm_out(orf, x, w, Tensor(), 1e-5, on("reference"));
      require_close(oc, orf, 3 * t, 3 * t);
      rms_norm_out(oc, x, Tensor(), 1e-6, on("cpu"));
      rms_norm_out(orf, x, Tensor(), 1e-6, on("reference"));
      require_close(oc, orf, 3 * t, 3 * t);
    }
}

TEST_CASE("rows: norm errors", "[ops][rows][errors]") {
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor w = Tensor::randn({4}, 2), b = Tensor::randn({4}, 3);
  const Tensor out = Tensor::full({3, 4}, kSentinel);
  require_error("layer_norm", {"weight has shape [3]", "[4]"},
                [&] { layer_norm_out(out, x, Tensor::randn({3}, 4), b); }, {&out});
  require_error("layer_norm", {"bias has dtype f64", "x has f32"},
                [&] { layer_norm_out(out, x, w, Tensor::randn({4}, 4, DType::f64)); }, {&out});
  require_error("layer_norm", {"eps -1", "non-negative"},
                [&] { layer_norm_out(out, x, w, b, -1.0); }, {&out});
  require_error("rms_norm", {"eps nan", "finite"}, [&] { rms_norm_out(out, x, w, kNaN); }, {&out});
  require_error("rms_norm", {"x has dtype i32", "floating"},
                [&] {
                  rms_norm_out(out, Tensor::zeros({3, 4}, DType::i32), Tensor());
                },
                {&out});
  require_error("rms_norm", {"x must have at least 1 dims", "[]"},
                [&] { rms_norm(Tensor::full({}, 1.0), Tensor()); }, {&out});
  // out overlapping weight; out overlapping x other than exactly.
  const Tensor buf = Tensor::full({16}, kSentinel);
  const Tensor o2 = buf.narrow(0, 0, 12).reshape({3, 4}), w2 = buf.narrow(0, 8, 4);
  require_error("rms_norm", {"out overlaps input weight"}, [&] { rms_norm_out(o2, x, w2); },
                {&buf});
  const Tensor x2 = buf.narrow(0, 4, 12).reshape({3, 4});
  require_error("layer_norm", {"out overlaps input x"},
                [&] { layer_norm_out(o2, x2, Tensor(), Tensor()); }, {&buf});
}

// ============================ embedding ======================================

TEST_CASE("rows: embedding gathers table rows", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats)
      for (DType it : {DType::i32, DType::i64}) {
        INFO(be << " " << dtype_name(dt) << " ids " << dtype_name(it));
        const Tensor table = Tensor::randn({7, 5}, 9, dt);
        // arange ids give the table back.
        require_close(embedding(Tensor::arange(7, it), table, on(be)), table, 0, 0);
        // Arbitrary ids, 2-d, on a transposed table: out[i, j, :] = table[ids[i, j], :].
        const Tensor tt = Tensor::randn({5, 7}, 9, dt).transpose(0, 1);
        const Tensor ids = Tensor::from_vector<std::int64_t>({6, 0, 3, 3, 1, 6}, {2, 3}).to(it);
        const Tensor e = embedding(ids, tt, on(be));
        REQUIRE(e.shape() == Shape{2, 3, 5});
        const std::vector<std::int64_t> iv = {6, 0, 3, 3, 1, 6};
        for (int k = 0; k < 6; ++k)
          for (int j = 0; j < 5; ++j) REQUIRE(e.item({k / 3, k % 3, j}) == tt.item({iv[k], j}));
      }
}

TEST_CASE("rows: embedding cpu vs reference on strided layouts", "[ops][rows]") {
  for (DType dt : kFloats)
    for (Layout l : kLayouts) {
      INFO(dtype_name(dt) << " " << layout_name(l));
      // The table in every layout; the ids transposed (i32) and flipped (i64).
      const Tensor table = make_layout(l, {11, 9}, 41, dt);
      const Tensor ids32 =
          Tensor::from_vector<std::int32_t>({1, 10, 0, 4, 4, 7, 2, 9}, {2, 4}).transpose(0, 1);
      const Tensor ids64 = Tensor::from_vector<std::int64_t>({3, 8, 5}, {3}).flip(0);
      require_close(embedding(ids32, table, on("cpu")), embedding(ids32, table, on("reference")), 0,
                    0);
      const Tensor oc = strided_out({3, 9}, dt), orf = strided_out({3, 9}, dt);
      embedding_out(oc, ids64, table, on("cpu"));
      embedding_out(orf, ids64, table, on("reference"));
      require_close(oc, orf, 0, 0);
    }
}

TEST_CASE("rows: embedding errors", "[ops][rows][errors]") {
  const Tensor table = Tensor::randn({5, 3}, 1);
  const Tensor ids = Tensor::from_vector<std::int64_t>({0, 4, 2}, {3});
  const Tensor out = Tensor::full({3, 3}, kSentinel);
  for (const char* be : kBackends) {
    INFO(be);
    // The kernel's check: the first bad id and its index, nothing written.
    const Tensor bad = Tensor::from_vector<std::int64_t>({0, 5, -1}, {3});
    require_error("embedding", {"ids holds 5 at index 1", "outside [0, 5)"},
                  [&] { embedding_out(out, bad, table, on(be)); }, {&out});
    const Tensor bad32 = Tensor::from_vector<std::int32_t>({0, 1, -3}, {3});
    require_error("embedding", {"ids holds -3 at index 2"},
                  [&] { embedding_out(out, bad32, table, on(be)); }, {&out});
  }
  require_error("embedding", {"ids has dtype f32", "i32 or i64"},
                [&] { embedding_out(out, Tensor::zeros({3}), table); }, {&out});
  require_error("embedding", {"table has shape [15]", "[V, D]"},
                [&] { embedding_out(out, ids, Tensor::randn({15}, 1)); }, {&out});
  require_error("embedding", {"table has dtype i64", "floating"},
                [&] {
                  embedding_out(out, ids, Tensor::zeros({5, 3}, DType::i64));
                },
                {&out});
  require_error("embedding", {"out has shape [3, 3]", "[3, 4]"},
                [&] {
                  embedding_out(out, ids, Tensor::randn({5, 4}, 1));
                },
                {&out});
  const Tensor buf = Tensor::full({30}, kSentinel);
  const Tensor o2 = buf.narrow(0, 0, 9).reshape({3, 3}), t2 = buf.narrow(0, 5, 15).reshape({5, 3});
  require_error("embedding", {"out overlaps input table"}, [&] { embedding_out(o2, ids, t2); },
                {&buf});
}

// ============================ index_copy_ =====================================

namespace {
constexpr DType kEvery[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                            DType::boolean, DType::i32, DType::i64};

// Values exact in every dtype: bool gets v != 0.
Tensor exact_tensor(std::vector<double> v, const Shape& s, DType dt) {
  if (dt == DType::boolean)
    for (double& x : v) x = std::fmod(x, 2.0) != 0 ? 1.0 : 0.0;
  return f64_tensor(v, s, dt);
}

std::vector<double> iota(std::int64_t n, double first) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<double>(i);
  return v;
}
}  // namespace

TEST_CASE("rows: index_copy_ closed forms", "[ops][rows][index_copy]") {
  for (const char* be : kBackends)
    for (DType dt : kEvery)
      for (DType it : {DType::i32, DType::i64}) {
        INFO(be << " " << dtype_name(dt) << " index " << dtype_name(it));
        const Tensor index = Tensor::from_vector<std::int64_t>({4, 0, 2}, {3}).to(it);
        // dim 0: rows 4, 0, 2 of dst take src's rows 0, 1, 2; rows 1 and 3 keep theirs.
        const std::vector<double> d0 = iota(15, 100), s0 = iota(9, 1);
        const Tensor dst = exact_tensor(d0, {5, 3}, dt), src = exact_tensor(s0, {3, 3}, dt);
        index_copy_(dst, 0, index, src, on(be));
        std::vector<double> want = d0;
        const int rows[] = {4, 0, 2};
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) want[rows[i] * 3 + j] = s0[i * 3 + j];
        require_close(dst, exact_tensor(want, {5, 3}, dt), 0, 0);
        // dim -1 (the row itself): columns 4, 0, 2 of a [3, 5] dst.
        const Tensor dc = exact_tensor(d0, {3, 5}, dt);
        index_copy_(dc, -1, index, src, on(be));
        std::vector<double> wc = d0;
        for (int r = 0; r < 3; ++r)
          for (int i = 0; i < 3; ++i) wc[r * 5 + rows[i]] = s0[r * 3 + i];
        require_close(dc, exact_tensor(wc, {3, 5}, dt), 0, 0);
        // An empty index writes nothing.
        const Tensor de = exact_tensor(d0, {5, 3}, dt);
        index_copy_(de, 0, Tensor::empty({0}, it), Tensor::empty({0, 3}, dt), on(be));
        require_close(de, exact_tensor(d0, {5, 3}, dt), 0, 0);
      }
  // i64 values beyond 2^53 are copied bit for bit (not through a double).
  for (const char* be : kBackends) {
    INFO(be);
    const std::int64_t big = (std::int64_t(1) << 62) + 1;
    const Tensor dst = Tensor::zeros({3}, DType::i64);
    index_copy_(dst, 0, Tensor::from_vector<std::int64_t>({1}, {1}),
                Tensor::from_vector<std::int64_t>({big}, {1}), on(be));
    const std::int64_t* p = dst.data<std::int64_t>();  // to_vector reads through a double
    REQUIRE(p[0] == 0);
    REQUIRE(p[1] == big);
    REQUIRE(p[2] == 0);
  }
}

TEST_CASE("rows: index_copy_ appends to a KV cache as copy_ into a narrow view does",
          "[ops][rows][index_copy]") {
  // kv [B, 2, Hkv, max_len, hd], the new k and v a strided view of a fused
  // QKV projection [B, T, (H + 2 Hkv) hd] -> [B, 2, Hkv, T, hd].
  const std::int64_t B = 2, H = 2, Hkv = 2, L = 9, hd = 8;
  for (const char* be : kBackends)
    for (DType dt : kFloats)
      for (const std::int64_t T : {1, 3}) {
        INFO(be << " " << dtype_name(dt) << " T " << T);
        const Tensor qkv = Tensor::randn({B, T, (H + 2 * Hkv) * hd}, 61, dt);
        const Tensor kv_new = qkv.narrow(2, H * hd, 2 * Hkv * hd)
                                  .reshape({B, T, 2, Hkv, hd})
                                  .permute({0, 2, 3, 1, 4});
        const Tensor kv = Tensor::randn({B, 2, Hkv, L, hd}, 62, dt);
        const Tensor want = kv.clone();
        copy_(want.narrow(3, 5, T), kv_new, on("reference"));
        const Tensor pos = Tensor::from_vector<std::int64_t>({5, 6, 7}, {3}).narrow(0, 0, T);
        index_copy_(kv, 3, pos, kv_new, on(be));
        require_close(kv, want, 0, 0);
        // Positions given backwards (a flipped index) put the new rows backwards.
        const Tensor kv2 = Tensor::randn({B, 2, Hkv, L, hd}, 62, dt);
        index_copy_(kv2, -2, pos.flip(0), kv_new.flip(3), on(be));
        require_close(kv2, want, 0, 0);
      }
}

TEST_CASE("rows: index_copy_ cpu vs reference on strided layouts", "[ops][rows][index_copy]") {
  const Shape s = {4, 6, 10};
  for (DType dt : kFloats)
    for (Layout l : kLayouts)
      for (int dim = 0; dim < 3; ++dim) {
        INFO(dtype_name(dt) << " src " << layout_name(l) << " dim " << dim);
        const Tensor src = make_layout(l, s, 43, dt);
        Shape ds = s;
        const std::int64_t n = s[dim] + 3, t = s[dim];
        ds[dim] = n;
        // Distinct indices (5 is coprime with 7, 9 and 13): i64 flipped, i32 stride 2.
        std::vector<std::int64_t> iv;
        for (std::int64_t k = 0; k < 2 * t; ++k) iv.push_back((k * 5 + 1) % n);
        const Tensor i64 = Tensor::from_vector<std::int64_t>(
                               std::vector<std::int64_t>(iv.begin(), iv.begin() + t), {t})
                               .flip(0);
        const Tensor i32 =
            Tensor::from_vector<std::int64_t>(iv, {2 * t}).to(DType::i32).slice(0, 0, 2 * t, 2);
        for (const Tensor& index : {i64, i32}) {
          const Tensor oc = strided_out(ds, dt), orf = strided_out(ds, dt);
          index_copy_(oc, dim, index, src, on("cpu"));
          index_copy_(orf, dim, index, src, on("reference"));
          require_close(oc, orf, 0, 0);
          // Exactly the 3 slices not indexed keep the sentinel.
          std::int64_t kept = 0;
          for (double x : oc.to_vector<double>()) kept += x == kSentinel;
          CHECK(kept == 3 * src.numel() / t);
        }
      }
  // Large enough for several cpu threads: a prefill of T = 512 rows of 64.
  for (DType dt : {DType::bf16, DType::f32}) {
    const Tensor src = make_layout(Layout::fused_slice, {2, 3, 512, 64}, 44, dt);
    const Tensor pos = Tensor::arange(512, DType::i64).flip(0);
    const Tensor oc = Tensor::full({2, 3, 600, 64}, kSentinel, dt),
                 orf = Tensor::full({2, 3, 600, 64}, kSentinel, dt);
    index_copy_(oc, 2, pos, src, on("cpu"));
    index_copy_(orf, 2, pos, src, on("reference"));
    require_close(oc, orf, 0, 0);
  }
}

TEST_CASE("rows: index_copy_ errors", "[ops][rows][errors][index_copy]") {
  const Tensor dst = Tensor::full({5, 3}, kSentinel);
  const Tensor src = Tensor::randn({3, 3}, 1);
  const Tensor index = Tensor::from_vector<std::int64_t>({4, 0, 2}, {3});
  for (const char* be : kBackends) {
    INFO(be);
    // The kernel's check: the first bad index and its position, nothing written.
    require_error(
        "index_copy_", {"index holds 7 at position 2, outside [0, 5)"},
        [&] {
          index_copy_(dst, 0, Tensor::from_vector<std::int64_t>({0, 1, 7}, {3}), src, on(be));
        },
        {&dst});
    require_error(
        "index_copy_", {"index holds -1 at position 0, outside [0, 5)"},
        [&] {
          index_copy_(dst, 0, Tensor::from_vector<std::int32_t>({-1, 5, 1}, {3}), src, on(be));
        },
        {&dst});
    // Positions count along the index's own strides (flipped: 7 is at position 2).
    require_error("index_copy_", {"index holds 7 at position 2"},
                  [&] {
                    index_copy_(dst, 0, Tensor::from_vector<std::int64_t>({7, 1, 0}, {3}).flip(0),
                                src, on(be));
                  },
                  {&dst});
    // Along the row dim too: dst [3, 5], index into its columns.
    const Tensor dc = Tensor::full({3, 5}, kSentinel);
    require_error(
        "index_copy_", {"index holds 5 at position 1, outside [0, 5)"},
        [&] {
          index_copy_(dc, 1, Tensor::from_vector<std::int64_t>({0, 5, 1}, {3}), src, on(be));
        },
        {&dc});
  }
  require_error("index_copy_", {"src has shape [3, 4] but must be [3, 3]"},
                [&] {
                  index_copy_(dst, 0, index, Tensor::randn({3, 4}, 1));
                },
                {&dst});
  require_error("index_copy_", {"src has shape [3, 3] but must be [5, 3]"},
                [&] { index_copy_(dst, 1, index, src); }, {&dst});
  require_error("index_copy_", {"src has dtype f64 but dst has f32"},
                [&] {
                  index_copy_(dst, 0, index, Tensor::randn({3, 3}, 1, DType::f64));
                },
                {&dst});
  require_error("index_copy_", {"index has dtype f32", "i32 or i64"},
                [&] { index_copy_(dst, 0, Tensor::zeros({3}), src); }, {&dst});
  require_error("index_copy_", {"index has shape [3, 1] but must be 1-D"},
                [&] {
                  index_copy_(dst, 0, index.reshape({3, 1}), src);
                },
                {&dst});
  require_error("index_copy_", {"dim 2 is out of range"}, [&] { index_copy_(dst, 2, index, src); },
                {&dst});
  require_error("index_copy_", {"dst must have at least 1 dims"},
                [&] { index_copy_(Tensor::full({}, 1.0), 0, index, src); }, {&dst});
  require_error("index_copy_", {"index has length 3 but dst has size 0 at dim 0"},
                [&] {
                  index_copy_(Tensor::empty({0, 3}), 0, index, src);
                },
                {&dst});
  const Tensor row = Tensor::full({1, 3}, kSentinel);
  require_error("index_copy_", {"dst has strides [0, 1]", "share memory"},
                [&] {
                  index_copy_(row.expand({5, 3}), 0, index, src);
                },
                {&row});
  const Tensor buf = Tensor::full({30}, kSentinel);
  require_error("index_copy_", {"dst overlaps input src"},
                [&] {
                  index_copy_(buf.narrow(0, 0, 15).reshape({5, 3}), 0, index,
                              buf.narrow(0, 12, 9).reshape({3, 3}));
                },
                {&buf});
  const Tensor ibuf = Tensor::zeros({18}, DType::i64);
  require_error("index_copy_", {"dst overlaps input index"},
                [&] {
                  index_copy_(ibuf.narrow(0, 0, 15).reshape({5, 3}), 0, ibuf.narrow(0, 12, 3),
                              Tensor::zeros({3, 3}, DType::i64));
                },
                {&ibuf});
}

// ============================ rotary =========================================

namespace {
// Norms of the rotated pairs of every row of x [.., d] (rotate-half pairing).
std::vector<double> pair_norms(const Tensor& x, std::int64_t r, bool interleaved) {
  const std::vector<double> v = x.to_vector<double>();
  const std::int64_t d = x.size(-1);
  std::vector<double> out;
  for (std::size_t row = 0; row < v.size() / d; ++row)
    for (std::int64_t i = 0; i < r / 2; ++i) {
      const double a = v[row * d + (interleaved ? 2 * i : i)];
      const double b = v[row * d + (interleaved ? 2 * i + 1 : i + r / 2)];
      out.push_back(std::sqrt(a * a + b * b));
    }
  return out;
}
}  // namespace

TEST_CASE("rows: rotary closed forms", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats)
      for (RotaryStyle st : {RotaryStyle::half, RotaryStyle::interleaved}) {
        const bool il = st == RotaryStyle::interleaved;
        INFO(be << " " << dtype_name(dt) << (il ? " interleaved" : " half"));
        const double t = tol(dt);
        // x [2, 4 tokens, 10], r = 8: the last 2 dims are copied.
        const Tensor x = Tensor::randn({2, 4, 10}, 51, dt);
        RotaryOptions ro;
        ro.rotary_dims = 8;
        ro.style = st;
        // Position 0 is the identity.
        require_close(rotary(x, Tensor::zeros({4}, DType::i64), ro, on(be)), x, 0, 0);
        // Pair norms are preserved; dims past r are copied exactly.
        const Tensor pos = Tensor::from_vector<std::int32_t>({3, 17, 250, 4096}, {4});
        const Tensor y = rotary(x, pos, ro, on(be));
        require_close(f64_tensor(pair_norms(y, 8, il), {2 * 4 * 4}, DType::f64),
                      pair_norms(x, 8, il), 2 * t, 2 * t);
        require_close(y.narrow(2, 8, 2), x.narrow(2, 8, 2), 0, 0);
        // Rotating by p then by -p gives x back (on f64 data: the angles are
        // exact negatives, the error is that of the data type).
        const Tensor neg = Tensor::from_vector<std::int32_t>({-3, -17, -250, -4096}, {4});
        const Tensor back = rotary(y, neg, ro, on(be));
        require_close(back, x, 4 * t, 4 * t);
        // d = 2, theta anything: inv_freq is 1, so (1, 0) at p becomes (cos p, sin p).
        const Tensor e = f64_tensor({1, 0, 1, 0}, {2, 2}, dt);
        const Tensor p2 = Tensor::from_vector<std::int64_t>({1, 2}, {2});
        RotaryOptions r2;
        r2.style = st;
        require_close(rotary(e, p2, r2, on(be)),
                      {std::cos(1.0), std::sin(1.0), std::cos(2.0), std::sin(2.0)}, t, t);
        // In place is the same as out of place.
        const Tensor ip = x.clone();
        rotary_out(ip, ip, pos, ro, on(be));
        require_close(ip, y, 0, 0);
      }
}

TEST_CASE("rows: rotary frequencies follow theta^(-2i/r)", "[ops][rows]") {
  // d = 8, r = 4 (rotate-half), x = e_i for pair i: the pair (i, i + 2)
  // turns by p * theta^(-2i/4). f64 data: the angle is p * inv_freq in f64.
  for (const char* be : kBackends) {
    INFO(be);
    const double theta = 100.0;
    for (int i = 0; i < 2; ++i) {
      std::vector<double> v(8, 0.0);
      v[i] = 1.0;
      const Tensor x = f64_tensor(v, {1, 8}, DType::f64);
      RotaryOptions ro;
      ro.theta = theta;
      ro.rotary_dims = 4;
      const Tensor y = rotary(x, Tensor::from_vector<std::int64_t>({5}, {1}), ro, on(be));
      const double a = 5 * std::pow(theta, -2.0 * i / 4);
      std::vector<double> want(8, 0.0);
      want[i] = std::cos(a);
      want[i + 2] = std::sin(a);
      require_close(y, want, 1e-12, 0);
    }
  }
}

TEST_CASE("rows: rotary cpu vs reference on strided layouts", "[ops][rows]") {
  const Shape s{3, 5, 12};
  for (DType dt : kFloats)
    for (Layout l : kLayouts)
      for (RotaryStyle st : {RotaryStyle::half, RotaryStyle::interleaved}) {
        INFO(dtype_name(dt) << " " << layout_name(l)
                            << (st == RotaryStyle::half ? " half" : " il"));
        // f16/bf16 rotate in f32 on the cpu, f64 in the reference, with the
        // same f32 angle: one ulp of the stored type apart. f32: cos/sin of
        // the same f32 angle in f32 vs f64, ~2 ulps.
        const double t = tol(dt);
        const Tensor x = make_layout(l, s, 61, dt);
        RotaryOptions ro;
        ro.rotary_dims = 10;
        ro.style = st;
        ro.theta = 500.0;
        // positions [5] broadcast over dim 0 (stride 0), from a strided buffer.
        const Tensor pos =
            Tensor::from_vector<std::int64_t>({0, 9, 1, 9, 2, 9, 300, 9, 70000, 9}, {10})
                .slice(0, 0, 10, 2);
        require_close(rotary(x, pos, ro, on("cpu")), rotary(x, pos, ro, on("reference")), t, t);
        // positions [3, 5] i32, transposed in memory.
        const Tensor p2 = Tensor::from_vector<std::int32_t>(
                              {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, {5, 3})
                              .transpose(0, 1);
        const Tensor oc = strided_out(s, dt), orf = strided_out(s, dt);
        rotary_out(oc, x, p2, ro, on("cpu"));
        rotary_out(orf, x, p2, ro, on("reference"));
        require_close(oc, orf, t, t);
      }
}

TEST_CASE("rows: rotary errors", "[ops][rows][errors]") {
  const Tensor x = Tensor::randn({2, 4, 6}, 1);
  const Tensor pos = Tensor::zeros({4}, DType::i64);
  const Tensor out = Tensor::full({2, 4, 6}, kSentinel);
  RotaryOptions odd;
  odd.rotary_dims = 3;
  require_error("rotary", {"rotary_dims 3", "even"}, [&] { rotary_out(out, x, pos, odd); }, {&out});
  RotaryOptions big;
  big.rotary_dims = 8;
  require_error("rotary", {"rotary_dims 8", "[0, 6]"}, [&] { rotary_out(out, x, pos, big); },
                {&out});
  require_error("rotary", {"positions has shape [3]", "[2, 4]"},
                [&] { rotary_out(out, x, Tensor::zeros({3}, DType::i64)); }, {&out});
  require_error("rotary", {"positions has dtype f32", "i32 or i64"},
                [&] { rotary_out(out, x, Tensor::zeros({4})); }, {&out});
  RotaryOptions th;
  th.theta = -1;
  require_error("rotary", {"theta -1", "positive"}, [&] { rotary_out(out, x, pos, th); }, {&out});
  const Tensor odd_x = Tensor::randn({2, 4, 5}, 1);
  const Tensor out5 = Tensor::full({2, 4, 5}, kSentinel);
  require_error("rotary", {"rotary_dims -1", "(5 rotated dims)", "even"},
                [&] { rotary_out(out5, odd_x, pos); }, {&out5});
  const Tensor buf = Tensor::full({2, 4, 7}, kSentinel);
  require_error("rotary", {"out overlaps input x"},
                [&] { rotary_out(buf.narrow(2, 0, 6), buf.narrow(2, 1, 6), pos); }, {&buf});
}

// ============================ concat =========================================

TEST_CASE("rows: concat", "[ops][rows]") {
  for (const char* be : kBackends)
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      const Tensor a = Tensor::randn({2, 3, 4}, 1, dt);
      const Tensor b = Tensor::randn({2, 5, 4}, 2, dt).flip(1);
      const Tensor c = Tensor::randn({4, 1, 2}, 3, dt).transpose(0, 2);  // [2, 1, 4]
      const Tensor y = concat({a, b, c}, 1, on(be));
      REQUIRE(y.shape() == Shape{2, 9, 4});
      for (const auto& idx : core_test::all_indices(y.shape())) {
        const std::int64_t j = idx[1];
        const double want = j < 3   ? a.item({idx[0], j, idx[2]})
                            : j < 8 ? b.item({idx[0], j - 3, idx[2]})
                                    : c.item({idx[0], 0, idx[2]});
        REQUIRE(y.item(idx) == want);
      }
      // Into a strided out, along the last dim (-1), with an empty input.
      const Tensor out = strided_out({2, 3, 8}, dt);
      concat_out(out, {a, Tensor::zeros({2, 3, 0}, dt), a}, -1, on(be));
      require_close(out.narrow(2, 0, 4), a, 0, 0);
      require_close(out.narrow(2, 4, 4), a, 0, 0);
    }
}

TEST_CASE("rows: concat errors", "[ops][rows][errors]") {
  const Tensor a = Tensor::randn({2, 3}, 1), b = Tensor::randn({2, 4}, 2);
  const Tensor out = Tensor::full({2, 7}, kSentinel);
  require_error("concat", {"xs[1] has shape [2, 4]", "dim 0"},
                [&] {
                  concat_out(out, {a, b}, 0);
                },
                {&out});
  require_error("concat", {"xs[1] has dtype f64", "f32"},
                [&] {
                  concat_out(out, {a, b.to(DType::f64)}, 1);
                },
                {&out});
  require_error("concat", {"dim 2", "out of range"}, [&] { concat_out(out, {a, b}, 2); }, {&out});
  require_error("concat", {"xs is empty"}, [&] { concat_out(out, {}, 0); }, {&out});
  require_error("concat", {"out has shape [2, 7]", "[2, 6]"},
                [&] {
                  concat_out(out, {a, a}, 1);
                },
                {&out});
  // An input overlapping out: refused before the first copy.
  const Tensor o2 = out.narrow(1, 0, 6);
  require_error("concat", {"out overlaps input xs[1]"},
                [&] {
                  concat_out(o2, {a, out.narrow(1, 4, 3)}, 1);
                },
                {&out});
}

// ============================ large ops ======================================

TEST_CASE("rows: ops large enough for several cpu threads match the reference", "[ops][rows]") {
  // Over 32768 elements: the cpu splits rows over its OpenMP threads (when
  // more than one is available); the answers must not change.
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    const double t = tol(dt);
    const Tensor x = make_layout(Layout::flipped, {301, 257}, 71, dt);
    const Tensor w = Tensor::randn({257}, 72, dt), b = Tensor::randn({257}, 73, dt);
    require_close(softmax(x, -1, on("cpu")), softmax(x, -1, on("reference")), t, t);
    require_close(log_softmax(x, 0, on("cpu")), log_softmax(x, 0, on("reference")), t, t);
    require_close(layer_norm(x, w, b, 1e-5, on("cpu")), layer_norm(x, w, b, 1e-5, on("reference")),
                  3 * t, 3 * t);
    require_close(rms_norm(x, w, 1e-6, on("cpu")), rms_norm(x, w, 1e-6, on("reference")), 3 * t,
                  3 * t);
    require_close(sum(x, 1, false, on("cpu")), sum(x, 1, false, on("reference")), t * 257, t);
    require_close(argmax(x, 0, false, on("cpu")), argmax(x, 0, false, on("reference")), 0, 0);
    const Tensor ids = Tensor::from_vector<std::int64_t>(
        [] {
          std::vector<std::int64_t> v;
          for (int i = 0; i < 20000; ++i) v.push_back((i * 7919) % 301);
          return v;
        }(),
        {20000});
    require_close(embedding(ids, x, on("cpu")), embedding(ids, x, on("reference")), 0, 0);
    const Tensor xr = make_layout(Layout::fused_slice, {64, 8, 128}, 74, dt);
    const Tensor pos = Tensor::arange(8, DType::i64);
    require_close(rotary(xr, pos, {}, on("cpu")), rotary(xr, pos, {}, on("reference")), t, t);
  }
}

// ============================ devices ========================================

TEST_CASE("rows: operands on different devices are refused", "[ops][rows][errors]") {
  core_test::DeviceScope scope;
  REQUIRE(scope.device);  // a real GPU, or the fake runtime standing in for one
  const Device other = *scope.device;
  const std::string on_other = " is on " + other.str();
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3, 4}, kSentinel);
  const Tensor w_dev = Tensor::randn({4}, 2).to(other);
  require_error("layer_norm", {"weight" + on_other, "x is on cpu"},
                [&] { layer_norm_out(out, x, w_dev, Tensor()); }, {&out});
  require_error("softmax", {"out" + on_other},
                [&] {
                  softmax_out(Tensor::full({3, 4}, kSentinel).to(other), x, 1);
                },
                {&out});
  require_error("rotary", {"positions" + on_other},
                [&] { rotary_out(out, x, Tensor::zeros({3}, DType::i64).to(other)); }, {&out});
  require_error(
      "embedding", {"table" + on_other},
      [&] {
        embedding_out(out, Tensor::zeros({3}, DType::i64), Tensor::randn({5, 4}, 1).to(other));
      },
      {&out});
  require_error(
      "index_copy_", {"index" + on_other, "dst is on cpu"},
      [&] {
        index_copy_(out, 0, Tensor::zeros({3}, DType::i64).to(other), Tensor::randn({3, 4}, 1));
      },
      {&out});
  require_error("concat", {"xs[1]" + on_other},
                [&] {
                  concat_out(out, {x.narrow(1, 0, 2), x.narrow(1, 2, 2).to(other)}, 1);
                },
                {&out});
}
