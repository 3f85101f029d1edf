// STRATA_EW_VARIANT (elementwise_cuda.hpp), read once: launch_elementwise
// asks on every call with a transposed 16-bit input. tiled16 is the default:
// it measured far faster than the generic tiled path on bf16 a + b^T
// (docs/log/ops.md, "16-bit rows and the transposed add"); base, that
// generic path, is selectable in a tuning build only (tuning_build.hpp).
#include <string>

#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/tuning_build.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

bool ew_variant_tiled16() {
  static const bool tiled16 = [] {
    // The switchboard has checked the name: "", tiled16 or base.
    const std::string& name = tuning().ew_variant;
    if (name == "base") require_tuning_build("STRATA_EW_VARIANT", name);
    return name != "base";
  }();
  return tiled16;
}

}  // namespace strata::cuda
