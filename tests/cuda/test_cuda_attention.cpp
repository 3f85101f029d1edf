// softmax_attention on the cuda backend, through the cross-backend harness
// (every case compared with the f64 reference, outputs poisoned and
// guarded). The cases aim at the cuda kernels' own boundaries: decode vs
// tiled (M = 8 / 9), split-KV (few query tiles, many keys), head dims around
// the specialised 64/128 paths and the general chunked path, every layout.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_pass.hpp"
#include "cuda/attention_sweeps.hpp"
#include "strata/attention.hpp"
#include "strata/harness.hpp"
#include "strata/tensor.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

void require_cuda_pass(const AttentionCase& c) { strata_test::require_cuda_attention_pass(c); }

}  // namespace

TEST_CASE("cuda attention: head dims, both dtypes, decode and tiled", "[cuda][attention]") {
  std::uint64_t seed = 1000;
  for (DType dt : {DType::f32, DType::f64}) {
    for (std::int64_t d : {1, 3, 64, 100, 128, 257}) {
      for (std::int64_t M : {1, 8, 9, 65}) {
        AttentionCase c;
        c.dtype = dt;
        c.Hq = 2;
        c.Hkv = 2;
        c.M = M;
        c.N = 129;
        c.d = d;
        c.dv = d == 257 ? 65 : d;
        c.seed = ++seed;
        require_cuda_pass(c);
      }
    }
  }
}

// Small cases that reach every kernel (decode, tiled with Q resident, tiled
// with chunked head dim, split-KV merge) for compute-sanitizer racecheck.
TEST_CASE("cuda attention: one case per kernel (racecheck)", "[cuda][attention][racecheck]") {
  std::uint64_t seed = 1500;
  for (DType dt : {DType::f32, DType::f64}) {
    for (auto [M, N, d] : std::vector<std::array<std::int64_t, 3>>{
             {3, 300, 64}, {70, 130, 64}, {70, 130, 128}, {40, 90, 200}, {64, 1000, 64}}) {
      AttentionCase c = strata::harness::batched_case(M, N, d, d, dt, ++seed);
      c.batch = {};  // one head: racecheck is slow
      c.Hq = c.Hkv = 1;
      c.causal = Causal::bottom_right;
      require_cuda_pass(c);
    }
  }
}

// d <= 64 picks its kernel by the call's size (small tiles up to 2^24
// scores, ffma/variants_f32_pipelined.cu): one case on each side of the switch
// (2 x 2 heads x 2040^2 and x 2060^2).
TEST_CASE("cuda attention: both sides of the small-problem kernel switch", "[cuda][attention]") {
  std::uint64_t seed = 1700;
  for (auto [M, N] : std::vector<std::array<std::int64_t, 2>>{{2040, 2040}, {2060, 2060}}) {
    AttentionCase c = strata::harness::batched_case(M, N, 64, 64, DType::f32, ++seed);
    require_cuda_pass(c);
    c.causal = Causal::bottom_right;
    c.seed = ++seed;
    require_cuda_pass(c);
  }
}

TEST_CASE("cuda attention: dv differs from d", "[cuda][attention]") {
  std::uint64_t seed = 2000;
  const std::vector<std::pair<std::int64_t, std::int64_t>> dims = {{64, 128}, {128, 64}, {32, 300},
                                                                   {300, 32}, {7, 129},  {64, 1}};
  for (auto [d, dv] : dims) {
    for (std::int64_t M : {2, 70}) {
      AttentionCase c = strata::harness::batched_case(M, 100, d, dv, DType::f32, ++seed);
      c.Hkv = 1;
      require_cuda_pass(c);
    }
  }
}

TEST_CASE("cuda attention: split-KV (few query tiles, many keys)", "[cuda][attention][split]") {
  std::uint64_t seed = 3000;
  for (DType dt : {DType::f32, DType::f64}) {
    for (std::int64_t M : {1, 3, 64, 200}) {
      for (std::int64_t N : {4000, 20011}) {
        AttentionCase c;
        c.dtype = dt;
        c.M = M;
        c.N = N;
        c.d = 64;
        c.dv = 64;
        c.seed = ++seed;
        require_cuda_pass(c);
        c.causal = Causal::bottom_right;
        c.seed = ++seed;
        require_cuda_pass(c);
        c.causal = Causal::none;
        c.mask = MaskKind::bool_full;
        c.masked_rows = true;
        c.seed = ++seed;
        require_cuda_pass(c);
      }
    }
  }
}

TEST_CASE("cuda attention: every layout, masks and bands", "[cuda][attention][layout]") {
  std::uint64_t seed = 4000;
  for (DType dt : {DType::f32, DType::f64}) {
    strata_test::sweep_layouts({.dtype = dt,
                                .Hkv = 2,
                                .N = 77,
                                .d_M = {{64, 1}, {64, 77}, {100, 1}, {100, 77}},
                                .steps = strata_test::bcast_masks_and_bands()},
                               seed, [](const AttentionCase& c) { require_cuda_pass(c); });
  }
}

// K and V that the pipelined kernels cannot read with 16-byte loads are
// copied row-major first when they are read by enough query tiles
// (dispatch/launch_streaming.cu, worth_packing): column-major K shared by both batch
// items (stride 0, which the copy must keep) and transposed V, for the d <= 64
// and the d <= 128 kernels, causal too.
TEST_CASE("cuda attention: packed K and V (column-major, broadcast)", "[cuda][attention][layout]") {
  std::uint64_t seed = 4500;
  for (std::int64_t d : {64, 96}) {
    for (const bool causal : {false, true}) {
      const std::int64_t B = 2, Hq = 4, Hkv = 2, M = 300, N = 333;
      INFO("d " << d << " causal " << causal << " seed " << seed + 1);
      const Tensor q = Tensor::randn({B, Hq, M, d}, ++seed, DType::f32);
      const Tensor kt = Tensor::randn({1, Hkv, d, N}, ++seed, DType::f32);  // K^T, one batch
      const Tensor vt = Tensor::randn({B, Hkv, d, N}, ++seed, DType::f32);
      const Tensor k = kt.transpose(2, 3).expand({B, Hkv, N, d});
      const Tensor v = vt.transpose(2, 3);
      strata::AttentionOptions opt;
      if (causal) opt.causal = Causal::bottom_right;
      strata::AttentionOptions ref = opt;
      ref.backend = "reference";
      const Tensor want = strata::softmax_attention(q, k, v, ref);
      const Tensor kd = kt.to(Device::cuda()).transpose(2, 3).expand({B, Hkv, N, d});
      const Tensor vd = vt.to(Device::cuda()).transpose(2, 3);
      REQUIRE(kd.strides()[0] == 0);
      const Tensor got = strata::softmax_attention(q.to(Device::cuda()), kd, vd, opt);
      const auto g = got.to_vector<double>();
      const auto w = want.to_vector<double>();
      REQUIRE(g.size() == w.size());
      for (std::size_t i = 0; i < g.size(); ++i) {
        INFO("element " << i);
        REQUIRE(std::abs(g[i] - w[i]) <= 1e-5 * (1 + std::abs(w[i])));
      }
    }
  }
}

TEST_CASE("cuda attention: empty rows, N = 0, large logits", "[cuda][attention][edge]") {
  std::uint64_t seed = 5000;
  for (DType dt : {DType::f32, DType::f64}) {
    AttentionCase c;
    c.dtype = dt;
    c.Hq = 2;
    c.M = 70;
    c.N = 0;
    c.d = 64;
    c.dv = 64;
    c.seed = ++seed;
    require_cuda_pass(c);
    c.M = 1;
    require_cuda_pass(c);
    c.N = 90;
    c.M = 90;
    c.masked_rows = true;
    c.mask = MaskKind::float_full;
    c.seed = ++seed;
    require_cuda_pass(c);
    // Causal top-left with M > N leaves the first rows of a bottom-right
    // band empty; a narrow window leaves rows without keys too.
    c.mask = MaskKind::none;
    c.masked_rows = false;
    c.M = 150;
    c.N = 40;
    c.causal = Causal::bottom_right;
    c.seed = ++seed;
    require_cuda_pass(c);
    c.causal = Causal::none;
    c.window = std::make_pair<std::int64_t, std::int64_t>(0, 0);
    require_cuda_pass(c);
    c.window.reset();
    c.input_scale = 30.0;
    c.seed = ++seed;
    require_cuda_pass(c);
  }
}

TEST_CASE("cuda attention: NaN in q reaches only its own row", "[cuda][attention][edge]") {
  const std::uint64_t seed = 6001;
  INFO("seed " << seed);
  for (std::int64_t M : {1, 70}) {
    INFO("M " << M);
    const Tensor q = Tensor::randn({M, 64}, seed, DType::f32);
    const Tensor k = Tensor::randn({300, 64}, seed + 1, DType::f32);
    const Tensor v = Tensor::randn({300, 64}, seed + 2, DType::f32);
    q.set_item({0, 5}, std::numeric_limits<double>::quiet_NaN());
    const auto r = strata::softmax_attention_lse(q.to(Device::cuda()), k.to(Device::cuda()),
                                                 v.to(Device::cuda()));
    const auto out = r.out.to_vector<double>();
    for (std::int64_t c = 0; c < 64; ++c) CHECK(std::isnan(out[c]));
    for (std::size_t i = 64; i < out.size(); ++i) REQUIRE(std::isfinite(out[i]));
    CHECK(std::isnan(r.lse.item({0})));
  }
}

TEST_CASE("cuda attention: offsets past 2^31 elements", "[cuda][attention][large]") {
  // k and v of head 1 start 2^31 + 64 elements into one buffer: any 32-bit
  // product in the kernels' address arithmetic would read the wrong rows.
  const std::int64_t N = 96, d = 64, far = (std::int64_t(1) << 31) + 64;
  const std::uint64_t seed = 7001;
  INFO("seed " << seed);
  Tensor big;
  try {
    big = Tensor::empty({far + N * d}, DType::f32, Device::cuda());
  } catch (const strata::Error& e) {
    WARN("skipped: cannot allocate 8 GiB: " << e.what());
    return;
  }
  const Tensor k = big.as_strided({2, N, d}, {far, d, 1}, 0);
  const Tensor kh = Tensor::randn({2, N, d}, seed, DType::f32);
  k.copy_from(kh);
  const Tensor q = Tensor::randn({2, 33, d}, seed + 1, DType::f32);
  strata::AttentionOptions ref;
  ref.backend = "reference";
  const Tensor want = strata::softmax_attention(q, kh, kh, ref);
  const Tensor got = strata::softmax_attention(q.to(Device::cuda()), k, k);
  const auto g = got.to_vector<double>();
  const auto w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(g[i] - w[i]) <= 1e-5 * (1 + std::abs(w[i])));
  }
}
