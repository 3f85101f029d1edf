#pragma once
// The layout sweep that the cuda attention tests share
// (test_cuda_attention.cpp, test_cuda_attention_mma.cpp): every harness
// layout with each (d, M), one case of batch {2}, Hq 4 and N keys (M for
// fused QKV, whose q, k and v share one row count), run as built and again
// after each step, each step changing the case further (masks, bands), every
// run on a fresh seed.
#include <array>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "strata/dtype.hpp"
#include "strata/harness.hpp"

namespace strata_test {

using CaseStep = std::function<void(strata::harness::AttentionCase&)>;

struct LayoutSweep {
  strata::DType dtype = strata::DType::f32;
  std::int64_t Hkv = 1;
  std::int64_t N = 0;                            // keys, except for fused QKV
  std::vector<std::array<std::int64_t, 2>> d_M;  // (head dim = dv, query rows), in order
  std::vector<CaseStep> steps;                   // applied in turn, a run after each
};

// A float [M, N] mask with top-left causal, then a bool [M, N] mask with a
// (5, 3) window instead: the masks and bands both files sweep every layout
// with.
inline std::vector<CaseStep> bcast_masks_and_bands() {
  using strata::harness::AttentionCase;
  using strata::harness::MaskKind;
  return {[](AttentionCase& c) {
            c.mask = MaskKind::float_bcast;
            c.causal = strata::Causal::top_left;
          },
          [](AttentionCase& c) {
            c.mask = MaskKind::bool_bcast;
            c.causal = strata::Causal::none;
            c.window = std::make_pair<std::int64_t, std::int64_t>(5, 3);
          }};
}

// bcast_masks_and_bands, then a float [M, N] mask with fully masked rows
// and no window: the tensor-core suites' steps.
inline std::vector<CaseStep> masks_bands_and_masked_rows() {
  std::vector<CaseStep> steps = bcast_masks_and_bands();
  steps.push_back([](strata::harness::AttentionCase& c) {
    c.mask = strata::harness::MaskKind::float_full;
    c.window.reset();
    c.masked_rows = true;
  });
  return steps;
}

// Runs run(case) for every case of s; seed is advanced once per run.
// Shape: cases [2, 4, M, d] x [2, Hkv, N, d] for each layout and (d, M).
template <class Run>
void sweep_layouts(const LayoutSweep& s, std::uint64_t& seed, const Run& run) {
  using strata::harness::AttentionCase;
  using strata::harness::Layout;
  for (Layout l : strata::harness::all_layouts()) {
    for (auto [d, M] : s.d_M) {
      AttentionCase c;
      c.dtype = s.dtype;
      c.batch = {2};
      c.Hq = 4;
      c.Hkv = s.Hkv;
      c.M = M;
      c.N = l == Layout::fused_qkv ? M : s.N;
      c.d = d;
      c.dv = d;
      c.layout = l;
      INFO("layout " << strata::harness::layout_name(l) << " " << strata::dtype_name(s.dtype)
                     << " d " << d << " M " << M);
      c.seed = ++seed;
      run(c);
      for (const CaseStep& step : s.steps) {
        step(c);
        c.seed = ++seed;
        run(c);
      }
    }
  }
}

// Grids too small to fill the GPU, step 0-4 of five: one head of 130 + 40
// step rows against 1000 + 500 step keys (2-6 splits of the wgmma kernel),
// plain, causal bottom-right, causal top-left, a window with a bool mask
// and fully masked rows, then two query heads with a float [M, N] mask.
inline strata::harness::AttentionCase small_grid_case(int step, std::int64_t d, strata::DType dt,
                                                      std::uint64_t seed) {
  using strata::harness::MaskKind;
  strata::harness::AttentionCase c =
      strata::harness::batched_case(130 + 40 * step, 1000 + 500 * step, d, d, dt, seed);
  c.batch = {};
  c.Hq = step == 4 ? 2 : 1;
  c.Hkv = 1;
  if (step == 1) c.causal = strata::Causal::bottom_right;
  if (step == 2) c.causal = strata::Causal::top_left;
  if (step == 3) {
    c.window = std::make_pair<std::int64_t, std::int64_t>(300, 0);
    c.mask = MaskKind::bool_full;
    c.masked_rows = true;
  }
  if (step == 4) c.mask = MaskKind::float_bcast;
  return c;
}

}  // namespace strata_test
