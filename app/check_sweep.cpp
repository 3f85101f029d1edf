// The sweep of `strata check` (docs/guide/cli-attention.md, docs/guide/attention.md "Cross-backend
// harness") as a list of harness cases.
#include "check_sweep.hpp"

#include <cstdint>

namespace strata::cli {
namespace {

using harness::AttentionCase;
using harness::Layout;
using harness::MaskKind;

struct Dims {
  std::int64_t M, N, d, dv;
};

// Sizes around the powers of two that blocked kernels specialise on, odd head
// dims and the single-row decode shape.
const std::vector<Dims> kQuickDims = {{1, 1, 1, 1},       {2, 7, 3, 5},      {7, 31, 32, 32},
                                      {33, 65, 64, 64},   {63, 64, 100, 17}, {65, 129, 257, 64},
                                      {1, 300, 128, 128}, {129, 33, 31, 63}};
const std::vector<Dims> kFullDims = {{1, 1, 1, 1},        {1, 2, 7, 7},       {2, 7, 3, 5},
                                     {7, 31, 32, 32},     {31, 32, 33, 33},   {32, 33, 64, 64},
                                     {33, 65, 64, 64},    {63, 64, 100, 17},  {64, 63, 128, 128},
                                     {65, 129, 257, 64},  {100, 100, 65, 65}, {129, 33, 31, 63},
                                     {1, 1000, 128, 128}, {257, 257, 64, 64}};

AttentionCase base(const Dims& s, DType dt, std::uint64_t seed) {
  AttentionCase c;
  c.batch = {2};
  c.Hq = 2;
  c.Hkv = 2;
  c.M = s.M;
  c.N = s.N;
  c.d = s.d;
  c.dv = s.dv;
  c.dtype = dt;
  c.seed = seed;
  return c;
}

// Options every kernel must handle; each applied to one base case.
std::vector<std::pair<std::string, AttentionCase>> option_variants(const AttentionCase& b) {
  std::vector<std::pair<std::string, AttentionCase>> v;
  auto add = [&](const std::string& group, auto&& edit) {
    AttentionCase c = b;
    edit(c);
    c.seed = b.seed * 131 + v.size();
    v.emplace_back(group, c);
  };
  add("causal", [](AttentionCase& c) { c.causal = Causal::bottom_right; });
  add("causal", [](AttentionCase& c) { c.causal = Causal::top_left; });
  add("window", [](AttentionCase& c) { c.window = std::pair<std::int64_t, std::int64_t>{5, 2}; });
  add("window", [](AttentionCase& c) {
    c.window = std::pair<std::int64_t, std::int64_t>{3, -1};
    c.window_top_left = true;
  });
  add("window", [](AttentionCase& c) {
    c.window = std::pair<std::int64_t, std::int64_t>{4, 0};
    c.causal = Causal::bottom_right;
  });
  for (MaskKind m :
       {MaskKind::bool_full, MaskKind::float_full, MaskKind::bool_bcast, MaskKind::float_bcast})
    add("masks", [m](AttentionCase& c) { c.mask = m; });
  add("masks", [](AttentionCase& c) { c.masked_rows = true; });
  add("gqa", [](AttentionCase& c) {
    c.Hq = 4;
    c.Hkv = 2;
  });
  add("gqa", [](AttentionCase& c) {
    c.Hq = 6;
    c.Hkv = 1;
  });
  add("scale", [](AttentionCase& c) { c.scale = 0.37; });
  add("scale", [](AttentionCase& c) { c.input_scale = 8.0; });  // large logits
  add("batch", [](AttentionCase& c) { c.batch = {}; });
  add("batch", [](AttentionCase& c) { c.batch = {2, 1, 3}; });
  add("batch", [](AttentionCase& c) {
    c.batch = {};
    c.Hq = c.Hkv = 1;
    c.q_2d = true;
  });
  return v;
}

std::vector<AttentionCase> edge_cases(DType dt) {
  std::vector<AttentionCase> v;
  for (const Dims& s : std::vector<Dims>{{5, 0, 8, 8}, {0, 9, 8, 8}, {1, 0, 1, 1}}) {
    AttentionCase c = base(s, dt, 900 + v.size());
    v.push_back(c);
  }
  AttentionCase all_masked = base({9, 17, 16, 16}, dt, 950);
  all_masked.causal = Causal::bottom_right;
  all_masked.window = std::pair<std::int64_t, std::int64_t>{0, 0};
  all_masked.masked_rows = true;
  v.push_back(all_masked);
  AttentionCase above = base({20, 6, 16, 16}, dt, 951);  // bottom-right causal, M > N
  above.causal = Causal::bottom_right;
  v.push_back(above);
  return v;
}

}  // namespace

std::vector<SweepCase> check_sweep(bool full) {
  std::vector<SweepCase> out;
  const std::vector<DType> dtypes = {DType::f32, DType::f64};
  const auto& dims = full ? kFullDims : kQuickDims;
  std::uint64_t seed = 1;
  for (DType dt : dtypes) {
    for (std::size_t si = 0; si < dims.size(); ++si) {
      if (!full) {
        out.push_back({"shapes", base(dims[si], dt, seed++)});
        continue;
      }
      const auto& layouts = harness::all_layouts();
      for (Layout l : layouts) {
        AttentionCase c = base(dims[si], dt, seed++);
        c.layout = l;
        out.push_back({"shapes x layouts", c});
      }
      // Each option once per shape, on a layout that rotates with shape and
      // option, so every option meets every layout across the sweep without
      // the full (options x layouts x shapes) product.
      std::size_t vi = 0;
      for (auto& [group, v] : option_variants(base(dims[si], dt, seed++))) {
        v.layout = layouts[(si + vi++) % layouts.size()];
        out.push_back({group, v});
      }
    }
    if (!full) {
      const Dims mid{33, 65, 24, 40};
      for (Layout l : harness::all_layouts()) {
        AttentionCase c = base(mid, dt, seed++);
        c.layout = l;
        out.push_back({"layouts", c});
      }
      for (auto& [group, v] : option_variants(base(mid, dt, seed++))) out.push_back({group, v});
    }
    for (const AttentionCase& c : edge_cases(dt)) out.push_back({"edge (N=0, M=0, empty rows)", c});
  }
  return out;
}

}  // namespace strata::cli
