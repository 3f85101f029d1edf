// The cross-backend sweep (docs/guide/attention.md, "Cross-backend harness"): every case runs on
// every available backend (reference and cpu here; cuda too on the GPU machine) and is compared
// with the reference in f64. Tolerances are derived per case from a naive same-dtype computation
// (harness/src/run_case.cpp says why). The default sweep stays at a few seconds; "[attention_slow]"
// (hidden, tag
// [.slow]) runs a larger product.
#include <vector>

#include "catch.hpp"
#include "strata/harness.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

using Window = std::pair<std::int64_t, std::int64_t>;

// Runs a case and checks every backend, printing the whole report on failure.
void check_case(const AttentionCase& c) {
  const CaseReport rep = run_attention_case(c);
  INFO(rep.summary());
  REQUIRE(!rep.results.empty());
  for (const BackendResult& r : rep.results) {
    INFO(r.summary());
    CHECK(r.error.empty());
    CHECK(r.nan_mismatch == 0);
    CHECK(r.inf_mismatch == 0);
    CHECK(r.guard_intact);
    CHECK(r.fully_written);
    CHECK(r.pass);
  }
}

struct Dims {
  std::int64_t M, N, d, dv;
};

const std::vector<DType> kDtypes = {DType::f32, DType::f64};

}  // namespace

TEST_CASE("attention sweep: shapes", "[attention][sweep]") {
  // A representative (not exhaustive) product of the sizes that trip block
  // boundaries: 1, 2, 7, 31, 32, 33, 63, 64, 65, 100, 129, 257.
  const std::vector<Dims> shapes = {
      {1, 1, 1, 1},     {2, 7, 3, 2},        {7, 31, 31, 7},    {31, 32, 32, 32},
      {32, 33, 33, 31}, {33, 63, 64, 64},    {63, 64, 65, 1},   {64, 65, 7, 100},
      {65, 100, 2, 33}, {100, 129, 129, 63}, {129, 2, 64, 64},  {1, 257, 100, 129},
      {257, 1, 63, 2},  {2, 129, 257, 65},   {1, 1000, 64, 64}, {5, 3, 257, 257},
  };
  std::uint64_t seed = 100;
  for (const DType dt : kDtypes) {
    for (const Dims& s : shapes) check_case(batched_case(s.M, s.N, s.d, s.dv, dt, ++seed));
  }
}

TEST_CASE("attention sweep: layouts", "[attention][sweep]") {
  // Square shapes make fused_qkv a real fused buffer; the others fall back.
  const std::vector<Dims> shapes = {
      {33, 33, 31, 31}, {64, 64, 64, 64}, {7, 65, 32, 100}, {1, 129, 2, 3}, {65, 7, 100, 1}};
  std::uint64_t seed = 200;
  for (const DType dt : kDtypes) {
    for (const Layout l : all_layouts()) {
      for (const Dims& s : shapes) {
        AttentionCase c = batched_case(s.M, s.N, s.d, s.dv, dt, ++seed);
        c.Hq = 4;
        c.layout = l;
        check_case(c);
      }
    }
  }
}

namespace {

struct Opt {
  Causal causal;
  std::optional<Window> window;
  bool top_left;
  MaskKind mask;
};
const std::vector<Opt> kOpts = {
    {Causal::bottom_right, std::nullopt, false, MaskKind::none},
    {Causal::top_left, std::nullopt, false, MaskKind::none},
    {Causal::none, Window{5, 3}, false, MaskKind::none},
    {Causal::none, Window{0, 0}, true, MaskKind::none},
    {Causal::none, Window{-1, 2}, false, MaskKind::bool_full},
    {Causal::bottom_right, Window{16, -1}, false, MaskKind::float_full},
    {Causal::top_left, Window{3, 7}, false, MaskKind::bool_bcast},
    {Causal::none, std::nullopt, false, MaskKind::float_bcast},
    {Causal::bottom_right, std::nullopt, false, MaskKind::bool_bcast},
};
// M < N (decode-like), M > N (rows without keys under bottom-right causal), M == N.
const std::vector<Dims> kOptShapes = {{7, 33, 16, 16}, {33, 7, 16, 16}, {32, 32, 31, 31}};

AttentionCase with_opt(AttentionCase c, const Opt& o) {
  c.causal = o.causal;
  c.window = o.window;
  c.window_top_left = o.top_left;
  c.mask = o.mask;
  return c;
}

}  // namespace

TEST_CASE("attention sweep: causal, windows and masks", "[attention][sweep]") {
  // Every option on every shape; the layout rotates so that each layout sees
  // most options (the full product is in the slow sweep).
  std::uint64_t seed = 300;
  const auto& layouts = all_layouts();
  for (const DType dt : kDtypes) {
    for (std::size_t o = 0; o < kOpts.size(); ++o) {
      for (std::size_t s = 0; s < kOptShapes.size(); ++s) {
        const Dims& sh = kOptShapes[s];
        AttentionCase c = batched_case(sh.M, sh.N, sh.d, sh.dv, dt, ++seed);
        c.layout = layouts[(o * 3 + s + (dt == DType::f64 ? 1 : 0)) % layouts.size()];
        check_case(with_opt(c, kOpts[o]));
      }
    }
    // Every layout with everything at once.
    for (const Layout l : layouts) {
      AttentionCase c = batched_case(21, 29, 24, 24, dt, ++seed);
      c.layout = l;
      c.Hq = 4;
      c.masked_rows = true;
      check_case(with_opt(c, {Causal::bottom_right, Window{9, 2}, false, MaskKind::float_bcast}));
    }
  }
}

TEST_CASE("attention sweep: GQA, dv != d, custom scale, large logits", "[attention][sweep]") {
  std::uint64_t seed = 400;
  for (const DType dt : kDtypes) {
    for (const auto& [hq, hkv] : std::vector<std::pair<int, int>>{{6, 1}, {6, 2}, {6, 3}, {8, 8}}) {
      AttentionCase c = batched_case(17, 40, 24, 9, dt, ++seed);
      c.Hq = hq;
      c.Hkv = hkv;
      c.layout = Layout::transposed;
      c.mask = MaskKind::float_bcast;
      check_case(c);
    }
    for (const double s : {0.01, -0.7, 3.0}) {
      AttentionCase c = batched_case(31, 65, 32, 64, dt, ++seed);
      c.scale = s;
      c.layout = Layout::sliced;
      check_case(c);
    }
    // Logits of size ~ 5^2 * sqrt(d): ill-conditioned in any algorithm; the
    // bound grows with the naive same-dtype error.
    for (const double big : {5.0, 20.0}) {
      AttentionCase c = batched_case(33, 100, 64, 64, dt, ++seed);
      c.input_scale = big;
      c.causal = Causal::bottom_right;
      check_case(c);
    }
  }
}

TEST_CASE("attention sweep: fully masked rows, N = 0, M = 0, empty batch", "[attention][sweep]") {
  std::uint64_t seed = 500;
  for (const DType dt : kDtypes) {
    for (const Layout l : all_layouts()) {
      for (const MaskKind m : {MaskKind::bool_full, MaskKind::float_full, MaskKind::bool_bcast,
                               MaskKind::float_bcast}) {
        AttentionCase c = batched_case(13, 40, 8, 8, dt, ++seed);
        c.layout = l;
        c.mask = m;
        c.masked_rows = true;
        check_case(c);
      }
      for (const Dims& s : std::vector<Dims>{{9, 0, 8, 5}, {0, 9, 8, 5}, {0, 0, 3, 3}}) {
        AttentionCase c = batched_case(s.M, s.N, s.d, s.dv, dt, ++seed);
        c.layout = l;
        c.causal = Causal::bottom_right;
        check_case(c);
      }
    }
    AttentionCase c = batched_case(5, 6, 4, 4, dt, ++seed);
    c.batch = {0, 3};
    check_case(c);
  }
}

TEST_CASE("attention sweep: batch broadcast, 2-D q, no lse", "[attention][sweep]") {
  std::uint64_t seed = 600;
  for (const DType dt : kDtypes) {
    for (const Layout l : all_layouts()) {
      AttentionCase c = batched_case(12, 20, 16, 8, dt, ++seed);
      c.batch = {2, 3};
      c.Hq = 4;
      c.Hkv = 2;
      c.layout = l;
      c.mask = MaskKind::bool_bcast;
      check_case(c);

      AttentionCase q2 = batched_case(9, 14, 5, 6, dt, ++seed);
      q2.batch = {};
      q2.Hq = q2.Hkv = 1;
      q2.q_2d = true;
      q2.layout = l;
      q2.causal = Causal::top_left;
      q2.mask = MaskKind::float_full;
      check_case(q2);

      AttentionCase nolse = batched_case(10, 10, 4, 4, dt, ++seed);
      nolse.layout = l;
      nolse.with_lse = false;
      check_case(nolse);
    }
  }
}

TEST_CASE("attention sweep: large product", "[.slow][attention_slow]") {
  const std::vector<std::int64_t> sizes = {1, 2, 7, 31, 32, 33, 63, 64, 65, 100, 129, 257};
  const std::vector<std::int64_t> heads = {1, 3, 32, 64, 65, 128, 129, 257};
  std::uint64_t seed = 10000;
  for (const DType dt : kDtypes) {
    for (const std::int64_t M : sizes) {
      for (const std::int64_t N : sizes) {
        const std::int64_t d = heads[static_cast<std::size_t>(M + N) % heads.size()];
        const std::int64_t dv = heads[static_cast<std::size_t>(M * 3 + N) % heads.size()];
        const Layout l = all_layouts()[static_cast<std::size_t>(M * 7 + N) % all_layouts().size()];
        for (const Causal cz : {Causal::none, Causal::bottom_right, Causal::top_left}) {
          AttentionCase c = batched_case(M, N, d, dv, dt, ++seed);
          c.Hq = 4;
          c.Hkv = 2;
          c.layout = l;
          c.causal = cz;
          c.mask = static_cast<MaskKind>(seed % 5);
          c.masked_rows = seed % 7 == 0;
          check_case(c);
        }
      }
    }
  }
  // Every option on every layout and shape.
  for (const DType dt : kDtypes) {
    for (const Layout l : all_layouts()) {
      for (const Opt& o : kOpts) {
        for (const Dims& sh : kOptShapes) {
          AttentionCase c = batched_case(sh.M, sh.N, sh.d, sh.dv, dt, ++seed);
          c.layout = l;
          check_case(with_opt(c, o));
        }
      }
    }
  }
  // Long key sequences, where split-KV paths kick in.
  for (const DType dt : kDtypes) {
    for (const std::int64_t N : {1024, 4097}) {
      AttentionCase c = batched_case(1, N, 128, 128, dt, ++seed);
      c.batch = {1};
      c.Hq = 8;
      c.Hkv = 2;
      check_case(c);
      c.M = 64;
      c.causal = Causal::bottom_right;
      c.mask = MaskKind::bool_bcast;
      check_case(c);
    }
  }
}
