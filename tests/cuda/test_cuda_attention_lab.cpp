// The attention kernel candidates kept for tuning (backends/cuda/lab/
// attention/candidates.hpp), each through the suites of its kernel in a
// child run of this binary with STRATA_CUDA_VARIANT or STRATA_FLASH_VARIANT
// naming it (the switches are read once per process), against the f64
// reference as the suites check every kernel. Only a tuning build
// (cmake -DSTRATA_TUNING=ON) compiles the candidates; in any other the case
// says so and passes; there, a candidate's name is refused with an error
// that says how to build them, and in either build a name no table holds is
// refused too. Hidden, as it takes minutes: strata_cuda_tests
// "[attention_lab]"; each child's output goes to <tmp>/strata_lab_<name>.log.
#include <cstdlib>
#include <string>

#include "catch.hpp"
#include "cuda/child_rerun.hpp"
#include "strata/attention.hpp"
#include "strata/error.hpp"
#include "strata/tensor.hpp"

namespace strata::cuda {
// Testing hook (backends/cuda/tuning_build.cpp): whether this build has the
// lab candidates.
bool tuning_build_for_test();
}  // namespace strata::cuda

namespace {

struct LabRun {
  const char* var;   // the switch that names it
  const char* name;  // the candidate
  const char* spec;  // the suites its child runs
};

// The streaming suite for the f32 / f64 candidates; the decode suites for
// the bf16 decode one; the tensor-core suites for the mma.sync ones (which
// the forced name routes to mma.sync in an sm_90a build too).
constexpr const char* kStreaming = "[attention]~[large]";
constexpr const char* kDecode = "[decode],[decode_merge],[decode_bulk_cases]";
constexpr const char* kMma = "[mma]~[decode]~[errors_table]";
constexpr const char* kTf32 = "[tf32]~[errors_table]";

constexpr LabRun kRuns[] = {
    {"STRATA_CUDA_VARIANT", "f32.pipelined.128x64.d128.256_threads", kStreaming},
    {"STRATA_CUDA_VARIANT", "f32.pipelined.64x64.d128.256_threads", kStreaming},
    {"STRATA_CUDA_VARIANT", "f64.tiled.64x32.d64", kStreaming},
    {"STRATA_CUDA_VARIANT", "bf16.decode.d128.bulk.per_key_sums", kDecode},
    {"STRATA_FLASH_VARIANT", "mma.d64.128x32.2_stages.32_rows_per_warp", kMma},
    {"STRATA_FLASH_VARIANT", "mma.d64.128x64.2_stages.32_rows_per_warp.q_shared", kMma},
    {"STRATA_FLASH_VARIANT", "mma.d128.128x32.2_stages.32_rows_per_warp.q_shared", kMma},
    {"STRATA_FLASH_VARIANT", "mma.tf32x3.d64.64x64.2_stages", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32x3.d64.64x32.3_stages", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32x3.d128.64x32.2_stages.q_shared", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32x3.d128.64x64.2_stages.q_shared", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32x3.d64.128x64.2_stages", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32x3.d128.128x32.2_stages.q_shared", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32.d64.64x32.3_stages", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32.d128.64x32.2_stages.q_shared", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32.d64.128x64.2_stages", kTf32},
    {"STRATA_FLASH_VARIANT", "mma.tf32.d128.128x32.2_stages", kTf32},
};

}  // namespace

TEST_CASE("cuda attention lab: each candidate through its kernel's suites", "[.][attention_lab]") {
  if (!strata::cuda::tuning_build_for_test()) {
    WARN("not a tuning build (-DSTRATA_TUNING=ON): no attention candidates to run");
    return;
  }
  for (const LabRun& r : kRuns)
    strata_test::rerun_with_env(r.var, r.name, r.spec,
                                std::string("strata_lab_") + r.name + ".log");
}

// A forced name that this build's tables do not hold is refused with an
// error, never a silent run of the defaults: a candidate's name without the
// lab says how to build it; an unknown name in a tuning build says so.
// Run in children (the switches are read once per process).
TEST_CASE("cuda attention: a forced variant name this build lacks is an error",
          "[cuda][attention_variant_refused]") {
  const bool tuning = strata::cuda::tuning_build_for_test();
  strata_test::rerun_with_env("STRATA_CUDA_VARIANT",
                              tuning ? "f32.tiled.no_such" : "f64.tiled.64x32.d64",
                              "[attention_refused_child]", "strata_refused_streaming.log");
  strata_test::rerun_with_env("STRATA_FLASH_VARIANT",
                              tuning ? "mma.no_such" : "mma.tf32.d64.64x32.3_stages",
                              "[attention_refused_child]", "strata_refused_flash.log");
}

// The child: one f32 or bf16 call with the forced name must throw.
TEST_CASE("cuda attention: child of the refusal case", "[.][attention_refused_child]") {
  using namespace strata;
  const Device gpu = Device::cuda(0);
  const bool flash = std::getenv("STRATA_FLASH_VARIANT") != nullptr;
  const Tensor q = Tensor::randn({1, 2, 64, 64}, 1).to(gpu);
  AttentionOptions opt;
  if (flash) opt.precision = Precision::medium;  // the mma.sync TF32 configurations' calls
  std::string what = "<no error>";
  try {
    (void)softmax_attention(q, q, q, opt);
  } catch (const Error& e) {
    what = e.what();
  }
  INFO("message: " << what);
  const bool tuning = strata::cuda::tuning_build_for_test();
  CHECK(what.find(flash ? "STRATA_FLASH_VARIANT" : "STRATA_CUDA_VARIANT") != std::string::npos);
  CHECK(what.find(tuning ? "no" : "selects a kernel candidate kept for tuning") !=
        std::string::npos);
}
