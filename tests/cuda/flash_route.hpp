#pragma once
// The registry names of the cuda tensor-core attention routes that the
// attention tests expect a call to take, as STRATA_FLASH_VARIANT (the
// configurations a tuning run forces, comma-separated) leaves them.
#include <cstdlib>
#include <string>

#include "strata/dtype.hpp"

namespace strata_test {

// "bf16" or "f16": the dtype part of the bf16/f16 routes' names.
inline std::string half_name(strata::DType dt) {
  return dt == strata::DType::bf16 ? "bf16" : "f16";
}

// Whether STRATA_FLASH_VARIANT names a configuration whose name starts with
// prefix (e.g. "mma.d64.", an mma.sync configuration of head dim 64).
inline bool flash_variant_forced(const std::string& prefix) {
  const char* e = std::getenv("STRATA_FLASH_VARIANT");
  const std::string forced = std::string(",") + (e ? e : "");
  return forced.find("," + prefix) != std::string::npos;
}

// The bf16/f16 tensor-core route for head dims up to D (64 or 128): wgmma in
// an sm_90a build, unless STRATA_FLASH_VARIANT names an mma.sync
// configuration of that head dim ("mma.d64.", "mma.d128."; the wgmma ones
// are "wgmma.d64." ...); mma.sync otherwise.
inline std::string tile_route(strata::DType dt, int D) {
  std::string kind = "mma_";
#if defined(STRATA_CUDA_WGMMA)
  if (!flash_variant_forced("mma.d" + std::to_string(D) + ".")) kind = "wgmma_";
#endif
  return "cuda.attention." + kind + half_name(dt) + "_d" + std::to_string(D);
}

}  // namespace strata_test
