// The diagonal half tiles of the wgmma d 64 64x128 kernel (on by default;
// STRATA_FLASH_DIAG_HALF=0 turns them off; backends/cuda/attention/
// sm90/kernel_16bit.cuh; docs/log/cuda-tuning.md, "Diagonal half tiles"): a tile of 64
// rows whose last key tile has keys [64, 128) masked for all its rows
// computes that tile over its first 64 keys only. The variable is read
// once per process, so the hidden [flash_diag_half] case reruns the [mma]
// suite (this file's cases with it) and the split-keys suite in a child
// with them off; the cases below check the default path.
// Each case goes against the f64 reference through the cross-backend
// harness, lse included.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_pass.hpp"
#include "cuda/attention_sweeps.hpp"
#include "cuda/child_rerun.hpp"
#include "cuda/flash_route.hpp"
#include "strata/attention.hpp"
#include "strata/harness.hpp"

using strata::Causal;
using strata::DType;
using strata::harness::AttentionCase;
using strata::harness::MaskKind;

namespace {

// A pass on the d 64 tensor-core kernel: wgmma in an sm_90a build unless
// STRATA_FLASH_VARIANT names an mma.sync d 64 configuration.
void require_d64_pass(const AttentionCase& c) {
  strata_test::require_cuda_attention_pass_on(c, strata_test::tile_route(c.dtype, 64));
}

}  // namespace

// Shapes whose 64-row tiles end on a half-masked key tile of 128 in each
// way the kernel recognises one: top-left causal on even row tiles,
// bottom-right causal with N - M = 64 (mod 128) on odd ones, a right
// window edge, N ending in the first half of the last tile (no band), M
// not a multiple of 64 (a partial last row tile), rows with no key at all
// (bottom-right with M > N), bool and float masks on top of the band,
// GQA, grids small enough that the keys are split and large enough that
// they are not.
TEST_CASE("cuda attention d64: diagonal half tiles", "[cuda][attention][mma][diag_half]") {
  std::uint64_t seed = 15500;
  struct Shape {
    std::int64_t M, N;
    Causal causal;
    std::int64_t left, right;  // -2: no window
    bool top_left;
    MaskKind mask;
  };
  const std::vector<Shape> shapes = {
      {512, 512, Causal::top_left, -2, -2, false, MaskKind::none},
      {512, 512, Causal::bottom_right, -2, -2, false, MaskKind::none},
      {448, 512, Causal::bottom_right, -2, -2, false, MaskKind::none},
      {300, 500, Causal::bottom_right, -2, -2, false, MaskKind::none},
      {500, 300, Causal::bottom_right, -2, -2, false, MaskKind::none},
      {257, 257, Causal::top_left, -2, -2, false, MaskKind::none},
      {64, 64, Causal::top_left, -2, -2, false, MaskKind::none},
      {130, 190, Causal::none, -2, -2, false, MaskKind::none},
      {200, 60, Causal::none, -2, -2, false, MaskKind::none},
      {384, 384, Causal::none, -1, 30, true, MaskKind::none},
      {384, 400, Causal::bottom_right, 100, 0, false, MaskKind::none},
      {320, 320, Causal::top_left, -2, -2, false, MaskKind::bool_full},
      {320, 384, Causal::bottom_right, -2, -2, false, MaskKind::float_bcast},
  };
  for (DType dt : {DType::bf16, DType::f16}) {
    for (const Shape& sh : shapes) {
      AttentionCase c = strata::harness::batched_case(sh.M, sh.N, 64, 64, dt, ++seed);
      c.Hq = 4;
      c.Hkv = 2;
      c.causal = sh.causal;
      if (sh.left != -2) c.window = std::make_pair(sh.left, sh.right);
      c.window_top_left = sh.top_left;
      c.mask = sh.mask;
      INFO(strata_test::half_name(dt)
           << " M " << sh.M << " N " << sh.N << " causal " << int(sh.causal) << " window "
           << sh.left << "," << sh.right << " mask " << strata::harness::mask_name(sh.mask));
      require_d64_pass(c);
    }
    // At least as many CTAs as SMs (no split), GQA 4:1 and dv < d.
    for (Causal causal : {Causal::top_left, Causal::bottom_right}) {
      AttentionCase c = strata_test::full_grid_case(384, 448, 64, 40, dt, ++seed, causal);
      INFO(strata_test::half_name(dt) << " full grid, causal " << int(causal));
      require_d64_pass(c);
    }
  }
}

// The [mma] suite (with the cases above) and the split-keys suite (its
// child inherits the variable) with the half tiles off. Hidden: a couple
// of minutes on the GPU; sm_90a builds. Output: <temp dir>/strata_flash_diag_half.log.
TEST_CASE("cuda attention d64: the suites without diagonal half tiles", "[.][flash_diag_half]") {
#if defined(STRATA_CUDA_WGMMA)
  strata_test::rerun_with_env("STRATA_FLASH_DIAG_HALF", "0",
                              "[mma]~[decode]~[errors_table],[flash_splits]",
                              "strata_flash_diag_half.log");
#else
  WARN("built without sm_90a: no wgmma kernel");
#endif
}
