// The tuning switchboard (strata/tuning.hpp): every switch parses from its
// variable, malformed values are errors naming the variable and the value,
// and the list that `strata info --tuning` prints covers every field.
#include <map>
#include <string>

#include "catch.hpp"
#include "strata/tuning.hpp"
#include "test_core_util.hpp"

namespace {

using strata::Toggle;
using strata::Tuning;

// The environment a test gives Tuning::from.
std::map<std::string, std::string> g_env;
const char* lookup(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
Tuning parse(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return Tuning::from(lookup);
}

}  // namespace

TEST_CASE("tuning: defaults when nothing is set", "[tuning]") {
  const Tuning t = parse({});
  CHECK(t.fused_residual == Toggle::automatic);
  CHECK(t.cuda_graphs == Toggle::automatic);
  CHECK(t.cpu_isa.empty());
  CHECK(t.cpu_fixed_team);
  CHECK(t.cpu_slice_elems == 0);
  CHECK(t.cuda_block_cache);
  CHECK(t.flash_variants.empty());
  CHECK(t.flash_lpt_heads == -1);
  CHECK(t.flash_diag_half);
  CHECK(t.cuda_gemv);
  CHECK(t.host_cache);
  CHECK(t.gemv16_mma);
  // An empty value counts as unset.
  CHECK(parse({{"STRATA_CUDA_BLOCK_CACHE", ""}}).cuda_block_cache);
  CHECK_FALSE(parse({{"STRATA_HOST_CACHE", "0"}}).host_cache);
}

TEST_CASE("tuning: each kind of switch parses", "[tuning]") {
  const Tuning t = parse({{"STRATA_FUSED_RESIDUAL", "0"},
                          {"STRATA_CUDA_GRAPHS", "1"},
                          {"STRATA_CPU_ISA", "avx2"},
                          {"STRATA_CPU_FIXED_TEAM", "0"},
                          {"STRATA_CPU_SLICE_ELEMS", "4096"},
                          {"STRATA_CUDA_BLOCK_CACHE", "0"},
                          {"STRATA_CUDA_LAUNCH", "graph"},
                          {"STRATA_FLASH_VARIANT", "wgmma_bf16_d64,,mma_f16_d128"},
                          {"STRATA_FLASH_LPT", "0"},
                          {"STRATA_ROWS_VARIANT", "reg4"}});
  CHECK(t.fused_residual == Toggle::off);
  CHECK(t.cuda_graphs == Toggle::on);
  CHECK(t.cpu_isa == "avx2");
  CHECK_FALSE(t.cpu_fixed_team);
  CHECK(t.cpu_slice_elems == 4096);
  CHECK_FALSE(t.cuda_block_cache);
  CHECK(t.cuda_launch == "graph");
  REQUIRE(t.flash_variants.size() == 2);
  CHECK(t.flash_variants[0] == "wgmma_bf16_d64");
  CHECK(t.flash_variants[1] == "mma_f16_d128");
  CHECK(t.flash_lpt_heads == 0);
  CHECK(t.rows_variant == "reg4");
}

TEST_CASE("tuning: malformed values name the variable, the value and what is expected",
          "[tuning]") {
  CORE_REQUIRE_ERROR(parse({{"STRATA_CUDA_BLOCK_CACHE", "off"}}), "STRATA_CUDA_BLOCK_CACHE",
                     "'off'", "0 or 1");
  CORE_REQUIRE_ERROR(parse({{"STRATA_FLASH_PAD", "yes"}}), "STRATA_FLASH_PAD", "'yes'");
  CORE_REQUIRE_ERROR(parse({{"STRATA_FLASH_SPLITS", "-2"}}), "STRATA_FLASH_SPLITS", "'-2'",
                     "whole number");
  CORE_REQUIRE_ERROR(parse({{"STRATA_CPU_SLICE_ELEMS", "12k"}}), "STRATA_CPU_SLICE_ELEMS", "'12k'");
  CORE_REQUIRE_ERROR(parse({{"STRATA_CUDA_LAUNCH", "fast"}}), "STRATA_CUDA_LAUNCH", "'fast'",
                     "pdl, ex, plain, graph");
  CORE_REQUIRE_ERROR(parse({{"STRATA_CPU_ISA", "sse"}}), "STRATA_CPU_ISA", "'sse'", "avx512");
}

TEST_CASE("tuning: the printed list names every switch with its value", "[tuning]") {
  const auto list = strata::tuning_switches(parse({{"STRATA_FLASH_SPLITS", "3"}}));
  REQUIRE(list.size() == 23);
  bool found = false;
  for (const auto& s : list) {
    CHECK(std::string(s.name).rfind("STRATA_", 0) == 0);
    CHECK(std::string(s.help).size() > 10);
    if (std::string(s.name) == "STRATA_FLASH_SPLITS") found = s.value == "3";
  }
  CHECK(found);
}
