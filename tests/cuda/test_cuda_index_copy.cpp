// index_copy_ on the cuda backend (docs/guide/ops.md, "index_copy_"): against the
// reference on every dtype and several layouts, the decode (T = 1) and
// prefill (T = 512) KV-cache appends, a bad index (an error, dst
// untouched), and the call captured into a CUDA graph: replays write at the
// positions the device index holds when replayed, and an out-of-range
// index is skipped without an error and without a write anywhere (dst lies
// inside a guard buffer). Part of strata_cuda_tests, which exits 77 (skip)
// on a machine without a GPU.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/index_copy.hpp"
#include "strata/registry.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

const Device kGpu = Device::cuda(0);
constexpr double kSentinel = 7.25;
constexpr DType kEvery[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                            DType::boolean, DType::i32, DType::i64};

using ops_test::on;

// Seeded values exact in every dtype: small integers (bool: their parity).
Tensor values(const Shape& s, std::uint64_t seed, DType dt) {
  std::vector<double> v = Tensor::randn(s, seed, DType::f64).to_vector<double>();
  for (double& x : v) x = std::round(8 * x);
  if (dt == DType::boolean)
    for (double& x : v) x = std::fmod(x, 2.0) != 0 ? 1.0 : 0.0;
  return Tensor::from_vector(v, s).to(dt);
}

// The whole of a tensor (any device) as doubles.
std::vector<double> host_values(const Tensor& t) { return t.to(Device::cpu()).to_vector<double>(); }

// Runs index_copy_ on the reference (host copies) and on cuda (the same
// views of device copies of the same buffers) and compares dst bit for bit.
// `view` takes a base buffer to the view the op sees.
struct Case {
  Shape dst_base, src_base;
  std::function<Tensor(const Tensor&)> dst_view, src_view;
  int dim;
  std::vector<std::int64_t> index;  // given flipped when `flip_index`
  DType index_dt;
  bool flip_index;
};

void check_against_reference(const Case& c, DType dt) {
  const Tensor dst_h = values(c.dst_base, 11, dt), src_h = values(c.src_base, 12, dt);
  Tensor idx_h = Tensor::from_vector<std::int64_t>(c.index, {std::int64_t(c.index.size())});
  idx_h = idx_h.to(c.index_dt);
  const Tensor dst_d = dst_h.to(kGpu), src_d = src_h.to(kGpu), idx_d = idx_h.to(kGpu);
  auto iv = [&](const Tensor& t) { return c.flip_index ? t.flip(0) : t; };
  index_copy_(c.dst_view(dst_h), c.dim, iv(idx_h), c.src_view(src_h), on("reference"));
  index_copy_(c.dst_view(dst_d), c.dim, iv(idx_d), c.src_view(src_d), on("cuda"));
  REQUIRE(host_values(dst_d) == host_values(dst_h));  // the whole base buffer
}

}  // namespace

TEST_CASE("index_copy_ cuda vs reference: every dtype, strided views, the row dim",
          "[ops][rows][cuda][index_copy]") {
  auto same = [](const Tensor& t) { return t; };
  const std::vector<Case> cases = {
      // Contiguous rows of 64 at dim 2 (the vector path for every item size).
      {{2, 3, 9, 64}, {2, 3, 4, 64}, same, same, 2, {7, 0, 3, 8}, DType::i64, false},
      // dst a slice of a wider buffer at an odd offset (no vector path),
      // src transposed, the index flipped.
      {{2, 9, 3 * 16 + 1},
       {2, 16, 4},
       [](const Tensor& t) { return t.narrow(2, 17, 16); },
       [](const Tensor& t) { return t.transpose(1, 2); },
       1,
       {5, 1, 8, 2},
       DType::i32,
       true},
      // Negative strides on dst, src broadcast with stride 0 along dim 0.
      {{3, 7, 24},
       {1, 2, 24},
       [](const Tensor& t) { return t.flip(2).flip(0); },
       [](const Tensor& t) {
         return t.expand({3, 2, 24});
       },
       -2,
       {6, 1},
       DType::i64,
       false},
      // The indexed dim is the row: the index read per element.
      {{5, 10}, {5, 6}, same, same, -1, {9, 0, 4, 2, 7, 5}, DType::i32, false},
      // Negative dim -4, dim 0 of a rank-4 dst.
      {{6, 2, 3, 8}, {3, 2, 3, 8}, same, same, -4, {5, 0, 3}, DType::i64, true},
  };
  for (DType dt : kEvery)
    for (std::size_t k = 0; k < cases.size(); ++k) {
      INFO(dtype_name(dt) << " case " << k);
      check_against_reference(cases[k], dt);
    }
}

TEST_CASE("index_copy_ cuda: KV-cache appends of a decode step and a 512-token prefill",
          "[ops][rows][cuda][index_copy]") {
  // kv [B, 2, Hkv, max_len, hd], the new k and v [B, 2, Hkv, T, hd] a view
  // of the fused QKV projection [B, T, (H + 2 Hkv) hd].
  const std::int64_t B = 2, H = 4, Hkv = 2, L = 600, hd = 64;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const std::int64_t T : {1, 512}) {
      INFO(dtype_name(dt) << " T " << T);
      const Tensor qkv_h = values({B, T, (H + 2 * Hkv) * hd}, 21, dt);
      const Tensor kv_h = values({B, 2, Hkv, L, hd}, 22, dt);
      auto kv_new = [&](const Tensor& qkv) {
        return qkv.narrow(2, H * hd, 2 * Hkv * hd)
            .reshape({B, T, 2, Hkv, hd})
            .permute({0, 2, 3, 1, 4});
      };
      std::vector<std::int64_t> pos(static_cast<std::size_t>(T));
      for (std::int64_t t = 0; t < T; ++t) pos[t] = 80 + t;  // a cache holding 80 positions
      const Tensor pos_h = Tensor::from_vector(pos, {T});
      const Tensor want = kv_h.clone();
      copy_(want.narrow(3, 80, T), kv_new(qkv_h), on("reference"));
      const Tensor kv_d = kv_h.to(kGpu);
      index_copy_(kv_d, 3, pos_h.to(kGpu), kv_new(qkv_h.to(kGpu)), on("cuda"));
      REQUIRE(host_values(kv_d) == host_values(want));
    }
}

TEST_CASE("index_copy_ cuda: a bad index is an error, dst untouched",
          "[ops][rows][cuda][index_copy][errors]") {
  const Tensor dst = Tensor::full({5, 3}, kSentinel).to(kGpu);
  const Tensor src = Tensor::randn({3, 3}, 1).to(kGpu);
  const std::vector<double> before = host_values(dst);
  struct Bad {
    Tensor index;  // on the GPU
    const char* message;
  };
  const Bad bads[] = {
      {Tensor::from_vector<std::int64_t>({0, 1, 7}, {3}).to(kGpu),
       "index_copy_: index holds 7 at position 2, outside [0, 5)"},
      {Tensor::from_vector<std::int32_t>({-3, 1, 2}, {3}).to(kGpu),
       "index_copy_: index holds -3 at position 0, outside [0, 5)"},
      // Positions count along the view: flipped, 9 is at position 2.
      {Tensor::from_vector<std::int64_t>({9, 1, 0}, {3}).to(kGpu).flip(0),
       "index_copy_: index holds 9 at position 2, outside [0, 5)"},
      // Stride 2: the 99s between the viewed elements are never read.
      {Tensor::from_vector<std::int32_t>({0, 99, 1, 99, 6}, {5}).to(kGpu).slice(0, 0, 5, 2),
       "index_copy_: index holds 6 at position 2, outside [0, 5)"},
  };
  for (const Bad& b : bads) {
    const std::string msg =
        core_test::error_of([&] { index_copy_(dst, 0, b.index, src, on("cuda")); });
    INFO(msg);
    CHECK(msg.find(b.message) == 0);
    REQUIRE(host_values(dst) == before);
  }
  // On a stream of the caller's that is not capturing: the same check.
  const Stream s(kGpu);
  OpOptions o = on("cuda");
  o.stream = s.handle();
  const std::string msg = core_test::error_of([&] {
    index_copy_(dst, 1, Tensor::from_vector<std::int64_t>({0, 3, 1}, {3}).to(kGpu),
                Tensor::randn({5, 3}, 2).to(kGpu), o);
  });
  INFO(msg);
  CHECK(msg.find("index_copy_: index holds 3 at position 1, outside [0, 3)") == 0);
  REQUIRE(host_values(dst) == before);
}

TEST_CASE(
    "index_copy_ cuda captured into a graph: replays at the device positions, skips "
    "out-of-range ones without writing",
    "[ops][rows][cuda][index_copy][graph]") {
  // The cache k [B, Hkv, L, hd] inside a buffer with guard elements on
  // both sides; src the new k of one decode step [B, Hkv, T, hd].
  const std::int64_t B = 2, Hkv = 3, L = 8, hd = 16, guard = 64;
  const std::int64_t n = B * Hkv * L * hd;
  for (const std::int64_t T : {1, 2}) {
    INFO("T " << T);
    const Tensor buf = Tensor::full({n + 2 * guard}, kSentinel, DType::bf16).to(kGpu);
    const Tensor cache = buf.narrow(0, guard, n).reshape({B, Hkv, L, hd});
    const Tensor src_h = values({B, Hkv, T, hd}, 31, DType::bf16);
    const Tensor src = src_h.to(kGpu);
    const Tensor idx = Tensor::zeros({T}, DType::i64).to(kGpu);
    const Stream s(kGpu);
    OpOptions o = on("cuda");
    o.stream = s.handle();
    const Graph g = Graph::capture(s, [&] { index_copy_(cache, 2, idx, src, o); });
    s.synchronize();
    // Recorded, not run.
    for (double x : host_values(buf)) REQUIRE(x == kSentinel);

    // What a replay must leave: the host model of the buffer.
    std::vector<double> want = host_values(buf);
    const std::vector<double> sv = src_h.to_vector<double>();
    auto apply = [&](const std::vector<std::int64_t>& positions) {
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t p = positions[t];
        if (p < 0 || p >= L) continue;  // skipped while capturing
        for (std::int64_t b = 0; b < B * Hkv; ++b)
          for (std::int64_t e = 0; e < hd; ++e)
            want[guard + (b * L + p) * hd + e] = sv[(b * T + t) * hd + e];
      }
    };
    const std::vector<std::vector<std::int64_t>> steps =
        T == 1 ? std::vector<std::vector<std::int64_t>>{{3}, {5}, {L}, {-1}, {1ll << 40}, {7}}
               : std::vector<std::vector<std::int64_t>>{{0, 1}, {2, L}, {-5, 6}, {L + 1, -1}};
    for (const auto& positions : steps) {
      INFO("positions " << positions[0] << (T > 1 ? ", " + std::to_string(positions[1]) : ""));
      idx.copy_from(Tensor::from_vector(positions, {T}));
      g.replay(s);
      s.synchronize();
      apply(positions);
      REQUIRE(host_values(buf) == want);
    }
  }
}
