#pragma once
// The case sweeps that the cuda attention tests share: every harness layout
// with masks and bands (sweep_layouts), bands over several key tiles
// (sweep_bands), head dims at the tile edges (head_dim_case), grids too small
// for the GPU (small_grid_case) or that fill it (full_grid_case), and GQA
// with broadcast batch dims (gqa_broadcast_case, gqa_broadcast_cases).
#include <array>
#include <cstdint>
#include <functional>
#include <string>
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

// Every harness layout with each (d, M), one case of batch {2}, Hq 4 and N
// keys (M for fused QKV, whose q, k and v share one row count), run as built
// and again after each step, each step changing the case further (masks,
// bands), every run on a fresh seed: run(case) for every case of s, seed
// advanced once per run. Shape: cases [2, 4, M, d] x [2, Hkv, N, d] for
// each layout and (d, M).
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

// The 16-bit tensor-core suites' layout sweep: sweep_layouts for bf16, then
// f16, with 2 kv heads, 150 keys and the masks_bands_and_masked_rows steps at
// each (d, M) of d_M.
template <class Run>
void sweep_16bit_layouts(const std::vector<std::array<std::int64_t, 2>>& d_M, std::uint64_t& seed,
                         const Run& run) {
  for (strata::DType dt : {strata::DType::bf16, strata::DType::f16})
    sweep_layouts(
        {.dtype = dt, .Hkv = 2, .N = 150, .d_M = d_M, .steps = masks_bands_and_masked_rows()}, seed,
        run);
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

// small_grid_case's five steps at each head dim of ds, bf16 then f16, each
// case on a fresh seed: run(case) for every one.
template <class Run>
void sweep_small_grids(const std::vector<std::int64_t>& ds, std::uint64_t& seed, const Run& run) {
  for (strata::DType dt : {strata::DType::bf16, strata::DType::f16}) {
    for (std::int64_t d : ds) {
      for (int step = 0; step < 5; ++step) {
        const strata::harness::AttentionCase c = small_grid_case(step, d, dt, ++seed);
        INFO(strata::dtype_name(dt) << " d " << d << " step " << step);
        run(c);
      }
    }
  }
}

// One head of d = dv, two query heads on two kv heads, M query rows and N
// keys, no batch dims beyond the harness's default: the tile-edge cases.
inline strata::harness::AttentionCase head_dim_case(strata::DType dt, std::int64_t d,
                                                    std::int64_t M, std::int64_t N,
                                                    std::uint64_t seed) {
  strata::harness::AttentionCase c = strata::harness::batched_case(M, N, d, d, dt, seed);
  c.batch = {};
  return c;
}

// A band over several key tiles: causal alignment, a window (left, right;
// -2: none) and its alignment.
struct Band {
  strata::Causal causal;
  std::int64_t left, right;
  bool top_left;
};

// The bands the tensor-core suites sweep: both causal alignments, windows on
// one or both sides, top-left and bottom-right.
inline const std::vector<Band>& tile_bands() {
  using strata::Causal;
  static const std::vector<Band> b = {
      {Causal::bottom_right, -2, -2, false},  {Causal::top_left, -2, -2, false},
      {Causal::none, 100, 0, false},          {Causal::none, 64, 64, true},
      {Causal::bottom_right, 200, -1, false}, {Causal::none, -1, 30, true}};
  return b;
}

// Runs run(case) for a batched case of each (M, N), band and head dim d = dv
// (in that order of loops), in dtype dt: whole key tiles skipped before and
// after the band, diagonal tiles masked, rows with no key at all
// (bottom-right causal with M > N). seed is advanced once per case.
template <class Run>
void sweep_bands(strata::DType dt, const std::vector<std::array<std::int64_t, 2>>& M_N,
                 const std::vector<Band>& bands, const std::vector<std::int64_t>& ds,
                 std::uint64_t& seed, const Run& run) {
  for (auto [M, N] : M_N) {
    for (const Band& b : bands) {
      for (std::int64_t d : ds) {
        strata::harness::AttentionCase c = strata::harness::batched_case(M, N, d, d, dt, ++seed);
        c.causal = b.causal;
        if (b.left != -2) c.window = std::make_pair(b.left, b.right);
        c.window_top_left = b.top_left;
        INFO(strata::dtype_name(dt) << " M " << M << " N " << N << " d " << d << " causal "
                                    << int(b.causal) << " window " << b.left << "," << b.right);
        run(c);
      }
    }
  }
}

// Runs run(case) for a batched [M x N] case with one kv head for each head
// dim pair (d, dv), in dtype dt, seed advanced once per case; label starts
// each case's INFO line.
template <class Run>
void sweep_dv(strata::DType dt, const std::vector<std::array<std::int64_t, 2>>& d_dv,
              std::int64_t M, std::int64_t N, const std::string& label, std::uint64_t& seed,
              const Run& run) {
  for (auto [d, dv] : d_dv) {
    strata::harness::AttentionCase c = strata::harness::batched_case(M, N, d, dv, dt, ++seed);
    c.Hkv = 1;
    INFO(label << "d " << d << " dv " << dv);
    run(c);
  }
}

// The first of gqa_broadcast_cases at head dim (= dv) d: 8 query heads on 2
// kv heads, [150 x 170] for 2 x 3 broadcast batch items, bottom-right causal
// with a bool mask.
inline strata::harness::AttentionCase gqa_broadcast_case(strata::DType dt, std::int64_t d,
                                                         std::uint64_t seed) {
  strata::harness::AttentionCase c;
  c.dtype = dt;
  c.batch = {2, 3};
  c.Hq = 8;
  c.Hkv = 2;
  c.M = 150;
  c.N = 170;
  c.d = d;
  c.dv = d;
  c.layout = strata::harness::Layout::broadcast;
  c.causal = strata::Causal::bottom_right;
  c.mask = strata::harness::MaskKind::bool_full;
  c.seed = seed;
  return c;
}

// A grid that fills the GPU (at least as many CTAs as SMs): [M x N] at head
// dims d and dv for 9 batch items, 8 query heads on 2 kv heads.
inline strata::harness::AttentionCase full_grid_case(std::int64_t M, std::int64_t N, std::int64_t d,
                                                     std::int64_t dv, strata::DType dt,
                                                     std::uint64_t seed, strata::Causal causal) {
  strata::harness::AttentionCase c = strata::harness::batched_case(M, N, d, dv, dt, seed);
  c.batch = {9};
  c.Hq = 8;
  c.Hkv = 2;
  c.causal = causal;
  return c;
}

// full_grid_case at 260 query rows, N keys and each head dim of ds, without
// and with bottom-right causal, bf16 then f16, each case on a fresh seed:
// run(case) for every one.
template <class Run>
void sweep_full_grids(std::int64_t N, const std::vector<std::int64_t>& ds, std::uint64_t& seed,
                      const Run& run) {
  for (strata::DType dt : {strata::DType::bf16, strata::DType::f16}) {
    for (std::int64_t d : ds) {
      for (strata::Causal causal : {strata::Causal::none, strata::Causal::bottom_right}) {
        const strata::harness::AttentionCase c = full_grid_case(260, N, d, d, dt, ++seed, causal);
        INFO(strata::dtype_name(dt) << " d " << d << " causal " << int(causal) << " (full grid)");
        run(c);
      }
    }
  }
}

// GQA with broadcast batch dims: 8 query heads on 2, k and v stored once
// for 2 x 3 batch items, bottom-right causal with a bool mask, d 64; then
// one kv head, contiguous, d 128, large logits.
inline std::array<strata::harness::AttentionCase, 2> gqa_broadcast_cases(strata::DType dt,
                                                                         std::uint64_t seed0,
                                                                         std::uint64_t seed1) {
  using strata::harness::Layout;
  using strata::harness::MaskKind;
  const strata::harness::AttentionCase c = gqa_broadcast_case(dt, 64, seed0);
  strata::harness::AttentionCase wide = c;
  wide.layout = Layout::contiguous;
  wide.Hkv = 1;
  wide.d = 128;
  wide.dv = 128;
  wide.mask = MaskKind::none;
  wide.input_scale = 8.0;  // large logits
  wide.seed = seed1;
  return {c, wide};
}

}  // namespace strata_test
