// nn modules against independent computations: plain f64 loops in the test
// (Linear, RMSNorm, LayerNorm, attention with rotary and grouped heads) or
// the ops called on unfused weights (the MLPs), on the reference and cpu
// backends; the fused QKV views alias the projection output.
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/matmul.hpp"
#include "strata/nn/attention.hpp"
#include "strata/nn/layers.hpp"
#include "test_nn_util.hpp"

using namespace strata;
using namespace strata::nn;
using nn_test::kBackends;
using nn_test::rel_err;

namespace {

MatmulOptions on(const char* backend) {
  MatmulOptions o;
  o.backend = backend;
  return o;
}

// y [rows, out] = x [rows, in] W^T (W [out, in]) + b, in f64.
std::vector<double> lin(const std::vector<double>& x, std::int64_t rows, std::int64_t in,
                        const std::vector<double>& w, std::int64_t out,
                        const std::vector<double>& b) {
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i)
        s += x[static_cast<std::size_t>(r * in + i)] * w[static_cast<std::size_t>(o * in + i)];
      y[static_cast<std::size_t>(r * out + o)] = s;
    }
  return y;
}

std::vector<double> vals(const Tensor& t) {
  return t.defined() ? t.to_vector<double>() : std::vector<double>{};
}

}  // namespace

TEST_CASE("nn Linear equals x W^T + b computed in a loop", "[nn][nn_modules]") {
  for (const char* be : kBackends) {
    for (bool bias : {false, true}) {
      INFO(be << " bias " << bias);
      Linear l(12, 7, bias);
      init_normal(l, 3, 0.5);
      const Tensor x = Tensor::randn({2, 5, 12}, 9);
      const Tensor y = l.forward(x, on(be));
      REQUIRE(y.shape() == Shape{2, 5, 7});
      const Tensor want =
          Tensor::from_vector(lin(vals(x), 10, 12, vals(l.weight), 7, vals(l.bias)), {2, 5, 7});
      CHECK(rel_err(y, want) < 1e-5);
    }
  }
}

TEST_CASE("nn norms equal their formulas computed in a loop", "[nn][nn_modules]") {
  const std::int64_t d = 16;
  const Tensor x = Tensor::randn({3, d}, 4);
  const auto xv = vals(x);
  RMSNorm rms(d, 1e-5);
  LayerNorm ln(d, 1e-5);
  init_normal(rms, 5, 0.3);
  init_normal(ln, 6, 0.3);
  const auto rw = vals(rms.weight), lw = vals(ln.weight), lb = vals(ln.bias);
  std::vector<double> want_rms(xv.size()), want_ln(xv.size());
  for (std::int64_t r = 0; r < 3; ++r) {
    double ss = 0, mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) {
      const double v = xv[static_cast<std::size_t>(r * d + i)];
      ss += v * v;
      mean += v / d;
    }
    for (std::int64_t i = 0; i < d; ++i) {
      const double c = xv[static_cast<std::size_t>(r * d + i)] - mean;
      var += c * c / d;
    }
    for (std::int64_t i = 0; i < d; ++i) {
      const auto k = static_cast<std::size_t>(r * d + i);
      const auto ki = static_cast<std::size_t>(i);
      want_rms[k] = xv[k] / std::sqrt(ss / d + 1e-5) * rw[ki];
      want_ln[k] = (xv[k] - mean) / std::sqrt(var + 1e-5) * lw[ki] + lb[ki];
    }
  }
  for (const char* be : kBackends) {
    INFO(be);
    CHECK(rel_err(rms.forward(x, on(be)), Tensor::from_vector(want_rms, {3, d})) < 1e-5);
    CHECK(rel_err(ln.forward(x, on(be)), Tensor::from_vector(want_ln, {3, d})) < 1e-5);
  }
}

TEST_CASE("nn MLP and GatedMLP equal the ops on unfused weights", "[nn][nn_modules]") {
  const Tensor x = Tensor::randn({2, 3, 16}, 11);
  for (const char* be : kBackends) {
    INFO(be);
    const MatmulOptions o = on(be);
    MLP mlp(16, 40, true, Activation::gelu_tanh);
    init_normal(mlp, 12, 0.3);
    const Tensor want_mlp = linear(gelu_tanh(linear(x, mlp.fc.weight, mlp.fc.bias, o), o),
                                   mlp.proj.weight, mlp.proj.bias, o);
    CHECK(rel_err(mlp.forward(x, o), want_mlp) < 1e-6);

    GatedMLP g(16, 24, false);
    init_normal(g, 13, 0.3);
    // gate's rows first, then up's: the order load_hf concatenates them in.
    const Tensor wg = g.gate_up.weight.narrow(0, 0, 24), wu = g.gate_up.weight.narrow(0, 24, 24);
    const Tensor want_g =
        linear(mul(silu(linear(x, wg, {}, o), o), linear(x, wu, {}, o), o), g.down.weight, {}, o);
    CHECK(rel_err(g.forward(x, o), want_g) < 1e-6);
  }
}

TEST_CASE("nn fused QKV: q, k and v are views of the projection output", "[nn][nn_modules]") {
  MultiHeadAttention a(32, 4, 2, 8, false, std::nullopt);
  const Tensor y = Tensor::randn({2, 5, (4 + 2 * 2) * 8}, 1);
  const QKVViews v = a.split(y);
  CHECK(v.q.shape() == Shape{2, 4, 5, 8});
  CHECK(v.k.shape() == Shape{2, 2, 5, 8});
  CHECK(v.v.shape() == Shape{2, 2, 5, 8});
  for (const Tensor* t : {&v.q, &v.k, &v.v}) CHECK(t->storage() == y.storage());
  // Element (b, h, t, i) of each view is the projection's column
  // (start + h hd + i) of row (b, t).
  CHECK(v.q.item({1, 3, 2, 5}) == y.item({1, 2, 3 * 8 + 5}));
  CHECK(v.k.item({0, 1, 4, 7}) == y.item({0, 4, 32 + 8 + 7}));
  CHECK(v.v.item({1, 0, 0, 2}) == y.item({1, 0, 32 + 16 + 2}));
  v.q.set_item({0, 0, 0, 0}, 42.0);
  CHECK(y.item({0, 0, 0}) == 42.0);
}

TEST_CASE("nn MultiHeadAttention equals a loop: rotary, grouped heads, causal, cache",
          "[nn][nn_modules]") {
  const std::int64_t B = 2, T = 5, D = 24, H = 4, G = 2, hd = 6;
  RotaryOptions ro;
  ro.theta = 100.0;  // large angles within 5 positions
  for (bool rotary : {false, true}) {
    MultiHeadAttention a(D, H, G, hd, true,
                         rotary ? std::optional<RotaryOptions>(ro) : std::nullopt);
    init_normal(a, 21, 0.3);
    const Tensor x = Tensor::randn({B, T, D}, 22);
    const Tensor pos = Tensor::arange(T, DType::i64);

    // The reference, in f64.
    const std::int64_t C = (H + 2 * G) * hd;
    auto y = lin(vals(x), B * T, D, vals(a.qkv.weight), C, vals(a.qkv.bias));
    auto at = [&](std::int64_t b, std::int64_t t, std::int64_t col) -> double& {
      return y[static_cast<std::size_t>((b * T + t) * C + col)];
    };
    if (rotary) {
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t t = 0; t < T; ++t)
          for (std::int64_t head = 0; head < H + G; ++head)  // q's heads then k's
            for (std::int64_t i = 0; i < hd / 2; ++i) {
              const double f = std::pow(ro.theta, -2.0 * static_cast<double>(i) / hd);
              const double c = std::cos(t * f), s = std::sin(t * f);
              double& p = at(b, t, head * hd + i);
              double& q = at(b, t, head * hd + i + hd / 2);
              const double p0 = p, q0 = q;
              p = p0 * c - q0 * s;
              q = q0 * c + p0 * s;
            }
    }
    std::vector<double> o(static_cast<std::size_t>(B * T * H * hd));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h) {
        const std::int64_t g = h / (H / G);
        for (std::int64_t t = 0; t < T; ++t) {
          std::vector<double> p(static_cast<std::size_t>(t + 1));
          double mx = -1e300, sum = 0;
          for (std::int64_t j = 0; j <= t; ++j) {
            double s = 0;
            for (std::int64_t i = 0; i < hd; ++i)
              s += at(b, t, h * hd + i) * at(b, j, H * hd + g * hd + i);
            p[static_cast<std::size_t>(j)] = s / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, p[static_cast<std::size_t>(j)]);
          }
          for (auto& e : p) sum += (e = std::exp(e - mx));
          for (std::int64_t i = 0; i < hd; ++i) {
            double acc = 0;
            for (std::int64_t j = 0; j <= t; ++j)
              acc += p[static_cast<std::size_t>(j)] * at(b, j, (H + G) * hd + g * hd + i);
            o[static_cast<std::size_t>((b * T + t) * H * hd + h * hd + i)] = acc / sum;
          }
        }
      }
    const Tensor want = Tensor::from_vector(
        lin(o, B * T, H * hd, vals(a.out.weight), D, vals(a.out.bias)), {B, T, D});

    for (const char* be : kBackends) {
      INFO(be << " rotary " << rotary);
      CHECK(rel_err(a.forward(x, pos, nullptr, 0, on(be)), want) < 1e-5);
      // Through a cache (separate k and v, or one kv buffer): 3 tokens,
      // then 2 more at positions 3 and 4.
      const Tensor kv = Tensor::zeros({B, 2, G, 8, hd});
      for (LayerCache c :
           {LayerCache{Tensor::zeros({B, G, 8, hd}), Tensor::zeros({B, G, 8, hd}), {}},
            LayerCache{kv.select(1, 0), kv.select(1, 1), kv}}) {
        const Tensor y1 = a.forward(x.narrow(1, 0, 3), pos.narrow(0, 0, 3), &c, 0, on(be));
        const Tensor y2 = a.forward(x.narrow(1, 3, 2), pos.narrow(0, 3, 2), &c, 3, on(be));
        CHECK(rel_err(y1, want.narrow(1, 0, 3)) < 1e-5);
        CHECK(rel_err(y2, want.narrow(1, 3, 2)) < 1e-5);
      }
    }
  }
}

TEST_CASE("nn modules list their parameters by name; to() casts them", "[nn][nn_modules]") {
  MultiHeadAttention a(16, 4, 2, 4, true, std::nullopt);
  std::vector<std::string> names;
  for (auto& [n, p] : a.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"qkv.weight", "qkv.bias", "out.weight", "out.bias"});
  CHECK(a.num_parameters() == (16 * 4 * 4 * 2 + 32) + (16 * 16 + 16));
  a.to(DType::bf16);
  for (auto& [n, p] : a.named_parameters()) CHECK(p->dtype() == DType::bf16);
  CORE_REQUIRE_ERROR(MultiHeadAttention(16, 4, 3, 4, false, std::nullopt), "num_kv_heads 3",
                     "num_heads 4");
}
