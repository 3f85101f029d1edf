// softmax_attention's backward across the forward contract (causal in both
// alignments, windows, bool and float masks, GQA, dv != d, lse, fully
// masked rows, no keys): the reference backend's gradients against central
// finite differences in f64, and every other backend's (f64, f32, bf16,
// f16; cuda's kernels on the GPU) against the reference's, on contiguous
// and transposed layouts, and the same bits run to run.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "finite_diff.hpp"
#include "strata/attention.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"
#include "strata/registry.hpp"

using namespace strata;

namespace {

struct Case {
  std::string name;
  std::int64_t hq = 2, hkv = 2, m = 3, n = 4, d = 3, dv = 3;
  Causal causal = Causal::none;
  std::optional<std::pair<std::int64_t, std::int64_t>> window = std::nullopt;
  bool window_top_left = false;
  // 0 none, 1 bool, 2 float (its gradient too), 3 float (no gradient asked:
  // a backward kernel still serves it), 4 bool dropping every key of some
  // rows, 5 as 3 with -inf on every key of some rows (lse = -inf there)
  int mask = 0;
  bool lse = false;
  bool transposed = false;         // q, k, v as [.., d, rows] buffers seen transposed
  std::int64_t batch = 1;          // q's batch; k and v have one, broadcast over it
  bool finite_differences = true;  // small enough for them
};

using Window = std::pair<std::int64_t, std::int64_t>;

// Fields not named keep Case's defaults (hq 2, hkv 2, m 3, n 4, d 3, dv 3).
std::vector<Case> cases() {
  constexpr Causal none = Causal::none, top_left = Causal::top_left,
                   bottom_right = Causal::bottom_right;
  constexpr bool large = false;  // finite_differences: too large for them
  // clang-format off
  return {
      {.name = "plain"},
      {.name = "causal bottom_right, M < N", .causal = bottom_right},
      {.name = "causal top_left", .causal = top_left},
      {.name = "window (1, 0)", .window = Window{1, 0}},
      {.name = "GQA 4 q heads on 2 kv heads, dv != d", .hq = 4, .dv = 5},
      {.name = "bool mask", .mask = 1},
      {.name = "float mask (its gradient too)", .mask = 2},
      {.name = "lse used downstream", .causal = bottom_right, .lse = true},
      {.name = "k and v broadcast over a batch of 2", .hq = 4, .batch = 2},
      // Past one 64 x 64 block each way, so a blocked backward meets its
      // block edges, skipped blocks and partial last blocks.
      {.name = "several blocks, causal top_left, GQA",
       .hq = 4, .m = 70, .n = 150, .d = 8, .dv = 5, .causal = top_left,
       .finite_differences = large},
      {.name = "several blocks, window (40, 3), lse used",
       .hq = 4, .m = 70, .n = 150, .d = 8, .dv = 5, .causal = none, .window = Window{40, 3},
       .lse = true, .finite_differences = large},
      {.name = "several blocks, bool mask, M > N",
       .m = 130, .n = 67, .mask = 1, .finite_differences = large},
      {.name = "rows with every key masked", .m = 6, .mask = 4},
      {.name = "rows with every key at -inf in a float mask", .m = 6, .mask = 5},
      {.name = "no keys (N = 0)", .n = 0},
      // Head dims of the tensor-core kernels (d, dv multiples of 8 up to
      // 128, read in place), past one tile each way; the FFMA path beyond 128.
      {.name = "d 64, several tiles, causal bottom_right, GQA",
       .hq = 4, .m = 150, .n = 200, .d = 64, .dv = 64, .causal = bottom_right,
       .finite_differences = large},
      {.name = "d 128, dv 72, window (50, 20), float mask without its gradient, lse used",
       .m = 90, .n = 130, .d = 128, .dv = 72, .window = Window{50, 20}, .mask = 3, .lse = true,
       .finite_differences = large},
      // No band and no mask over tiles past the kernels' cp.async pipelines
      // (up to 4 stages): the unmasked steps, the stage ring wrapping,
      // partial last tiles read as zeros.
      {.name = "d 64, GQA, no band or mask, more tiles than pipeline stages",
       .hq = 4, .m = 170, .n = 230, .d = 64, .dv = 64, .finite_differences = large},
      {.name = "d 128, no band or mask, more tiles than pipeline stages",
       .m = 100, .n = 250, .d = 128, .dv = 128, .finite_differences = large},
      {.name = "d 136 (over the tensor cores' 128), dv 24, bool mask",
       .m = 40, .n = 50, .d = 136, .dv = 24, .mask = 1, .finite_differences = large},
      {.name = "q, k, v transposed views, causal top_left, several blocks",
       .m = 70, .n = 90, .d = 16, .dv = 24, .causal = top_left, .transposed = true,
       .finite_differences = large},
  };
  // clang-format on
}

struct Inputs {
  Tensor q, k, v, mask, g_out, g_lse;
};

Inputs make_inputs(const Case& c, std::uint64_t seed) {
  Inputs in;
  in.q = Tensor::randn({c.batch, c.hq, c.m, c.d}, seed, DType::f64);
  in.k = Tensor::randn({1, c.hkv, c.n, c.d}, seed + 1, DType::f64);
  in.v = Tensor::randn({1, c.hkv, c.n, c.dv}, seed + 2, DType::f64);
  if (c.mask == 1 || c.mask == 4) {  // keep about 3 in 4; mask 4: no key of rows 1, 4, ...
    std::vector<bool> keep(static_cast<std::size_t>(c.m * c.n));
    for (std::size_t i = 0; i < keep.size(); ++i) {
      keep[i] = (i * 7 + 3) % 4 != 0 || i % c.n == 0;
      if (c.mask == 4 && i / c.n % 3 == 1) keep[i] = false;
    }
    Tensor t = Tensor::empty({c.m, c.n}, DType::boolean);
    for (std::int64_t i = 0; i < c.m * c.n; ++i)
      t.reshape({-1}).set_item({i}, keep[static_cast<std::size_t>(i)] ? 1.0 : 0.0);
    in.mask = t;
  } else if (c.mask == 2 || c.mask == 3 || c.mask == 5) {
    in.mask = Tensor::randn({c.hq, c.m, c.n}, seed + 3, DType::f64);
    for (std::int64_t h = 0; c.mask == 5 && h < c.hq; ++h)
      for (std::int64_t i = 1; i < c.m; i += 3)
        for (std::int64_t j = 0; j < c.n; ++j) in.mask.set_item({h, i, j}, -INFINITY);
  }
  in.g_out = Tensor::randn({c.batch, c.hq, c.m, c.dv}, seed + 4, DType::f64);
  in.g_lse = Tensor::randn({c.batch, c.hq, c.m}, seed + 5, DType::f64);
  return in;
}

AttentionOptions options(const Case& c, const Tensor& mask, const std::string& backend) {
  AttentionOptions o;
  o.causal = c.causal;
  o.window = c.window;
  o.window_top_left = c.window_top_left;
  o.mask = mask;
  o.backend = backend;
  return o;
}

double dot(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// sum(out * g_out) (+ sum(lse * g_lse)), no tape.
double loss(const Case& c, const Inputs& in) {
  const AttentionOptions o = options(c, in.mask, "reference");
  if (!c.lse) return dot(softmax_attention(in.q, in.k, in.v, o), in.g_out);
  const AttentionResult r = softmax_attention_lse(in.q, in.k, in.v, o);
  return dot(r.out, in.g_out) + dot(r.lse, in.g_lse);
}

// Gradients of q, k, v (and a float mask) on `backend` in dtype dt.
std::vector<std::vector<double>> gradients(const Case& c, const Inputs& in64, DType dt,
                                           const std::string& backend, Device dev = Device::cpu()) {
  Inputs in = in64;
  for (Tensor* t : {&in.q, &in.k, &in.v}) {
    *t = t->to(dt).to(dev);
    if (c.transposed) *t = t->transpose(-1, -2).contiguous().transpose(-1, -2);
  }
  if (c.mask >= 2 && c.mask != 4) in.mask = in.mask.to(dt);
  if (in.mask.defined()) in.mask = in.mask.to(dev);
  in.g_out = in.g_out.to(dev);
  in.g_lse = in.g_lse.to(dev);
  autograd::Tape tape;
  for (const Tensor* t : {&in.q, &in.k, &in.v}) tape.watch(*t);
  if (c.mask == 2) tape.watch(in.mask);
  const AttentionOptions o = options(c, in.mask, backend);
  OpOptions oo;
  oo.backend = backend;
  if (!c.lse) {
    tape.backward(softmax_attention(in.q, in.k, in.v, o), in.g_out.to(dt), oo);
  } else {
    const AttentionResult r = softmax_attention_lse(in.q, in.k, in.v, o);
    // one loss over both outputs: sum(out g) + sum(lse g_lse)
    const Tensor l =
        add(sum(sum(sum(sum(mul(r.out, in.g_out.to(dt)), 3), 2), 1), 0),
            cast(sum(sum(sum(mul(r.lse, cast(in.g_lse, r.lse.dtype())), 2), 1), 0), dt));
    tape.backward(l, {}, oo);
  }
  std::vector<std::vector<double>> g;
  for (const Tensor* t : {&in.q, &in.k, &in.v}) g.push_back(tape.grad(*t).to_vector<double>());
  if (c.mask == 2) g.push_back(tape.grad(in.mask).to_vector<double>());
  return g;
}

}  // namespace

TEST_CASE("attention gradients: the reference against finite differences",
          "[autograd][attention]") {
  std::uint64_t seed = 100;
  for (const Case& c : cases()) {
    if (!c.finite_differences) continue;
    INFO(c.name);
    Inputs in = make_inputs(c, seed += 10);
    const auto grads = gradients(c, in, DType::f64, "reference");
    std::vector<Tensor> xs = {in.q, in.k, in.v};
    if (c.mask == 2) xs.push_back(in.mask);
    for (std::size_t w = 0; w < xs.size(); ++w) {
      const Tensor flat = xs[w].reshape({-1});
      for (std::int64_t e = 0; e < flat.numel(); ++e) {
        const double fd = fd_test::central_difference(flat, e, 1e-6, [&] { return loss(c, in); });
        INFO("input " << w << " element " << e);
        CHECK(std::abs(grads[w][static_cast<std::size_t>(e)] - fd) < 1e-6);
      }
    }
  }
}

TEST_CASE("attention gradients: cpu and cuda in f64, f32, bf16 and f16 against the reference",
          "[autograd][attention]") {
  std::uint64_t seed = 500;
  for (const Case& c : cases()) {
    Inputs in = make_inputs(c, seed += 10);
    const auto ref = gradients(c, in, DType::f64, "reference");
    for (const BackendInfo& b : Registry::get().backends()) {
      if (!b.compiled || !b.available || b.name == "reference") continue;
      const Device dev = b.device == DeviceType::cpu ? Device::cpu() : Device::cuda(0);
      for (DType dt : {DType::f64, DType::f32, DType::bf16, DType::f16}) {
        INFO(c.name << " " << b.name << " " << dtype_name(dt));
        const auto got = gradients(c, in, dt, b.name, dev);
        const double tol = dt == DType::f64 ? 1e-10 : dt == DType::f32 ? 1e-5 : 4e-2;
        for (std::size_t w = 0; w < ref.size(); ++w) {
          double scale = 1;
          for (double x : ref[w]) scale = std::max(scale, std::abs(x));
          for (std::size_t e = 0; e < ref[w].size(); ++e) {
            INFO("input " << w << " element " << e);
            CHECK(std::abs(got[w][e] - ref[w][e]) <= tol * scale);
          }
        }
      }
    }
  }
}

TEST_CASE("attention gradients: the same bits run to run on every backend",
          "[autograd][attention]") {
  // dK and dV sum over a group of q heads and over query tiles, dQ over key
  // tiles: no atomics, so two runs agree bit for bit.
  // clang-format off
  const Case c{.name = "GQA, causal, several tiles, float mask without its gradient",
               .hq = 4, .m = 150, .n = 200, .d = 64, .dv = 64, .causal = Causal::bottom_right,
               .mask = 3};
  // clang-format on
  const Inputs in = make_inputs(c, 900);
  for (const BackendInfo& b : Registry::get().backends()) {
    if (!b.compiled || !b.available) continue;
    const Device dev = b.device == DeviceType::cpu ? Device::cpu() : Device::cuda(0);
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO(b.name << " " << dtype_name(dt));
      const auto first = gradients(c, in, dt, b.name, dev);
      const auto second = gradients(c, in, dt, b.name, dev);
      for (std::size_t w = 0; w < first.size(); ++w) {
        REQUIRE(first[w].size() == second[w].size());
        CHECK(std::memcmp(first[w].data(), second[w].data(), first[w].size() * sizeof(double)) ==
              0);
      }
    }
  }
}

TEST_CASE("attention gradients: q, k, v as views of one fused projection",
          "[autograd][attention]") {
  // qkv [T, 3, H, d] -> q, k, v [H, T, d] transposed views: the gradients
  // land in the fused tensor, and equal those of separate copies.
  const std::int64_t t = 5, h = 2, d = 4;
  const Tensor qkv = Tensor::randn({t, 3, h, d}, 77, DType::f64);
  const Tensor g = Tensor::randn({h, t, d}, 78, DType::f64);
  AttentionOptions o;
  o.causal = Causal::bottom_right;
  Tensor fused_grad;
  {
    autograd::Tape tape;
    tape.watch(qkv);
    auto part = [&](int i) { return qkv.select(1, i).transpose(0, 1); };
    tape.backward(softmax_attention(part(0), part(1), part(2), o), g);
    fused_grad = tape.grad(qkv).clone();
  }
  const Tensor q = qkv.select(1, 0).transpose(0, 1).clone(),
               k = qkv.select(1, 1).transpose(0, 1).clone(),
               v = qkv.select(1, 2).transpose(0, 1).clone();
  autograd::Tape tape;
  for (const Tensor* x : {&q, &k, &v}) tape.watch(*x);
  tape.backward(softmax_attention(q, k, v, o), g);
  for (int i = 0; i < 3; ++i) {
    const auto want = tape.grad(i == 0 ? q : i == 1 ? k : v).to_vector<double>();
    const auto got = fused_grad.select(1, i).transpose(0, 1).to_vector<double>();
    for (std::size_t e = 0; e < want.size(); ++e) CHECK(std::abs(got[e] - want[e]) < 1e-12);
  }
}
