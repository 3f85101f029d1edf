// f32 softmax_attention with AttentionOptions::precision high (3xTF32) and
// medium (TF32) on the cuda backend's tensor-core kernel
// (backends/cuda/attention/sm80/kernel_tf32.cuh, sm90/kernel_tf32.cuh), through the cross-backend
// harness: every case runs the registry's f32 kernel (highest) as the "cuda" backend and, as extra
// runners on the same inputs, precision high and medium on cuda and a TF32 model on the host (the
// f64 reference on TF32-rounded q, k, v). Outputs are poisoned and guarded as for any backend.
//
// - highest and high must pass the harness's f32 bounds (3x a naive f32
//   computation's error plus a floor): high is f32-accurate;
// - medium is held to the TF32 bound of docs/guide/attention.md, "Precision (f32)":
//   the f32 bound plus 3x the TF32 model's error on the same case.
//
// The cases mirror the bf16 kernel's (test_cuda_attention_mma.cpp): head dims
// padded to 64 and 128 and the fall-back above, partial tiles, tiles
// skipped or masked by the band, every layout (packed ones included), masks
// on any strides, fully masked rows, N = 0, GQA, batch broadcast, large
// logits.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_sweeps.hpp"
#include "cuda/child_rerun.hpp"
#include "cuda/flash_route.hpp"
#include "strata/attention.hpp"
#include "strata/elementwise.hpp"
#include "strata/harness.hpp"
#include "strata/tensor.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

// x rounded to TF32 to nearest, ties away from zero (cvt.rna.tf32.f32), as a
// host f64 tensor of x's shape.
Tensor tf32_f64(const Tensor& x) {
  std::vector<float> v = x.to_vector<float>();
  for (float& e : v)
    if (std::isfinite(e))
      e = std::bit_cast<float>((std::bit_cast<std::uint32_t>(e) + 0x1000u) & 0xffffe000u);
  return Tensor::from_vector(v, x.shape()).to(DType::f64);
}

struct Outcome {
  strata::harness::CaseReport report;
  BackendResult highest, high, medium, model;
  std::string high_kernel, medium_kernel;
};

// Runs the case on every backend plus: cuda with precision high and medium,
// and the host TF32 model.
Outcome run_precisions(const AttentionCase& c) {
  Outcome r;
  auto on_cuda = [](Precision p, std::string* kernel) {
    return strata::harness::ExtraRunner{
        p == Precision::high ? "cuda_high" : "cuda_medium", Device{strata::DeviceType::cuda, 0},
        [p, kernel](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                    const AttentionOptions& opt, const Tensor& lse) {
          AttentionOptions o = opt;
          o.backend = "cuda";
          o.precision = p;
          *kernel = strata::softmax_attention_kernel(q, k, v, o);
          strata::softmax_attention_out(out, q, k, v, o, lse);
        }};
  };
  const strata::harness::ExtraRunner model{
      "tf32_model", Device::cpu(),
      [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
         const AttentionOptions& opt, const Tensor& lse) {
        AttentionOptions o = opt;
        o.backend = "reference";
        if (o.mask.defined() && o.mask.dtype() != DType::boolean) o.mask = o.mask.to(DType::f64);
        const strata::AttentionResult r =
            strata::softmax_attention_lse(tf32_f64(q), tf32_f64(k), tf32_f64(v), o);
        strata::copy_(out, r.out);
        if (lse.defined()) strata::copy_(lse, r.lse);
      }};
  r.report =
      strata::harness::run_attention_case(c, {on_cuda(Precision::high, &r.high_kernel),
                                              on_cuda(Precision::medium, &r.medium_kernel), model});
  for (const BackendResult& b : r.report.results) {
    if (b.backend == "cuda") r.highest = b;
    if (b.backend == "cuda_high") r.high = b;
    if (b.backend == "cuda_medium") r.medium = b;
    if (b.backend == "tf32_model") r.model = b;
  }
  return r;
}

// The TF32 bound of docs/guide/attention.md, "Precision (f32)": the f32 bound plus 3x the model's
// error, for the output (relative Frobenius and max abs) and lse.
bool passes_tf32(const BackendResult& m, const BackendResult& model) {
  return m.error.empty() && m.nan_mismatch == 0 && m.inf_mismatch == 0 && m.guard_intact &&
         m.fully_written && m.rel_fro_err <= m.tol_rel_fro + 3 * model.rel_fro_err &&
         m.max_abs_err <= m.tol_abs + 3 * model.max_abs_err &&
         m.lse_max_abs_err <= m.tol_lse + 3 * model.lse_max_abs_err;
}

// The kernels a precision reaches: the TF32 ones for head dims up to 128
// (outside decode-like calls), cuda.attention.streaming otherwise.
std::string expected(Precision p, std::int64_t d, std::int64_t dv, bool fallback = false) {
  const std::int64_t D = std::max(d, dv);
  if (p == Precision::highest || D > 128 || fallback) return "cuda.attention.streaming";
  const std::string mode = p == Precision::high ? "tf32x3" : "tf32";
  const std::string dim = D <= 64 ? "d64" : "d128";
  // sm_90a: the wgmma kernel, unless STRATA_FLASH_VARIANT names an mma.sync
  // configuration of this precision and head dim ("mma.tf32x3.d64." ...).
  std::string kind = "mma_";
#if defined(STRATA_CUDA_WGMMA)
  if (!strata_test::flash_variant_forced("mma." + mode + "." + dim + ".")) kind = "wgmma_";
#endif
  return "cuda.attention." + kind + mode + "_" + dim;
}

void require_pass(const AttentionCase& c, bool fallback = false) {
  const Outcome r = run_precisions(c);
  INFO(r.report.summary());
  INFO("kernels: high " << r.high_kernel << ", medium " << r.medium_kernel);
  REQUIRE(!r.highest.backend.empty());
  CHECK(r.model.error.empty());
  CHECK(r.highest.kernel == expected(Precision::highest, c.d, c.dv));
  CHECK(r.high_kernel == expected(Precision::high, c.d, c.dv, fallback));
  CHECK(r.medium_kernel == expected(Precision::medium, c.d, c.dv, fallback));
  CHECK(r.highest.pass);
  CHECK(r.high.error.empty());
  CHECK(r.high.guard_intact);
  CHECK(r.high.fully_written);
  CHECK(r.high.pass);  // the same f32 bounds as highest
  CHECK(r.medium.error.empty());
  CHECK(passes_tf32(r.medium, r.model));
}

}  // namespace

TEST_CASE("cuda tf32 attention: the registry routes each precision", "[cuda][attention][tf32]") {
  for (std::int64_t d : {64, 128, 200}) {
    const Tensor q =
        Tensor::randn({2, 4, 100, d}, 1, DType::f32, Device{strata::DeviceType::cuda, 0});
    const Tensor kv =
        Tensor::randn({2, 4, 90, d}, 2, DType::f32, Device{strata::DeviceType::cuda, 0});
    for (Precision p : {Precision::highest, Precision::high, Precision::medium}) {
      AttentionOptions o;
      o.precision = p;
      INFO("d " << d << " precision " << int(p));
      CHECK(strata::softmax_attention_kernel(q, kv, kv, o) == expected(p, d, d));
    }
    // Other dtypes ignore the precision.
    AttentionOptions o;
    o.precision = Precision::medium;
    const Tensor q64 = q.to(DType::f64), kv64 = kv.to(DType::f64);
    CHECK(strata::softmax_attention_kernel(q64, kv64, kv64, o) == "cuda.attention.streaming");
    const Tensor qb = q.to(DType::bf16), kvb = kv.to(DType::bf16);
    AttentionOptions hi;
    CHECK(strata::softmax_attention_kernel(qb, kvb, kvb, o) ==
          strata::softmax_attention_kernel(qb, kvb, kvb, hi));
  }
}

// medium really rounds (its error is TF32-sized, far above f32's), and high
// really recovers f32 accuracy (within a few times highest's error).
TEST_CASE("cuda tf32 attention: error sizes of high and medium", "[cuda][attention][tf32]") {
  for (std::int64_t d : {64, 128}) {
    const AttentionCase c = strata::harness::batched_case(300, 400, d, d, DType::f32, 31000 + d);
    const Outcome r = run_precisions(c);
    INFO(r.report.summary());
    CHECK(r.medium.rel_fro_err > 30 * r.highest.rel_fro_err);
    CHECK(r.medium.rel_fro_err > 0.3 * r.model.rel_fro_err);
    CHECK(r.high.rel_fro_err < 0.1 * r.model.rel_fro_err);
    CHECK(r.high.pass);
    CHECK(passes_tf32(r.medium, r.model));
  }
}

TEST_CASE("cuda tf32 attention: head dims and tile edges", "[cuda][attention][tf32]") {
  std::uint64_t seed = 32000;
  for (std::int64_t d : {8, 40, 64, 72, 100, 128, 200}) {
    for (auto [M, N] : std::vector<std::array<std::int64_t, 2>>{
             {1, 129}, {9, 64}, {65, 1}, {130, 200}, {128, 0}}) {
      const AttentionCase c = strata_test::head_dim_case(DType::f32, d, M, N, ++seed);
      INFO("d " << d << " M " << M << " N " << N);
      require_pass(c);
    }
  }
}

TEST_CASE("cuda tf32 attention: dv differs from d", "[cuda][attention][tf32]") {
  std::uint64_t seed = 33000;
  strata_test::sweep_dv(DType::f32, {{64, 128}, {128, 64}, {16, 8}, {7, 129}, {32, 300}, {5, 3}},
                        70, 150, "", seed, [](const AttentionCase& c) { require_pass(c); });
}

TEST_CASE("cuda tf32 attention: every layout, masks and bands", "[cuda][attention][tf32][layout]") {
  std::uint64_t seed = 34000;
  for (Layout l : strata::harness::all_layouts()) {
    for (std::int64_t d : {64, 128}) {
      for (std::int64_t M : {1, 200}) {
        AttentionCase c;
        c.dtype = DType::f32;
        c.batch = {2};
        c.Hq = 4;
        c.Hkv = 2;
        c.M = M;
        c.N = l == Layout::fused_qkv ? M : 150;
        c.d = d;
        c.dv = d;
        c.layout = l;
        c.seed = ++seed;
        INFO("layout " << strata::harness::layout_name(l) << " d " << d << " M " << M);
        require_pass(c);
        c.mask = MaskKind::float_bcast;
        c.causal = Causal::top_left;
        c.seed = ++seed;
        INFO("float mask [1, M, N], causal top-left");
        require_pass(c);
        c.mask = MaskKind::bool_bcast;
        c.causal = Causal::none;
        c.window = std::make_pair<std::int64_t, std::int64_t>(5, 3);
        c.seed = ++seed;
        INFO("bool mask [M, N], window 5,3");
        require_pass(c);
        c.mask = MaskKind::float_full;
        c.window.reset();
        c.masked_rows = true;
        c.seed = ++seed;
        INFO("float mask, fully masked rows");
        require_pass(c);
      }
    }
  }
}

// Bands over several key tiles: whole tiles skipped before and after the
// band, diagonal tiles masked, rows with no key at all (bottom-right causal
// with M > N), both alignments, windows on one or both sides.
TEST_CASE("cuda tf32 attention: causal and windows across tiles", "[cuda][attention][tf32]") {
  std::uint64_t seed = 35000;
  strata_test::sweep_bands(DType::f32, {{300, 500}, {500, 300}, {257, 257}},
                           strata_test::tile_bands(), {64, 128}, seed,
                           [](const AttentionCase& c) { require_pass(c); });
}

TEST_CASE("cuda tf32 attention: GQA, batch broadcast, large logits", "[cuda][attention][tf32]") {
  for (const AttentionCase& c : strata_test::gqa_broadcast_cases(DType::f32, 36001, 36002))
    require_pass(c);
}

// Decode-like calls (fewer than 64 query tiles in the call, N >= 16384) stay
// on the split-KV f32 kernels whatever the precision; a batch of heads takes
// the tensor cores.
TEST_CASE("cuda tf32 attention: decode-like calls", "[cuda][attention][tf32]") {
  AttentionCase c = strata::harness::batched_case(16, 20000, 64, 64, DType::f32, 37001);
  c.batch = {};
  c.Hq = 2;
  c.Hkv = 1;
  require_pass(c, true);
  c.batch = {8};
  c.Hq = 8;
  c.seed = 37002;
  require_pass(c);
}

// The errors against the f64 reference on N(0, 1) inputs, printed for
// docs/guide/attention.md and the comparison with PyTorch's TF32 attention
// (bench/peer_attention.py --errors) on the same shapes.
TEST_CASE("cuda tf32 attention: error on the peer shapes",
          "[cuda][attention][tf32][errors_table]") {
  for (std::int64_t d : {64, 128}) {
    for (const bool causal : {false, true}) {
      AttentionCase c = strata::harness::batched_case(512, 512, d, d, DType::f32, 4242);
      if (causal) c.causal = Causal::bottom_right;
      const Outcome r = run_precisions(c);
      std::cout << "tf32_error f32 B2 H2 L512 d" << d << (causal ? " causal" : "")
                << " rel_fro highest " << r.highest.rel_fro_err << " high " << r.high.rel_fro_err
                << " medium " << r.medium.rel_fro_err << " tf32_model " << r.model.rel_fro_err
                << " | max_abs medium " << r.medium.max_abs_err << " lse_abs medium "
                << r.medium.lse_max_abs_err << " (f32 tol " << r.high.tol_rel_fro << ")\n";
      CHECK(r.high.pass);
      CHECK(passes_tf32(r.medium, r.model));
    }
  }
}

// Every default configuration (backends/cuda/attention/sm80/table_tf32_high.cu,
// sm80/table_tf32_medium.cu, and the wgmma ones of sm90/table_tf32_high.cu and
// sm90/table_tf32_medium.cu, sm_90a builds) through this whole suite, each
// forced by STRATA_FLASH_VARIANT in a child run of this binary (the variable
// is read once per process): the mma.sync ones run by default only without
// sm_90a. The candidates a tuning build keeps run in [attention_lab]
// (test_cuda_attention_lab.cpp). Hidden, as it takes minutes: run it with
// strata_cuda_tests "[tf32_variants]" after a kernel change.
TEST_CASE("cuda tf32 attention: every configuration through the suite", "[.][tf32_variants]") {
  for (const char* n : {"mma.tf32x3.d64.64x32.3_stages.q_shared.grouped_sums",
                        "mma.tf32x3.d128.64x32.2_stages.q_shared.grouped_sums",
                        "mma.tf32.d64.64x64.2_stages", "mma.tf32.d128.64x32.2_stages",
                        "wgmma.tf32x3.d64.128x64", "wgmma.tf32x3.d128.128x32.v_through_registers",
                        "wgmma.tf32.d128.128x64", "wgmma.tf32.d64.128x64"})
    strata_test::rerun_with_env("STRATA_FLASH_VARIANT", n, "[tf32]~[errors_table]",
                                std::string("strata_tf32_") + n + ".log");
}
