// The front end's semantics checked by equivalences that do not rely on the
// reference being right: band options against explicit masks built from the
// formula in docs/guide/attention.md, GQA against repeated kv heads, batch broadcasting
// against explicit copies, output shapes for every rank.
#include <string>
#include <thread>
#include <vector>

#include "attention_test_util.hpp"
#include "strata/attention.hpp"

using namespace strata;
using strata::test::require_close;
using strata::test::runnable_backends;
using strata::test::tol_for;

namespace {

Tensor on(const Tensor& t, Device dev) { return t.defined() ? t.to(dev) : t; }

Tensor attend(const std::string& backend, Device dev, const Tensor& q, const Tensor& k,
              const Tensor& v, AttentionOptions opt = {}) {
  opt.backend = backend;
  opt.mask = on(opt.mask, dev);
  return softmax_attention(q.to(dev), k.to(dev), v.to(dev), opt).to(Device::cpu());
}

// Bool mask [M, N] keeping key j for query i when lo(i) <= j <= hi(i).
template <class Keep>
Tensor mask_from(std::int64_t M, std::int64_t N, Keep keep) {
  std::vector<bool> m(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i) {
    for (std::int64_t j = 0; j < N; ++j) m[static_cast<std::size_t>(i * N + j)] = keep(i, j);
  }
  return Tensor::from_vector(m, {M, N});
}

}  // namespace

TEST_CASE("attention api: output shapes for every rank", "[attention]") {
  const Tensor q2 = Tensor::randn({5, 8}, 1), k2 = Tensor::randn({7, 8}, 2);
  const Tensor v2 = Tensor::randn({7, 3}, 3);
  const AttentionResult r2 = softmax_attention_lse(q2, k2, v2);
  CHECK(r2.out.shape() == Shape{5, 3});
  CHECK(r2.lse.shape() == Shape{5});
  CHECK(r2.out.is_contiguous());

  const Tensor k4 = Tensor::randn({2, 1, 7, 8}, 4), v4 = Tensor::randn({2, 1, 7, 3}, 5);
  const AttentionResult rb = softmax_attention_lse(q2, k4, v4);  // 2-D q, batched kv
  CHECK(rb.out.shape() == Shape{2, 1, 5, 3});
  CHECK(rb.lse.shape() == Shape{2, 1, 5});

  const Tensor q5 = Tensor::randn({3, 1, 4, 5, 8}, 6);
  const Tensor k3 = Tensor::randn({2, 7, 8}, 7), v3 = Tensor::randn({2, 7, 3}, 8);
  const AttentionResult r5 = softmax_attention_lse(q5, k3, v3);
  CHECK(r5.out.shape() == Shape{3, 1, 4, 5, 3});
  CHECK(r5.lse.shape() == Shape{3, 1, 4, 5});
}

TEST_CASE("attention api: kernel names and backend choice", "[attention]") {
  const Tensor q = Tensor::randn({2, 5, 8}, 1), k = Tensor::randn({2, 7, 8}, 2);
  const Tensor v = Tensor::randn({2, 7, 3}, 3);
  AttentionOptions opt;
  opt.backend = "reference";
  CHECK(softmax_attention_kernel(q, k, v, opt) == "reference.attention.naive");
  opt.backend = "auto";
  const BackendInfo* cpu = Registry::get().backend("cpu");
  const std::string name = softmax_attention_kernel(q, k, v, opt);
  INFO("auto picked " << name);
  if (cpu && cpu->available) {
    CHECK(name.rfind("cpu.", 0) == 0);
  } else {
    CHECK(name == "reference.attention.naive");
  }
  const BackendInfo* ref = Registry::get().backend("reference");
  REQUIRE(ref);
  CHECK(ref->compiled);
  CHECK(ref->available);
  CHECK(ref->device == DeviceType::cpu);
}

TEST_CASE("attention api: windows and causal equal the explicit masks of the contract",
          "[attention]") {
  // i + off - left <= j <= i + off + right, off = N - M (bottom-right) or 0.
  struct W {
    std::int64_t M, N, left, right;
    bool top_left;
    Causal causal;
  };
  const std::vector<W> ws = {
      {7, 13, 3, 0, false, Causal::none},           {7, 13, 2, 4, true, Causal::none},
      {13, 7, -1, 1, false, Causal::none},          {13, 7, 0, -1, true, Causal::none},
      {9, 9, 2, 2, false, Causal::bottom_right},    {5, 12, -1, -1, false, Causal::top_left},
      {12, 5, -1, -1, false, Causal::bottom_right}, {6, 11, 4, 3, false, Causal::top_left},
  };
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const auto& be : runnable_backends()) {
      std::uint64_t seed = 70;
      for (const W& w : ws) {
        ++seed;
        INFO("backend " << be.name << " dtype " << dtype_name(dt) << " M " << w.M << " N " << w.N
                        << " window (" << w.left << ", " << w.right << ") top_left " << w.top_left
                        << " causal " << static_cast<int>(w.causal) << " seed " << seed);
        const Tensor q = Tensor::randn({3, w.M, 16}, seed, dt);
        const Tensor k = Tensor::randn({3, w.N, 16}, seed + 100, dt);
        const Tensor v = Tensor::randn({3, w.N, 5}, seed + 200, dt);
        AttentionOptions band;
        band.window = std::pair<std::int64_t, std::int64_t>{w.left, w.right};
        band.window_top_left = w.top_left;
        band.causal = w.causal;
        const bool wtl = w.top_left || w.causal == Causal::top_left;
        const std::int64_t woff = wtl ? 0 : w.N - w.M;
        const std::int64_t coff = w.causal == Causal::top_left ? 0 : w.N - w.M;
        AttentionOptions explicit_mask;
        explicit_mask.mask = mask_from(w.M, w.N, [&](std::int64_t i, std::int64_t j) {
          bool keep = true;
          if (w.left >= 0) keep = keep && j >= i + woff - w.left;
          if (w.right >= 0) keep = keep && j <= i + woff + w.right;
          if (w.causal != Causal::none) keep = keep && j <= i + coff;
          return keep;
        });
        require_close(attend(be.name, be.device, q, k, v, band).to_vector<double>(),
                      attend(be.name, be.device, q, k, v, explicit_mask).to_vector<double>(),
                      tol_for(dt));
      }
    }
  }
}

TEST_CASE("attention api: grouped-query heads read kv head h / (Hq / Hkv)", "[attention]") {
  for (const auto& be : runnable_backends()) {
    INFO("backend " << be.name << " seed 81");
    const Tensor q = Tensor::randn({2, 6, 9, 12}, 81);
    const Tensor k = Tensor::randn({2, 2, 11, 12}, 82);
    const Tensor v = Tensor::randn({2, 2, 11, 7}, 83);
    const Tensor out = attend(be.name, be.device, q, k, v);
    for (std::int64_t h = 0; h < 6; ++h) {
      INFO("q head " << h);
      const Tensor one =
          attend(be.name, be.device, q.select(1, h), k.select(1, h / 3), v.select(1, h / 3));
      require_close(out.select(1, h).to_vector<double>(), one.to_vector<double>(),
                    tol_for(DType::f32));
    }
  }
}

TEST_CASE("attention api: batch dims broadcast like explicit copies", "[attention]") {
  for (const auto& be : runnable_backends()) {
    INFO("backend " << be.name << " seed 91");
    const Tensor q = Tensor::randn({3, 1, 2, 5, 8}, 91);
    const Tensor k = Tensor::randn({4, 2, 6, 8}, 92);  // batch [4] vs q's [3, 1]
    const Tensor v = Tensor::randn({1, 2, 6, 3}, 93);
    const Tensor mask = Tensor::randn({4, 1, 5, 6}, 94);  // float, broadcast over heads
    AttentionOptions opt;
    opt.mask = mask;
    const Tensor out = attend(be.name, be.device, q, k, v, opt);
    REQUIRE(out.shape() == Shape{3, 4, 2, 5, 3});
    const Shape full = {3, 4, 2, 6, 8};
    AttentionOptions opt_full;
    opt_full.mask = mask.expand({3, 4, 2, 5, 6}).clone();
    const Tensor ref = attend(be.name, be.device, q.expand({3, 4, 2, 5, 8}).clone(),
                              k.expand(full).clone(), v.expand({3, 4, 2, 6, 3}).clone(), opt_full);
    require_close(out.to_vector<double>(), ref.to_vector<double>(), tol_for(DType::f32));
  }
}

TEST_CASE("attention api: custom scale equals pre-scaled q", "[attention]") {
  for (const auto& be : runnable_backends()) {
    INFO("backend " << be.name << " seed 101");
    const Tensor q = Tensor::randn({2, 7, 4}, 101, DType::f64);
    const Tensor k = Tensor::randn({2, 9, 4}, 102, DType::f64);
    const Tensor v = Tensor::randn({2, 9, 3}, 103, DType::f64);
    AttentionOptions opt;
    opt.scale = -0.75;
    std::vector<double> qs = q.to_vector<double>();
    for (double& x : qs) x *= -0.75 * 2.0;  // default scale for d = 4 is 1/2
    const Tensor q_scaled = Tensor::from_vector(qs, q.shape());
    require_close(attend(be.name, be.device, q, k, v, opt).to_vector<double>(),
                  attend(be.name, be.device, q_scaled, k, v).to_vector<double>(), 1e-13);
  }
}

TEST_CASE("attention api: softmax_attention, _lse and _out agree; M = 0 writes nothing",
          "[attention]") {
  for (const auto& be : runnable_backends()) {
    INFO("backend " << be.name << " seed 111");
    AttentionOptions opt;
    opt.backend = be.name;
    opt.causal = Causal::top_left;
    const Tensor q = Tensor::randn({2, 3, 10, 8}, 111).to(be.device);
    const Tensor k = Tensor::randn({2, 3, 12, 8}, 112).to(be.device);
    const Tensor v = Tensor::randn({2, 3, 12, 4}, 113).to(be.device);
    const Tensor a = softmax_attention(q, k, v, opt);
    const AttentionResult b = softmax_attention_lse(q, k, v, opt);
    // A strided caller-owned out: [.., 4, 10] storage viewed transposed.
    const Tensor c = Tensor::full({2, 3, 4, 10}, 3.0).to(be.device).transpose(2, 3);
    softmax_attention_out(c, q, k, v, opt);
    require_close(a.to_vector<double>(), b.out.to_vector<double>(), tol_for(DType::f32));
    require_close(a.to_vector<double>(), c.to_vector<double>(), tol_for(DType::f32));

    // M = 0 into empty views of real buffers: a kernel that wrote anyway
    // (a row, a whole block) would change the surrounding values.
    const Tensor q0 = Tensor::randn({2, 3, 0, 8}, 114).to(be.device);
    const Tensor out_buf = Tensor::full({2, 3, 3, 4}, 3.0).to(be.device);
    const Tensor lse_buf = Tensor::full({2, 3, 3}, 5.0).to(be.device);
    softmax_attention_out(out_buf.narrow(2, 1, 0), q0, k, v, opt, lse_buf.narrow(2, 1, 0));
    for (double x : out_buf.to_vector<double>()) REQUIRE(x == 3.0);
    for (double x : lse_buf.to_vector<double>()) REQUIRE(x == 5.0);
  }
}

TEST_CASE("attention api: concurrent calls from several threads", "[attention]") {
  const Tensor q = Tensor::randn({2, 4, 33, 16}, 121);
  const Tensor k = Tensor::randn({2, 4, 65, 16}, 122);
  const Tensor v = Tensor::randn({2, 4, 65, 8}, 123);
  const std::vector<double> want = softmax_attention(q, k, v).to_vector<double>();
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { got[t] = softmax_attention(q, k, v).to_vector<double>(); });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) require_close(g, want, tol_for(DType::f32));
}
