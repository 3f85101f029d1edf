// The wgmma configurations for head dims other than 64 and 128
// (backends/cuda/attention/sm90/configs_16bit.cuh; docs/log/cuda-tuning.md,
// "Head dims other than 64 and 128"): S over 80, 96 or 112 columns of the
// d 128 tiles, and the d 192 / d 256 tiles. The hidden [wgmma_head_dims]
// case runs this binary once per configuration with STRATA_FLASH_VARIANT
// forcing it (the variable is read once per process): the d 128 ones
// through the [mma] suite, every one through the cases below, each against
// the f64 reference through the cross-backend harness. Run it with
// strata_cuda_tests "[wgmma_head_dims]" on an sm_90a build.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_pass.hpp"
#include "cuda/attention_sweeps.hpp"
#include "strata/attention.hpp"
#include "strata/harness.hpp"

using strata::Causal;
using strata::DType;
using strata::harness::AttentionCase;

namespace {

std::string dt_name(DType dt) { return dt == DType::bf16 ? "bf16" : "f16"; }

// The registry kernel a call of head dims d, dv (M > 8) reaches: d <= 128
// the wgmma d 128 entry (sm_90a builds; a ".qk_cols<n>" configuration takes
// d <= n under the same name), up to 256 the d 256 entry (d 192 and d 256
// tiles), else the f32 route.
std::string want_kernel(DType dt, std::int64_t d, std::int64_t dv) {
  const std::int64_t w = d > dv ? d : dv;
#if defined(STRATA_CUDA_WGMMA)
  if (w <= 128) return "cuda.attention.wgmma_" + dt_name(dt) + "_d128";
  if (w <= 256) return "cuda.attention.wgmma_" + dt_name(dt) + "_d256";
#else
  if (w <= 128) return "cuda.attention.mma_" + dt_name(dt) + "_d128";
#endif
  return "cuda.attention.mma_" + dt_name(dt) + "_via_f32";
}

void require_pass(const AttentionCase& c) {
  strata_test::require_cuda_attention_pass_on(c, want_kernel(c.dtype, c.d, c.dv));
}

}  // namespace

// Head dims on both sides of each configuration's reach (k80/k96/k112 on the
// d 128 kernel; d 192 and d 256 tiles), partial query and key tiles, N = 0,
// dv differing from d, bands over several tiles, and grids that fill the
// GPU. Hidden: meaningful with STRATA_FLASH_VARIANT set (the parent below).
TEST_CASE("cuda wgmma head dims: head dims, tiles, bands, full grids",
          "[.][cuda][attention][wgmma_head_dim_cases]") {
  std::uint64_t seed = 15000;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (std::int64_t d : {72, 80, 96, 100, 112, 120, 128, 136, 160, 192, 200, 256}) {
      for (auto [M, N] : std::vector<std::array<std::int64_t, 2>>{{130, 200}, {65, 1}, {128, 0}}) {
        const AttentionCase c = strata_test::head_dim_case(dt, d, M, N, ++seed);
        INFO(dt_name(dt) << " d " << d << " M " << M << " N " << N);
        require_pass(c);
      }
    }
    for (auto [d, dv] : std::vector<std::array<std::int64_t, 2>>{
             {80, 128}, {112, 64}, {130, 256}, {256, 64}, {192, 136}, {100, 200}}) {
      AttentionCase c = strata::harness::batched_case(150, 170, d, dv, dt, ++seed);
      c.Hkv = 1;
      INFO(dt_name(dt) << " d " << d << " dv " << dv);
      require_pass(c);
    }
    for (std::int64_t d : {96, 100, 192, 256}) {
      for (int band = 0; band < 3; ++band) {
        AttentionCase c = strata::harness::batched_case(300, 500, d, d, dt, ++seed);
        if (band == 0) c.causal = Causal::bottom_right;
        if (band == 1) c.causal = Causal::top_left;
        if (band == 2) c.window = std::make_pair<std::int64_t, std::int64_t>(100, 0);
        INFO(dt_name(dt) << " d " << d << " band " << band);
        require_pass(c);
      }
    }
    // At least as many CTAs as SMs (132 on the H200): the configurations' own
    // tiles, not a small-grid fallback.
    for (std::int64_t d : {80, 96, 100, 112, 192, 256}) {
      for (Causal causal : {Causal::none, Causal::bottom_right}) {
        AttentionCase c = strata_test::full_grid_case(260, 300, d, d, dt, ++seed, causal);
        INFO(dt_name(dt) << " d " << d << " causal " << int(causal) << " (full grid)");
        require_pass(c);
      }
    }
  }
}

// Every configuration, forced, through the cases above, the d 128 ones also through the
// [mma] suite (their head dims: d <= n takes ".qk_cols<n>", the rest the default;
// the d 192 / d 256 ones take only the cases, which reach their head dims).
TEST_CASE("cuda wgmma head dims: each through the suite", "[.][wgmma_head_dims]") {
  if (std::getenv("STRATA_FLASH_VARIANT")) return;  // a child run: nothing to spawn
#if defined(STRATA_CUDA_WGMMA)
  const std::string kCases = "[wgmma_head_dim_cases]";
  const std::string kSuite = "[mma]~[decode]~[errors_table]," + kCases;
  const std::vector<std::array<std::string, 2>> runs = {
      {"wgmma.d128.128x128.8_byte_loads.qk_cols112", kSuite},
      {"wgmma.d128.128x128.qk_cols112", kSuite},
      {"wgmma.d128.128x128.qk_cols96", kSuite},
      {"wgmma.d128.128x128.qk_cols80", kSuite},
      {"wgmma.d192.128x96", kCases},
      {"wgmma.d256.128x64", kCases},
      {"wgmma.d192.128x96,wgmma.d256.128x64", kCases},
  };
  // This binary's path (std::system's shell would see its own /proc/self).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const auto& [names, spec] : runs) {
    const std::string cmd =
        "STRATA_FLASH_VARIANT='" + names + "' '" + self + "' '" + spec + "' > /dev/null 2>&1";
    INFO("configuration " << names << ": " << cmd);
    CHECK(std::system(cmd.c_str()) == 0);
  }
#else
  WARN("built without sm_90a: no wgmma kernels");
#endif
}
