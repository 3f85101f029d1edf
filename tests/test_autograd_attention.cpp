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
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
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

Case named(const std::string& name) {
  Case c;
  c.name = name;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  v.push_back(named("plain"));
  Case c = named("causal bottom_right, M < N");
  c.causal = Causal::bottom_right;
  v.push_back(c);
  c = named("causal top_left");
  c.causal = Causal::top_left;
  v.push_back(c);
  c = named("window (1, 0)");
  c.window = std::make_pair(std::int64_t{1}, std::int64_t{0});
  v.push_back(c);
  c = named("GQA 4 q heads on 2 kv heads, dv != d");
  c.hq = 4;
  c.dv = 5;
  v.push_back(c);
  c = named("bool mask");
  c.mask = 1;
  v.push_back(c);
  c = named("float mask (its gradient too)");
  c.mask = 2;
  v.push_back(c);
  c = named("lse used downstream");
  c.lse = true;
  c.causal = Causal::bottom_right;
  v.push_back(c);
  c = named("k and v broadcast over a batch of 2");
  c.batch = 2;
  c.hq = 4;
  v.push_back(c);
  // Past one 64 x 64 block each way, so a blocked backward meets its block
  // edges, skipped blocks and partial last blocks.
  c = named("several blocks, causal top_left, GQA");
  c.finite_differences = false;
  c.m = 70;
  c.n = 150;
  c.hq = 4;
  c.d = 8;
  c.dv = 5;
  c.causal = Causal::top_left;
  v.push_back(c);
  c.name = "several blocks, window (40, 3), lse used";
  c.causal = Causal::none;
  c.window = std::make_pair(std::int64_t{40}, std::int64_t{3});
  c.lse = true;
  v.push_back(c);
  c = named("several blocks, bool mask, M > N");
  c.finite_differences = false;
  c.m = 130;
  c.n = 67;
  c.mask = 1;
  v.push_back(c);
  c = named("rows with every key masked");
  c.mask = 4;
  c.m = 6;
  v.push_back(c);
  c = named("rows with every key at -inf in a float mask");
  c.mask = 5;
  c.m = 6;
  v.push_back(c);
  c = named("no keys (N = 0)");
  c.n = 0;
  v.push_back(c);
  // Head dims of the tensor-core kernels (d, dv multiples of 8 up to 128,
  // read in place), past one tile each way; the FFMA path beyond 128.
  c = named("d 64, several tiles, causal bottom_right, GQA");
  c.finite_differences = false;
  c.m = 150;
  c.n = 200;
  c.hq = 4;
  c.d = 64;
  c.dv = 64;
  c.causal = Causal::bottom_right;
  v.push_back(c);
  c = named("d 128, dv 72, window (50, 20), float mask without its gradient, lse used");
  c.finite_differences = false;
  c.m = 90;
  c.n = 130;
  c.d = 128;
  c.dv = 72;
  c.window = std::make_pair(std::int64_t{50}, std::int64_t{20});
  c.mask = 3;
  c.lse = true;
  v.push_back(c);
  // No band and no mask over tiles past the kernels' cp.async pipelines
  // (up to 4 stages): the unmasked steps, the stage ring wrapping, partial
  // last tiles read as zeros.
  c = named("d 64, GQA, no band or mask, more tiles than pipeline stages");
  c.finite_differences = false;
  c.m = 170;
  c.n = 230;
  c.hq = 4;
  c.d = 64;
  c.dv = 64;
  v.push_back(c);
  c = named("d 128, no band or mask, more tiles than pipeline stages");
  c.finite_differences = false;
  c.m = 100;
  c.n = 250;
  c.d = 128;
  c.dv = 128;
  v.push_back(c);
  c = named("d 136 (over the tensor cores' 128), dv 24, bool mask");
  c.finite_differences = false;
  c.m = 40;
  c.n = 50;
  c.d = 136;
  c.dv = 24;
  c.mask = 1;
  v.push_back(c);
  c = named("q, k, v transposed views, causal top_left, several blocks");
  c.finite_differences = false;
  c.m = 70;
  c.n = 90;
  c.d = 16;
  c.dv = 24;
  c.causal = Causal::top_left;
  c.transposed = true;
  v.push_back(c);
  return v;
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
        const double x = flat.item({e}), h = 1e-6;
        flat.set_item({e}, x + h);
        const double up = loss(c, in);
        flat.set_item({e}, x - h);
        const double down = loss(c, in);
        flat.set_item({e}, x);
        INFO("input " << w << " element " << e);
        CHECK(std::abs(grads[w][static_cast<std::size_t>(e)] - (up - down) / (2 * h)) < 1e-6);
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
  Case c = named("GQA, causal, several tiles, float mask without its gradient");
  c.m = 150;
  c.n = 200;
  c.hq = 4;
  c.d = 64;
  c.dv = 64;
  c.causal = Causal::bottom_right;
  c.mask = 3;
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
