// bf16/f16 attention at head dims 97-112, whose q/k/v rows are mostly not
// 16-byte chunks (d 100: 200-byte rows, 8-byte aligned; d 97: 194 bytes,
// 2-byte aligned): the launcher's pad pass (backends/cuda/attention/
// dispatch/pad_rows.cu: rows copied padded to a multiple of 8, zeros after d, with
// 8-byte loads where the rows are 8-byte aligned and element loads
// otherwise; stride-0 dims copied once) and the wgmma configuration whose
// P V covers 104 value columns (sm90/kernel_16bit.cuh's NV, the default for
// d 97-112 with dv <= 104). docs/log/cuda-tuning.md, "Head dim 100: pad
// pass and narrow P·V". Every case against the f64 reference of
// the same rounded inputs through the cross-backend harness, lse compared.
//
// The cases pick the layouts that reach each copy: contiguous and fused
// QKV slices (8-byte rows at d 100, 2-byte at d 97), sliced windows (odd
// row strides and offsets: element loads), broadcast batches (stride 0:
// one copy), flipped key rows (negative row stride), and the layouts the
// generic strided copy still serves (transposed, strided or flipped
// columns). d 104 and 112 with 16-byte rows take no copy at all.
//
// The pad pass runs by default only from 2^30 scores on (dispatch/launch_16bit.cu),
// so these small cases take it only in the hidden [flash_pad_ab] case's first
// child (STRATA_FLASH_PAD=1). The hidden [flash_pad_ab] case runs [flash_pad] again under each
// switch the lead A/Bs on the GPU (the variables are read once per process): the pad pass off
// (8-byte pieces), P V over all 128 columns, the 8-byte-piece configuration with the narrow P V,
// and every call's keys split in 5.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_pass.hpp"
#include "cuda/attention_sweeps.hpp"
#include "cuda/flash_route.hpp"
#include "strata/attention.hpp"
#include "strata/harness.hpp"

using strata::Causal;
using strata::DType;
using strata::harness::AttentionCase;
using strata::harness::Layout;
using strata::harness::MaskKind;

namespace {

using strata_test::half_name;

// A pass on the registry kernel of a call with head dims up to 128 and M > 8.
void require_pass(const AttentionCase& c) {
  strata_test::require_cuda_attention_pass_on(c, strata_test::tile_route(c.dtype, 128));
}

}  // namespace

// Each head dim with partial query and key tiles, one key, no key, and
// more than one key tile; dv on both sides of the narrow P V's 104 columns
// (dv 105 and 112 take the 128-column P V, d 113+ the full S).
TEST_CASE("cuda flash pad: head dims 97-112, tile edges", "[cuda][attention][flash_pad]") {
  std::uint64_t seed = 21000;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (std::int64_t d : {97, 100, 104, 108, 112}) {
      for (auto [M, N] :
           std::vector<std::array<std::int64_t, 2>>{{130, 200}, {65, 1}, {128, 0}, {200, 333}}) {
        const AttentionCase c = strata_test::head_dim_case(dt, d, M, N, ++seed);
        INFO(half_name(dt) << " d " << d << " M " << M << " N " << N);
        require_pass(c);
      }
    }
    strata_test::sweep_dv(
        dt, {{100, 104}, {100, 105}, {100, 112}, {112, 100}, {97, 64}, {64, 100}, {100, 97}}, 150,
        170, half_name(dt) + " ", seed, [](const AttentionCase& c) { require_pass(c); });
  }
}

// Every harness layout at each head dim (fused QKV: q, k, v column slices
// of one buffer; broadcast: k and v of one batch item expanded with stride
// 0), GQA (4 query heads on 2), then masks and bands: a float [M, N] mask
// with top-left causal, a bool [M, N] mask with a (5, 3) window, a full
// float mask with fully masked rows.
TEST_CASE("cuda flash pad: every layout, GQA, masks and bands",
          "[cuda][attention][flash_pad][layout]") {
  std::uint64_t seed = 22000;
  strata_test::sweep_16bit_layouts({{100, 200}, {97, 130}, {104, 70}, {112, 129}}, seed,
                                   [](const AttentionCase& c) { require_pass(c); });
}

// Broadcast batch dims with GQA (k and v stored once for 2 x 3 batch items:
// the pad pass copies one), causal and a bool mask; the same as fused QKV
// slices; one kv head for 8 query heads with large logits; a 2-D q, k, v.
TEST_CASE("cuda flash pad: GQA and batch broadcast", "[cuda][attention][flash_pad]") {
  std::uint64_t seed = 23000;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (std::int64_t d : {97, 100}) {
      AttentionCase c = strata_test::gqa_broadcast_case(dt, d, ++seed);
      INFO(half_name(dt) << " d " << d << " broadcast, GQA 8:2, causal, bool mask");
      require_pass(c);
      c.layout = Layout::fused_qkv;  // needs M == N
      c.N = 150;
      c.seed = ++seed;
      INFO("fused QKV, GQA 8:2");
      require_pass(c);
      c.layout = Layout::contiguous;
      c.batch = {2};
      c.Hkv = 1;
      c.mask = MaskKind::none;
      c.causal = Causal::none;
      c.input_scale = 8.0;
      c.seed = ++seed;
      INFO("one kv head, large logits");
      require_pass(c);
      AttentionCase q2 = strata::harness::batched_case(140, 190, d, d, dt, ++seed);
      q2.batch = {};
      q2.Hq = 1;
      q2.Hkv = 1;
      q2.q_2d = true;
      INFO("2-D q, k, v");
      require_pass(q2);
    }
  }
}

// Bands over several key tiles: tiles skipped before and after the band,
// diagonal tiles masked, rows with no key (bottom-right causal, M > N).
TEST_CASE("cuda flash pad: causal and windows across tiles", "[cuda][attention][flash_pad]") {
  std::uint64_t seed = 24000;
  // Both causal alignments, a left window, a two-sided top-left one.
  const std::vector<strata_test::Band> bands(strata_test::tile_bands().begin(),
                                             strata_test::tile_bands().begin() + 4);
  for (DType dt : {DType::bf16, DType::f16})
    strata_test::sweep_bands(dt, {{300, 500}, {500, 300}}, bands, {97, 100, 112}, seed,
                             [](const AttentionCase& c) { require_pass(c); });
}

// Grids too small for the GPU: one head of 130-290 rows against 1000-3000
// keys takes 2-6 splits (wgmma), whose partials the narrow P V writes over
// its 104 columns; causal both ways, a window with a bool mask and fully
// masked rows, a float mask.
TEST_CASE("cuda flash pad: split keys on small grids", "[cuda][attention][flash_pad]") {
  std::uint64_t seed = 25000;
  strata_test::sweep_small_grids({97, 100, 104, 112}, seed,
                                 [](const AttentionCase& c) { require_pass(c); });
}

// At least as many CTAs as SMs (132 on the H200): the 128x128 tiles the
// benchmark shapes take, not the small-grid fallback; fused QKV slices.
TEST_CASE("cuda flash pad: grids that fill the GPU", "[cuda][attention][flash_pad]") {
  std::uint64_t seed = 26000;
  strata_test::sweep_full_grids(260, {97, 100, 104}, seed, [](AttentionCase c) {
    c.layout = c.causal == Causal::none ? Layout::fused_qkv : Layout::contiguous;
    require_pass(c);
  });
}

// [flash_pad] under each switch, one child process each: the pad pass on
// for every call (by default it takes calls of 2^30 scores and more, larger
// than these cases); off (d 100 on ".8_byte_loads.qk_cols112"); on with P V
// over all 128 columns (".qk_cols112" forced); the 8-byte-piece reader
// forced (a forced piece reader keeps 8-byte rows, and reads 16-byte
// ones in pieces too); and the keys of every call split in 5 (calls with
// fewer key tiles leave some splits empty), with the default and the
// 8-byte-piece reader.
TEST_CASE("cuda flash pad: the suite under each switch", "[.][flash_pad_ab]") {
  if (std::getenv("STRATA_FLASH_PAD") || std::getenv("STRATA_FLASH_VARIANT") ||
      std::getenv("STRATA_FLASH_SPLITS"))
    return;  // a child run: nothing to spawn
#if defined(STRATA_CUDA_WGMMA)
  const std::vector<std::string> envs = {
      "STRATA_FLASH_PAD=1",
      "STRATA_FLASH_PAD=0",
      "STRATA_FLASH_PAD=1 STRATA_FLASH_VARIANT=wgmma.d128.128x128.qk_cols112",
      "STRATA_FLASH_VARIANT=wgmma.d128.128x128.8_byte_loads.qk_cols112",
      "STRATA_FLASH_PAD=1 STRATA_FLASH_SPLITS=5",
      "STRATA_FLASH_SPLITS=5 STRATA_FLASH_VARIANT=wgmma.d128.128x128.8_byte_loads.qk_cols112",
  };
  // This binary's path (std::system's shell would see its own /proc/self).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const std::string& env : envs) {
    const std::string cmd = env + " '" + self + "' '[flash_pad]' > /dev/null 2>&1";
    INFO(cmd);
    CHECK(std::system(cmd.c_str()) == 0);
  }
#else
  WARN("built without sm_90a: no wgmma configurations to switch");
#endif
}
