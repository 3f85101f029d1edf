#pragma once
// Whether this build carries the kernel candidates kept for tuning
// (backends/cuda/lab/: cmake -DSTRATA_TUNING=ON compiles them and defines
// STRATA_TUNING=1 for the backend's sources), and the check that a switch
// selecting one of them is set only in such a build: in any other, the
// switch is an error rather than a silent run of the default kernels.
#include <string>

#include "strata/error.hpp"

namespace strata::cuda {

#if defined(STRATA_TUNING) && STRATA_TUNING
inline constexpr bool kTuningBuild = true;
#else
inline constexpr bool kTuningBuild = false;
#endif

// Throws strata::Error naming `name`=`value` when this build has no lab
// candidates.
inline void require_tuning_build(const char* name, const std::string& value) {
  if (!kTuningBuild)
    fail("tuning", name, "=", value,
         " selects a kernel candidate kept for tuning; this build has none (configure with "
         "-DSTRATA_TUNING=ON to build backends/cuda/lab/)");
}

}  // namespace strata::cuda
