// bf16/f16 softmax_attention on the cuda backend's tensor-core kernels
// (backends/cuda/attention/sm90/kernel_16bit.cuh in an sm_90a build, sm80/kernel_16bit.cuh on
// mma.sync otherwise or when STRATA_FLASH_VARIANT forces one) and, for M <= 8 query rows, its
// native split-KV decode kernel (decode/kernel.cuh with bf16/f16 storage,
// "cuda.attention.decode_<dt>"), through the cross-backend harness:
// every case against the f64 reference of the same rounded inputs, outputs
// poisoned and guarded. The cases aim at the kernel's own boundaries: head
// dims padded to 64 and 128 (and the f32 route above 128), partial query and
// key tiles, tiles skipped or masked by the band, layouts that are packed
// first, masks on any strides, fully masked rows, N = 0.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_pass.hpp"
#include "cuda/attention_sweeps.hpp"
#include "cuda/flash_route.hpp"
#include "strata/attention.hpp"
#include "strata/harness.hpp"
#include "strata/tensor.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

using strata_test::half_name;
using strata_test::tile_route;

// Head dims 129-256: the wgmma d 192 / d 256 tiles in an sm_90a build, the
// f32 route otherwise.
std::string wide_kernel(DType dt) {
#if defined(STRATA_CUDA_WGMMA)
  return "cuda.attention.wgmma_" + half_name(dt) + "_d256";
#else
  return "cuda.attention.mma_" + half_name(dt) + "_via_f32";
#endif
}

// The route of a call of more than 8 query rows at head dim d.
std::string tile_or_wide(DType dt, std::int64_t d) {
  return d <= 64 ? tile_route(dt, 64) : d <= 128 ? tile_route(dt, 128) : wide_kernel(dt);
}

// The kernels a bf16/f16 call with head dims up to 256 may reach: the
// decode kernel for M <= 8, else a tensor-core one or the f32 route.
bool expected_kernel(const AttentionCase& c, const std::string& name) {
  if (c.M <= 8) return name.rfind("cuda.attention.decode_" + half_name(c.dtype), 0) == 0;
  return name.rfind("cuda.attention.mma_", 0) == 0 || name.rfind("cuda.attention.wgmma_", 0) == 0;
}

// Runs the case; requires the cuda result to pass and to come from `kernel`
// (a prefix of the registry name; by default any expected_kernel).
void require_mma_pass(const AttentionCase& c, const std::string& kernel = "") {
  strata_test::require_cuda_attention_pass(c, [&](const std::string& name) {
    return kernel.empty() ? expected_kernel(c, name) : name.rfind(kernel, 0) == 0;
  });
}

}  // namespace

TEST_CASE("cuda mma attention: head dims and tile edges", "[cuda][attention][mma]") {
  std::uint64_t seed = 7000;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (std::int64_t d : {8, 40, 64, 72, 100, 128, 200}) {
      for (auto [M, N] : std::vector<std::array<std::int64_t, 2>>{
               {1, 129}, {9, 64}, {65, 1}, {130, 200}, {128, 0}}) {
        const AttentionCase c = strata_test::head_dim_case(dt, d, M, N, ++seed);
        INFO(half_name(dt) << " d " << d << " M " << M << " N " << N);
        require_mma_pass(c,
                         M <= 8 ? "cuda.attention.decode_" + half_name(dt) : tile_or_wide(dt, d));
      }
    }
  }
}

// One query row against many keys: the decode kernel (split-KV) at any
// batch. Above 8 rows, a query tile per head against many keys in a single
// head fills one CTA: the wgmma kernel splits its keys, mma.sync has no
// split and sends such calls through f32 (split-KV); a batch of heads stays
// on the tensor cores.
TEST_CASE("cuda mma attention: decode-like calls", "[cuda][attention][mma]") {
  AttentionCase c = strata::harness::batched_case(1, 20000, 64, 64, DType::bf16, 7400);
  c.batch = {};
  c.Hq = 2;
  c.Hkv = 1;
  require_mma_pass(c, "cuda.attention.decode_bf16");
  c.M = 16;
  c.seed = 7402;
  const std::string tiles = tile_route(DType::bf16, 64);
  require_mma_pass(
      c, tiles.rfind("cuda.attention.wgmma_", 0) == 0 ? tiles : "cuda.attention.mma_bf16_via_f32");
  c.batch = {8};
  c.Hq = 8;
  c.seed = 7401;
  require_mma_pass(c, tile_route(DType::bf16, 64));
  c.M = 1;
  c.seed = 7403;
  require_mma_pass(c, "cuda.attention.decode_bf16");
}

// The native bf16/f16 decode kernel (M <= 8): every key count from empty to
// many splits, head dims on the 8-byte vector path (64, 80, 128) and off it
// (100: scalar loads), GQA, each row count on either side of the merge's
// few/many-splits switch, causal bottom-right, bool and float masks, fully
// masked rows, lse always compared. The f64 reference runs on the CPU: N
// 20000 (many splits: M 1 over the block-parallel merge's 32, M 3 under it)
// only for a few (dtype, M, d), batch dims only where N is tiny.
static bool decode_long_case(DType dt, std::int64_t M, std::int64_t d) {
  return (dt == DType::bf16 && M == 1 && d == 128) || (dt == DType::f16 && M == 1 && d == 80) ||
         (dt == DType::f16 && M == 3 && d == 64) || (dt == DType::bf16 && M == 3 && d == 80);
}

TEST_CASE("cuda decode attention: bf16/f16 shapes, masks and bands",
          "[cuda][attention][mma][decode]") {
  std::uint64_t seed = 11000;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (std::int64_t M : {1, 3, 8}) {
      for (std::int64_t N : {0, 1, 37, 520, 20000}) {
        for (std::int64_t d : {64, 80, 128, 100}) {
          if (d == 100 && N != 520) continue;
          if (N == 20000 && !decode_long_case(dt, M, d)) continue;
          AttentionCase c = strata::harness::batched_case(M, N, d, d, dt, ++seed);
          if (N >= 520) c.batch = {};  // longer calls in one batch item (reference time)
          c.Hq = 8;
          INFO(half_name(dt) << " M " << M << " N " << N << " d " << d);
          require_mma_pass(c, "cuda.attention.decode_" + half_name(dt));
          c.causal = Causal::bottom_right;
          c.seed = ++seed;
          INFO("causal bottom-right");
          require_mma_pass(c, "cuda.attention.decode_" + half_name(dt));
          c.causal = Causal::none;
          c.mask = MaskKind::bool_full;
          c.masked_rows = M > 1;  // rows 1, 5: every key masked
          c.seed = ++seed;
          INFO("bool mask");
          require_mma_pass(c, "cuda.attention.decode_" + half_name(dt));
          c.mask = MaskKind::float_full;
          c.seed = ++seed;
          INFO("float mask");
          require_mma_pass(c, "cuda.attention.decode_" + half_name(dt));
          c.mask = MaskKind::bool_bcast;  // [M, N], the decode step's cache mask
          c.masked_rows = false;
          c.causal = Causal::bottom_right;
          c.window = std::make_pair<std::int64_t, std::int64_t>(300, 0);
          c.seed = ++seed;
          INFO("bool [M, N] mask, causal window");
          require_mma_pass(c, "cuda.attention.decode_" + half_name(dt));
        }
      }
    }
  }
}

// Layouts the 8-byte loads cannot read (transposed, strided columns,
// negative strides) take the scalar path; fused QKV slices and padded
// windows the vector one. dv differs from d; d and dv up to 256 (two
// chunks per lane).
TEST_CASE("cuda decode attention: bf16/f16 layouts and head dims",
          "[cuda][attention][mma][decode][layout]") {
  std::uint64_t seed = 12000;
  for (DType dt : {DType::bf16, DType::f16}) {
    const std::string want = "cuda.attention.decode_" + half_name(dt);
    // Each head dim with one row count (reference time); every layout sees
    // each d and each M.
    strata_test::sweep_layouts({.dtype = dt,
                                .Hkv = 1,
                                .N = 520,
                                .d_M = {{64, 8}, {80, 1}, {128, 5}},
                                .steps = {[](AttentionCase& c) {
                                  c.mask = MaskKind::float_bcast;
                                  c.causal = Causal::bottom_right;
                                  c.masked_rows = true;
                                }}},
                               seed, [&](const AttentionCase& c) { require_mma_pass(c, want); });
    for (auto [d, dv] : std::vector<std::array<std::int64_t, 2>>{
             {64, 128}, {128, 64}, {7, 129}, {200, 256}, {256, 8}}) {
      AttentionCase c = strata::harness::batched_case(4, 3000, d, dv, dt, ++seed);
      c.Hkv = 1;
      c.mask = MaskKind::bool_full;
      INFO(half_name(dt) << " d " << d << " dv " << dv);
      require_mma_pass(c, want);
    }
    // Large logits: the online softmax's rescaling in f32 across splits.
    AttentionCase c = strata::harness::batched_case(2, 20000, 128, 128, dt, ++seed);
    c.input_scale = 8.0;
    require_mma_pass(c, want);
    // Head dims past the decode kernel's reach go to the tensor-core route.
    c = strata::harness::batched_case(1, 300, 260, 260, dt, ++seed);
    require_mma_pass(c, "cuda.attention.mma_" + half_name(dt) + "_via_f32");
  }
}

TEST_CASE("cuda mma attention: dv differs from d", "[cuda][attention][mma]") {
  std::uint64_t seed = 7500;
  strata_test::sweep_dv(DType::bf16, {{64, 128}, {128, 64}, {16, 8}, {7, 129}, {32, 300}}, 70, 150,
                        "", seed, [](const AttentionCase& c) { require_mma_pass(c); });
}

TEST_CASE("cuda mma attention: every layout, masks and bands", "[cuda][attention][mma][layout]") {
  std::uint64_t seed = 8000;
  strata_test::sweep_16bit_layouts({{64, 1}, {64, 200}, {128, 1}, {128, 200}}, seed,
                                   [](const AttentionCase& c) { require_mma_pass(c); });
}

// Bands over several key tiles: whole tiles skipped before and after the
// band, diagonal tiles masked, rows with no key at all (bottom-right causal
// with M > N), both alignments, windows on one or both sides.
TEST_CASE("cuda mma attention: causal and windows across tiles", "[cuda][attention][mma]") {
  std::uint64_t seed = 9000;
  for (DType dt : {DType::bf16, DType::f16})
    strata_test::sweep_bands(dt, {{300, 500}, {500, 300}, {257, 257}}, strata_test::tile_bands(),
                             {64, 128}, seed, [](const AttentionCase& c) { require_mma_pass(c); });
}

TEST_CASE("cuda mma attention: GQA and batch broadcast", "[cuda][attention][mma]") {
  std::uint64_t seed = 9500;
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto cases = strata_test::gqa_broadcast_cases(dt, seed + 1, seed + 2);
    seed += 2;
    for (const AttentionCase& c : cases) require_mma_pass(c);
  }
}

// The kernel's error against the f64 reference on N(0, 1) inputs, printed
// for the comparison with PyTorch's flash kernel on the same shapes
// (bench/peer_attention.py --errors).
TEST_CASE("cuda mma attention: error on the peer shapes", "[cuda][attention][mma][errors_table]") {
  for (DType dt : {DType::bf16, DType::f16}) {
    for (std::int64_t d : {64, 128}) {
      for (const bool causal : {false, true}) {
        AttentionCase c = strata::harness::batched_case(512, 512, d, d, dt, 4242);
        if (causal) c.causal = Causal::bottom_right;
        const strata::harness::CaseReport r = strata::harness::run_attention_case(c);
        for (const auto& b : r.results) {
          if (b.backend != "cuda") continue;
          std::cout << "mma_error " << half_name(dt) << " B2 H2 L512 d" << d
                    << (causal ? " causal" : "") << " rel_fro " << b.rel_fro_err << " max_abs "
                    << b.max_abs_err << " lse_abs " << b.lse_max_abs_err << " (naive f32 "
                    << r.naive_rel_fro << ", tol " << b.tol_rel_fro << ")\n";
          CHECK(b.pass);
        }
      }
    }
  }
}

// Grids of at least as many CTAs as SMs (132 on the H200): the default
// tiles (128 rows at d 128) rather than the small-grid ones most cases
// above take, and at d 100 the 8-byte-piece configuration with them.
TEST_CASE("cuda mma attention: grids that fill the GPU", "[cuda][attention][mma]") {
  std::uint64_t seed = 9600;
  strata_test::sweep_full_grids(300, {64, 100, 128}, seed, [](const AttentionCase& c) {
    require_mma_pass(c, tile_route(c.dtype, c.d <= 64 ? 64 : 128));
  });
}

// Grids too small to fill the GPU: the wgmma kernel cuts each tile of rows'
// keys into parts (at least 4 key tiles each, as many as one wave holds)
// and merges their partials (common/split_merge.cuh). One head of 130-300 rows
// against 1000-3000 keys takes 2-6 splits by that rule; bands leave some
// splits with no key at all; lse is compared in every case.
TEST_CASE("cuda mma attention: split keys on small grids", "[cuda][attention][mma][split_kv]") {
  std::uint64_t seed = 9700;
  strata_test::sweep_small_grids({64, 100, 128, 192}, seed, [](const AttentionCase& c) {
    require_mma_pass(c, tile_or_wide(c.dtype, c.d));
  });
}

// Every case of the suite but the layout sweeps with its keys split in 5
// (STRATA_FLASH_SPLITS; calls with fewer than 5 key tiles leave some splits
// with no key): this binary again with the variable set, which is read
// once per process. Hidden: a minute on the GPU; sm_90a builds.
TEST_CASE("cuda mma attention: the suite with split keys", "[.][flash_splits]") {
  if (std::getenv("STRATA_FLASH_SPLITS")) return;  // a child run: nothing to spawn
#if defined(STRATA_CUDA_WGMMA)
  // This binary's path (std::system's shell would see its own /proc/self).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "STRATA_FLASH_SPLITS=5 '" + self +
                          "' '[mma]~[decode]~[errors_table]~[layout]' > /dev/null 2>&1";
  INFO(cmd);
  CHECK(std::system(cmd.c_str()) == 0);
#endif
}
