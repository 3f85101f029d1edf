// STRATA_EW_VARIANT (elementwise_cuda.hpp), read once: launch_elementwise
// asks on every call with a transposed 16-bit input.
#include <cstdlib>
#include <string_view>

#include "cuda/elementwise/elementwise_cuda.hpp"
#include "strata/error.hpp"

namespace strata::cuda {

bool ew_variant_tiled16() {
  static const bool on = [] {
    const char* e = std::getenv("STRATA_EW_VARIANT");
    const std::string_view v = e ? e : "";
    if (v.empty() || v == "base") return false;
    if (v == "tiled16") return true;
    fail("cuda.elementwise", "STRATA_EW_VARIANT is '", v, "'; expected base or tiled16");
  }();
  return on;
}

}  // namespace strata::cuda
