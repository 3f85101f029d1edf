// The row ops' backward kernels (softmax_backward, log_softmax_backward,
// layer_norm_backward, rms_norm_backward) on every available backend:
//   * closed forms each backend must meet on its own: a softmax gradient
//     row sums to zero, log_softmax's against a one-hot grad is onehot - p,
//     a layer_norm dx row is orthogonal to 1 and to xhat, rms_norm's to x,
//     dbias is the column sum of grad and dweight that of grad * xhat;
//   * dweight and dbias the same bits whatever the cpu's thread count;
//   * in place (dx is grad) as out of place;
//   * bad input: a strata::Error naming op, argument and value, with the
//     caller's outputs untouched; and no second derivative under a tape.
// Every layout and dtype against the reference: the op runner's "row
// backward" family (test_ops_runner.cpp) and autograd's gradient runner.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_error_util.hpp"
#include "ops_test_util.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/registry.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr double kSentinel = 7.25;

using ops_test::on;
using ops_test::require_error;

// Every compiled and available backend with its device.
std::vector<std::pair<std::string, Device>> backends() {
  std::vector<std::pair<std::string, Device>> v;
  for (const BackendInfo& b : Registry::get().backends())
    if (b.compiled && b.available)
      v.emplace_back(b.name, b.device == DeviceType::cpu ? Device::cpu() : Device::cuda(0));
  return v;
}

// Relative tolerance of a value rounded to dt after f32 (f64) arithmetic.
double tol(DType dt) { return ops_test::per_dtype(dt, 1e-12, 1e-5, 4e-3, 3e-2, 0); }

// Per row r of t [rows, n]: sum_j t[r, j] * u[r, j] (u undefined: 1), and sum_j |t u|.
struct RowDot {
  std::vector<double> dot, mag;
};
RowDot row_dot(const Tensor& t, const Tensor& u) {
  const std::vector<double> a = t.to_vector<double>();
  const std::vector<double> b = u.defined() ? u.to_vector<double>() : std::vector<double>();
  const std::int64_t n = t.size(-1), rows = t.numel() / n;
  RowDot r;
  for (std::int64_t i = 0; i < rows; ++i) {
    double s = 0, m = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const auto k = static_cast<std::size_t>(i * n + j);
      const double v = a[k] * (b.empty() ? 1.0 : b[k]);
      s += v;
      m += std::abs(v);
    }
    r.dot.push_back(s);
    r.mag.push_back(m);
  }
  return r;
}

// Every row's dot is zero up to `rel` of the row's magnitude.
void require_orthogonal(const Tensor& t, const Tensor& u, double rel) {
  const RowDot r = row_dot(t, u);
  for (std::size_t i = 0; i < r.dot.size(); ++i) {
    INFO("row " << i << ": dot " << r.dot[i] << ", magnitude " << r.mag[i]);
    REQUIRE(r.mag[i] > 0);
    REQUIRE(std::abs(r.dot[i]) <= rel * r.mag[i]);
  }
}

void require_close(const Tensor& got, const std::vector<double>& want, double rel) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  const std::size_t bad = ops_test::first_out_of_tolerance(g, want, rel * scale, rel);
  INFO("first bad element " << bad << " of " << g.size());
  REQUIRE(bad == g.size());
}

class ThreadCount {
 public:
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(before_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int before_ = omp_get_max_threads();
};

}  // namespace

TEST_CASE("rows backward: softmax and log_softmax closed forms", "[ops][rows][backward]") {
  for (const auto& [be, dev] : backends())
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      const Tensor x = Tensor::randn({5, 37}, 1, dt, dev), g = Tensor::randn({5, 37}, 2, dt, dev);
      // softmax: each dx row sums to zero (the y rows sum to one).
      const Tensor y = softmax(x, -1, on(be.c_str()));
      require_orthogonal(softmax_backward(g, y, -1, on(be.c_str())), Tensor(), 4 * tol(dt));
      // ... and along dim 0, on a transposed view.
      const Tensor y0 = softmax(x, 0, on(be.c_str()));
      require_orthogonal(softmax_backward(g, y0, 0, on(be.c_str())).transpose(0, 1).contiguous(),
                         Tensor(), 4 * tol(dt));
      // log_softmax against a one-hot grad (cross-entropy's): dx = onehot - p.
      const Tensor ly = log_softmax(x, -1, on(be.c_str()));
      std::vector<double> onehot(5 * 37, 0.0), want;
      const std::vector<double> p =
          softmax(x.to(DType::f64).to(Device::cpu()), -1).to_vector<double>();
      for (int r = 0; r < 5; ++r) onehot[static_cast<std::size_t>(r * 37 + (7 * r) % 37)] = 1.0;
      for (std::size_t k = 0; k < onehot.size(); ++k) want.push_back(onehot[k] - p[k]);
      const Tensor oh = Tensor::from_vector(onehot, {5, 37}).to(dt).to(dev);
      require_close(log_softmax_backward(oh, ly, -1, on(be.c_str())), want, 4 * tol(dt));
      require_orthogonal(log_softmax_backward(g, ly, -1, on(be.c_str())), Tensor(), 4 * tol(dt));
      // In place (dx is grad) gives what a fresh dx gets.
      const Tensor gi = g.clone();
      softmax_backward_out(gi, gi, y, -1, on(be.c_str()));
      CHECK(gi.to_vector<double>() ==
            softmax_backward(g, y, -1, on(be.c_str())).to_vector<double>());
    }
}

TEST_CASE("rows backward: layer_norm and rms_norm closed forms", "[ops][rows][backward]") {
  for (const auto& [be, dev] : backends())
    for (DType dt : kFloats) {
      INFO(be << " " << dtype_name(dt));
      const OpOptions o = on(be.c_str());
      const std::int64_t rows = 6, n = 40;
      std::vector<double> xv = Tensor::randn({rows, n}, 3, DType::f64).to_vector<double>();
      for (double& e : xv) e = 2 * e + 0.5;  // mean 0.5, spread 2
      const Tensor x = Tensor::from_vector(xv, {rows, n}).to(dt).to(dev);
      const Tensor g = Tensor::randn({rows, n}, 4, dt, dev), w = Tensor::randn({n}, 5, dt, dev);
      // eps 0: xhat has mean 0 and mean square 1 per row, so dx is
      // orthogonal to 1 and to xhat (layer_norm), to x (rms_norm).
      const NormGrads ln = layer_norm_backward(g, x, w, 0.0, o);
      const Tensor xhat = layer_norm(x, Tensor(), Tensor(), 0.0, o);
      require_orthogonal(ln.dx, Tensor(), 8 * tol(dt));
      require_orthogonal(ln.dx, xhat, 8 * tol(dt));
      const NormGrads rn = rms_norm_backward(g, x, w, 0.0, o);
      require_orthogonal(rn.dx, x, 8 * tol(dt));
      CHECK_FALSE(rn.dbias.defined());
      // dbias = column sums of g; dweight = column sums of g * xhat.
      const std::vector<double> gv = g.to_vector<double>(), zv = xhat.to_vector<double>();
      const std::vector<double> rz = rms_norm(x, Tensor(), 0.0, o).to_vector<double>();
      std::vector<double> db(n, 0.0), dw(n, 0.0), dwr(n, 0.0);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = static_cast<std::size_t>(r * n + j), c = static_cast<std::size_t>(j);
          db[c] += gv[k];
          dw[c] += gv[k] * zv[k];
          dwr[c] += gv[k] * rz[k];
        }
      require_close(ln.dbias, db, 2 * tol(dt));
      require_close(ln.dweight, dw, 4 * tol(dt));
      require_close(rn.dweight, dwr, 4 * tol(dt));
      // The _out form with only some outputs gives the same values; dx in place.
      const Tensor dbias = Tensor::full({n}, kSentinel, dt, dev), gi = g.clone();
      layer_norm_backward_out(gi, Tensor(), dbias, gi, x, w, 0.0, o);
      CHECK(dbias.to_vector<double>() == ln.dbias.to_vector<double>());
      CHECK(gi.to_vector<double>() == ln.dx.to_vector<double>());
      // No weight: gh = g; the sums still hold.
      require_orthogonal(layer_norm_backward(g, x, Tensor(), 0.0, o).dx, xhat, 8 * tol(dt));
    }
}

TEST_CASE("rows backward: no rows, and dweight the same bits whatever the cpu threads",
          "[ops][rows][backward]") {
  // No rows: the sums of nothing are zero.
  const NormGrads e = layer_norm_backward(Tensor::zeros({0, 8}), Tensor::zeros({0, 8}),
                                          Tensor::randn({8}, 1), 1e-5, on("cpu"));
  CHECK(e.dweight.to_vector<double>() == std::vector<double>(8, 0.0));
  CHECK(e.dbias.to_vector<double>() == std::vector<double>(8, 0.0));
  // Many rows (several chunks), f32 sums: one thread and several agree bit for bit.
  const Tensor x = Tensor::randn({1000, 96}, 6), g = Tensor::randn({1000, 96}, 7);
  const Tensor w = Tensor::randn({96}, 8);
  std::vector<float> first;
  for (const int threads : {1, 2, 3}) {
    const ThreadCount tc(threads);
    const NormGrads r = layer_norm_backward(g, x, w, 1e-5, on("cpu"));
    std::vector<float> bits = r.dweight.to_vector<float>();
    const std::vector<float> db = r.dbias.to_vector<float>();
    bits.insert(bits.end(), db.begin(), db.end());
    if (first.empty()) first = bits;
    INFO(threads << " threads");
    CHECK(std::memcmp(bits.data(), first.data(), bits.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("rows backward: errors", "[ops][rows][backward][errors]") {
  const Tensor x = Tensor::randn({3, 4}, 1), g = Tensor::randn({3, 4}, 2);
  const Tensor w = Tensor::randn({4}, 3);
  const Tensor dx = Tensor::full({3, 4}, kSentinel), dw = Tensor::full({4}, kSentinel);
  require_error("softmax_backward", {"grad has shape [4, 3]", "y has [3, 4]"},
                [&] { softmax_backward_out(dx, g.transpose(0, 1), x, -1); }, {&dx});
  require_error("log_softmax_backward", {"grad has dtype f64", "y has f32"},
                [&] { log_softmax_backward_out(dx, g.to(DType::f64), x, 0); }, {&dx});
  require_error("softmax_backward", {"dim 2"}, [&] { softmax_backward_out(dx, g, x, 2); }, {&dx});
  require_error("softmax_backward", {"dx overlaps input y"},
                [&] { softmax_backward_out(dx, g, dx, -1); }, {&dx});
  require_error("layer_norm_backward", {"grad has shape [3, 5]", "x has [3, 4]"},
                [&] {
                  layer_norm_backward_out(dx, dw, Tensor(), Tensor::randn({3, 5}, 4), x, w);
                },
                {&dx, &dw});
  require_error("layer_norm_backward", {"dweight is given but weight is undefined"},
                [&] { layer_norm_backward_out(dx, dw, Tensor(), g, x, Tensor()); }, {&dx, &dw});
  require_error("rms_norm_backward", {"dx, dweight and dbias are all undefined"},
                [&] { rms_norm_backward_out(Tensor(), Tensor(), g, x, w); }, {});
  require_error("rms_norm_backward", {"eps -1"},
                [&] { rms_norm_backward_out(dx, dw, g, x, w, -1.0); }, {&dx, &dw});
  require_error("layer_norm_backward", {"dweight has shape [3]", "[4]"},
                [&] { layer_norm_backward_out(dx, Tensor::zeros({3}), Tensor(), g, x, w); }, {&dx});
  const Tensor xc = x.clone();
  require_error("rms_norm_backward", {"dx overlaps input x"},
                [&] { rms_norm_backward_out(xc, dw, g, xc, w); }, {&dw});
  // Under a tape: no second derivative through the backward kernels.
  autograd::Tape tape;
  tape.watch(g);
  require_error("softmax_backward", {"has no backward yet"},
                [&] { (void)softmax_backward(g, x, -1); }, {});
  require_error("layer_norm_backward", {"has no backward yet"},
                [&] { (void)layer_norm_backward(g, x, w); }, {});
}
